// Serverless resources: the function pool and object store model (serverless.hpp).
#include "strata/models/cost/serverless.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <string_view>

#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata {
inline namespace models {
namespace {

[[noreturn]] void fail(const std::string& host, const std::string& key, const std::string& problem) {
  throw InputError("host '" + host + "': property '" + key + "': " + problem);
}

// A plain finite number in [lo, hi] (no unit: the property's name says it).
double number(const std::string& host, const std::string& key, std::string_view text, double lo, double hi) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v))
    fail(host, key, "'" + std::string(text) + "' is not a number");
  if (v < lo || v > hi)
    fail(host, key, format_number(v) + " is outside [" + format_number(lo) + ", " + format_number(hi) + "]");
  return v;
}

double read(const std::string& host, const std::map<std::string, std::string>& p, const std::string& key,
            double fallback, double lo, double hi) {
  const auto it = p.find(key);
  return it == p.end() ? fallback : number(host, key, it->second, lo, hi);
}

// Lambda's limits bound what a platform may declare: 128 MB to 10,240 MB today; far beyond for
// a provider that offers more.
constexpr double kMaxMemoryMb = 1e7;

// splitmix64 (Steele, Lea and Flood, OOPSLA 2014): a 64-bit mix with no state beyond its input.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double unit_open(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) / 9007199254740992.0; }

}  // namespace

const std::vector<std::string>& serverless_property_names() {
  static const std::vector<std::string> names = {"function_memory_mb",         "function_mb_per_vcpu",
                                                 "function_max_vcpus",         "function_cold_start_median_s",
                                                 "function_cold_start_sigma",  "function_keep_alive_s",
                                                 "function_max_duration_s",    "function_concurrency",
                                                 "function_price_per_gb_s",    "function_price_per_request",
                                                 "storage_request_latency_s",  "storage_connection_bw",
                                                 "storage_price_per_put",      "storage_price_per_get",
                                                 "storage_price_per_gb_month", "storage_kind",
                                                 "storage_price_per_hour"};
  return names;
}

bool is_function_host(const std::map<std::string, std::string>& p) {
  return p.count("function_memory_mb") != 0;
}
bool is_storage_host(const std::map<std::string, std::string>& p) {
  return p.count("storage_connection_bw") != 0;
}

FunctionPool function_pool_from_properties(const std::string& host,
                                           const std::map<std::string, std::string>& p, double speed) {
  FunctionPool pool;
  const auto it = p.find("function_memory_mb");
  if (it == p.end())
    fail(host, "function_memory_mb", "missing (the sizes offered: 128-10240, or 128,512,...)");
  const std::string& text = it->second;
  if (const std::size_t dash = text.find('-'); dash != std::string::npos && dash > 0) {
    pool.memory_range = true;
    const double lo =
        number(host, "function_memory_mb", std::string_view(text).substr(0, dash), 1, kMaxMemoryMb);
    const double hi =
        number(host, "function_memory_mb", std::string_view(text).substr(dash + 1), 1, kMaxMemoryMb);
    if (hi < lo) fail(host, "function_memory_mb", "range " + text + " ends below its start");
    pool.memory_mb = {lo, hi};
  } else {
    pool.memory_range = false;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      pool.memory_mb.push_back(number(host, "function_memory_mb",
                                      std::string_view(text).substr(start, comma - start), 1, kMaxMemoryMb));
      start = comma + 1;
    }
    std::sort(pool.memory_mb.begin(), pool.memory_mb.end());
  }
  pool.mb_per_vcpu = read(host, p, "function_mb_per_vcpu", 1769, 1, kMaxMemoryMb);
  pool.max_vcpus = read(host, p, "function_max_vcpus", 6, 1e-3, 1e4);
  pool.vcpu_flops = speed;
  pool.cold_start_median_s = read(host, p, "function_cold_start_median_s", 0, 0, 3600);
  pool.cold_start_sigma = read(host, p, "function_cold_start_sigma", 0, 0, 10);
  pool.keep_alive_s = read(host, p, "function_keep_alive_s", 600, 0, 1e7);
  pool.max_duration_s = read(host, p, "function_max_duration_s", 900, 1e-3, 1e7);
  pool.concurrency = static_cast<int>(read(host, p, "function_concurrency", 1000, 1, 1e7));
  pool.price_per_gb_s = read(host, p, "function_price_per_gb_s", 0, 0, 1);
  pool.price_per_request = read(host, p, "function_price_per_request", 0, 0, 1);
  return pool;
}

ObjectStore object_store_from_properties(const std::string& host,
                                         const std::map<std::string, std::string>& p) {
  ObjectStore s;
  s.request_latency_s = read(host, p, "storage_request_latency_s", 0, 0, 3600);
  s.connection_bandwidth = read(host, p, "storage_connection_bw", 0, 1, 1e15);
  s.price_per_put = read(host, p, "storage_price_per_put", 0, 0, 1);
  s.price_per_get = read(host, p, "storage_price_per_get", 0, 0, 1);
  s.price_per_gb_month = read(host, p, "storage_price_per_gb_month", 0, 0, 1e3);
  s.price_per_hour = read(host, p, "storage_price_per_hour", 0, 0, 1e4);
  if (const auto kind = p.find("storage_kind"); kind != p.end()) {
    if (kind->second != "object" && kind->second != "cache")
      fail(host, "storage_kind", "'" + kind->second + "' is neither object nor cache");
    s.cache = kind->second == "cache";
  }
  return s;
}

