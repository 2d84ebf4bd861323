// Platform files and network models checked before SimGrid sees them: each bad input of issue 14
// gets one line naming the file, the line, the element and the attribute or property; values in
// SimGrid's own units are accepted exactly as SimGrid accepts them (the files that pass are
// then loaded by SimGrid in a child process, which would fail the test if SimGrid disagreed).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "../input_error.hpp"
#include "sim_fixtures.hpp"
#include "strata/sim/replay.hpp"
#include "strata/traces/error.hpp"

namespace strata {
namespace {

const std::string kHead =
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    "<platform version=\"4.1\">\n";

// A one-cluster platform (the cluster's tag on line 4) with `attributes` replacing the defaults
// given here and `props` inside (from line 5).
std::string cluster_xml(const std::string& bw = "100GBps", const std::string& lat = "1us",
                        const std::string& extra = "", const std::string& props = "") {
  return kHead + "<cluster id=\"c\" prefix=\"node-\" radical=\"0-3\" suffix=\"\" speed=\"1Tf\" bw=\"" + bw +
         "\" lat=\"" + lat + "\" " + extra + ">\n" + props + "</cluster>\n</platform>\n";
}

// A zone with one host (line 5) and one link (line 6).
std::string link_xml(const std::string& bandwidth, const std::string& latency, const std::string& host = "h0",
                     const std::string& host_attributes = "speed=\"1Gf\"",
                     const std::string& host_props = "") {
  return kHead + "<zone id=\"z\" routing=\"Full\">\n<host id=\"" + host + "\" " + host_attributes + ">" +
         host_props + "</host>\n<link id=\"l0\" bandwidth=\"" + bandwidth + "\" latency=\"" + latency +
         "\"/>\n<route src=\"" + host + "\" dst=\"" + host +
         "\"><link_ctn id=\"l0\"/></route>\n</zone>\n</platform>\n";
}

std::string replaced(std::string xml, const std::string& from, const std::string& to) {
  return xml.replace(xml.find(from), from.size(), to);
}

// The one-line message check_platform gives for `xml` (written to `name`), or "" when it passes.
std::string problem_of(const std::string& name, const std::string& xml, const NetworkOptions& network = {}) {
  const std::string path = test::write_temp(name, xml);
  try {
    check_platform(path, network);
    return "";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    const std::string prefix = path + ":";
    return what.rfind(prefix, 0) == 0 ? name + ":" + what.substr(prefix.size()) : what;
  }
}

TEST(PlatformCheck, ZeroNanAndNegativeBandwidthsAreRefused) {
  EXPECT_EQ(problem_of("zero.xml", cluster_xml("0Bps")),
            "zero.xml:4: cluster 'c' attribute bw: '0Bps' is zero; it must be positive");
  EXPECT_EQ(problem_of("nan.xml", cluster_xml("nanGBps")),
            "nan.xml:4: cluster 'c' attribute bw: 'nanGBps' is not a number");
  EXPECT_EQ(problem_of("neg.xml", cluster_xml("-100GBps")),
            "neg.xml:4: cluster 'c' attribute bw: '-100GBps' is negative");
  EXPECT_EQ(
      problem_of("inf.xml", link_xml("infGBps", "0s")),
      "inf.xml:6: link 'l0' attribute bandwidth: 'infGBps' is infinite; the largest value strata accepts "
      "is 1e+18 B/s");
}

TEST(PlatformCheck, TheLineIsTheAttributesOwnInATagOfSeveralLines) {
  std::ifstream in(test::platforms_dir() + "test-flat-4.xml");
  const std::string shipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(problem_of("flat.xml", replaced(shipped, "bw=\"100GBps\"", "bw=\"0Bps\"")),
            "flat.xml:27: cluster 'test-flat-4' attribute bw: '0Bps' is zero; it must be positive");
  EXPECT_EQ(
      problem_of("flat-bb.xml", replaced(shipped, "bb_bw=\"1e18Bps\"", "bb_bw=\"1e19Bps\"")),
      "flat-bb.xml:28: cluster 'test-flat-4' attribute bb_bw: '1e19Bps' = 1e+19 B/s is above 1e+18 B/s, the "
      "largest strata accepts");
}

TEST(PlatformCheck, NegativeAndNanLatenciesAreRefused) {
  EXPECT_EQ(problem_of("neg-lat.xml", link_xml("1GBps", "-1us")),
            "neg-lat.xml:6: link 'l0' attribute latency: '-1us' is negative");
  EXPECT_EQ(problem_of("nan-lat.xml", cluster_xml("1GBps", "nans")),
            "nan-lat.xml:4: cluster 'c' attribute lat: 'nans' is not a number");
  EXPECT_EQ(problem_of("long-lat.xml", link_xml("1GBps", "2h")),
            "long-lat.xml:6: link 'l0' attribute latency: '2h' = 7200 s is above 1000 s, the largest strata "
            "accepts");
}

TEST(PlatformCheck, BoundsAndUnitsAreShownInTheMessage) {
  EXPECT_EQ(problem_of("slow.xml", link_xml("4bps", "0s")),
            "slow.xml:6: link 'l0' attribute bandwidth: '4bps' = 0.5 B/s is below 1 B/s, the smallest strata "
            "accepts");
  EXPECT_EQ(
      problem_of("fast.xml", cluster_xml("100GBps", "1us", "loopback_bw=\"2EBps\"")),
      "fast.xml:4: cluster 'c' attribute loopback_bw: '2EBps' = 2e+18 B/s is above 1e+18 B/s, the largest "
      "strata accepts");
  EXPECT_EQ(
      problem_of("unit.xml", cluster_xml("10GB/s")),
      "unit.xml:4: cluster 'c' attribute bw: '10GB/s' has an unknown unit 'GB/s' (units: Bps, kBps, MBps, "
      "GBps, TBps, KiBps, GiBps, or bits: bps, Gbps, ...)");
  EXPECT_EQ(problem_of("tiny.xml", link_xml("1GBps", "1e-320s")),
            "tiny.xml:6: link 'l0' attribute latency: '1e-320s' is out of the range of double precision");
}

TEST(PlatformCheck, CoresPstatesAndSpeedsAreChecked) {
  EXPECT_EQ(problem_of("core0.xml", cluster_xml("1GBps", "1us", "core=\"0\"")),
            "core0.xml:4: cluster 'c' attribute core: '0' is outside 1..1000000");
  EXPECT_EQ(problem_of("core-junk.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf\" core=\"4abc\"")),
            "core-junk.xml:5: host 'h0' attribute core: '4abc' is not an integer");
  EXPECT_EQ(problem_of("pstate.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf,2Gf\" pstate=\"2\"")),
            "pstate.xml:5: host 'h0' attribute pstate: '2' is outside 0..1");
  EXPECT_EQ(
      problem_of("speeds.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf, 0f\"")),
      "speeds.xml:5: host 'h0' attribute speed: item 1 of '1Gf, 0f': '0f' is zero; it must be positive");
  EXPECT_EQ(problem_of("pstate-ok.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf,2Gf\" pstate=\"1.0\"")),
            "");
  EXPECT_EQ(
      problem_of("speed-unit.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gflops\"")),
      "speed-unit.xml:5: host 'h0' attribute speed: '1Gflops' has an unknown unit 'Gflops' (units: f, kf, "
      "Mf, Gf, Tf, Pf, Ef (or flops, gigaflops, ...))");
}

