// Gradient-free ADMM training of an MLP: the numerics of dlADMM (Wang et al., KDD 2019), pdADMM
// (Wang, Chai, Cheng & Zhao, ICDM 2020) and the quantised pdADMM-G-Q (Wang, Li, Chai, Wang, Cheng
// & Zhao, "Towards quantized model parallelism for graph-augmented MLPs based on gradient-free
// ADMM", 2021), for float and double.
//
// The problem (pdADMM, Problem 2), for layers l = 0..L-1 with ReLU f on all but the last:
//   min  R(z_{L-1}; y) + Σ_l μ/2‖W_l‖² + ν/2 Σ_l ‖z_l − W_l p_l − b_l‖²
//                      + ν/2 Σ_{l<L-1} ‖q_l − f(z_l)‖²
//   s.t. p_{l+1} = q_l  (dual u_l),  p_0 = the input,
// R the softmax cross-entropy summed over samples. ADMM minimises the augmented Lagrangian
//   L_ρ = that objective + Σ_{l<L-1} ⟨u_l, p_{l+1} − q_l⟩ + ρ/2 ‖p_{l+1} − q_l‖²
// one variable at a time. Every variable belongs to one layer, so a layer is a unit of work for
// one worker; layer l reads only q_{l-1}, u_{l-1} from its predecessor and p_{l+1} from its
// successor. In iteration k (the papers' public code, serial and parallel alike):
//   backward phase of layer l: p_l (reads q_{l-1}^{k-1}, u_{l-1}^{k-1}), then W_l, b_l, z_l (z_l
//     reads its own q_l^{k-1});                                         → sends p_l^k backward
//   forward phase of layer l:  q_l, u_l (read p_{l+1}^k)                → sends q_l^k, u_l^k forward
// Every backward phase of an iteration can therefore run in parallel (pdADMM), then every
// forward phase. Run serially backward then forward (dlADMM's backward-forward sweep, here on
// pdADMM's variables), each update reads the same iterates, so both drivers give the same
// numbers; the tests hold them to it.
// This header holds the per-layer updates (what the Plan's ADMM tasks run: task_runner_admm.cpp),
// the data preparation, initialisation and evaluation; the two whole-network drivers, the test
// oracles of the Plan runs, are in strata/real/reference/admm_train.hpp.
// Traffic per boundary per iteration: p backward, q and u forward, n·N values each.
//
// Layout: samples are columns (as in the papers): p_l [n_l, N], W_l [n_{l+1}, n_l], b_l
// [n_{l+1}], z_l, q_l, u_l [n_{l+1}, N], labels one-hot [classes, N]. widths = {n_0 .. n_L}.
// Invariants of an AdmmNetwork (shapes checked by STRATA_ASSERT in the updates): layers[0].p is the
// input and never changes; the last layer has empty q and u; layers[l].wp == W_l p_l up to
// rounding (every update that changes W or p updates it by the same linear algebra, which saves
// two GEMMs per layer and iteration); with quantisation on, every p_l (l > 0) lies on the grid
// after its first update.
// Ownership: an AdmmNetwork owns all its tensors; update functions borrow their inputs for the
// call. Thread safety: the updates of different layers touch disjoint state and only read the
// neighbour tensors they are given, so they may run on different threads (one Backend shared).
// Errors: bad hyperparameters or shapes given by a user throw strata::InputError with one line
// naming the parameter; everything else is an invariant (STRATA_ASSERT).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/real/core/backend.hpp"
#include "strata/real/core/int8_codec.hpp"
#include "strata/real/core/tensor.hpp"
#include "strata/real/data/fashion_mnist.hpp"