bool memory_offered(const FunctionPool& pool, double memory_mb) {
  if (pool.memory_range)
    return memory_mb >= pool.memory_mb[0] && memory_mb <= pool.memory_mb[1] &&
           std::floor(memory_mb) == memory_mb;
  return std::find(pool.memory_mb.begin(), pool.memory_mb.end(), memory_mb) != pool.memory_mb.end();
}

void check_memory_offered(const FunctionPool& pool, double memory_mb, const std::string& flag) {
  if (memory_offered(pool, memory_mb)) return;
  std::string sizes;
  if (pool.memory_range) {
    sizes = format_number(pool.memory_mb[0]) + " to " + format_number(pool.memory_mb[1]) + " MB, whole MB";
  } else {
    for (double m : pool.memory_mb) sizes += (sizes.empty() ? "" : ", ") + format_number(m);
    sizes += " MB";
  }
  throw InputError(flag + ": " + format_number(memory_mb) + " MB is not offered (" + sizes + ")");
}

double vcpus(const FunctionPool& pool, double memory_mb) {
  return std::min(pool.max_vcpus, memory_mb / pool.mb_per_vcpu);
}

HostSpec function_host_spec(HostSpec instance, const FunctionPool& pool, double memory_mb) {
  const double v = vcpus(pool, memory_mb);
  for (double* f : {&instance.flops_fp32, &instance.flops_bf16, &instance.flops_fp16, &instance.flops_fp64,
                    &instance.mem_bw})
    *f *= v;
  instance.gpu_memory = memory_mb * 1048576.0;
  instance.slots = 1;
  // Billed by the GB-second while it runs: the same money per hour (granules and requests aside).
  instance.price_per_hour = memory_mb / 1024 * pool.price_per_gb_s * 3600;
  return instance;
}

double function_compute_time(const FunctionPool& pool, double memory_mb, double flops, int threads) {
  const double share = std::min(static_cast<double>(std::max(threads, 1)), vcpus(pool, memory_mb));
  return flops / (pool.vcpu_flops * share);
}

double gb_seconds(const FunctionPool& pool, double functions, double memory_mb, double seconds) {
  const double billed = std::ceil(seconds / pool.billing_granule_s - 1e-9) * pool.billing_granule_s;
  return functions * memory_mb / 1024.0 * billed;
}

double function_cost_usd(const FunctionPool& pool, double functions, double memory_mb, double seconds) {
  return gb_seconds(pool, functions, memory_mb, seconds) * pool.price_per_gb_s +
         functions * pool.price_per_request;
}

Invocations split_into_invocations(const FunctionPool& pool, double work_s, double checkpoint_s,
                                   double restore_s) {
  Invocations out;
  const double cap = pool.max_duration_s;
  if (restore_s + checkpoint_s >= cap && work_s > cap)
    throw InputError("a " + format_number(cap) + " s cap leaves no work after " + format_number(restore_s) +
                     " s to restore and " + format_number(checkpoint_s) + " s to checkpoint");
  double left = work_s;
  for (bool first = true;; first = false) {
    const double before = first ? 0 : restore_s;
    if (before + left <= cap) {  // the last invocation: restore, the rest of the work
      out.durations_s.push_back(before + left);
      break;
    }
    const double work = cap - before - checkpoint_s;
    out.durations_s.push_back(cap);
    left -= work;
    ++out.checkpoints;
  }
  out.invocations = static_cast<int>(out.durations_s.size());
  for (double d : out.durations_s) out.billed_s += d;
  return out;
}

int cold_invocations(const FunctionPool& pool, int invocations, double gap_s) {
  if (invocations <= 0) return 0;
  return gap_s >= pool.keep_alive_s ? invocations : 1;
}

double cold_start_s(const FunctionPool& pool, std::uint64_t seed, std::uint64_t k) {
  if (pool.cold_start_sigma == 0) return pool.cold_start_median_s;
  const std::uint64_t a = mix(seed ^ mix(2 * k)), b = mix(seed ^ mix(2 * k + 1));
  const double z = std::sqrt(-2 * std::log(unit_open(a))) * std::cos(2 * std::numbers::pi * unit_open(b));
  return pool.cold_start_median_s * std::exp(pool.cold_start_sigma * z);
}

double storage_transfer_s(const ObjectStore& store, double bytes, double requests, double connections) {
  const double c = std::max(1.0, connections);
  return std::ceil(requests / c) * store.request_latency_s + bytes / (store.connection_bandwidth * c);
}

}  // namespace models
}  // namespace strata
