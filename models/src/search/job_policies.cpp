// The policies' orders of the jobs present: see job_policies.hpp.
#include "job_policies.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "job_orders.hpp"
#include "strata/traces/error.hpp"

namespace strata {
inline namespace models {
namespace job_orders {
namespace {

// fifo and sjf: the waiting jobs in a static order, the running ones keeping their GPUs.
class StaticOrder final : public JobOrder {
 public:
  StaticOrder(const Stream& stream, const JobSettings& settings)
      : stream_(stream), settings_(settings), position_(stream.size()), tree_(stream.size()) {
    job_at_ = stream.by_arrival;
    if (settings.policy == JobPolicy::sjf)  // service, then arrival, then index
      std::stable_sort(job_at_.begin(), job_at_.end(),
                       [&](int a, int b) { return stream.service[a] < stream.service[b]; });
    for (std::size_t p = 0; p < job_at_.size(); ++p) position_[job_at_[p]] = p;
  }
  void arrive(int job, double) override { tree_.set(position_[job], stream_.gpus[job]); }
  void choose(double, std::size_t, const std::vector<int>& running, std::vector<int>& chosen) override {
    chosen = running;
    int free = settings_.cluster_gpus - busy_;
    for (std::size_t from = 0; free > 0;) {
      const std::size_t p = tree_.first_fitting(from, settings_.backfill ? free : GpuTree::kAnyGpus);
      if (p == kNoPosition) break;
      const int job = job_at_[p];
      if (stream_.gpus[job] > free) break;  // the next in line does not fit: it blocks the rest
      chosen.push_back(job);
      free -= stream_.gpus[job];
      from = p + 1;
    }
  }
  void start(int job, double) override {
    tree_.clear(position_[job]);
    busy_ += stream_.gpus[job];
  }
  void preempt(int, double) override { STRATA_ASSERT(false, "jobs: fifo and sjf never preempt"); }
  void finish(int job) override { busy_ -= stream_.gpus[job]; }

 private:
  const Stream& stream_;
  const JobSettings& settings_;
  std::vector<std::size_t> position_;  // by job
  std::vector<int> job_at_;            // by position
  GpuTree tree_;                       // the waiting jobs
  int busy_ = 0;                       // GPUs of the running jobs
};

// las: every job present, running or waiting, in its queue's arrival order.
class LasOrder final : public JobOrder {
 public:
  LasOrder(const Stream& stream, const JobSettings& settings)
      : stream_(stream), settings_(settings), rank_(stream.size()), queues_(kMaxLasThresholds + 1) {
    for (std::size_t r = 0; r < stream.size(); ++r) rank_[stream.by_arrival[r]] = r;
  }
  void arrive(int job, double) override { queue(stream_.queue[job]).set(rank_[job], stream_.gpus[job]); }
  void choose(double, std::size_t, const std::vector<int>&, std::vector<int>& chosen) override {
    int free = settings_.cluster_gpus;
    for (const std::unique_ptr<GpuTree>& tree : queues_) {
      for (std::size_t from = 0; tree && free > 0;) {
        const std::size_t p = tree->first_fitting(from, settings_.backfill ? free : GpuTree::kAnyGpus);
        if (p == kNoPosition) break;
        const int job = stream_.by_arrival[p];
        if (stream_.gpus[job] > free) return;  // it blocks every job after it
        chosen.push_back(job);
        free -= stream_.gpus[job];
        from = p + 1;
      }
    }
  }
  void start(int, double) override {}
  void preempt(int, double) override {}
  void finish(int job) override { queue(stream_.queue[job]).clear(rank_[job]); }
  void requeue(int job, std::size_t from) override {
    queue(from).clear(rank_[job]);
    queue(stream_.queue[job]).set(rank_[job], stream_.gpus[job]);
  }

 private:
  GpuTree& queue(std::size_t q) {
    if (!queues_[q]) queues_[q] = std::make_unique<GpuTree>(stream_.size());  // 8n bytes, once used
    return *queues_[q];
  }
  const Stream& stream_;
  const JobSettings& settings_;
  std::vector<std::size_t> rank_;                 // by job: its place in the arrival order
  std::vector<std::unique_ptr<GpuTree>> queues_;  // by queue
};

// A job's place in themis's order, as job_schedule.hpp defines it: the primary key -rho, then
// arrival, then the job's index.
struct Key {
  double primary = 0;
  double arrival = 0;
  int job = -1;
  friend bool operator<(const Key& a, const Key& b) {
    return std::tie(a.primary, a.arrival, a.job) < std::tie(b.primary, b.arrival, b.job);
  }
};
const auto kLeastFirst = [](const Key& a, const Key& b) { return b < a; };

// themis: the running jobs' rho evaluated at every choice (they are at most the cluster's GPUs);
// the waiting ones in a LineTournament per GPU count, whose jobs share the factor max(1, N·gpus/G)
// and so keep their order as N changes. An allocation takes jobs from a heap of candidates: the
// running jobs, and per group either its best job (rho evaluated) or a bound on every job it has
// not yielded yet; a bound that comes first is refined by pulling jobs from the group's cursor
// until its best evaluated job beats the bound of the rest. The jobs taken are thus in exactly
// the order of their evaluated keys, and only a handful per group are evaluated.
class ThemisOrder final : public JobOrder {
 public:
  ThemisOrder(const Stream& stream, const JobSettings& settings);
  void arrive(int job, double now) override { wait(job, now); }
  void choose(double now, std::size_t present, const std::vector<int>& running,
              std::vector<int>& chosen) override;
  void start(int job, double now) override { at(job, now).waiting.erase(slot_[job]); }
  void preempt(int job, double now) override { wait(job, now); }
  void finish(int) override {}

 private:
  struct Group {
    Group(int gpus, std::size_t slots) : gpus(gpus), waiting(slots) {}
    int gpus;
    LineTournament waiting;
    double time = -INFINITY;  // of its last advance
    // This choice's: the factor, the cursor and the jobs it yielded (a heap, least key first).
    double factor = 1;
    LineTournament::Cursor cursor;
    std::vector<Key> seen;
  };
  struct Candidate {
    Key key;             // a bound's: its primary alone
    bool bound = false;  // a lower bound of the keys of a group's jobs not yet taken
    int group = -1;      // the job's (or bound's) group; -1: a running job
    friend bool operator<(const Candidate& a, const Candidate& b) {  // a bound before a job of its key
      return std::tie(a.key.primary, b.bound, a.key.arrival, a.key.job) <
             std::tie(b.key.primary, a.bound, b.key.arrival, b.key.job);
    }
    static bool later(const Candidate& a, const Candidate& b) { return b < a; }  // the heap's order
  };
  Group& at(int job, double now);
  void wait(int job, double now);
  Key key(int job) const;
  void push(const Candidate& c);
  // Its best seen job, or the bound of its jobs not yet taken, into the heap (or at its end).
  void push_group(int g, bool heap = true);
  void refine(Group& group);

  const Stream& stream_;
  const JobSettings& settings_;
  std::vector<Group> groups_;
  std::vector<int> group_;         // by job
  std::vector<std::size_t> slot_;  // by job: its leaf in its group's tournament
  std::vector<Candidate> heap_;    // least first
  std::vector<Key> running_;       // this choice's running jobs, by key
  double now_ = 0;
  std::size_t present_ = 0;
};

ThemisOrder::ThemisOrder(const Stream& stream, const JobSettings& settings)
    : stream_(stream), settings_(settings), group_(stream.size()), slot_(stream.size()) {
  std::map<int, int> group_of;  // by GPU count
  std::vector<std::size_t> slots;
  std::vector<int> gpus;
  for (int job : stream.by_arrival) {
    const auto [it, added] = group_of.emplace(stream.gpus[job], static_cast<int>(slots.size()));
    if (added) {
      slots.push_back(0);
      gpus.push_back(stream.gpus[job]);
    }
    group_[job] = it->second;
    slot_[job] = slots[it->second]++;
  }
  groups_.reserve(slots.size());  // no reallocation: each cursor points at its group's tournament
  for (std::size_t g = 0; g < slots.size(); ++g) groups_.emplace_back(gpus[g], slots[g]);
}

ThemisOrder::Group& ThemisOrder::at(int job, double now) {
  Group& group = groups_[group_[job]];
  if (group.time < now) {
    group.waiting.advance(now);
    group.time = now;
  }
  return group;
}

void ThemisOrder::wait(int job, double now) {
  const double service = stream_.service[job];
  at(job, now).waiting.insert(slot_[job], job,
                              {stream_.arrival[job], stream_.remaining[job], service, 1 / service});
}

// As job_schedule.hpp (and strata before the tournaments) evaluates it, to the bit.
Key ThemisOrder::key(int job) const {
  const double shared = (now_ - stream_.arrival[job]) + stream_.remaining[job];
  const double alone = stream_.service[job] * std::max(1.0, static_cast<double>(present_) *
                                                                stream_.gpus[job] / settings_.cluster_gpus);
  return {-shared / alone, stream_.arrival[job], job};
}

void ThemisOrder::push(const Candidate& c) {
  heap_.push_back(c);
  std::push_heap(heap_.begin(), heap_.end(), Candidate::later);
}

void ThemisOrder::push_group(int g, bool heap) {
  Group& group = groups_[g];
  double lower = INFINITY;
  if (!group.seen.empty()) lower = group.seen.front().primary;
  if (!group.cursor.done()) lower = std::min(lower, -group.cursor.bound() / group.factor);
  if (lower == INFINITY) return;
  if (heap)
    push({{lower, 0, -1}, true, g});
  else
    heap_.push_back({{lower, 0, -1}, true, g});
}

// Pulls jobs until the best one seen comes strictly before every job not yet seen. The cursor
// bounds the tournament's value, rho × factor, with a margin for rounding; the division by the
// factor rounds once more, well within it.
void ThemisOrder::refine(Group& group) {
  while (!group.cursor.done()) {
    const double lower = -group.cursor.bound() / group.factor;
    if (!group.seen.empty() && group.seen.front().primary < lower) break;
    group.seen.push_back(key(group.cursor.next()));
    std::push_heap(group.seen.begin(), group.seen.end(), kLeastFirst);
  }
}

void ThemisOrder::choose(double now, std::size_t present, const std::vector<int>& running,
                         std::vector<int>& chosen) {
  now_ = now;
  present_ = present;
  running_.clear();
  for (int job : running) running_.push_back(key(job));
  std::sort(running_.begin(), running_.end());
  heap_.clear();
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    group.seen.clear();
    if (group.waiting.empty()) continue;
    if (group.time < now) {
      group.waiting.advance(now);
      group.time = now;
    }
    group.factor = std::max(1.0, static_cast<double>(present) * group.gpus / settings_.cluster_gpus);
    group.cursor.reset(group.waiting);
    push_group(static_cast<int>(g), false);
  }
  std::make_heap(heap_.begin(), heap_.end(), Candidate::later);
  // The running jobs, in their order, merged with the heap of the groups' candidates.
  std::size_t next_running = 0;
  for (int free = settings_.cluster_gpus; free > 0;) {
    Candidate c;
    if (next_running < running_.size() &&
        (heap_.empty() || Candidate{running_[next_running], false, -1} < heap_.front())) {
      c = {running_[next_running++], false, -1};
    } else if (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Candidate::later);
      c = heap_.back();
      heap_.pop_back();
    } else {
      return;
    }
    Group* group = c.group < 0 ? nullptr : &groups_[c.group];
    if (c.bound) {
      // With backfill a group too wide for the GPUs left is skipped whole (all its jobs need as
      // many); without, its best job may be the one that stops the allocation.
      if (group->gpus > free && settings_.backfill) continue;
      refine(*group);
      if (!group->seen.empty()) push({group->seen.front(), false, c.group});
      continue;
    }
    const int job = c.key.job;
    if (stream_.gpus[job] > free) {
      if (!settings_.backfill) return;  // it blocks every job after it
      continue;
    }
    chosen.push_back(job);
    free -= stream_.gpus[job];
    if (!group) continue;
    std::pop_heap(group->seen.begin(), group->seen.end(), kLeastFirst);
    group->seen.pop_back();
    push_group(c.group);
  }
}

}  // namespace

Stream::Stream(const std::vector<ClusterJob>& jobs) {
  for (const ClusterJob& j : jobs) {
    arrival.push_back(j.arrival_s);
    service.push_back(j.service_s);
    gpus.push_back(j.gpus);
  }
  remaining = service;
  attained.assign(jobs.size(), 0);
  queue.assign(jobs.size(), 0);
  by_arrival.resize(jobs.size());
  std::iota(by_arrival.begin(), by_arrival.end(), 0);
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [&](int a, int b) { return arrival[a] < arrival[b]; });
}

std::unique_ptr<JobOrder> order_of(const Stream& stream, const JobSettings& settings) {
  switch (settings.policy) {
    case JobPolicy::fifo:
    case JobPolicy::sjf:
      return std::make_unique<StaticOrder>(stream, settings);
    case JobPolicy::las:
      return std::make_unique<LasOrder>(stream, settings);
    case JobPolicy::themis:
      return std::make_unique<ThemisOrder>(stream, settings);
  }
  STRATA_ASSERT(false, "jobs: a policy without an order");
  return nullptr;
}

}  // namespace job_orders
}  // namespace models
}  // namespace strata