TEST(PlatformCheck, SimGridUnitsAreAcceptedAsSimGridAcceptsThem) {
  EXPECT_EQ(
      problem_of("units.xml", link_xml("1.5GiBps", "750ns", "h0", "speed=\"2.5gigaflops,1kf\" core=\"2\"")),
      "");
  EXPECT_EQ(problem_of("bits.xml", cluster_xml("200Gbps", "0.7us", "bb_bw=\"1e18Bps\" bb_lat=\"0s\"")), "");
  // Several rates are for WIFI links (SimGrid aborts on them elsewhere).
  EXPECT_EQ(problem_of("rates.xml", link_xml("54Mbps;36Mbps", "0s")),
            "rates.xml:6: link 'l0' attribute bandwidth: '54Mbps;36Mbps' lists 2 bandwidths; only "
            "sharing_policy=\"WIFI\" links have several");
}

TEST(PlatformCheck, StrataPropertiesAreParsedAndRangeChecked) {
  EXPECT_EQ(
      problem_of("fp32.xml",
                 cluster_xml("1GBps", "1us", "", "<prop id=\"flops_fp32\" value=\"1e308Pf\"/>\n")),
      "fp32.xml:5: cluster 'c' property flops_fp32: '1e308Pf' is infinite; the largest value strata accepts "
      "is 1e+20 flop/s");
  const std::string tiny =
      problem_of("membw.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"mem_bw\" value=\"1e-320\"/>\n"));
  EXPECT_EQ(tiny.rfind("membw.xml:5: cluster 'c' property mem_bw: ", 0), 0u) << tiny;
  EXPECT_EQ(problem_of("gpus.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"gpus\" value=\"2.5\"/>\n")),
            "gpus.xml:5: cluster 'c' property gpus: expected a positive integer, got '2.5'");
  EXPECT_EQ(problem_of("mem.xml", cluster_xml("1GBps", "1us", "",
                                              "<prop id=\"gpu_memory\" value=\"80GiB\"/>\n"
                                              "<prop id=\"flops_bf16\" value=\"312Tf\"/>\n"
                                              "<prop id=\"mem_bw\" value=\"2039GBps\"/>\n")),
            "");
  EXPECT_EQ(
      problem_of("watts.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf,2Gf\"",
                                       "<prop id=\"wattage_per_state\" value=\"100:200\"/>")),
      "watts.xml:5: host 'h0' property wattage_per_state: 1 pstates of watts for a host of 2 speeds (one "
      "idle:...:busy group per speed)");
  EXPECT_EQ(problem_of("watts-nan.xml",
                       cluster_xml("1GBps", "1us", "", "<prop id=\"wattage_off\" value=\"nan\"/>\n")),
            "watts-nan.xml:5: cluster 'c' property wattage_off: 'nan' is not a number");
}

