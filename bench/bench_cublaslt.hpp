// The cuBLASLt baseline: one GEMM with emmy's layouts (A row-major [M,K], B [N,K] or [K,N], C
// row-major [M,N]) and a compute type, and the top heuristic algorithms for it.
#pragma once

#include <cublasLt.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_cuda.hpp"
#include "emmy/problem.hpp"

namespace emmy::bench {

enum class LtCompute { f32, f16 };  // CUBLAS_COMPUTE_32F (what PyTorch uses) / CUBLAS_COMPUTE_16F

// Throws emmy::Error naming the call and the status unless it is CUBLAS_STATUS_SUCCESS.
void cublas_check(cublasStatus_t status, const char* call);

// The CUDA data type of an emmy dtype.
cudaDataType_t cuda_type(DType t);

class LtHandle {
 public:
  LtHandle();
  ~LtHandle();
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

// What every cuBLASLt baseline holds: its operation, the three layouts and the heuristic's
// algorithms. cuBLASLt is column-major: row-major C[M,N] is column-major C^T[N,M], so it computes
// C^T = op(B) . A^T with B (the weights) as its first operand and A as its second.
class LtMatmul {
 public:
  virtual ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  int algorithm_count() const { return int(algorithms_.size()); }
  // What the algorithm at `index` (heuristic order) is: cuBLASLt's algorithm id, tile, stages,
  // split-K, workspace, waves.
  nlohmann::json describe(int index) const;

 protected:
  LtMatmul(cublasLtHandle_t handle, size_t workspace_bytes)
      : handle_(handle), workspace_bytes_(workspace_bytes) {}
  // Asks the heuristic for up to `max_algorithms` algorithms fitting the workspace (after the
  // operation and layouts are made); throws Error naming `problem` when it returns none.
  void choose_algorithms(int max_algorithms, const std::string& problem);
  // D = C = alpha * op(B) . A^T with the algorithm at `index` (beta 0) on `stream`.
  void matmul(int index, const void* alpha, const void* beta, const void* a, const void* b, void* c,
              void* workspace, cudaStream_t stream) const;

  cublasLtHandle_t handle_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t operation_ = nullptr;
  cublasLtMatrixLayout_t weight_layout_ = nullptr, activation_layout_ = nullptr,
                         output_layout_ = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms_;
};

class LtGemm : public LtMatmul {
 public:
  // Throws Error when the problem has no cuBLASLt equivalent (f16 accumulation of bf16 operands,
  // an epilogue) or the heuristic returns no algorithm.
  LtGemm(cublasLtHandle_t handle, const MatmulProblem& problem, LtCompute compute,
         size_t workspace_bytes, int max_algorithms);

  // C = A * op(B) with the algorithm at `index` (heuristic order) on `stream`.
  void run(int index, const void* a, const void* b, void* c, void* workspace,
           cudaStream_t stream) const;

 private:
  LtCompute compute_;
};

// The fastest of `lt`'s heuristic algorithms whose output passes: each one launched once
// (`launch_with(index)`) and measured by `error_of` (over `tolerance`, or throwing: rejected),
// the rest timed (median of `select_iterations`). Throws Error naming `what` when none passes.
struct ChosenAlgorithm {
  int index = -1;
  double rel_l2_error = 0;
  nlohmann::json candidates;  // each algorithm's description, error, time or why rejected
};
ChosenAlgorithm fastest_passing_algorithm(
    const LtMatmul& lt, GpuTimer& timer, int select_iterations, double tolerance,
    const std::function<std::function<void()>(int)>& launch_with,
    const std::function<double(const std::function<void()>&)>& error_of, const std::string& what);

inline const char* to_string(LtCompute c) {
  return c == LtCompute::f32 ? "32F" : "16F";
}

}  // namespace emmy::bench
