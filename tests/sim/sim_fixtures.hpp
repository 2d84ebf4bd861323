// Shared pieces of the sim tests: tiny platforms written to a temporary folder, hand-built
// Plans and synthetic models with exactly known costs.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "strata/models/zoo/zoo.hpp"
#include "strata/traces/plan.hpp"

namespace strata::test {

inline std::string platforms_dir() { return std::string(STRATA_SOURCE_DIR) + "/platforms/"; }

// This test process's temporary folder, removed when the process exits (children forked by
// run_in_child leave through _exit and do not remove it).
struct TempDir {
  std::filesystem::path path;
  TempDir() : path(std::filesystem::temp_directory_path() / ("strata-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

inline const std::filesystem::path& temp_dir() {
  static const TempDir dir;
  return dir.path;
}

// Writes `xml` to a fresh file in the test's temporary folder and returns its path.
inline std::string write_temp(const std::string& name, const std::string& xml) {
  auto path = temp_dir() / name;
  std::ofstream(path) << xml;
  return path.string();
}

// A flat cluster of `hosts` hosts with `slots` GPUs each; private links of `bw` B/s and `lat`
// seconds (end-to-end latency 2·lat), an ideal backbone; intra-host loopback of `loop_bw`;
// collectives at those links' figures (fabric "ideal", not a bus-bandwidth curve) unless `fabric`
// gives the hosts' fabric properties (models/cost/bus_bandwidth.hpp).
inline std::string flat_cluster(
    int hosts, int slots, double bw, double lat, double loop_bw = 1e18, double loop_lat = 0,
    const std::string& fabric =
        "<prop id=\"fabric_intra\" value=\"ideal\"/><prop id=\"fabric_inter\" value=\"ideal\"/>") {
  std::string xml =
      "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<platform version=\"4.1\">\n"
      "<cluster id=\"c\" prefix=\"node-\" radical=\"0-" +
      std::to_string(hosts - 1) + "\" suffix=\"\" speed=\"1e12f\" core=\"" + std::to_string(slots) +
      "\" bw=\"" + std::to_string(bw) + "Bps\" lat=\"" + std::to_string(lat) +
      "s\" sharing_policy=\"SPLITDUPLEX\" bb_bw=\"1e18Bps\" bb_lat=\"0s\" "
      "bb_sharing_policy=\"FATPIPE\" loopback_bw=\"" +
      std::to_string(loop_bw) + "Bps\" loopback_lat=\"" + std::to_string(loop_lat) +
      "s\">\n"
      "<prop id=\"gpus\" value=\"" +
      std::to_string(slots) +
      "\"/>\n"
      "<prop id=\"flops_fp32\" value=\"1e12\"/><prop id=\"flops_bf16\" value=\"1e12\"/>\n"
      "<prop id=\"mem_bw\" value=\"1e12\"/><prop id=\"gpu_memory\" value=\"80e9\"/>\n" +
      fabric + "\n</cluster>\n</platform>\n";
  return write_temp("flat-" + std::to_string(hosts) + "x" + std::to_string(slots) + ".xml", xml);
}

inline Task comm_task(const std::string& id, TaskKind kind, double bytes) {
  Task t;
  t.id = id;
  t.kind = kind;
  t.stream = Stream::comm;
  t.comm_bytes = bytes;
  return t;
}

// A send of `bytes` from worker `from` to `to` and its recv, the recv data-dependent on it;
// returns {send, recv}.
inline std::pair<TaskIndex, TaskIndex> add_transfer(Plan& plan, WorkerId from, WorkerId to, double bytes) {
  Task send = comm_task("send", TaskKind::send, bytes);
  send.worker = from;
  send.peer = to;
  const TaskIndex s = plan.add_task(send);
  Task recv = comm_task("recv", TaskKind::recv, bytes);
  recv.worker = to;
  recv.peer = from;
  const TaskIndex r = plan.add_task(recv);
  plan.add_data_dep(s, r);
  return {s, r};
}

inline Task fixed_task(const std::string& id, WorkerId worker, double seconds) {
  Task t;
  t.id = id;
  t.kind = TaskKind::fixed;
  t.worker = worker;
  t.attrs["duration_s"] = seconds;
  return t;
}

// A synthetic model of `blocks` fixed layers (forward tf, backward tb per microbatch), each
// with `params` parameters and `saved` activation elements per sample.
inline Model fixed_model(int blocks, double tf, double tb, double params = 0, double saved = 0,
                         double out_elems = 0) {
  Model m;
  m.name = "fixed-" + std::to_string(blocks);
  m.family = "synthetic";
  for (int b = 0; b < blocks; ++b) {
    Layer l;
    l.name = "l" + std::to_string(b);
    l.op = LayerOp::fixed;
    l.block = b;
    l.params = params;
    l.fixed_fwd_s = tf;
    l.fixed_bwd_s = tb;
    l.saved_elems = saved;
    l.out_elems = out_elems;
    m.layers.push_back(l);
  }
  return m;
}

}  // namespace strata::test
