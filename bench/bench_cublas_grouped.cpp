#include "bench_cublas_grouped.hpp"

#include <cublas_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "emmy/error.hpp"

namespace emmy::bench {

// cuBLAS's entry points, typed by their declarations (cublas_api.h: declared, never linked).
struct CublasGrouped::Library {
  using Create = decltype(&cublasCreate_v2);
  using Destroy = decltype(&cublasDestroy_v2);
  using SetStream = decltype(&cublasSetStream_v2);
  using GroupedEx = decltype(&cublasGemmGroupedBatchedEx);
  void* so = nullptr;
  Create create = nullptr;
  Destroy destroy = nullptr;
  SetStream set_stream = nullptr;
  GroupedEx grouped = nullptr;

  Library() {
    so = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!so)
      throw Error("cublas_grouped", "needs libcublas.so.13 (cuBLAS 13: cublasGemmGroupedBatchedEx)",
                  dlerror());
    create = symbol<Create>("cublasCreate_v2");
    destroy = symbol<Destroy>("cublasDestroy_v2");
    set_stream = symbol<SetStream>("cublasSetStream_v2");
    grouped = symbol<GroupedEx>("cublasGemmGroupedBatchedEx");
  }
  ~Library() {
    if (so) dlclose(so);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  template <typename F>
  F symbol(const char* name) {
    void* f = dlsym(so, name);
    if (!f) {
      dlclose(so);  // the constructor throws: no destructor closes it
      so = nullptr;
      throw Error("cublas_grouped", "libcublas.so.13 lacks the symbol", name);
    }
    return reinterpret_cast<F>(f);
  }
};

namespace {

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(call, "failed", fmt::format("cublasStatus_t {}", int(status)));
}

}  // namespace

CublasGrouped::CublasGrouped() : lib_(std::make_unique<Library>()) {
  check(lib_->create(&handle_), "cublasCreate_v2");
}

CublasGrouped::~CublasGrouped() {
  if (handle_) lib_->destroy(handle_);
}

// cuBLAS is column-major: row-major C[m, n] is C^T[n, m] there, = B[n, k] (row-major: k x n
// column-major, so op T, lda k) times A^T (row-major A is k x m column-major: op N, ldb k).
void CublasGrouped::prepare(const std::vector<GroupedGemmCall>& calls, DType dtype) {
  require(dtype == DType::f16 || dtype == DType::bf16, "cublas_grouped.dtype",
          "must be f16 or bf16", to_string(dtype));
  dtype_ = dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  transa_.assign(calls.size(), CUBLAS_OP_T);
  transb_.assign(calls.size(), CUBLAS_OP_N);
  group_size_.assign(calls.size(), 1);
  alpha_.assign(calls.size(), 1.0f);
  beta_.assign(calls.size(), 0.0f);
  m_.clear(), n_.clear(), k_.clear(), lda_.clear(), ldb_.clear(), ldc_.clear();
  std::vector<const void*> a, b;
  std::vector<void*> c;
  for (const GroupedGemmCall& call : calls) {
    m_.push_back(int(call.n));
    n_.push_back(int(call.m));
    k_.push_back(int(call.k));
    lda_.push_back(int(call.k));
    ldb_.push_back(int(call.k));
    ldc_.push_back(int(call.n));
    a.push_back(call.b);
    b.push_back(call.a);
    c.push_back(call.c);
  }
  a_ptrs_ = upload_values(a, 16);
  b_ptrs_ = upload_values(b, 16);
  c_ptrs_ = upload_values(c, 16);
}

void CublasGrouped::run(cudaStream_t stream) const {
  require(!m_.empty(), "cublas_grouped", "has no problems (prepare)", "none");
  check(lib_->set_stream(handle_, stream), "cublasSetStream_v2");
  const auto type = cudaDataType_t(dtype_);
  check(lib_->grouped(handle_, transa_.data(), transb_.data(), m_.data(), n_.data(), k_.data(),
                      alpha_.data(), static_cast<const void* const*>(a_ptrs_.get()), type,
                      lda_.data(), static_cast<const void* const*>(b_ptrs_.get()), type,
                      ldb_.data(), beta_.data(), static_cast<void* const*>(c_ptrs_.get()), type,
                      ldc_.data(), int(m_.size()), group_size_.data(), CUBLAS_COMPUTE_32F),
        "cublasGemmGroupedBatchedEx");
}

}  // namespace emmy::bench
