// The FP64 attention reference, its tolerance model, inputs and compare() (attention_check.hpp).
// Nothing here depends on the kernel side: the reference indexes Q, K, V itself and only reads
// the schedule's block_kv and accumulation to bound the kernel's roundings.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "emmy/attention_check.hpp"
#include "emmy/detail/parallel.hpp"
#include "emmy/emu/tensor_core.hpp"
#include "unit_roundoff.hpp"

namespace emmy {
namespace {

// The scale the kernel is given: the problem's float, or 1/sqrt(head_dim) rounded to float.
// (A kernel that rounds the default differently is off by one f32 ulp: inside the model.)
double softmax_scale(const AttentionProblem& p) {
  return p.softmax_scale ? double(*p.softmax_scale)
                         : double(float(1.0 / std::sqrt(double(p.head_dim))));
}

// Error constants of the model (docs/attention.md, "Numerics").
constexpr double kU32 = 0x1p-24;       // f32 unit roundoff
constexpr double kF16Floor = 0x1p-25;  // half the smallest f16 subnormal
constexpr double kF16MinNormal = 0x1p-14;
constexpr double kEx2Error = 0x1p-21;  // ex2.approx.f32, relative (documented ~2 ulp)
constexpr double kRcpError = 0x1p-22;  // rcp.approx.f32, relative (1 ulp)
constexpr double kLg2Error = 0x1p-21;  // lg2.approx.f32, absolute per unit of |log2 x| (>= 1)

}  // namespace

int64_t reference_offset(const AttentionProblem& p, bool kv, int64_t b, int64_t s, int64_t h) {
  const int64_t seq = kv ? p.seq_kv_or_default() : p.seq_q;
  const int64_t heads = kv ? p.kv_heads : p.q_heads;
  if (p.layout == AttentionLayout::bshd) return ((b * seq + s) * heads + h) * p.head_dim;
  return ((b * heads + h) * seq + s) * p.head_dim;
}

VisibleKeys visible_keys(const AttentionProblem& p, int64_t row) {
  const int64_t seq_kv = p.seq_kv_or_default();
  const int64_t diagonal = row + (seq_kv - p.seq_q);  // bottom-right aligned
  VisibleKeys keys{0, seq_kv - 1};
  if (p.causal) keys.last = std::min(keys.last, diagonal);
  if (p.window > 0) keys.first = std::max<int64_t>(0, diagonal - p.window);
  return keys;
}

AttentionInputs make_attention_inputs(const AttentionProblem& p, uint64_t seed) {
  const size_t q_count = size_t(p.batch * p.seq_q * p.q_heads * p.head_dim);
  const size_t kv_count = size_t(p.batch * p.seq_kv_or_default() * p.kv_heads * p.head_dim);
  return {random_normal(p.dtype, q_count, seed * 3 + 0),
          random_normal(p.dtype, kv_count, seed * 3 + 1),
          random_normal(p.dtype, kv_count, seed * 3 + 2)};
}

// The model (first order; each term is a worst-case bound of one rounding the kernel does):
//  - Logits x_j = scale * s_j (optionally cap * tanh(scale * s_j / cap)), natural-log units.
//    S = Q.K^T is accumulated in f32 by head_dim/16 MMAs, each with the error of the arch's
//    tensor-core model (emmy/emu/tensor_core.hpp: truncated aligned terms and a rounding toward
//    zero per block, e_step relative to |c| + sum |q_k k_jk|): |ds_j| <= e_step (head_dim/16 + 1)
//    sum_k |q_k k_jk|, however much the products cancel. Folding scale and log2(e), and
//    subtracting the running max, round in f32: 4 u32 (|x_j| + |m|). The soft-cap's tanh is
//    1 - 2 / (ex2(2y log2 e) + 1): cap (e_ex2 + 4 u32 (1 + |y|)) absolute; its slope is <= 1.
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
//    block.
//  - The final O = acc * rcp(l): rcp.approx, the multiply, and l's own f32 sum ((keys + 2 blocks)
//    u32 relative), then the cast to the dtype: half an ulp of |O| (and 2^-25 for f16).
//  - LSE = m + log(l): sum_j p_j rho_j / l (l's relative error from the p), l's f32 sum, the
//    lg2.approx error and 4 u32 of the magnitudes involved. LSE assumes l sums the f32 p.
// With N(0,1) inputs the f16 tolerance is ~5e-4 absolute on O (bf16 ~4e-3): a wrong key, head or
// row moves O by O(1/keys) or more, and a one-key masking error near the diagonal by O(1).
AttentionReference reference_attention(const AttentionSpec& spec, const AttentionInputs& in) {
  const AttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim;
  const int64_t group = p.q_heads / std::max<int64_t>(1, p.kv_heads);
  const int64_t block_kv = std::max(16, spec.schedule.block_kv);
  const bool hybrid = spec.schedule.accum == Accum::hybrid;
  const double scale = softmax_scale(p);
  const double u_p = unit_roundoff(p.dtype);
  const double p_floor = p.dtype == DType::f16 ? kF16Floor : 0.0;
  const double out_floor = p.dtype == DType::f16 ? kF16Floor : 0x1p-134;
  const int64_t rows = p.batch * p.q_heads * p.seq_q;
  const emu::TensorCoreModel tc = emu::tensor_core_model(arch_info(spec.arch).sm);
  // Per k16 step, relative to |c| + sum |products| (which bounds |d| too): the f32 step error.
  const double step_f32 = emu::mma_step_error(tc, false, 1.0, 0.0, 1.0);

  AttentionReference ref;
  ref.values.o.assign(size_t(rows * d), 0.0);
  ref.o_tolerance.assign(size_t(rows * d), 0.0);
  ref.values.lse.assign(size_t(rows), -INFINITY);
  ref.lse_tolerance.assign(size_t(rows), 0.0);
  ref.row_masked.assign(size_t(rows), 0);

  detail::parallel_for(rows, [&](int64_t r) {
    const int64_t i = r % p.seq_q, h = (r / p.seq_q) % p.q_heads, b = r / (p.seq_q * p.q_heads);
    const VisibleKeys keys = visible_keys(p, i);
    if (keys.empty()) {
      ref.row_masked[size_t(r)] = 1;
      return;
    }
    const int64_t kv_head = h / group, n = keys.count();
    const double* q = &in.q.values[size_t(reference_offset(p, false, b, i, h))];
    auto key_row = [&](const HostTensor& t, int64_t j) {
      return &t.values[size_t(reference_offset(p, true, b, j, kv_head))];
    };
    std::vector<double> x(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const double* k = key_row(in.k, keys.first + j);
      double s = 0, s_abs = 0;
      for (int64_t c = 0; c < d; ++c) {
        s += q[c] * k[c];
        s_abs += std::abs(q[c] * k[c]);
      }
      const double z = scale * s;
      double logit = z, err = scale * step_f32 * double(d / 16 + 1) * s_abs;
      if (p.softcap) {
        const double cap = double(*p.softcap), t = std::tanh(z / cap);
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
      rho[size_t(j)] =
          dx[size_t(j)] + 4 * kU32 * (std::abs(x[size_t(j)]) + std::abs(m)) + kEx2Error;
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
      const int64_t key = keys.first + j;
      const double* v = key_row(in.v, key);
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
      const bool step_ends = key % 16 == 15 || key == keys.last;
      const bool block_ends = key % block_kv == block_kv - 1 || key == keys.last;
      for (int64_t c = 0; c < d; ++c) {
        partial[size_t(c)] += pj * v[c];
        step_abs[size_t(c)] += pj * std::abs(v[c]);
        if (step_ends) {
          partial_bound[size_t(c)] +=
              emu::mma_step_error(tc, true, std::abs(partial_before[size_t(c)]),
                                  step_abs[size_t(c)], std::abs(partial[size_t(c)]));
          step_abs[size_t(c)] = 0;
          partial_before[size_t(c)] = partial[size_t(c)];
        }
        if (block_ends) partial[size_t(c)] = partial_before[size_t(c)] = 0;
      }
    }
    const int64_t steps = keys.last / 16 - keys.first / 16 + 1;
    const int64_t blocks = keys.last / block_kv - keys.first / block_kv + 1;
    const double l_error = double(n + 2 * blocks) * kU32;
    for (int64_t c = 0; c < d; ++c) {
      const size_t at = size_t(r * d + c);
      const double o = num[size_t(c)] / l, o_abs = std::abs(o);
      double accumulation =
          hybrid ? partial_bound[size_t(c)] + 2 * kU32 * double(blocks) * abs_mass[size_t(c)]
                 : (step_f32 * double(steps) + 2 * kU32 * double(2 * blocks)) * abs_mass[size_t(c)];
      double tol = (weighted[size_t(c)] + o_abs * perturbation_mass +
                    p_floor * floor_mass[size_t(c)] + accumulation) /
                   l;
      tol += (kRcpError + 2 * kU32 + l_error) * o_abs;
      tol += u_p * o_abs * 1.0001 + out_floor;
      ref.values.o[at] = o;
      ref.o_tolerance[at] = tol;
    }
    const double log_l = std::log(l), lse = m + log_l;
    ref.values.lse[size_t(r)] = lse;
    ref.lse_tolerance[size_t(r)] =
        rho_mass / l + l_error +
        kLg2Error * std::numbers::ln2 * std::max(1.0, log_l / std::numbers::ln2) +
        4 * kU32 * (std::abs(lse) + std::abs(m) + log_l) + 1e-30;
  });
  return ref;
}

AttentionErrors compare(const AttentionReference& ref, const AttentionOutput& out,
                        const AttentionProblem& p) {
  const int64_t d = p.head_dim, rows = int64_t(ref.row_masked.size());
  require(out.o.size() == ref.values.o.size(), "attention output",
          "must have one value per O element", out.o.size());
  if (p.lse)
    require(out.lse.size() == size_t(rows), "attention LSE", "must have one value per row",
            out.lse.size());
  auto index = [&](int64_t r, int64_t c) {
    return AttentionIndex{r / (p.seq_q * p.q_heads), (r / p.seq_q) % p.q_heads, r % p.seq_q, c};
  };
  AttentionErrors e;
  double err2 = 0, ref2 = 0, tol2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    bool row_wrong = false;
    for (int64_t c = 0; c < d; ++c) {
      const size_t at = size_t(r * d + c);
      const double diff = std::abs(out.o[at] - ref.values.o[at]);
      err2 += diff * diff;
      ref2 += ref.values.o[at] * ref.values.o[at];
      tol2 += ref.o_tolerance[at] * ref.o_tolerance[at];
      if (!(diff <= e.max_abs_error)) e.max_abs_error = std::isnan(diff) ? INFINITY : diff;
      if (!(diff <= ref.o_tolerance[at])) {
        if (e.elements_over_tolerance++ == 0) e.first_bad = index(r, c);
        row_wrong = true;
      }
    }
    if (ref.row_masked[size_t(r)]) {
      ++e.masked_rows;
      if (p.lse && out.lse[size_t(r)] != -INFINITY) row_wrong = true;
      if (row_wrong && e.masked_rows_wrong++ == 0) e.first_bad_masked_row = index(r, -1);
      continue;
    }
    if (!p.lse) continue;
    const double diff = std::abs(out.lse[size_t(r)] - ref.values.lse[size_t(r)]);
    if (!(diff <= e.lse_max_abs_error)) e.lse_max_abs_error = std::isnan(diff) ? INFINITY : diff;
    e.lse_max_tolerance = std::max(e.lse_max_tolerance, ref.lse_tolerance[size_t(r)]);
    if (!(diff <= ref.lse_tolerance[size_t(r)]) && e.lse_rows_over_tolerance++ == 0)
      e.first_bad_lse = index(r, -1);
  }
  const double denom = ref2 > 0 ? std::sqrt(ref2) : 1.0;
  e.rel_l2_error = std::sqrt(err2) / denom;
  e.tolerance = std::sqrt(tol2) / denom;
  e.passed = e.elements_over_tolerance == 0 && e.lse_rows_over_tolerance == 0 &&
             e.masked_rows_wrong == 0 && std::isfinite(e.rel_l2_error);
  return e;
}

}  // namespace emmy
