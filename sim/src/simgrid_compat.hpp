// Everything that differs between SimGrid versions lives here (DESIGN.md: SimGrid 3.32 facts).
// strata targets Debian 12's 3.32; upstream 3.34+ moved completion signals to per-class
// on_this_completion / on_completion and added ActivitySet. Nothing outside sim/ includes SimGrid.
#pragma once

// s4u.hpp first: version.h uses macros (SG_BEGIN_DECL, XBT_PUBLIC) it does not define itself.
#include <simgrid/s4u.hpp>

#include <simgrid/version.h>
#include <simgrid/kernel/Timer.hpp>

#include <functional>
#include <utility>

namespace strata {
inline namespace sim {
namespace sg_compat {

// Calls `callback` whenever any activity completes (3.32: one static signal on Activity).
inline void on_any_completion(const std::function<void(const simgrid::s4u::Activity&)>& callback) {
#if SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR < 34
  simgrid::s4u::Activity::on_completion_cb(callback);
#else
  simgrid::s4u::Exec::on_completion_cb([callback](const simgrid::s4u::Exec& e) { callback(e); });
  simgrid::s4u::Comm::on_completion_cb([callback](const simgrid::s4u::Comm& c) { callback(c); });
#endif
}

// Calls `callback` from maestro when the simulated clock reaches `date` (s): an event in the
// engine's own timer queue, with no activity and no resource share. Timers due at one date run
// in an order fixed by the sequence of calls, so replays stay deterministic. (Same API in 3.32
// and 3.34+.)
template <class Callback>
void at(double date, Callback callback) {
  simgrid::kernel::timer::Timer::set(date, std::move(callback));
}

}  // namespace sg_compat
}  // namespace sim
}  // namespace strata
