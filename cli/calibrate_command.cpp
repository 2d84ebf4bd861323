// strata calibrate: measures this machine (real_exec/calibrate.hpp) and writes the calibration
// that `strata simulate --calibration` and `strata validate` read, and optionally the SimGrid
// platform of this machine.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "file_flags.hpp"
#include "real_run.hpp"
#include "strata/models/cost/cost_model.hpp"
#include "strata/models/cost/gemm_grid.hpp"
#include "strata/models/cost/gpu_kernels.hpp"
#include "strata/real/calibrate/calibrate.hpp"
#if STRATA_HAVE_CUDA
#include "strata/real/exec/cuda_module.hpp"
#endif
#include "strata/sim/platform.hpp"
#include "strata/traces/error.hpp"
#include "strata/traces/json_io.hpp"

namespace strata::cli {
namespace {

struct CalibrateOptions {
  std::string output;
  std::string platform;
  std::vector<std::string> transports{"threads"};
  std::string device = "cpu";
  std::string samples;  // CSV of every measured task
  bool mpi_probe = false;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_calibration(const real::MachinePeaks& peaks, const real::DispatchOverhead& dispatch,
                       const Calibration& c) {
  std::printf(
      "host %s: %d worker slots; one slot: GEMM %.2f GFLOP/s fp32, %.2f GFLOP/s fp64; triad %.2f GB/s\n",
      peaks.host.c_str(), peaks.cores, peaks.gemm_fp32 / 1e9, peaks.gemm_fp64 / 1e9, peaks.triad_bw / 1e9);
  std::printf(
      "roofs after the zoo's tasks: %.2f GFLOP/s fp32, %.2f GB/s (efficiencies are relative to these)\n",
      c.host.flops_fp32 / 1e9, c.host.mem_bw / 1e9);
  std::printf(
      "dispatch: %.3f us per task on one worker's thread, %.3f us per hand-off to another worker's thread; "
      "a near-empty task takes %.3f us\n",
      dispatch.same_thread_s * 1e6, dispatch.handoff_s * 1e6, dispatch.task_floor_s * 1e6);
  for (const auto* table : {&c.flops_efficiency, &c.mem_efficiency}) {
    const char* what = table == &c.flops_efficiency ? "of peak FLOP/s" : "of memory bandwidth";
    for (const auto& [key, e] : *table)
      if (e < 1 && key.find('/') != std::string::npos)
        std::printf("  %-34s %5.1f %% %s\n", key.c_str(), 100 * e, what);
  }
  for (const auto& [name, t] : c.transports)
    std::printf(
        "transport %s: point-to-point %.2f us + %.3f ns/B (%.2f GB/s); %d-rank allreduce %.2f us + %.3f "
        "ns/B\n",
        name.c_str(), t.p2p_alpha_s * 1e6, t.p2p_beta_s_per_byte * 1e9,
        t.p2p_beta_s_per_byte > 0 ? 1e-9 / t.p2p_beta_s_per_byte : 0.0, t.allreduce_ranks,
        t.allreduce_alpha_s * 1e6, t.allreduce_beta_s_per_byte * 1e9);
}

// A grid's rate at m = n = k = s, in TFLOP/s.
double cube_tflops(const GemmGrid& grid, double s) { return gemm_grid_rate(grid, s, s, s) / 1e12; }

// Each measured GEMM grid in a line; on an H100-class GPU (H100 and H200 share the GH100's
// tensor cores and clocks) also how it compares with the table strata ships for the H100 SXM,
// shape by shape over that table's grid.
void print_gemm_grids(const std::map<std::string, GemmGrid>& grids, const std::string& device) {
  for (const auto& [dtype, grid] : grids) {
    const std::size_t best = static_cast<std::size_t>(
        std::max_element(grid.flop_per_s.begin(), grid.flop_per_s.end()) - grid.flop_per_s.begin());
    const std::size_t n = grid.sizes.size();
    std::printf(
        "GEMM %s: %zu shapes, %g .. %g each way; %g^3 %.1f TFLOP/s, 4096^3 %.1f TFLOP/s, %g^3 %.1f TFLOP/s; "
        "best %.1f TFLOP/s at %gx%gx%g\n",
        dtype.c_str(), grid.flop_per_s.size(), grid.sizes.front(), grid.sizes.back(), grid.sizes.front(),
        cube_tflops(grid, grid.sizes.front()), cube_tflops(grid, 4096), grid.sizes.back(),
        cube_tflops(grid, grid.sizes.back()), grid.flop_per_s[best] / 1e12, grid.sizes[best / (n * n)],
        grid.sizes[best / n % n], grid.sizes[best % n]);
  }
  const auto bf16 = grids.find("bf16");
  const GemmGrid* shipped = shipped_gemm_grid(GpuType::h100_sxm);
  if (bf16 == grids.end() || shipped == nullptr ||
      (device.find("H100") == std::string::npos && device.find("H200") == std::string::npos))
    return;
  std::vector<double> ratios;
  for (double m : shipped->sizes)
    for (double n : shipped->sizes)
      for (double k : shipped->sizes)
        ratios.push_back(gemm_grid_rate(bf16->second, m, n, k) / gemm_grid_rate(*shipped, m, n, k));
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "bf16 against the shipped H100 SXM table (OpenXLA's measurement) over its %zu shapes: measured/shipped "
      "median %.3f, min %.3f, max %.3f\n",
      ratios.size(), ratios[ratios.size() / 2], ratios.front(), ratios.back());
}

// One row per measured task: what the efficiencies of the calibration were fitted to. The plan
// name holds commas ("mlp dp=1,tp=1,pp=1 batch 64") and is quoted; task ids hold none.
std::string samples_csv(const std::vector<real::TaskSample>& tasks) {
  std::string csv = "plan,id,kind,flops,bytes,seconds\n";
  for (const real::TaskSample& t : tasks) {
    char row[512];
    std::snprintf(row, sizeof row, "\"%s\",%s,%s,%.6g,%.6g,%.6e\n", t.plan.c_str(), t.id.c_str(),
                  std::string(to_string(t.kind)).c_str(), t.flops, t.bytes, t.seconds);
    csv += row;
  }
  return csv;
}

struct Measured {
  std::string backend;
  real::MachinePeaks peaks;
  std::vector<real::TaskSample> tasks;
  real::DispatchOverhead dispatch;
  Calibration calibration;
  std::vector<real::TransportSample> stores;  // the object stores' samples (files, cache)
};

// The stores' requests apart, at 1 MiB: what the α–β of a request (their median) blends.
void print_store_requests(const std::vector<real::TransportSample>& stores) {
  std::map<std::string, std::map<std::string, double>> at;
  for (const real::TransportSample& s : stores)
    if (s.bytes == 1048576) at[s.transport][s.op] = s.seconds;
  for (const auto& [name, ops] : at)
    if (ops.count("put") != 0 && ops.count("get") != 0 && ops.count("remove") != 0)
      std::printf("object store %s at 1 MiB, one request alone: PUT %.1f us, GET %.1f us, removal %.1f us\n",
                  name.c_str(), ops.at("put") * 1e6, ops.at("get") * 1e6, ops.at("remove") * 1e6);
}

Measured measure_cpu(const std::vector<std::string>& transports, const real::Progress& step) {
  Measured m;
  m.backend = "cpu-openblas";
  m.peaks = real::measure_peaks(step);
  const real::LabelledImages train = real::load_fashion_mnist(real::DatasetSplit::train);
  m.tasks = real::measure_tasks(real::zoo_calibration_plans(), train, step);
  if (step) step("dispatch overhead");
  m.dispatch = real::measure_dispatch();
  m.calibration = real::fit_calibration(m.peaks, m.tasks, m.dispatch);
  for (const std::string& t : transports) {
    if (step) step("transport " + t);
    m.calibration.transports[t] = measure_transport_calibration(t);
  }
  if (step) step("object store of files");
  const std::vector<real::TransportSample> files = real::measure_file_store();
  m.calibration.transports["files"] = real::fit_transport(files);
  if (step) step("cache of files in RAM");
  const std::vector<real::TransportSample> cache = real::measure_file_store(real::Medium::memory);
  m.calibration.transports["cache"] = real::fit_transport(cache);
  m.stores = files;
  m.stores.insert(m.stores.end(), cache.begin(), cache.end());
  return m;
}

// The GPU: its peaks, the zoo's tasks run by the GPU executor, the interpreter's dispatch (the
// same host threads), and its device-to-device transport as "cuda".
Measured measure_cuda([[maybe_unused]] const real::Progress& step) {
  Measured m;
#if STRATA_HAVE_CUDA
  const real::CudaModule& cuda = real::load_cuda_module();
  m.backend = "cuda-cublas";
  m.peaks = cuda.measure_peaks(0, step);
  const real::LabelledImages train = real::load_fashion_mnist(real::DatasetSplit::train);
  m.tasks = real::measure_tasks(real::zoo_calibration_plans(), train, step, cuda.executor<float>(0));
  if (step) step("dispatch overhead");
  m.dispatch = real::measure_dispatch(cuda.executor<float>(0));
  m.calibration = real::fit_calibration(m.peaks, m.tasks, m.dispatch);
  if (step) step("transport cuda");
  m.calibration.transports["cuda"] = real::fit_transport(
      real::measure_transport("cuda", real::executor_plan_timer(cuda.executor<float>(0))));
  m.calibration.gemm = cuda.measure_gemm_grids(0, step);
#endif
  return m;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action& action) {
  auto* cmd =
      app.add_subcommand("calibrate", "measure this machine: kernel efficiencies, dispatch, transports");
  auto o = std::make_shared<CalibrateOptions>();
  add_output_option(*cmd, "-o,--output", o->output, "calibration JSON to write")->required();
  add_output_option(*cmd, "--emit-platform", o->platform,
                    "also write a SimGrid platform of this machine (one host)");
  cmd->add_option("--transport", o->transports, "transports to measure: threads (default), mpi")
      ->delimiter(',');
  cmd->add_option("--device", o->device,
                  "what to measure: cpu (OpenBLAS, default) or cuda (GPU 0: cuBLAS and strata's kernels; "
                  "its transport is 'cuda', device-to-device copies)");
  add_output_option(*cmd, "--samples", o->samples,
                    "also write every measured task (plan, id, kind, FLOPs, bytes, median s) as CSV");
  cmd->add_flag("--mpi-probe", o->mpi_probe, "internal: the MPI half of --transport mpi, under mpirun -np 2")
      ->group("");
  cmd->callback([&action, o] {
    action = [o] {
      if (o->mpi_probe) return run_mpi_probe(o->output);
      for (const std::string& t : o->transports)
        if (t != "threads" && t != "mpi") throw InputError("--transport: unknown '" + t + "' (threads, mpi)");
      check_device(o->device, "threads");
      const bool progress = progress_wanted();
      real::Progress step;
      if (progress)
        step = [](const std::string& what) { std::fprintf(stderr, "\rcalibrate: %-60s", what.c_str()); };
      const Measured m = o->device == "cuda" ? measure_cuda(step) : measure_cpu(o->transports, step);
      const real::MachinePeaks& peaks = m.peaks;
      const real::DispatchOverhead& dispatch = m.dispatch;
      const std::vector<real::TaskSample>& tasks = m.tasks;
      Calibration c = m.calibration;
      if (progress) std::fprintf(stderr, "\r%70s\r", "");
      c.source = o->output;
      write_file_atomically(o->output, calibration_to_json(c, m.backend + ", " + peaks.host, utc_now()));
      print_calibration(peaks, dispatch, c);
      print_store_requests(m.stores);
      print_gemm_grids(c.gemm, peaks.host);
      std::printf("%zu tasks measured -> %s\n", tasks.size(), o->output.c_str());
      if (!o->samples.empty()) {
        write_file_atomically(o->samples, samples_csv(tasks));
        std::printf("each measured task's median time -> %s\n", o->samples.c_str());
      }
      if (!o->platform.empty()) {
        const std::string transport = o->device == "cuda" ? "cuda" : o->transports.front();
        write_file_atomically(o->platform, one_host_platform_xml(c, transport));
        std::printf("platform of this machine (%s transport) -> %s\n", transport.c_str(),
                    o->platform.c_str());
      }
      return 0;
    };
  });
}

}  // namespace strata::cli
