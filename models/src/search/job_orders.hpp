// Internal to job_schedule.cpp: the structures that keep the jobs present in each policy's order,
// so that an event costs O(log n) per job it starts, preempts or looks at rather than a sort of
// every job present (job_schedule.hpp states the complexity of each policy).
//
// - GpuTree: jobs at fixed positions of a static order (fifo: arrival; sjf: service, then
//   arrival; a las queue: arrival), each present or not, and the first present job at or after a
//   position whose GPUs fit a limit: the policy's next job, or with backfill the next that fits.
// - LineTournament: themis's waiting jobs of one GPU count. A waiting job's rho grows linearly in
//   time, at a rate of its own (1 / (service × factor)), so their order changes as time passes;
//   a kinetic tournament (Basch, Guibas and Hershberger, "Data structures for mobile data",
//   J. Algorithms 31, 1999) keeps each subtree's leader and the time its two children's leaders
//   cross, and re-decides a node only once that time has come. A leader may trail a job below it
//   by rounding (the slack its bounds allow for); the engine evaluates rho exactly for every job
//   it takes and uses the tournament only to bound the jobs it has not looked at
//   (LineTournament::Cursor), so its order is exactly the order of the rho values as evaluated
//   one by one.
#pragma once

#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace strata {
inline namespace models {
namespace job_orders {

inline constexpr std::size_t kNoPosition = std::numeric_limits<std::size_t>::max();

class GpuTree {
 public:
  static constexpr int kAnyGpus = std::numeric_limits<int>::max() - 1;  // a limit every job fits

  explicit GpuTree(std::size_t positions);
  void set(std::size_t position, int gpus);  // a job needing `gpus` is present at `position`
  void clear(std::size_t position);          // none is
  // The first position >= from whose job needs <= limit GPUs; kNoPosition if none.
  std::size_t first_fitting(std::size_t from, int limit) const;

 private:
  static constexpr int kEmpty = std::numeric_limits<int>::max();
  std::size_t leaves_ = 1;
  std::vector<int> least_;  // the fewest GPUs of a job present below each node (heap layout)
};

// A waiting job as a line in time: its value at t is ((t - arrival) + remaining) / service, the
// remaining service frozen while it waits (rho times its group's factor).
struct JobLine {
  double arrival = 0, remaining = 0, service = 1;
  double per_second = 1;  // 1 / service: a product is cheaper, and the value only bounds rho
  double value(double t) const { return ((t - arrival) + remaining) * per_second; }
};

class LineTournament {
 public:
  explicit LineTournament(std::size_t slots);  // jobs that may wait here at once, each at its slot
  // Moves the leaders to time `t` (never earlier than the last call).
  void advance(double t);
  void insert(std::size_t slot, int job, const JobLine& line);  // at the time of the last advance()
  void erase(std::size_t slot);
  bool empty() const { return leader_[1] < 0; }

  // The waiting jobs in falling value at the time of the last advance(), lazily: each next()
  // yields the leader of the best subtree not yet visited, and bound() is an upper bound of the
  // value of every job not yet yielded.
  class Cursor {
   public:
    void reset(const LineTournament& tournament);  // from the best job, at the tournament's time
    bool done() const { return frontier_.empty(); }
    double bound() const;  // of the jobs not yet yielded; only when !done()
    int next();            // the job leading the best subtree left; only when !done()

   private:
    void push(std::size_t node);
    const LineTournament* tournament_ = nullptr;
    std::vector<std::pair<double, std::size_t>> frontier_;  // subtrees by their leader's value (a heap)
  };

 private:
  void decide(std::size_t node);  // its leader and crossing time from its children's, at now_
  void advance_node(std::size_t node);
  void update_above(std::size_t node);
  void update_slack();

  std::size_t leaves_ = 1;
  double levels_ = 1;
  double now_ = 0;
  double least_service_ = std::numeric_limits<double>::infinity();  // of every job inserted
  double slack_ = 0;            // what the leaders' rounding may hide, in value
  std::vector<JobLine> lines_;  // by slot
  std::vector<int> job_;        // by slot
  std::vector<int> leader_;     // the leading slot below each node, -1 for none (heap layout)
  std::vector<double> own_;     // the time each node's two leaders cross (inf: never)
  std::vector<double> cross_;   // the earliest of own_ at or below each node
};

}  // namespace job_orders
}  // namespace models
}  // namespace strata
