// The checks of Plan::validate (plan.hpp) that look across tasks: point-to-point pairing and the
// order of buffer writes and reads. Internal to traces/. Each throws InputError naming `source`,
// the JSON pointer of the offending task and its id, in one line.
#pragma once

#include <string>
#include <vector>

#include "strata/traces/plan.hpp"

namespace strata {
inline namespace traces {

// Every recv has exactly one matching send among its data dependencies (on the recv's peer, to the
// recv's worker), and every send is matched by exactly one recv. A recv's comm_bytes is 0 (it only
// marks the arrival, as the lowerings write it) or the send's. O(tasks + data edges).
void check_p2p_pairs(const Plan& plan, const std::string& source);

// A task that reads a non-persistent buffer (an activation, a gradient in flight, a received
// message) which some task writes depends, directly or transitively, on one of its writers. A
// persistent buffer (weights, gradients, optimizer state) holds a value before its first write,
// and a buffer no task writes (the model's input) is filled by the executor: neither is checked,
// nor a task that reads a buffer it also writes. `order` is a topological order of the Plan.
void check_buffer_order(const Plan& plan, const std::vector<TaskIndex>& order, const std::string& source);

}  // namespace traces
}  // namespace strata
