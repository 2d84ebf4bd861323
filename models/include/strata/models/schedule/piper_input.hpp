// Piper's input format as partition problems (docs/scheduling.md): a layer graph profiled per
// tensor-parallel degree, as Piper (Tarnawski et al., "Piper: Multidimensional Planner for DNN
// Parallelization", NeurIPS 2021) reads it, cut here into contiguous pipeline stages with one
// degree each by partition_layers_and_tp (partition.hpp).
//
// The file (the format of Piper's public code, github.com/msr-fiddle/piper, README "Input
// format"): maxDevices (k), maxMemoryPerDevice (B), bandwidth (B/s, each device to the outside),
// nodes [{id, name?, TMPCs: {"<t>": [{id, timePerSample (s, forward + backward), parameterSize,
// memoryUsageA, memoryUsageB, syncTimeFw, syncTimeBw}, ...]}}], edges [{sourceId, destId,
// communicationCost (B)}]. Other fields (mbsInBatch, maxBatchSize, debug names) are allowed.
//
// What strata takes of it:
// - The nodes in a topological order of the edges (ties: the smaller id first) are the layers.
// - A stage on nodes [a, b) at degree t: the sum of their timePerSample, plus, unless it is the
//   last, the bytes of every edge leaving it over `bandwidth`; its memory the sum of
//   memoryUsageA · (stages − s) + memoryUsageB, Piper's a · ⌈s/d⌉ + b with one data-parallel
//   replica per stage (1F1B keeps stages − s microbatches in flight on stage s).
// - Of a node's TMPCs at a degree, the fastest (the smallest timePerSample; ties: the first).
//   Piper also chooses among a stage's TMPCs (activation recomputation among them) and adds
//   data parallelism per stage; strata's partitioner does neither.
// - The degrees are those every node offers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/models/schedule/partition.hpp"

namespace strata {
inline namespace models {

struct PiperInput {
  std::vector<int> degrees;                // offered by every node, ascending
  std::vector<PartitionProblem> problems;  // per degree: the layers and `stages` stages
  std::vector<std::int64_t> node_ids;      // per layer: its node's id
  std::vector<std::string> names;          // per layer: its node's name ("" without one)
  int max_devices = 0;
  double memory_per_device = 0;  // B
  double bandwidth = 0;          // B/s
};

// Reads `path` for a pipeline of `stages` stages. Throws InputError naming the file and the
// place: a missing or negative field, a node id given twice, an edge to an unknown node, a
// cycle, no degree offered by every node, a degree or TMPC list that is empty, fewer nodes than
// stages.
PiperInput read_piper_input(const std::string& path, int stages);

}  // namespace models
}  // namespace strata
