// The orders of job_schedule.cpp's policies: see job_orders.hpp.
#include "job_orders.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace strata {
inline namespace models {
namespace job_orders {

GpuTree::GpuTree(std::size_t positions)
    : leaves_(std::bit_ceil(std::max<std::size_t>(positions, 1))), least_(2 * leaves_, kEmpty) {}

void GpuTree::set(std::size_t position, int gpus) {
  std::size_t i = leaves_ + position;
  least_[i] = gpus;
  for (i >>= 1; i > 0; i >>= 1) {
    const int least = std::min(least_[2 * i], least_[2 * i + 1]);
    if (least_[i] == least) break;
    least_[i] = least;
  }
}

void GpuTree::clear(std::size_t position) { set(position, kEmpty); }

std::size_t GpuTree::first_fitting(std::size_t from, int limit) const {
  if (from >= leaves_) return kNoPosition;
  std::size_t i = leaves_ + from;
  if (least_[i] > limit) {
    // Up while the subtrees to the right hold no fitting job, then down to the leftmost that does.
    for (;;) {
      while (i > 1 && (i & 1) != 0) i >>= 1;
      if (i <= 1) return kNoPosition;
      ++i;
      if (least_[i] <= limit) break;
    }
    while (i < leaves_) {
      i *= 2;
      if (least_[i] > limit) ++i;
    }
  }
  return i - leaves_;
}

LineTournament::LineTournament(std::size_t slots)
    : leaves_(std::bit_ceil(std::max<std::size_t>(slots, 1))),
      levels_(static_cast<double>(std::bit_width(leaves_))),
      lines_(slots),
      job_(slots, -1),
      leader_(2 * leaves_, -1),
      own_(2 * leaves_, INFINITY),
      cross_(2 * leaves_, INFINITY) {}

void LineTournament::advance(double t) {
  now_ = t;
  if (cross_[1] <= now_) advance_node(1);
  update_slack();
}

void LineTournament::advance_node(std::size_t node) {
  for (std::size_t child : {2 * node, 2 * node + 1})
    if (child < leaves_ && cross_[child] <= now_) advance_node(child);
  decide(node);
}

void LineTournament::insert(std::size_t slot, int job, const JobLine& line) {
  lines_[slot] = line;
  job_[slot] = job;
  if (line.service < least_service_) {
    least_service_ = line.service;
    update_slack();
  }
  leader_[leaves_ + slot] = static_cast<int>(slot);
  update_above(leaves_ + slot);
}

void LineTournament::erase(std::size_t slot) {
  leader_[leaves_ + slot] = -1;
  update_above(leaves_ + slot);
}

// Up from a changed node: a node is decided again only while the leader below it changed (a new
// job leads about one level up on average); above that only the earliest crossing may change.
void LineTournament::update_above(std::size_t node) {
  bool lead_changed = true;
  for (node >>= 1; node > 0; node >>= 1) {
    const int lead = leader_[node];
    const double cross = cross_[node];
    if (lead_changed)
      decide(node);
    else
      cross_[node] = std::min({own_[node], cross_[2 * node], cross_[2 * node + 1]});
    lead_changed = leader_[node] != lead;
    if (!lead_changed && cross_[node] == cross) return;
  }
}

// The children's leaders compared now; if the one behind climbs faster, the node holds the time
// they cross. The rate of approach is taken as (s_w - s_l) / (s_w s_l), not 1/s_l - 1/s_w, whose
// cancellation would misplace the crossing of two jobs of nearly equal service; a crossing that
// rounds to now hands the lead to the faster one at once (it is behind by less than the clock
// can tell, which the slack allows for).
void LineTournament::decide(std::size_t node) {
  const int p = leader_[2 * node], q = leader_[2 * node + 1];
  double cross = INFINITY;
  int lead = p < 0 ? q : p;
  if (p >= 0 && q >= 0) {
    const JobLine &lp = lines_[static_cast<std::size_t>(p)], &lq = lines_[static_cast<std::size_t>(q)];
    const double vp = lp.value(now_), vq = lq.value(now_);
    const bool q_leads = vq > vp || (vq == vp && lq.service < lp.service);
    const JobLine &w = q_leads ? lq : lp, &l = q_leads ? lp : lq;
    lead = q_leads ? q : p;
    if (l.service < w.service) {
      const double at = now_ + std::abs(vp - vq) * (w.service * l.service) / (w.service - l.service);
      if (at > now_)
        cross = at;
      else
        lead = q_leads ? p : q;
    }
  }
  leader_[node] = lead;
  own_[node] = cross;
  cross_[node] = std::min({cross, cross_[2 * node], cross_[2 * node + 1]});
}

// A leader may trail a job below it by the rounding of the values compared (a few units in the
// last place of each, relative: Cursor::bound's factor) and by a crossing misplaced by the
// clock's resolution (a unit in the last place of now, at most 2^-52 now, over the fastest job's
// service), once per level of the tree.
void LineTournament::update_slack() { slack_ = 4 * levels_ * 0x1p-52 * std::abs(now_) / least_service_; }

void LineTournament::Cursor::reset(const LineTournament& tournament) {
  tournament_ = &tournament;
  frontier_.clear();
  push(1);
}

void LineTournament::Cursor::push(std::size_t node) {
  const int slot = tournament_->leader_[node];
  if (slot < 0) return;
  frontier_.emplace_back(tournament_->lines_[static_cast<std::size_t>(slot)].value(tournament_->now_), node);
  std::push_heap(frontier_.begin(), frontier_.end());
}

double LineTournament::Cursor::bound() const {
  return frontier_.front().first * (1 + 1e-9) + tournament_->slack_;
}

int LineTournament::Cursor::next() {
  std::pop_heap(frontier_.begin(), frontier_.end());
  std::size_t node = frontier_.back().second;
  frontier_.pop_back();
  const int slot = tournament_->leader_[node];
  // Down the leader's path; the subtree beside each step is next in line.
  while (node < tournament_->leaves_) {
    const std::size_t left = 2 * node;
    const bool on_left = tournament_->leader_[left] == slot;
    push(on_left ? left + 1 : left);
    node = on_left ? left : left + 1;
  }
  return tournament_->job_[static_cast<std::size_t>(slot)];
}

}  // namespace job_orders
}  // namespace models
}  // namespace strata
