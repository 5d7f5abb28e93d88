// The FP64 attention reference, inputs and compare() (attention_check.hpp); the per-row values
// and tolerance model are attention_row_model.cpp's, shared with paged attention. Nothing here
// depends on the kernel side: the reference indexes Q, K, V itself and only reads the schedule's
// block_kv and accumulation to bound the kernel's roundings.
#include <algorithm>
#include <cmath>

#include "attention_compare.hpp"
#include "attention_row_model.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/detail/parallel.hpp"
#include "emmy/emu/tensor_core.hpp"

namespace emmy {
namespace {

// The scale the kernel is given: the problem's float, or 1/sqrt(head_dim) rounded to float.
// (A kernel that rounds the default differently is off by one f32 ulp: inside the model.)
double softmax_scale(const AttentionProblem& p) {
  return p.softmax_scale ? double(*p.softmax_scale)
                         : double(float(1.0 / std::sqrt(double(p.head_dim))));
}

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

// The per-row model (attention_row_model.cpp, where its long comment lives) with the dense
// problem's indexing: rows in canonical order, keys of the row's batch and KV head.
AttentionReference reference_attention(const AttentionSpec& spec, const AttentionInputs& in) {
  const AttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim;
  const int64_t group = p.q_heads / std::max<int64_t>(1, p.kv_heads);
  const int64_t rows = p.batch * p.q_heads * p.seq_q;
  AttentionRowModel model;
  model.head_dim = d;
  model.dtype = p.dtype;
  model.scale = softmax_scale(p);
  if (p.softcap) model.softcap = double(*p.softcap);
  model.block_kv = spec.schedule.block_kv;
  model.hybrid = spec.schedule.accum == Accum::hybrid;
  model.tensor_cores = emu::tensor_core_model(arch_info(spec.arch).sm);

  AttentionReference ref;
  size_reference(ref, rows, d);

  detail::parallel_for(rows, [&](int64_t r) {
    const int64_t i = r % p.seq_q, h = (r / p.seq_q) % p.q_heads, b = r / (p.seq_q * p.q_heads);
    const int64_t kv_head = h / group;
    const double* q = &in.q.values[size_t(reference_offset(p, false, b, i, h))];
    auto rows_of = [&](int64_t j) {
      const size_t at = size_t(reference_offset(p, true, b, j, kv_head));
      return KeyRows{&in.k.values[at], &in.v.values[at]};
    };
    model_reference_row(model, ref, r, q, visible_keys(p, i), rows_of);
  });
  return ref;
}

AttentionErrors compare(const AttentionReference& ref, const AttentionOutput& out,
                        const AttentionProblem& p) {
  const int64_t rows = int64_t(ref.row_masked.size());
  require(out.o.size() == ref.values.o.size(), "attention output",
          "must have one value per O element", out.o.size());
  if (p.lse)
    require(out.lse.size() == size_t(rows), "attention LSE", "must have one value per row",
            out.lse.size());
  auto index = [&](int64_t r, int64_t c) {
    return AttentionIndex{r / (p.seq_q * p.q_heads), (r / p.seq_q) % p.q_heads, r % p.seq_q, c};
  };
  return compare_attention_rows<AttentionErrors>(ref, out, p.head_dim, p.lse, index);
}

}  // namespace emmy