TEST(PlatformCheck, MisspelledPropertiesGetADidYouMean) {
  EXPECT_EQ(
      problem_of("bf16.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"flops_bf61\" value=\"312e12\"/>\n")),
      "bf16.xml:5: cluster 'c' property flops_bf61: unknown property; did you mean 'flops_bf16'?");
  EXPECT_EQ(
      problem_of("fp16.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"flop_fp16\" value=\"312e12\"/>\n")),
      "fp16.xml:5: cluster 'c' property flop_fp16: unknown property; did you mean 'flops_fp16'?");
  EXPECT_EQ(
      problem_of("gpumem.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"gpu_memroy\" value=\"80e9\"/>\n")),
      "gpumem.xml:5: cluster 'c' property gpu_memroy: unknown property; did you mean 'gpu_memory'?");
  EXPECT_EQ(
      problem_of("case.xml", cluster_xml("1GBps", "1us", "", "<prop id=\"GPU_MEMORY\" value=\"80e9\"/>\n")),
      "case.xml:5: cluster 'c' property GPU_MEMORY: unknown property; did you mean 'gpu_memory'?");
  EXPECT_EQ(
      problem_of("watt.xml", link_xml("1GBps", "0s", "h0", "speed=\"1Gf\"",
                                      "<prop id=\"wattage_per_stat\" value=\"1:2\"/>")),
      "watt.xml:5: host 'h0' property wattage_per_stat: unknown property; did you mean 'wattage_per_state'?");
  // Names that are not near a known one, and figures strata does not read, are annotations.
  EXPECT_EQ(
      problem_of("notes.xml", cluster_xml("1GBps", "1us", "",
                                          "<prop id=\"rack\" value=\"A3\"/><prop id=\"cpu\" value=\"x\"/>\n"
                                          "<prop id=\"flops_tf32\" value=\"156e12\"/>\n")),
      "");
}

TEST(PlatformCheck, HostCountsAreBounded) {
  EXPECT_EQ(problem_of("huge.xml", replaced(cluster_xml(), "0-3", "0-99999999")),
            "huge.xml:4: cluster 'c' attribute radical: the platform declares 100000000 hosts so far, more "
            "than the "
            "100000 strata simulates");
  EXPECT_EQ(problem_of("empty.xml", replaced(cluster_xml(), "0-3", "5-3")),
            "empty.xml:4: cluster 'c' attribute radical: '5-3': range '5-3' is empty");
}

TEST(PlatformCheck, NetworkModelsAreCheckedAgainstSimGridsList) {
  const std::string known = "(known: LV08, CM02, SMPI, IB)";
  EXPECT_EQ(problem_of("m1.xml", cluster_xml(), NetworkOptions{"Bogus", false}),
            "--network-model: unknown SimGrid network model 'Bogus' " + known);
  EXPECT_EQ(problem_of("m2.xml", cluster_xml(), NetworkOptions{"", false}),
            "--network-model: unknown SimGrid network model '' " + known);
  EXPECT_EQ(problem_of("m3.xml", cluster_xml(), NetworkOptions{"help", false}),
            "--network-model: unknown SimGrid network model 'help' " + known);
  for (const char* model : {"LV08", "CM02", "SMPI", "IB"})
    EXPECT_EQ(problem_of(std::string("ok-") + model + ".xml", cluster_xml(), NetworkOptions{model, false}),
              "")
        << model;
  // Constant has no links, and strata reads routes: refused before SimGrid aborts on a route.
  EXPECT_EQ(problem_of("m4.xml", cluster_xml(), NetworkOptions{"Constant", false}),
            "--network-model: SimGrid's 'Constant' model cannot replay strata's plans (it has no links nor "
            "routes); use one of LV08, CM02, SMPI, IB");
}

