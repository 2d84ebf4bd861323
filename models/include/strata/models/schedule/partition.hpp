// The load-balanced pipeline partitioner (DESIGN.md, scheduling: load balancing): contiguous
// layers to stages so that the slowest stage is as fast as it can be, each stage within its
// device's memory.
//
// A stage runs layers [first, last) on its device: its time is the layers' time divided by the
// device's relative speed (a stage on a host twice as fast takes half as long), plus, for every
// stage but the last, the transfer of its last layer's output to the next stage. Its memory is
// the layers' static bytes (weights, gradients, optimizer state) plus in_flight[s] times their
// activation bytes per microbatch (1F1B keeps pp − s microbatches in flight on stage s:
// one_f_one_b_in_flight). Every stage gets at least one layer.
//
// partition_layers solves it exactly by dynamic programming over (stages, layers) with prefix
// sums: O(S · L²) time, O(S · L) memory; 64 stages × 128 layers is about a million steps. Ties go
// to the partition whose earlier stages end sooner (the smallest `first` boundaries), so the
// answer is a function of the problem.
#pragma once

#include <string>
#include <vector>

namespace strata {
inline namespace models {

struct PartitionLayer {
  double time_s = 0;            // forward + backward on a device of speed 1
  double transfer_s = 0;        // sending its output to the next stage (when a stage ends here)
  double static_bytes = 0;      // weights, gradients, optimizer state
  double activation_bytes = 0;  // kept per microbatch in flight
};
struct PartitionStage {
  double speed = 1;         // relative to the device the layer times were measured on
  double memory_bytes = 0;  // the device's memory cap; 0: unlimited
  double in_flight = 1;     // microbatches whose activations the stage holds at its peak
  // Each layer's time on this stage's device (s), when the cost model gives it per device (a
  // GPU of another generation is not a uniformly faster one); empty: layers[].time_s / speed.
  std::vector<double> layer_time_s;
};
struct PartitionProblem {
  std::vector<PartitionLayer> layers;
  std::vector<PartitionStage> stages;
};
struct Partition {
  std::vector<int> first;            // stages + 1 boundaries: stage s runs [first[s], first[s + 1])
  std::vector<double> stage_time_s;  // per stage
  std::vector<double> stage_bytes;   // per stage
  double bottleneck_s = 0;           // the slowest stage
};

// in_flight for 1F1B on pp stages: pp − s on stage s.
std::vector<double> one_f_one_b_in_flight(int pp);

// The partition minimising the slowest stage under the memory caps. Throws InputError naming
// `source`: fewer layers than stages, a negative or NaN figure, a speed ≤ 0, or no partition
// within the caps ("no partition of 9 layers into 3 stages fits: at best stage 1 (layers 3-5)
// needs 1073741824 B more than its 2147483648 B").
Partition partition_layers(const PartitionProblem& problem, const std::string& source);
// Per-stage tensor-parallel degree chosen with the split (intra- and inter-layer parallelism,
// as Piper and Alpa search them): `problems[k]` gives the layers' figures when a stage runs
// them on `degrees[k]` devices (times and bytes per device; its stages the speeds, caps and
// microbatches in flight), and the stages may use `devices` devices in all. Minimises the slowest
// stage over the splits and one degree per stage with Σ degrees ≤ devices, within the caps.
// Bisection on the bottleneck B (to a relative 1e-9), each step a dynamic program for the
// fewest devices that keep every stage ≤ B: O(S · L² · T) a step, pruned where a stage is
// already slower than B. Ties: the fewest devices, then the smallest boundaries, then the lower
// degree. Throws InputError as partition_layers does, and when even the degrees that need the
// fewest devices exceed `devices`.
struct TpPartition {
  Partition partition;
  std::vector<int> degree;  // per stage
  int devices = 0;          // Σ degree
};
TpPartition partition_layers_and_tp(const std::vector<int>& degrees,
                                    const std::vector<PartitionProblem>& problems, int devices,
                                    const std::string& source);

// A given cut (`first`: stages + 1 boundaries) with its stage times and bytes, as the
// partitioners time theirs. REQUIRES: the boundaries rise from 0 to the layer count.
Partition timed_partition(const PartitionProblem& problem, std::vector<int> first);

// Every stage given the same number of layers (the first ones one more when they do not divide),
// as strata's lowering splits today, with its times and bytes, for comparison.
Partition uniform_partition(const PartitionProblem& problem);

}  // namespace models
}  // namespace strata
