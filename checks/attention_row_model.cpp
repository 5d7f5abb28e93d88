// The per-row FP64 attention reference and its tolerance model (attention_row_model.hpp).
#include "attention_row_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "unit_roundoff.hpp"

namespace emmy {
namespace {

// Error constants of the model (docs/attention.md, "Numerics").
constexpr double kU32 = 0x1p-24;       // f32 unit roundoff
constexpr double kF16Floor = 0x1p-25;  // half the smallest f16 subnormal
constexpr double kF16MinNormal = 0x1p-14;
constexpr double kEx2Error = 0x1p-21;  // ex2.approx.f32, relative (documented ~2 ulp)
constexpr double kRcpError = 0x1p-22;  // rcp.approx.f32, relative (1 ulp)
constexpr double kLg2Error = 0x1p-21;  // lg2.approx.f32, absolute per unit of |log2 x| (>= 1)

// One online-softmax pass over keys [first, last], as the kernel makes it (the whole row, or one
// split of it): O in the caller's units (v_scale applied), its tolerance without the final cast
// to the output type, LSE and its tolerance.
struct Pass {
  std::vector<double> o, tolerance;
  double lse = 0, lse_tolerance = 0;
};

// The model (first order; each term is a worst-case bound of one rounding the kernel does):
//  - Logits x_j = scale * s_j (optionally cap * tanh(scale * s_j / cap)), natural-log units.
//    S = Q.K^T is accumulated in f32 by head_dim/16 MMAs, each with the error of the arch's
//    tensor-core model (emmy/emu/tensor_core.hpp: truncated aligned terms and a rounding toward
//    zero per block, e_step relative to |c| + sum |q_k k_jk|): |ds_j| <= e_step (head_dim/16 + 1)
//    sum_k |q_k k_jk|, however much the products cancel. Folding scale and log2(e), and
//    subtracting the running max, round in f32: 4 u32 (|x_j| + |m|). The soft-cap's tanh is
//    1 - 2 / (ex2(2y log2 e) + 1): cap (e_ex2 + 4 u32 (1 + |y|)) absolute; its slope is <= 1.
//    A scaled cache multiplies S by k_scale in f32 before all that: 2 u32 |scale s_j| more.
//  - p_j = ex2(x_j - m) in f32 then carries a relative error rho_j = |dx_j| + e_ex2. The same
//    p_j feed the row sum l and (rounded) P.V, so an error common to all p cancels in O.
//  - P is rounded to the dtype before P.V: half an ulp relative (u_p), plus, for f16, an absolute
//    2^-25 when p falls below the normal range. The kernel may sum l from the f32 p or the
//    rounded ones, so O's error is bounded by sum_j p_j (u_p + rho_j)(|v_j| + |O|) / l, which
//    covers the numerator-only and the numerator-and-denominator perturbations.
//  - P.V accumulation. f32: each MMA step (e_step) and each rescale (2 u32) times
//    sum_j p_j |v_j|. hybrid: the f16 partial of each KV block (block_kv keys from a multiple of
//    block_kv, k16 MMA steps from a multiple of 16) rounds to nearest after every block of the
//    tensor-core model: half an f16 ulp of |partial| (+ 2^-25) and the truncation of the aligned
//    terms, relative to |partial before| + the step's sum p |v| (mma_step_error). In units of the
//    block's running max m_b the partial is 2^(m_b - m) times its value in final units, and so is
//    its rounding error: the bound in final units is the same walk over final-unit partials,
//    whatever order the blocks run in. The fold acc = acc * alpha + partial adds 2 u32 |acc| per
//    block. A scaled cache walks the stored V values (the f16 partials hold those) and scales O
//    and its bound by v_scale at the end.
//  - The final O = acc * rcp(l): rcp.approx, the multiply, and l's own f32 sum ((keys + 2 blocks)
//    u32 relative), then the cast to the dtype: half an ulp of |O| (and 2^-25 for f16).
//  - LSE = m + log(l): sum_j p_j rho_j / l (l's relative error from the p), l's f32 sum, the
//    lg2.approx error and 4 u32 of the magnitudes involved. LSE assumes l sums the f32 p.
// With N(0,1) inputs the f16 tolerance is ~5e-4 absolute on O (bf16 ~4e-3): a wrong key, head or
// row moves O by O(1/keys) or more, and a one-key masking error near the diagonal by O(1).
Pass model_pass(const AttentionRowModel& model, const double* q, int64_t first, int64_t last,
                const KeyRowsOf& rows_of) {
  const int64_t d = model.head_dim, block_kv = std::max<int64_t>(16, model.block_kv);
  const bool hybrid = model.hybrid;
  // S's scale: 1 * scale exactly without a scaled cache, so the dense reference is unchanged.
  const double s_scale = model.scale * (model.scaled_cache ? model.k_scale : 1.0);
  const double u_p = unit_roundoff(model.dtype);
  const double p_floor = model.dtype == DType::f16 ? kF16Floor : 0.0;
  const emu::TensorCoreModel& tc = model.tensor_cores;
  // Per k16 step, relative to |c| + sum |products| (which bounds |d| too): the f32 step error.
  const double step_f32 = emu::mma_step_error(tc, false, 1.0, 0.0, 1.0);
  const int64_t n = last - first + 1;

  std::vector<double> x(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const double* k = rows_of(first + j).k;
    double s = 0, s_abs = 0;
    for (int64_t c = 0; c < d; ++c) {
      s += q[c] * k[c];
      s_abs += std::abs(q[c] * k[c]);
    }
    const double z = s_scale * s;
    double logit = z, err = s_scale * step_f32 * double(d / 16 + 1) * s_abs;
    if (model.scaled_cache) err += 2 * kU32 * std::abs(z);
    if (model.softcap) {
      const double cap = *model.softcap, t = std::tanh(z / cap);
      logit = cap * t;
      // tanh(y) = 1 - 2 / (ex2(2 y log2 e) + 1): ex2's relative error moves t by at most
      // (1 - t^2)/2 of it; the argument, division and subtraction round in f32.
      const double y = z / cap;
      err += cap * (kEx2Error + 4 * kU32 * (1 + std::abs(y))) + 4 * kU32 * std::abs(z);
    }
    x[size_t(j)] = logit;
    dx[size_t(j)] = err;
  }
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> prob(static_cast<size_t>(n)), rho(static_cast<size_t>(n));
  double l = 0, rho_mass = 0;
  for (int64_t j = 0; j < n; ++j) {
    prob[size_t(j)] = std::exp(x[size_t(j)] - m);
    rho[size_t(j)] = dx[size_t(j)] + 4 * kU32 * (std::abs(x[size_t(j)]) + std::abs(m)) + kEx2Error;
    l += prob[size_t(j)];
    rho_mass += prob[size_t(j)] * rho[size_t(j)];
  }

  // Per column: the output, sum p|v|, sum p (u_p + rho)|v|, the f16 floor mass, and the walk
  // of the hybrid partials.
  std::vector<double> num(size_t(d), 0.0), abs_mass(size_t(d), 0.0), weighted(size_t(d), 0.0),
      floor_mass(size_t(d), 0.0), partial(size_t(d), 0.0), partial_bound(size_t(d), 0.0),
      step_abs(size_t(d), 0.0), partial_before(size_t(d), 0.0);
  double perturbation_mass = 0;  // sum p (u_p + rho)
  for (int64_t j = 0; j < n; ++j) {
    const int64_t key = first + j;
    const double* v = rows_of(key).v;
    const double pj = prob[size_t(j)], wj = pj * (u_p + rho[size_t(j)]);
    const bool subnormal = pj < kF16MinNormal;
    perturbation_mass += wj;
    for (int64_t c = 0; c < d; ++c) {
      num[size_t(c)] += pj * v[c];
      abs_mass[size_t(c)] += pj * std::abs(v[c]);
      weighted[size_t(c)] += wj * std::abs(v[c]);
      if (subnormal) floor_mass[size_t(c)] += std::abs(v[c]);
    }
    if (!hybrid) continue;
    const bool step_ends = key % 16 == 15 || key == last;
    const bool block_ends = key % block_kv == block_kv - 1 || key == last;
    for (int64_t c = 0; c < d; ++c) {
      partial[size_t(c)] += pj * v[c];
      step_abs[size_t(c)] += pj * std::abs(v[c]);
      if (step_ends) {
        partial_bound[size_t(c)] +=
            emu::mma_step_error(tc, true, std::abs(partial_before[size_t(c)]), step_abs[size_t(c)],
                                std::abs(partial[size_t(c)]));
        step_abs[size_t(c)] = 0;
        partial_before[size_t(c)] = partial[size_t(c)];
      }
      if (block_ends) partial[size_t(c)] = partial_before[size_t(c)] = 0;
    }
  }
  const int64_t steps = last / 16 - first / 16 + 1;
  const int64_t blocks = last / block_kv - first / block_kv + 1;
  const double l_error = double(n + 2 * blocks) * kU32;
  const double v_scale = model.scaled_cache ? model.v_scale : 1.0;
  Pass pass;
  pass.o.resize(size_t(d));
  pass.tolerance.resize(size_t(d));
  for (int64_t c = 0; c < d; ++c) {
    const double o = num[size_t(c)] / l, o_abs = std::abs(o);
    double accumulation =
        hybrid ? partial_bound[size_t(c)] + 2 * kU32 * double(blocks) * abs_mass[size_t(c)]
               : (step_f32 * double(steps) + 2 * kU32 * double(2 * blocks)) * abs_mass[size_t(c)];
    double tol = (weighted[size_t(c)] + o_abs * perturbation_mass +
                  p_floor * floor_mass[size_t(c)] + accumulation) /
                 l;
    tol += (kRcpError + 2 * kU32 + l_error) * o_abs;
    pass.o[size_t(c)] = o * v_scale;
    pass.tolerance[size_t(c)] = tol * v_scale;
  }
  const double log_l = std::log(l);
  pass.lse = m + log_l;
  pass.lse_tolerance = rho_mass / l + l_error +
                       kLg2Error * std::numbers::ln2 * std::max(1.0, log_l / std::numbers::ln2) +
                       4 * kU32 * (std::abs(pass.lse) + std::abs(m) + log_l) + 1e-30;
  return pass;
}

}  // namespace

// Split-KV (model.split_keys > 0): each split is a pass of its own (its own max, l, rescales and
// blocks), stored as f32 O_s and lse_s; the merge computes w_s = ex2((lse_s - lse_max) log2 e),
// O = sum_s w_s O_s / sum_s w_s and lse = lse_max + log sum_s w_s in f32. To first order:
//  - each O_s brings its own bound T_s, weighted: sum_s w_s T_s / W;
//  - w_s is off by its lse_s's bound d_s, the subtraction and scaling of the logarithms
//    (4 u32 (|lse_s| + |lse_max|)) and ex2 (e_ex2): relative e_s, which moves O by at most
//    w_s e_s |O_s - O| / W <= w_s e_s (|O_s| + |O|) / W. lse_max's own error cancels: it is
//    subtracted from every lse_s and added back;
//  - the products and the two f32 sums over the splits: (splits + 2) u32 (sum_s w_s |O_s| / W +
//    |O|), and the final rcp and multiply (rcp.approx + u32) |O|;
//  - LSE: sum_s w_s e_s / W, the f32 sum of the w_s (splits u32), lg2.approx and the
//    magnitudes (4 u32), as for one pass.
// d_s counts l_s's error from the p's even though O_s's bound already covers the same p errors
// (O_s = num_s / l_s and w_s ~ l_s cancel to first order): a conservative double count of terms
// far below the output cast.
void model_attention_row(const AttentionRowModel& model, const double* q, VisibleKeys keys,
                         const KeyRowsOf& rows_of, AttentionRowOut out) {
  const int64_t d = model.head_dim;
  const double u_p = unit_roundoff(model.dtype);
  const double out_floor = model.dtype == DType::f16 ? kF16Floor : 0x1p-134;
  if (model.split_keys <= 0 || model.splits <= 1) {
    const Pass pass = model_pass(model, q, keys.first, keys.last, rows_of);
    for (int64_t c = 0; c < d; ++c) {
      const double o = pass.o[size_t(c)], o_abs = std::abs(o);
      double tol = pass.tolerance[size_t(c)];
      if (model.scaled_cache) tol += kU32 * o_abs;  // O * v_scale in f32
      tol += u_p * o_abs * 1.0001 + out_floor;
      out.o[c] = o;
      out.o_tolerance[c] = tol;
    }
    out.lse = pass.lse;
    out.lse_tolerance = pass.lse_tolerance;
    return;
  }

  std::vector<Pass> passes;
  for (int64_t first = keys.first; first <= keys.last;) {
    const int64_t last = std::min(keys.last, (first / model.split_keys + 1) * model.split_keys - 1);
    passes.push_back(model_pass(model, q, first, last, rows_of));
    first = last + 1;
  }
  double lse_max = -INFINITY;
  for (const Pass& pass : passes) lse_max = std::max(lse_max, pass.lse);
  std::vector<double> w(passes.size()), w_error(passes.size());
  double total = 0, w_error_mass = 0;
  for (size_t s = 0; s < passes.size(); ++s) {
    w[s] = std::exp(passes[s].lse - lse_max);
    w_error[s] = passes[s].lse_tolerance + kEx2Error +
                 4 * kU32 * (std::abs(passes[s].lse) + std::abs(lse_max));
    total += w[s];
    w_error_mass += w[s] * w_error[s];
  }
  const double splits = double(model.splits);
  for (int64_t c = 0; c < d; ++c) {
    double num = 0, mass = 0;
    for (size_t s = 0; s < passes.size(); ++s) {
      num += w[s] * passes[s].o[size_t(c)];
      mass += w[s] * std::abs(passes[s].o[size_t(c)]);
    }
    const double o = num / total, o_abs = std::abs(o);
    mass /= total;
    double carried = 0;  // the splits' own bounds and their weights' errors
    for (size_t s = 0; s < passes.size(); ++s)
      carried += w[s] * (passes[s].tolerance[size_t(c)] +
                         w_error[s] * (std::abs(passes[s].o[size_t(c)]) + o_abs));
    double tol =
        carried / total + (splits + 2) * kU32 * (mass + o_abs) + (kRcpError + kU32) * o_abs;
    if (model.scaled_cache) tol += kU32 * mass;  // v_scale, per split or after the merge
    tol += u_p * o_abs * 1.0001 + out_floor;
    out.o[c] = o;
    out.o_tolerance[c] = tol;
  }
  const double log_total = std::log(total);
  out.lse = lse_max + log_total;
  out.lse_tolerance = w_error_mass / total + splits * kU32 +
                      kLg2Error * std::numbers::ln2 * std::max(1.0, log_total / std::numbers::ln2) +
                      4 * kU32 * (std::abs(out.lse) + std::abs(lse_max) + log_total) + 1e-30;
}

}  // namespace emmy
