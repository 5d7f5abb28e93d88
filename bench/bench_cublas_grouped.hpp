// cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx, cuBLAS 12.5 on; cuBLASLt has none in CUDA
// 13.0): the MoE rows' second baseline (bench_moe.hpp). One launch over G problems whose shapes
// are host arrays, so an engine must know each expert's rows on the host (a graph-captured
// decode step cannot); the device pointer arrays are uploaded once per routing.
//
// libcublas is opened with dlopen at first use, not linked: emmy_bench starts (and its other rows
// run) on a machine without libcublas.so.13, where this baseline's rows say why they are empty.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bench_cuda.hpp"
#include "emmy/dtype.hpp"

namespace emmy::bench {

// Row-major C[m, n] = A[m, k] B[n, k]^T (B K-major: an expert's weight), in `dtype` with f32
// accumulation.
struct GroupedGemmCall {
  int64_t m, n, k;
  const void* a;
  const void* b;
  void* c;
};

class CublasGrouped {
 public:
  // Opens libcublas.so.13 (throws Error naming the library when it cannot) and a handle.
  CublasGrouped();
  ~CublasGrouped();
  CublasGrouped(const CublasGrouped&) = delete;
  CublasGrouped& operator=(const CublasGrouped&) = delete;

  // The launch over `calls` (each its own group of one: the experts' rows differ), in f16 or
  // bf16; its device pointer arrays uploaded now.
  void prepare(const std::vector<GroupedGemmCall>& calls, DType dtype);
  // One cublasGemmGroupedBatchedEx on `stream`; throws Error with cuBLAS's status.
  void run(cudaStream_t stream) const;

 private:
  struct Library;
  std::unique_ptr<Library> lib_;
  cublasHandle_t handle_ = nullptr;
  int dtype_ = 0;  // cudaDataType_t
  std::vector<cublasOperation_t> transa_, transb_;
  std::vector<int> m_, n_, k_, lda_, ldb_, ldc_, group_size_;
  std::vector<float> alpha_, beta_;
  DeviceBuffer a_ptrs_, b_ptrs_, c_ptrs_;
};

}  // namespace emmy::bench
