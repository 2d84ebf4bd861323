// Internal to job_schedule.cpp: each policy's order of the jobs present (job_schedule.hpp), kept
// up to date as jobs arrive, start, are preempted and finish, over the structures of
// job_orders.hpp, so that choosing the jobs that run costs O(log n) per job looked at.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "strata/models/search/job_schedule.hpp"

namespace strata {
inline namespace models {
namespace job_orders {

// The jobs by index, as the engine and the orders read them, and their progress, which the
// engine writes.
struct Stream {
  explicit Stream(const std::vector<ClusterJob>& jobs);
  std::size_t size() const { return gpus.size(); }
  std::vector<double> arrival, service;
  std::vector<double> remaining;  // service left (s)
  std::vector<double> attained;   // GPU-seconds run
  std::vector<int> gpus;
  std::vector<int> by_arrival;     // the jobs by arrival (ties: index)
  std::vector<std::size_t> queue;  // las: the thresholds at or below its attained service
};

// A policy's order of the jobs present, told of every change to them by the engine. choose()
// appends to `chosen` the jobs that run from now on; `running`: the jobs that ran until now.
class JobOrder {
 public:
  virtual ~JobOrder() = default;
  virtual void arrive(int job, double now) = 0;
  virtual void choose(double now, std::size_t present, const std::vector<int>& running,
                      std::vector<int>& chosen) = 0;
  virtual void start(int job, double now) = 0;  // chosen while it waited
  virtual void preempt(int job, double now) = 0;
  virtual void finish(int job) = 0;
  virtual void requeue(int /*job*/, std::size_t /*from*/) {}  // las: its queue rose from `from`
};

// The order of settings.policy over `stream` (which must outlive it).
std::unique_ptr<JobOrder> order_of(const Stream& stream, const JobSettings& settings);

}  // namespace job_orders
}  // namespace models
}  // namespace strata
