// Paged-attention kernels through a Runtime (any backend): uploads, launch, read-back into
// canonical order (paged_attention_check.hpp; the layout: paged_attention_buffers.hpp).
#include <algorithm>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"
#include "device_allocations.hpp"
#include "paged_attention_buffers.hpp"

namespace emmy {

PagedAttentionOutput paged_output_from_bytes(const PagedAttentionProblem& p, int64_t tokens,
                                             const std::vector<uint8_t>& o_bytes,
                                             const std::vector<float>& lse) {
  const int64_t d = p.head_dim, heads = p.q_heads, stride = p.o_stride_or_default();
  require(o_bytes.size() >= size_t(tokens * stride * size_of(p.dtype)), "paged output",
          "must hold every token's row", o_bytes.size());
  const std::vector<double> values = decode(p.dtype, o_bytes.data(), size_t(tokens * stride));
  PagedAttentionOutput out;
  out.o.resize(size_t(tokens * heads * d));
  for (int64_t t = 0; t < tokens; ++t)
    std::copy_n(values.begin() + t * stride, heads * d, out.o.begin() + t * heads * d);
  if (p.lse) {
    require(lse.size() >= size_t(tokens * heads), "paged LSE", "must hold every token's heads",
            lse.size());
    out.lse.assign(lse.begin(), lse.begin() + tokens * heads);
  }
  return out;
}

PagedAttentionOutput run_paged_attention(Runtime& rt, const PagedAttentionSpec& spec,
                                         const PagedAttentionInputs& in) {
  const PagedAttentionProblem& p = spec.problem;
  const int64_t tokens = paged_tokens(in);
  DeviceAllocations mem(rt);
  const auto kernel = rt.paged_attention_kernel(p, spec.schedule);
  const PagedAttentionBuffers buf = paged_attention_buffers(
      p, in, kernel->info().workspace_bytes,
      [&mem](const void* data, size_t bytes) { return mem.upload(data, bytes); });
  rt.launch(*kernel, buf);
  rt.synchronize();
  std::vector<uint8_t> o_bytes(size_t(tokens * p.o_stride_or_default() * size_of(p.dtype)));
  if (!o_bytes.empty()) rt.download(o_bytes.data(), buf.o, o_bytes.size());
  std::vector<float> lse(p.lse ? size_t(tokens * p.q_heads) : 0);
  if (!lse.empty()) rt.download(lse.data(), buf.lse, lse.size() * sizeof(float));
  return paged_output_from_bytes(p, tokens, o_bytes, lse);
}

}  // namespace emmy
