// What the MPI tests run, shared by the driver (one MPI process per worker, under mpirun) and
// the gtest that compares its results with in-process runs: the runs of ../training_runs.hpp, and
// the result file each rank writes.
//
// Result file (text, one record per line, doubles as %.17g so that they read back exactly):
//   loss <step> <value>            the batch's mean loss, summed over ranks
//   bytes <value>                  payload bytes sent by all ranks
//   accuracy <value>               on the first test images (when asked for)
//   weight <layer> <n> <v1> … <vn> weights and bias of each layer this rank holds
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../training_runs.hpp"
#include "strata/real/train/trainer.hpp"

namespace strata::real::mpi_test {

using training_runs::batch_indices;
using training_runs::mlp_plan;
using training_runs::train_config;

// The first `count` images of `all`.
inline LabelledImages first_images(const LabelledImages& all, std::int64_t count) {
  LabelledImages out;
  out.count = count;
  out.rows = all.rows;
  out.cols = all.cols;
  const std::int64_t pixels = all.rows * all.cols;
  out.images = Tensor<float>({count, pixels},
                             std::vector<float>(all.images.data(), all.images.data() + count * pixels));
  out.labels.assign(all.labels.begin(), all.labels.begin() + count);
  return out;
}

using Weights = std::map<std::string, std::vector<double>>;  // by layer ("/w/…"), with bias

// Weights of every layer held by `worker` (all workers when -1) in `ws`.
inline Weights weights_of(const Plan& plan, Workspace<double>& ws, WorkerId worker) {
  Weights out;
  for (BufferIndex b = 0; b < plan.buffers().size(); ++b) {
    const Buffer& buffer = plan.buffer(b);
    const auto at = buffer.id.find("/w/");
    if (at == std::string::npos || (worker >= 0 && buffer.worker != worker)) continue;
    out[buffer.id.substr(at)] = std::vector<double>(ws.data(b), ws.data(b) + ws.size(b));
  }
  return out;
}

struct RankResult {
  std::vector<double> losses;
  double bytes = -1;
  double accuracy = -1;
  Weights weights;
};

inline void write_result(const std::string& path, const RankResult& r) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  for (std::size_t s = 0; s < r.losses.size(); ++s) std::fprintf(f, "loss %zu %.17g\n", s, r.losses[s]);
  std::fprintf(f, "bytes %.17g\naccuracy %.17g\n", r.bytes, r.accuracy);
  for (const auto& [layer, values] : r.weights) {
    std::fprintf(f, "weight %s %zu", layer.c_str(), values.size());
    for (double v : values) std::fprintf(f, " %.17g", v);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}

inline RankResult read_result(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  RankResult r;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "loss") {
      std::size_t step = 0;
      double value = 0;
      fields >> step >> value;
      r.losses.push_back(value);
    } else if (key == "bytes") {
      fields >> r.bytes;
    } else if (key == "accuracy") {
      fields >> r.accuracy;
    } else if (key == "weight") {
      std::string layer;
      std::size_t n = 0;
      fields >> layer >> n;
      std::vector<double>& values = r.weights[layer];
      values.resize(n);
      for (double& v : values) fields >> v;
    }
    if (fields.fail()) throw std::runtime_error(path + ": bad line: " + line);
  }
  return r;
}

}  // namespace strata::real::mpi_test