namespace strata::real {

struct AdmmSettings {
  double rho = 1e-4;              // ρ, penalty on p_{l+1} = q_l (papers' code: 1e-4 for MLPs)
  double nu = 1e-4;               // ν, weight of the layer-fit terms (papers' code: ν = ρ)
  double weight_decay = 0;        // μ ≥ 0 (pdADMM-G: 0.01–1; pdADMM: 0)
  double p_curvature = 10;        // τ0: first curvature tried by the p backtracking (code: 10)
  double w_curvature = 10;        // θ0: first curvature tried by the W backtracking (code: 10)
  int max_backtracks = 10;        // after that many doublings the variable keeps its value (code)
  int fista_iterations = 50;      // output-z FISTA (pdADMM-G code: 50)
  double fista_step = 2;          // 1/L with L = 1/2 bounding the softmax-CE Hessian
  double fista_tolerance = 1e-7;  // stop when the objective moves less than this, relatively
  bool quantize_p = false;        // pdADMM-G-Q: p_l ∈ Δ, sent as int8
  QuantGrid grid;                 // core/int8_codec.hpp
};

// Throws InputError naming the first bad parameter (ρ, ν ≤ 0, μ < 0, curvatures ≤ 0, ...).
void validate(const AdmmSettings& settings);

template <typename T>
struct AdmmLayer {
  Tensor<T> p, W, b, z, q, u;
  Tensor<T> wp;  // W·p, kept in step by the updates
};

template <typename T>
struct AdmmNetwork {
  std::vector<AdmmLayer<T>> layers;
  Tensor<T> labels;  // one-hot [classes, N]
};

// ---- data: a seeded subset of Fashion-MNIST as columns ----

template <typename T>
struct AdmmData {
  Tensor<T> x;                        // [784, N], pixels in [0, 1]
  Tensor<T> labels;                   // one-hot [10, N]
  std::vector<std::int32_t> classes;  // N class indices
};
// The first `count` images of a permutation of `data` seeded by `seed` (shuffled_indices);
// seed 0 with count == data.count keeps the file order. Throws InputError if count is not in
// [1, data.count].
template <typename T>
AdmmData<T> admm_columns(const LabelledImages& data, std::int64_t count, std::uint64_t seed);

// ---- initialisation ----

// Cold start as in the papers' code: W, b ~ N(0, 0.1²) from `seed`; a forward pass sets z_l =
// W_l p_l + b_l, q_l = ReLU(z_l), p_{l+1} = q_l; u = 0; the output z is +1 on the true class and
// −1 elsewhere. widths = {n_0, …, n_L}; throws InputError for fewer than 2 widths, a width < 1,
// or x / labels whose rows are not n_0 / n_L or whose columns differ.
template <typename T>
AdmmNetwork<T> cold_start(const Tensor<T>& x, const Tensor<T>& labels,
                          const std::vector<std::int64_t>& widths, std::uint64_t seed, Backend& backend);

// The papers' warm start of a deeper network from a trained shallower one (pdADMM-G code): `extra`
// identity layers (W = I, b = 0, u = 0, z = p, q = ReLU(z)) are inserted before the output layer,
// which keeps its W, b and z and reads the last identity layer's q; every other layer keeps its
// state. ReLU(I·a + 0) = a for the ReLU outputs a, so the deeper network computes what the
// shallower one did. Throws InputError if extra < 0, or extra > 0 and the network has no hidden
// layer (the inserted layers are square, of the last hidden width).
template <typename T>
AdmmNetwork<T> warm_start_deeper(const AdmmNetwork<T>& shallow, int extra, Backend& backend);

// ---- the per-layer updates (the Plan's ADMM tasks) ----
// REQUIRES (all): the layer's tensors chain as in the layout above and the neighbour tensors
// have the shape of the variable they pair with (STRATA_ASSERT); s passed validate().

struct BacktrackResult {
  double curvature = 0;  // τ or θ accepted (the step is gradient / curvature)
  int doublings = 0;
  bool moved = false;  // false: max_backtracks reached, the variable kept its value
};

// p_l (l > 0): one backtracking step on
//   φ_p(p) = ν/2‖z_l − W_l p − b_l‖² + ⟨u_{l-1}, p − q_{l-1}⟩ + ρ/2‖p − q_{l-1}‖²
// (pdADMM eq. for p: the quadratic bound U(p; τ) with τ doubled until it bounds φ_p). With
// quantize_p (pdADMM-G-Q), the candidate is the grid point nearest to p − ∇φ_p/τ, the bound is
// checked on that rounded step (one GEMM per trial), and after max_backtracks p becomes the
// grid point nearest to itself.
template <typename T>
BacktrackResult update_p(AdmmLayer<T>& layer, const Tensor<T>& q_prev, const Tensor<T>& u_prev,
                         const AdmmSettings& s, Backend& backend);
// W_l: one backtracking step on φ_W(W) = ν/2‖z_l − W p_l − b_l‖² + μ/2‖W‖².
template <typename T>
BacktrackResult update_W(AdmmLayer<T>& layer, const AdmmSettings& s, Backend& backend);
// b_l: the exact minimiser of ν/2‖z_l − W_l p_l − b‖²: the sample mean of z_l − W_l p_l.
template <typename T>
void update_b(AdmmLayer<T>& layer);
// Hidden z_l: the exact elementwise minimiser of
//   ν/2‖z − W p − b‖² + ν/2‖q_l − ReLU(z)‖² + ν/2‖z − z_l^{k-1}‖²
// (the best of the z ≤ 0 and z ≥ 0 branches, each closed form). The papers' code picks the
// branch without the proximal term; counting it makes the result the true minimiser.
template <typename T>
void update_z_hidden(AdmmLayer<T>& layer, const AdmmSettings& s);
// Output z: FISTA (Beck & Teboulle 2009) on R(z; y) + ν/2‖z − W p − b‖², the quadratic handled
// by its exact proximal map. Returns the iterations run.
template <typename T>
int update_z_output(AdmmLayer<T>& layer, const Tensor<T>& labels, const AdmmSettings& s);
// q_l: exact minimiser of ν/2‖q − ReLU(z_l)‖² + ⟨u_l, p_{l+1} − q⟩ + ρ/2‖p_{l+1} − q‖²:
//   q = (ν ReLU(z_l) + u_l + ρ p_{l+1}) / (ν + ρ).
template <typename T>
void update_q(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s);
// u_l ← u_l + ρ (p_{l+1} − q_l).
template <typename T>
void update_u(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s);

// What a layer reads from its neighbours in the backward phase. q_prev/u_prev null: first
// layer (p is the input); labels non-null: last layer (output z by FISTA).
template <typename T>
struct BackwardInputs {
  const Tensor<T>* q_prev = nullptr;
  const Tensor<T>* u_prev = nullptr;
  const Tensor<T>* labels = nullptr;
};
// p (unless first), W, b, z of one layer.
template <typename T>
void update_layer_backward(AdmmLayer<T>& layer, const BackwardInputs<T>& in, const AdmmSettings& s,
                           Backend& backend);
// q, u of one non-last layer from p_{l+1}^k.
template <typename T>
void update_layer_forward(AdmmLayer<T>& layer, const Tensor<T>& p_next, const AdmmSettings& s);

// Subproblem objectives, for tests and diagnostics (double accumulation).
template <typename T>
double p_objective(const AdmmLayer<T>& layer, const Tensor<T>& p, const Tensor<T>& q_prev,
                   const Tensor<T>& u_prev, const AdmmSettings& s, Backend& backend);
template <typename T>
double w_objective(const AdmmLayer<T>& layer, const Tensor<T>& W, const AdmmSettings& s, Backend& backend);
template <typename T>
double z_hidden_objective(const AdmmLayer<T>& layer, const Tensor<T>& z, const Tensor<T>& z_old,
                          const AdmmSettings& s);
template <typename T>
double z_output_objective(const AdmmLayer<T>& layer, const Tensor<T>& z, const Tensor<T>& labels,
                          const AdmmSettings& s);

// pdADMM-G-Q's adaptive ρ (pdADMM_G_Q_*_layer.py): after each iteration k ≥ 3 (0-based), if the
// training cost fell by less than `min_decrease` in each of the last two iterations, ρ ← min(10ρ,
// rho_max). ν is scaled with ρ (the papers' code has one parameter for both), so ν/ρ stays.
class AdaptiveRho {
 public:
  AdaptiveRho(double min_decrease = 0.01, double rho_max = 1.0);
  // Records the cost of the iteration just run; returns true if it raised s.rho (and s.nu).
  bool observe(double train_cost, AdmmSettings& s);