TEST(PlatformCheck, DirectoriesMissingFilesAndNonUtf8NamesGetOneLine) {
  const std::string dir = (test::temp_dir() / "a-directory").string();
  std::filesystem::create_directories(dir);
  try {
    check_platform(dir);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not a platform file");
  }
  try {
    check_platform(dir + "/missing.xml");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/missing.xml: cannot open file: No such file or directory");
  }
  const std::string fifo = (test::temp_dir() / "a-fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    check_platform(fifo);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": not a regular file (SimGrid reads platforms from files)");
  }
  EXPECT_EQ(problem_of("latin1.xml", link_xml("1GBps", "0s", "n\xe9ud-0")),
            "latin1.xml:5: not UTF-8 (byte 0xe9); strata reads platform files as UTF-8 only");
  EXPECT_EQ(
      problem_of("unclosed.xml", kHead + "<zone id=\"z\" routing=\"Full\">\n<host id=\"a\" speed=\"1f\">\n"
                                         "</zone>\n</platform>\n"),
      "unclosed.xml:6: XML: mismatched tag");
  EXPECT_EQ(
      problem_of("include.xml", kHead + "<include file=\"other.xml\"/>\n</platform>\n"),
      "include.xml:4: include element: <include> was removed in SimGrid 3.18; SimGrid 3.32 does not read it");
  EXPECT_EQ(
      problem_of("version.xml", replaced(cluster_xml(), "version=\"4.1\"", "version=\"nan\"")),
      "version.xml:3: platform attribute version: 'nan' is not a platform version (SimGrid 3.32 reads 4.1)");
}

TEST(PlatformCheck, WhatSimGridAbortsOnBecomesOneLine) {
  // A torus of 3 x 3 hosts declared with 4 radicals: only SimGrid builds the torus, and it
  // aborts (xbt_assert, a multi-line CRITICAL message and a backtrace). The check's child dies;
  // strata says one line.
  EXPECT_EQ(
      problem_of("torus.xml",
                 replaced(cluster_xml(), "speed=", "topology=\"TORUS\" topo_parameters=\"3,3\" speed=")),
      "torus.xml: SimGrid cannot load this platform: simulation process killed by signal Aborted: Zone(c): "
      "error when creating host number 4 in the zone. Insufficient number of radicals available (total = "
      "4). Check the 'radical' parameter in XML");
  EXPECT_EQ(
      problem_of("routing.xml", kHead + "<zone id=\"z\" routing=\"Bogus\"></zone>\n</platform>\n"),
      "routing.xml:4: zone 'z' attribute routing: unknown routing 'Bogus' (SimGrid 3.32 has Full, Floyd, "
      "Dijkstra, DijkstraCache, Cluster, None, Vivaldi, Wifi)");
  // A Full zone without a route from a host to itself: SimGrid crashes when asked for it.
  const std::string no_route =
      problem_of("no-route.xml", kHead +
                                     "<zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"1f\"/>"
                                     "</zone>\n</platform>\n");
  if (STRATA_TEST_UNDER_ASAN)  // ASan reports the segmentation fault and ends the child its own way
    EXPECT_EQ(no_route.rfind("no-route.xml: SimGrid cannot load this platform: simulation process ", 0), 0u)
        << no_route;
  else
    EXPECT_EQ(no_route,
              "no-route.xml: SimGrid cannot load this platform: simulation process killed by signal "
              "Segmentation fault");
}

TEST(PlatformCheck, EveryPairOfHostsNeedsARoute) {
  // A Full zone missing the route a -> c: SimGrid aborts at the first transfer between them.
  EXPECT_EQ(problem_of("routes.xml", kHead + "<zone id=\"z\" routing=\"Full\">\n"
                                             "<host id=\"a\" speed=\"1Tf\"/><host id=\"b\" speed=\"1Tf\"/>"
                                             "<host id=\"c\" speed=\"1Tf\"/>\n"
                                             "<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
                                             "<route src=\"a\" dst=\"a\"><link_ctn id=\"l\"/></route>\n"
                                             "<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
                                             "</zone>\n</platform>\n"),
            "routes.xml: no route from host 'a' to host 'c' (SimGrid aborts on a transfer between them)");
}

