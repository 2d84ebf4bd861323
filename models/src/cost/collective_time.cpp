// Collective and point-to-point times of the analytical estimate (analytical.hpp): the α-β
// costs of Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations
// in MPICH" (IJHPCA 2005).
#include "strata/models/cost/analytical.hpp"

#include <cmath>

#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {

double p2p_time(double bytes, double bw, double latency) {
  if (bytes <= 0) return latency;
  STRATA_ASSERT(bw > 0, "p2p over a link without bandwidth");
  return latency + bytes / bw;
}

double allreduce_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency) {
  if (ranks <= 1) return 0;
  STRATA_ASSERT(bw > 0 || bytes <= 0, "allreduce over a link without bandwidth");
  const double n = ranks;
  const double transfer = bytes > 0 ? bytes / bw : 0;
  switch (algo) {
    case CollectiveAlgo::tree:
      return 2 * std::ceil(std::log2(n)) * (latency + transfer);
    case CollectiveAlgo::halving_doubling:
      return 2 * std::log2(n) * latency + 2 * (n - 1) / n * transfer;
    // Through an object store (latency: per request; bw: per connection), each rank's requests
    // in sequence (collectives.hpp): the merger's PUT, n - 1 GETs and the sum's PUT, then the
    // others' GET of the sum; scatter-reduce: n - 1 shard PUTs, n - 1 GETs, one PUT, n - 1 GETs.
    case CollectiveAlgo::storage_allreduce:
    case CollectiveAlgo::cache_allreduce:
      return (n + 2) * (latency + transfer);
    case CollectiveAlgo::storage_scatter_reduce:
    case CollectiveAlgo::cache_scatter_reduce:
      return (3 * n - 2) * (latency + transfer / n);
    // A parameter server (latency and bw: the server's link): n pushes share it, then n pulls.
    case CollectiveAlgo::parameter_server:
      return 2 * (latency + n * transfer);
    case CollectiveAlgo::none:
    case CollectiveAlgo::ring:
    case CollectiveAlgo::hierarchical:
      break;
  }
  return 2 * (n - 1) * latency + 2 * (n - 1) / n * transfer;
}

double reduce_scatter_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency) {
  if (ranks <= 1) return 0;
  STRATA_ASSERT(bw > 0 || bytes <= 0, "reduce-scatter over a link without bandwidth");
  const double n = ranks;
  const double transfer = bytes > 0 ? bytes / bw : 0;
  if (algo == CollectiveAlgo::halving_doubling) return std::log2(n) * latency + (n - 1) / n * transfer;
  return (n - 1) * latency + (n - 1) / n * transfer;
}

double allgather_time(CollectiveAlgo algo, int ranks, double bytes, double bw, double latency) {
  return reduce_scatter_time(algo, ranks, bytes, bw, latency);
}

}  // namespace models
}  // namespace strata
