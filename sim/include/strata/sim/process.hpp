// Child processes for simulations: SimGrid 3.32 keeps one engine per process, so every replay
// beyond the first runs in a process of its own (DESIGN.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace strata {
inline namespace sim {

// Runs `work` in a forked child and returns the string it produced. An InputError or other
// exception in the child is rethrown in the parent as InputError with the same message; a child
// killed by a signal becomes an InputError naming the signal.
std::string run_in_child(const std::function<std::string()>& work);

// Like run_in_child, with the child's standard output and error kept from the terminal: a
// child that dies (SimGrid's abort on a platform it cannot build, with its multi-line CRITICAL
// message and backtrace) becomes one InputError line, "<context>: simulation process killed by
// signal Aborted: <the first line the child printed>".
std::string run_in_quiet_child(const std::function<std::string()>& work, const std::string& context);

// Runs every job in a child, at most `parallel` at a time; results in job order. `on_done`, if
// given, is called in the parent as each job's result is collected (in job order), with the
// job's index and its result.
std::vector<std::string> run_in_children(
    const std::vector<std::function<std::string()>>& jobs, int parallel,
    const std::function<void(std::size_t, const std::string&)>& on_done = {});

// What one job of run_in_children_each gave: its result, or (ok false) the one-line reason its
// child failed (its exception's message, or "simulation process killed by signal Killed").
struct ChildResult {
  bool ok = false;
  std::string text;
};
// Like run_in_children, but a job whose child fails does not end the others: each job's result
// or failure, in job order.
std::vector<ChildResult> run_in_children_each(const std::vector<std::function<std::string()>>& jobs,
                                              int parallel);

}  // namespace sim
}  // namespace strata
