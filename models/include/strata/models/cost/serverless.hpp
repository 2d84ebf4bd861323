// Serverless resources (DESIGN.md, scheduling; docs/serverless.md): a function pool and an object
// store as a platform describes them (host properties, platforms/README.md), and what running
// work on them costs in time and money — the model the hybrid policy and the replay share.
//
// A function of m MB gets m / mb_per_vcpu vCPU-equivalents (AWS Lambda: one at 1,769 MB,
// proportionally below and above, at most max_vcpus), each at the host's speed (one vCPU's
// flop/s). A task of w flop on `threads` threads runs w / (speed · min(threads, vCPUs)): more
// memory speeds up a multi-threaded task, never a single-threaded one beyond one vCPU.
//
// Billing (AWS Lambda's rule): each invocation is billed its duration, rounded up to the
// billing granule (1 ms), times its memory in GB (1 GB = 1,024 MB), at price_per_gb_s, plus
// price_per_request. A run longer than max_duration_s is cut into invocations: each but the last
// checkpoints its state to the object store before the cap, the next restores it first.
//
// Cold starts: an invocation that finds no warm instance (none idle for less than keep_alive_s)
// waits a cold start drawn from a log-normal distribution (median, σ of the log) by a seeded
// generator of strata's own (splitmix64 and Box–Muller), so draws are the same on every
// platform and library version.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/models/cost/hardware.hpp"

namespace strata {
inline namespace models {

struct FunctionPool {
  std::vector<double> memory_mb;   // the sizes offered: {min, max} with `memory_range`, else a list
  bool memory_range = true;        // any whole MB in [memory_mb[0], memory_mb[1]]
  double mb_per_vcpu = 1769;       // MB per vCPU-equivalent
  double max_vcpus = 6;            // at the largest size
  double vcpu_flops = 0;           // flop/s of one vCPU-equivalent (the host's speed)
  double cold_start_median_s = 0;  // log-normal cold start
  double cold_start_sigma = 0;     // σ of its log (0: always the median)
  double keep_alive_s = 600;       // an idle instance stays warm this long
  double max_duration_s = 900;     // per invocation
  int concurrency = 1000;          // instances at once
  double price_per_gb_s = 0;       // USD
  double price_per_request = 0;    // USD
  double billing_granule_s = 1e-3;
};

struct ObjectStore {
  double request_latency_s = 0;     // per GET or PUT, before the first byte
  double connection_bandwidth = 0;  // B/s per connection
  double price_per_put = 0;         // USD per request
  double price_per_get = 0;         // USD per request
  double price_per_gb_month = 0;    // USD
  double price_per_hour = 0;        // USD, a VM's rent (a cache)
  bool cache = false;               // storage_kind=cache: an in-memory cache VM (dp_algo=cache_*)
};

// The pool of a host's properties (`function_*`), or none when the host has no
// `function_memory_mb`. Throws InputError "host 'fn-0': property 'function_memory_mb': ..." for
// a malformed or out-of-range value. `speed` is the host's (one vCPU's flop/s).
bool is_function_host(const std::map<std::string, std::string>& properties);
FunctionPool function_pool_from_properties(const std::string& host,
                                           const std::map<std::string, std::string>& properties,
                                           double speed);
// The object store of a host's properties (`storage_*`), or none.
bool is_storage_host(const std::map<std::string, std::string>& properties);
ObjectStore object_store_from_properties(const std::string& host,
                                         const std::map<std::string, std::string>& properties);
// The property names both readers know (for the platform checker's near-miss hints).
const std::vector<std::string>& serverless_property_names();

// Whether the pool offers functions of `memory_mb`.
bool memory_offered(const FunctionPool& pool, double memory_mb);
// Throws InputError naming `flag` when the pool does not offer `memory_mb` ("--memory: 100 MB
// is not offered (128 to 10240 MB)").
void check_memory_offered(const FunctionPool& pool, double memory_mb, const std::string& flag);

double vcpus(const FunctionPool& pool, double memory_mb);
// A worker's host when the worker runs in a function of `memory_mb` (docs/serverless.md):
// `instance` (the pool host's figures for one vCPU: flop/s and memory bandwidth) scaled by the
// function's vCPUs, as a worker's kernels (multi-threaded BLAS) use every vCPU it has; its
// memory is the function's (1 MB = 2^20 B, as AWS counts it); one worker slot; its price per
// hour the GB-seconds of an hour (memory / 1,024 x price_per_gb_s x 3,600), so that a report's
// cost per iteration is the functions' duration charge (without the 1 ms granule and requests).
HostSpec function_host_spec(HostSpec instance, const FunctionPool& pool, double memory_mb);
// Seconds for `flops` on `threads` threads in a function of `memory_mb`.
double function_compute_time(const FunctionPool& pool, double memory_mb, double flops, int threads);

// GB-seconds billed for `functions` invocations of `memory_mb` each lasting `seconds` (each
// rounded up to the granule).
double gb_seconds(const FunctionPool& pool, double functions, double memory_mb, double seconds);
double function_cost_usd(const FunctionPool& pool, double functions, double memory_mb, double seconds);

// A run of `work_s` seconds of work under the pool's cap: how many invocations, how many
// checkpoints, and the seconds billed in all (work, checkpoints and restores).
struct Invocations {
  int invocations = 0;
  int checkpoints = 0;
  double billed_s = 0;
  std::vector<double> durations_s;  // per invocation
};
// Throws InputError when the cap leaves no time for work once a restore and a checkpoint are
// paid ("a 900 s cap leaves no work after 500 s to restore and 500 s to checkpoint").
Invocations split_into_invocations(const FunctionPool& pool, double work_s, double checkpoint_s,
                                   double restore_s);

// How many of a function's `invocations` start cold when each is issued `gap_s` after the
// previous one returned: the first, and the others only when the instance was idle for at least
// keep_alive_s (a re-invocation after a checkpoint, gap 0, finds it warm while keep_alive_s > 0).
int cold_invocations(const FunctionPool& pool, int invocations, double gap_s);

// The k-th cold start (s) of the stream `seed`.
double cold_start_s(const FunctionPool& pool, std::uint64_t seed, std::uint64_t k);

// Moving `bytes` through the store in `requests` requests over `connections` connections.
double storage_transfer_s(const ObjectStore& store, double bytes, double requests, double connections);

}  // namespace models
}  // namespace strata
