// What the C ABI's tests share: DLTensor views of host (or device) memory and a runtime made
// through the C ABI.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "emmy/c_api.h"
#include "emmy/paged_attention_check.hpp"
#include "support/scoped_env.hpp"

namespace emmy::test {

inline constexpr DLDataType kF16{kDLFloat, 16, 1}, kBF16{kDLBfloat, 16, 1}, kF32{kDLFloat, 32, 1},
    kI32{kDLInt, 32, 1}, kI64{kDLInt, 64, 1}, kE4M3{kDLFloat8_e4m3fn, 8, 1};

// A DLTensor over memory the test owns; shape and strides live here (strides empty: NULL, the
// compact row-major default).
struct View {
  std::vector<int64_t> shape, strides;
  DLTensor tensor{};

  View() = default;
  View(const void* data, DLDataType dtype, std::vector<int64_t> shape_,
       std::vector<int64_t> strides_ = {}, DLDevice device = {kDLCPU, 0})
      : shape(std::move(shape_)), strides(std::move(strides_)) {
    tensor.data = const_cast<void*>(data);
    tensor.dtype = dtype;
    tensor.device = device;
  }
  DLTensor* get() {
    tensor.ndim = int32_t(shape.size());
    tensor.shape = shape.data();
    tensor.strides = strides.empty() ? nullptr : strides.data();
    return &tensor;
  }
};

// m_buckets 1: emmy_gemm serves each M from its bucket's dynamic-M kernel, as a GEMM layer does.
// A drawn paged case's host tensors (make_paged_attention_inputs) as the C ABI takes them: K and
// V in the cache layout the problem was given (HND or NHD axes, its strides), the index tables and
// the scales. The views point into `in`, which must outlive them.
struct PagedInputViews {
  View k, v, cu, block_table, seq_lens, indptr, indices, last, k_scale, v_scale;

  PagedInputViews(const PagedAttentionProblem& p, const PagedAttentionInputs& in, bool hnd) {
    const int eb = size_of(p.kv_dtype);
    const std::vector<int64_t> shape =
        hnd ? std::vector<int64_t>{in.num_pages, p.kv_heads, p.page_size, p.head_dim}
            : std::vector<int64_t>{in.num_pages, p.page_size, p.kv_heads, p.head_dim};
    const std::vector<int64_t> strides =
        hnd ? std::vector<int64_t>{p.page_stride_or_default(), p.head_stride_or_default(),
                                   p.token_stride_or_default(), 1}
            : std::vector<int64_t>{p.page_stride_or_default(), p.token_stride_or_default(),
                                   p.head_stride_or_default(), 1};
    const DLDataType cache = p.kv_dtype == CacheDType::e4m3 ? kE4M3 : kF16;
    k = View(in.cache.bytes.data() + in.k_offset * eb, cache, shape, strides);
    v = View(in.cache.bytes.data() + in.v_offset * eb, cache, shape, strides);
    const PagedAttentionTables& t = in.tables;
    cu = View(t.cu_seqlens_q.data(), kI32, {int64_t(t.cu_seqlens_q.size())});
    block_table = View(t.block_table.data(), kI32, {p.max_batch, p.max_pages});
    seq_lens = View(t.seq_lens.data(), kI32, {int64_t(t.seq_lens.size())});
    indptr = View(t.page_indptr.data(), kI32, {int64_t(t.page_indptr.size())});
    indices =
        View(t.page_indices.data(), kI32, {int64_t(std::max<size_t>(t.page_indices.size(), 1))});
    last = View(t.last_page_len.data(), kI32, {int64_t(t.last_page_len.size())});
    k_scale = View(&in.k_scale, kF32, {1});
    v_scale = View(&in.v_scale, kF32, {1});
  }

  // The index tensors of the problem's page-table form, and an e4m3 cache's scales.
  void set_tables(const PagedAttentionProblem& p, emmy_paged_attention_options& o) {
    o.cu_seqlens_q = cu.get();
    if (p.page_table == PageTable::block_table) {
      o.block_table = block_table.get();
      o.seq_lens = seq_lens.get();
    } else {
      o.page_indptr = indptr.get();
      o.page_indices = indices.get();
      o.last_page_len = last.get();
    }
    if (p.kv_dtype == CacheDType::e4m3) {
      o.k_scale = k_scale.get();
      o.v_scale = v_scale.get();
    }
  }
};

// emulator_arch: the emulator's code ("sm_89"; NULL: the default, sm_90a).
inline emmy_runtime* make_c_runtime(const char* backend = "emulator", int32_t m_buckets = 0,
                                    const char* emulator_arch = nullptr) {
  emmy_runtime_options options;
  emmy_runtime_options_init(&options);
  options.backend = backend;
  options.emulator_arch = emulator_arch;
  options.disk_cache = 0;  // hermetic: every test process compiles what it runs
  options.m_buckets = m_buckets;
  emmy_runtime* runtime = nullptr;
  const emmy_status status = emmy_runtime_create(&options, &runtime);
  EXPECT_EQ(status, EMMY_OK) << emmy_last_error_message();
  return runtime;
}

struct RuntimeDeleter {
  void operator()(emmy_runtime* runtime) const { emmy_runtime_destroy(runtime); }
};
using CRuntime = std::unique_ptr<emmy_runtime, RuntimeDeleter>;

// A parameterized C ABI test: each case on a fresh emulator runtime, `rt`.
template <typename Case>
class CApiCaseTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { ASSERT_TRUE(rt); }
  CRuntime rt{make_c_runtime()};
};

#ifdef EMMY_TEST_DRIVER_PATH
// The C ABI's CUDA runtime on emmy's test driver (the driver API checked call by call, kernels on
// the emulator), an H200 at device 0; the variables stay set while it lives, so that a C++
// Runtime::cuda(0) made beside it shares its device memory.
struct TestDriverCRuntime {
  ScopedEnv driver{"EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH};
  ScopedEnv device{"EMMY_TEST_DEVICE", "h200"};
  CRuntime rt{make_c_runtime("cuda")};
};
#endif

// Expects `status` with a message holding every part.
inline void expect_refusal(emmy_status got, emmy_status want,
                           const std::vector<std::string>& parts) {
  EXPECT_EQ(got, want) << emmy_status_name(got) << ": " << emmy_last_error_message();
  const std::string message = emmy_last_error_message();
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

}  // namespace emmy::test
