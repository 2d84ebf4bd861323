// Collective expansion: how the simulator turns one collective task into network flows.
//
// Two fidelities (DESIGN.md "Fidelity levels"):
// - step: every transfer of the algorithm is its own flow. Ring allreduce of S bytes on n
//   ranks is 2(n-1) steps; in step k rank i sends a chunk of S/n to rank i+1 after it has
//   received step k-1's chunk from rank i-1 and sent its own. Uncontended it takes
//   2(n-1)·(α + S/(n·B)) (Thakur et al. 2005; Patarasuk & Yuan 2009).
// - aggregated: one flow per rank per phase carrying all of that phase's bytes, followed by the
//   phase's remaining (steps - 1) route latencies. Uncontended it takes exactly the step time;
//   under contention the shares differ slightly (tests bound the gap), at a fraction of the flows.
// Algorithms: ring (allreduce, allgather, reduce_scatter, broadcast as a pipeline chain),
// hierarchical allreduce (intra-host ring reduce-scatter, inter-host ring allreduce among ranks
// with the same local index, intra-host ring allgather; falls back to ring when hosts hold
// unequal numbers of members), halving_doubling (recursive halving reduce-scatter then
// doubling allgather; power-of-two groups, otherwise ring) and tree (binary-tree reduce then
// broadcast of the whole buffer). halving_doubling and tree are always expanded step by step.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/traces/task.hpp"

namespace strata {
inline namespace sim {

enum class CollectiveFidelity : std::uint8_t { step, aggregated };

struct Flow {
  WorkerId src = 0;
  WorkerId dst = 0;
  double bytes = 0;                 // B
  int extra_latencies = 0;          // route latencies added after the transfer
  std::vector<std::uint32_t> deps;  // flows (indices in the expansion) that must end first
  // B the src rank reads and writes adding buffers before this flow starts (a storage
  // collective's merge: two read and one written per addition); the replay prices it as an
  // element-wise kernel on the src's host.
  double merge_bytes = 0;
};

// REQUIRES: task is a collective with a non-empty group; host_of_worker maps every group member;
// for an object-store or cache algorithm (storage_* and cache_* allreduce and scatter-reduce:
// LambdaML's, one flow per PUT or GET, each rank's requests in sequence, at any fidelity) and for
// parameter_server (every rank's push at once, the server's sum, every rank's pull at once),
// `store` is the id flows to and from the store, cache or server carry (not a worker). Flows are listed so
// that every flow's deps precede it.
std::vector<Flow> expand_collective(const Task& task, CollectiveFidelity fidelity,
                                    const std::vector<int>& host_of_worker, WorkerId store = -1);

// The size of the whole group a collective runs for: its `group_size` attribute when a symmetry
// reduction gave it one (its group then holds representatives only), else its group's size.
std::size_t group_size(const Task& task);

// Number of flows the step expansion would produce (for choosing a fidelity), without building it.
std::size_t step_flow_count(const Task& task, const std::vector<int>& host_of_worker);

}  // namespace sim
}  // namespace strata
