// strata_mpi_driver: one process of an MPI test run, started by mpirun (mpi_transport_test.cpp).
// It trains the test MLP over MpiTransport for a few SGD steps in float64 and writes what its
// rank saw to <out>/rank<r>.txt (mpi_test_runs.hpp).
//
//   strata_mpi_driver <dp> <pp> <microbatches> <gpipe|1f1b> <steps> <test images> <out dir>
//
// A world size other than dp·pp is refused as strata run refuses it: one line from rank 0 and
// exit status 1 on every rank. Any other error prints one line on its rank and aborts the job.
#include <cstdio>
#include <exception>
#include <string>

#include "mpi_test_runs.hpp"
#include "strata/real/mpi_transport.hpp"

namespace strata::real::mpi_test {
namespace {

struct Args {
  int dp = 1;
  int pp = 1;
  int microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int steps = 0;
  std::int64_t test_images = 0;
  std::string out;
};

Args parse(int argc, char** argv) {
  if (argc != 8)
    throw std::invalid_argument(
        "usage: strata_mpi_driver <dp> <pp> <microbatches> <gpipe|1f1b> <steps> <test images> <out dir>");
  Args a;
  a.dp = std::stoi(argv[1]);
  a.pp = std::stoi(argv[2]);
  a.microbatches = std::stoi(argv[3]);
  a.schedule = std::string(argv[4]) == "gpipe" ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b;
  a.steps = std::stoi(argv[5]);
  a.test_images = std::stoll(argv[6]);
  a.out = argv[7];
  return a;
}

void run(const MpiSession& session, const Plan& plan, const Args& a) {
  MpiTransport<double> transport(session, plan);
  CpuBackend backend;
  Trainer<double> trainer(plan, backend, train_config(), transport);
  const LabelledImages train = load_fashion_mnist(DatasetSplit::train);
  RankResult r;
  for (int s = 0; s < a.steps; ++s) r.losses.push_back(trainer.train_batch(train, batch_indices(s)));
  r.bytes = static_cast<double>(trainer.bytes_sent());
  if (a.test_images > 0)
    r.accuracy = trainer.test_accuracy(first_images(load_fashion_mnist(DatasetSplit::test), a.test_images));
  r.weights = weights_of(plan, trainer.workspace(), session.rank());
  write_result(a.out + "/rank" + std::to_string(session.rank()) + ".txt", r);
}

}  // namespace
}  // namespace strata::real::mpi_test

int main(int argc, char** argv) {
  using namespace strata::real;
  using namespace strata::real::mpi_test;
  MpiSession session;
  try {
    const Args args = parse(argc, argv);
    const strata::Plan plan = mlp_plan(args.dp, args.pp, args.microbatches, args.schedule);
    if (session.size() != plan.num_workers()) {
      if (session.rank() == 0)
        std::fprintf(stderr, "strata_mpi_driver: world size %d does not match the Plan's %d workers\n",
                     session.size(), plan.num_workers());
      return 1;
    }
    run(session, plan, args);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_mpi_driver: rank %d: %s\n", session.rank(), e.what());
    std::fflush(stderr);
    session.abort(1);
  }
}
