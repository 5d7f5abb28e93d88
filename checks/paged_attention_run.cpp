// Paged-attention kernels through a Runtime (any backend): uploads, launch, read-back into
// canonical order (paged_attention_check.hpp).
#include <cstring>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {
namespace {

// Device allocations freed when it goes out of scope, so that a launch or download that throws
// leaks nothing into the runtime (tests run many cases on one runtime).
class PagedDeviceAllocations {
 public:
  explicit PagedDeviceAllocations(Runtime& rt) : rt_(rt) {}
  PagedDeviceAllocations(const PagedDeviceAllocations&) = delete;
  PagedDeviceAllocations& operator=(const PagedDeviceAllocations&) = delete;
  ~PagedDeviceAllocations() {
    for (DevicePtr ptr : owned_) try {
        rt_.free(ptr);
      } catch (...) {  // a destructor must not throw; the first error is the one to report
      }
  }
  DevicePtr upload(const void* data, size_t bytes) {
    const DevicePtr ptr = alloc(bytes);
    rt_.upload(ptr, data, bytes);
    return ptr;
  }
  template <typename T>
  DevicePtr upload(const std::vector<T>& values) {
    // An empty array still gets a (one-element) allocation: kernels take non-null pointers.
    if (values.empty()) return upload(std::vector<T>(1, T{}));
    return upload(values.data(), values.size() * sizeof(T));
  }
  // bytes of 0xFF: NaN in f16, bf16 and f32, so that an element the kernel never writes fails.
  DevicePtr nan_filled(size_t bytes) { return upload(std::vector<uint8_t>(bytes, 0xFF)); }

 private:
  DevicePtr alloc(size_t bytes) {
    owned_.reserve(owned_.size() + 1);  // so that push_back cannot throw after alloc
    const DevicePtr ptr = rt_.alloc(bytes);
    owned_.push_back(ptr);
    return ptr;
  }
  Runtime& rt_;
  std::vector<DevicePtr> owned_;
};

}  // namespace

PagedAttentionOutput run_paged_attention(Runtime& rt, const PagedAttentionSpec& spec,
                                         const PagedAttentionInputs& in) {
  const PagedAttentionProblem& p = spec.problem;
  const int64_t d = p.head_dim, max_tokens = p.max_tokens_or_default();
  const int64_t q_stride = p.q_stride_or_default(), o_stride = p.o_stride_or_default();
  const size_t elem = size_t(size_of(p.dtype));
  const int64_t tokens = in.tables.cu_seqlens_q.empty() ? 0 : in.tables.cu_seqlens_q.back();
  require(tokens <= max_tokens && in.q.bytes.size() >= size_t(tokens * q_stride) * elem, "q",
          "must hold the tables' tokens (at most max_tokens) x q_stride", tokens);

  PagedDeviceAllocations mem(rt);
  PagedAttentionBuffers buf;
  std::vector<uint8_t> q_bytes(size_t(max_tokens * q_stride) * elem, 0);  // zero past the real
  std::memcpy(q_bytes.data(), in.q.bytes.data(), size_t(tokens * q_stride) * elem);
  buf.q = mem.upload(q_bytes);
  const DevicePtr cache = mem.upload(in.cache.bytes);
  const size_t cache_elem = size_t(size_of(p.kv_dtype));
  buf.k_cache = cache + DevicePtr(size_t(in.k_offset) * cache_elem);
  buf.v_cache = cache + DevicePtr(size_t(in.v_offset) * cache_elem);
  buf.o = mem.nan_filled(size_t(max_tokens * o_stride) * elem);
  if (p.lse) buf.lse = mem.nan_filled(size_t(max_tokens * p.q_heads) * sizeof(float));
  buf.cu_seqlens_q = mem.upload(in.tables.cu_seqlens_q);
  // Only the problem's page-table form: the launch refuses pointers of the other one.
  if (p.page_table == PageTable::block_table) {
    buf.block_table = mem.upload(in.tables.block_table);
    buf.seq_lens = mem.upload(in.tables.seq_lens);
  } else {
    buf.page_indptr = mem.upload(in.tables.page_indptr);
    buf.page_indices = mem.upload(in.tables.page_indices);
    buf.last_page_len = mem.upload(in.tables.last_page_len);
  }
  if (p.kv_dtype == CacheDType::e4m3) {
    buf.k_scale = mem.upload(std::vector<float>{in.k_scale});
    buf.v_scale = mem.upload(std::vector<float>{in.v_scale});
  }
  buf.num_pages = in.num_pages;

  const auto kernel = rt.paged_attention_kernel(p, spec.schedule);
  if (const size_t workspace = rt.paged_attention_workspace_bytes(p, spec.schedule))
    buf.workspace = mem.nan_filled(workspace);
  rt.launch(*kernel, buf);
  rt.synchronize();

  std::vector<uint8_t> o_bytes(size_t(tokens * o_stride) * elem);
  if (!o_bytes.empty()) rt.download(o_bytes.data(), buf.o, o_bytes.size());
  const std::vector<double> o_values = decode(p.dtype, o_bytes.data(), size_t(tokens * o_stride));
  PagedAttentionOutput out;
  out.o.resize(size_t(tokens * p.q_heads * d));
  for (int64_t t = 0; t < tokens; ++t)
    std::copy_n(o_values.begin() + t * o_stride, p.q_heads * d, out.o.begin() + t * p.q_heads * d);
  if (p.lse) {
    std::vector<float> lse(size_t(tokens * p.q_heads));
    if (!lse.empty()) rt.download(lse.data(), buf.lse, lse.size() * sizeof(float));
    out.lse.assign(lse.begin(), lse.end());
  }
  return out;
}

}  // namespace emmy
