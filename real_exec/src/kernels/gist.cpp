// GIST's per-site steps (partition, extract, write-back, averaging) on the GCN of gcn.cpp; the
// local training and the rounds are in reference/gcn_train.cpp.
#include "strata/real/kernels/gcn.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "gcn_math.hpp"
#include "strata/traces/error.hpp"

namespace strata::real {
namespace {

using gcn_detail::check_sites;

// Rows `rows` and columns `cols` of a [*, width] matrix, into a dense [rows, cols] one.
template <typename T>
Tensor<T> gather(const Tensor<T>& from, const std::vector<std::int64_t>& rows,
                 const std::vector<std::int64_t>& cols) {
  const std::int64_t width = from.dim(from.rank() - 1);
  const auto r = static_cast<std::int64_t>(rows.size()), c = static_cast<std::int64_t>(cols.size());
  Tensor<T> out = Tensor<T>::zeros(from.rank() == 1 ? Shape{c} : Shape{r, c});
  for (std::int64_t i = 0; i < (from.rank() == 1 ? 1 : r); ++i) {
    const T* src = from.data() + (from.rank() == 1 ? 0 : rows[i] * width);
    for (std::int64_t j = 0; j < c; ++j) out[i * c + j] = src[cols[j]];
  }
  return out;
}

// The inverse of gather, times `factor`.
template <typename T>
void scatter(const Tensor<T>& from, const std::vector<std::int64_t>& rows,
             const std::vector<std::int64_t>& cols, T factor, Tensor<T>& to) {
  const std::int64_t width = to.dim(to.rank() - 1);
  const auto r = static_cast<std::int64_t>(rows.size()), c = static_cast<std::int64_t>(cols.size());
  for (std::int64_t i = 0; i < (to.rank() == 1 ? 1 : r); ++i) {
    T* dst = to.data() + (to.rank() == 1 ? 0 : rows[i] * width);
    for (std::int64_t j = 0; j < c; ++j) dst[cols[j]] = from[i * c + j] * factor;
  }
}

template <typename T>
void scale(Tensor<T>& t, T factor) {
  for (std::int64_t i = 0; i < t.size(); ++i) t[i] *= factor;
}

std::vector<std::int64_t> all_units(std::int64_t n) {
  std::vector<std::int64_t> units(static_cast<std::size_t>(n));
  std::iota(units.begin(), units.end(), std::int64_t{0});
  return units;
}

// The rows (inputs) and columns (outputs) of layer l that site `site` owns.
template <typename T>
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> site_slices(const GcnParameters<T>& global,
                                                                            const HiddenPartition& p,
                                                                            std::int64_t site,
                                                                            std::int64_t l) {
  STRATA_ASSERT(
      static_cast<std::int64_t>(p.units.size()) == global.layers() - 1 && site >= 0 && site < p.sites,
      "partition of " + std::to_string(p.units.size()) + " hidden layers for site " + std::to_string(site));
  const bool first = l == 0, last = l + 1 == global.layers();
  return {first ? all_units(global.weights[l].dim(0)) : p.units[l - 1][site],
          last ? all_units(global.weights[l].dim(1)) : p.units[l][site]};
}

}  // namespace

HiddenPartition random_hidden_partition(std::span<const std::int64_t> hidden_widths, std::int64_t sites,
                                        std::uint64_t seed) {
  check_sites(sites, hidden_widths);
  HiddenPartition p;
  p.sites = sites;
  std::mt19937_64 rng(seed);
  for (std::size_t l = 0; l < hidden_widths.size(); ++l) {
    const std::vector<std::int64_t> order = shuffled_indices(hidden_widths[l], rng);
    std::vector<std::vector<std::int64_t>> sets(static_cast<std::size_t>(sites));
    for (std::size_t u = 0; u < order.size(); ++u) sets[u % sites].push_back(order[u]);
    for (auto& set : sets) std::sort(set.begin(), set.end());
    p.units.push_back(std::move(sets));
  }
  return p;
}

template <typename T>
GcnParameters<T> extract_subgcn(const GcnParameters<T>& global, const HiddenPartition& partition,
                                std::int64_t site) {
  GcnParameters<T> sub;
  sub.layer_norm = global.layer_norm;
  for (std::int64_t l = 0; l < global.layers(); ++l) {
    const auto [rows, cols] = site_slices(global, partition, site, l);
    sub.weights.push_back(gather(global.weights[l], rows, cols));
    if (l + 1 == global.layers()) scale(sub.weights.back(), static_cast<T>(partition.sites));
    sub.biases.push_back(gather(global.biases[l], {}, cols));
  }
  return sub;
}

template <typename T>
void write_back_subgcn(GcnParameters<T>& global, const HiddenPartition& partition, std::int64_t site,
                       const GcnParameters<T>& sub) {
  for (std::int64_t l = 0; l < global.layers(); ++l) {
    const auto [rows, cols] = site_slices(global, partition, site, l);
    STRATA_ASSERT(sub.weights[l].shape() ==
                      (Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols.size())}),
                  "sub-GCN layer " + std::to_string(l) + " does not match its partition");
    const T factor = l + 1 == global.layers() ? T{1} / static_cast<T>(partition.sites) : T{1};
    scatter(sub.weights[l], rows, cols, factor, global.weights[l]);
    if (l + 1 < global.layers()) scatter(sub.biases[l], {}, cols, T{1}, global.biases[l]);
  }
}

template <typename T>
void average_shared(GcnParameters<T>& global, std::span<const GcnParameters<T>> subs) {
  STRATA_ASSERT(!subs.empty(), "averaging the shared parameters of no sites");
  Tensor<T>& bias = global.biases.back();
  bias.fill(T{0});
  for (const GcnParameters<T>& sub : subs) {
    for (std::int64_t j = 0; j < bias.size(); ++j) bias[j] += sub.biases.back()[j];
  }
  const auto m = static_cast<T>(subs.size());
  for (std::int64_t j = 0; j < bias.size(); ++j) bias[j] /= m;
}

// T is a type here, so it cannot take the parentheses the check asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define STRATA_INSTANTIATE(T)                                                                  \
  template GcnParameters<T> extract_subgcn<T>(const GcnParameters<T>&, const HiddenPartition&, \
                                              std::int64_t);                                   \
  template void write_back_subgcn<T>(GcnParameters<T>&, const HiddenPartition&, std::int64_t,  \
                                     const GcnParameters<T>&);                                 \
  template void average_shared<T>(GcnParameters<T>&, std::span<const GcnParameters<T>>);

STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace strata::real