 private:
  double min_decrease_;
  double rho_max_;
  std::vector<double> costs_;
};

// ---- evaluation ----

// Forward pass with the network's W, b (ReLU on hidden layers): logits [classes, columns of x].
template <typename T>
Tensor<T> forward_logits(const AdmmNetwork<T>& net, const Tensor<T>& x, Backend& backend);
// Fraction of columns whose argmax logit is the class (first maximum wins).
template <typename T>
double accuracy(const AdmmNetwork<T>& net, const Tensor<T>& x, const std::vector<std::int32_t>& classes,
                Backend& backend);
// Mean softmax cross-entropy of the forward pass (the "training cost" of the adaptive ρ rule).
template <typename T>
double mean_cross_entropy(const AdmmNetwork<T>& net, const Tensor<T>& x, const Tensor<T>& labels,
                          Backend& backend);

struct AdmmResidual {
  double loss = 0;       // R(z_{L-1}; y), summed over samples
  double objective = 0;  // the augmented Lagrangian L_ρ
  double coupling = 0;   // Σ_l ‖p_{l+1} − q_l‖² (the papers' "linear_r")
  double fit = 0;        // Σ_l ‖z_l − W_l p_l − b_l‖²
};
template <typename T>
AdmmResidual residual(const AdmmNetwork<T>& net, const AdmmSettings& s);

}  // namespace strata::real