// Over 256 hosts every pair is no longer asked (10^10 queries at 10^5 hosts): a cluster's first
// host stands for its 300, and the hosts of a zone of declared routes each for itself, so the
// route x -> y missing inside zone f is still found.
TEST(PlatformCheck, RoutesOfLargePlatformsAreCheckedThroughRepresentatives) {
  const std::string zones =
      "<zone id=\"root\" routing=\"Full\">\n"
      "<cluster id=\"c\" prefix=\"c-\" suffix=\"\" radical=\"0-299\" speed=\"1Tf\" bw=\"10GBps\" lat=\"1us\" "
      "router_id=\"c-router\"/>\n"
      "<zone id=\"f\" routing=\"Full\">\n"
      "<host id=\"x\" speed=\"1Tf\"/><host id=\"y\" speed=\"1Tf\"/>\n"
      "<link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
      "<route src=\"x\" dst=\"x\"><link_ctn id=\"l\"/></route>\n"
      "<route src=\"y\" dst=\"y\"><link_ctn id=\"l\"/></route>\n";
  const std::string tail =
      "</zone>\n<link id=\"up\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
      "<zoneRoute src=\"c\" dst=\"f\" gw_src=\"c-router\" gw_dst=\"x\"><link_ctn id=\"up\"/></zoneRoute>\n"
      "</zone>\n</platform>\n";
  EXPECT_EQ(problem_of("large.xml", kHead + zones + tail),
            "large.xml: no route from host 'x' to host 'y' (SimGrid aborts on a transfer between them)");
  // With the route (symmetrical, as SimGrid declares routes by default) the platform loads.
  EXPECT_EQ(problem_of("large.xml",
                       kHead + zones + "<route src=\"x\" dst=\"y\"><link_ctn id=\"l\"/></route>\n" + tail),
            "");
}

// SimGrid reads topo_parameters as unsigned counts unchecked: a negative cable count made it
// allocate without bound (found by the platform fuzz harness).
TEST(PlatformCheck, TopologyParametersArePositiveCountsOfTheRightShape) {
  const auto fat_tree = [](const std::string& parameters) {
    return cluster_xml("100GBps", "1us", "topology=\"FAT_TREE\" topo_parameters=\"" + parameters + "\"");
  };
  EXPECT_EQ(
      problem_of("ft.xml", fat_tree("2;2,2;1,1;-1,1")),
      "ft.xml:4: cluster 'c' attribute topo_parameters: '2;2,2;1,1;-1,1': '-1' is outside 1..100000 (counts "
      "are whole numbers 1..100000)");
  EXPECT_EQ(problem_of("ft.xml", fat_tree("2;2,2;1,1;1")),
            "ft.xml:4: cluster 'c' attribute topo_parameters: '2;2,2;1,1;1': a FAT_TREE needs "
            "'levels;down,...;up,...;cables,...' with `levels` counts in each list");
  EXPECT_EQ(problem_of("ft.xml", fat_tree("2;2,2;1,1;1,1")), "");
  EXPECT_EQ(
      problem_of("torus.xml", cluster_xml("100GBps", "1us", "topology=\"TORUS\" topo_parameters=\"2,0\"")),
      "torus.xml:4: cluster 'c' attribute topo_parameters: '2,0': '0' is outside 1..100000 (counts are whole "
      "numbers 1..100000)");
}

// SimGrid applies a <config> after strata has set the network model and its factors, and 3.32
// crashes then (even on a valid network/model).
TEST(PlatformCheck, ConfigElementsAreRefusedForTheFlagsThatSetThem) {
  EXPECT_EQ(problem_of("config.xml",
                       kHead + "<config><prop id=\"network/model\" value=\"CM02\"/></config>\n"
                               "<zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"1Gf\"/></zone>\n"
                               "</platform>\n"),
            "config.xml:4: config element: <config> sets SimGrid options, which strata sets itself "
            "(--network-model, --simgrid-factors); remove it and use those flags");
}

TEST(PlatformCheck, EveryShippedPlatformPasses) {
  for (const auto& entry : std::filesystem::directory_iterator(test::platforms_dir())) {
    if (entry.path().extension() == ".xml") {
      EXPECT_NO_THROW(check_platform(entry.path().string())) << entry.path();
    }
  }
}

}  // namespace
}  // namespace strata
