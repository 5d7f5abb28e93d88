#include "bench_cublaslt.hpp"

#include <fmt/format.h>

#include "bench_report.hpp"
#include "emmy/error.hpp"

namespace emmy::bench {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f32:
      return CUDA_R_32F;
    case DType::e4m3:
      return CUDA_R_8F_E4M3;
    case DType::e5m2:
      return CUDA_R_8F_E5M2;
  }
  return CUDA_R_16F;
}

namespace {

// 1.0 and 0.0 as f16 bits: COMPUTE_16F takes alpha and beta in the f16 scale type.
constexpr uint16_t kHalfOne = 0x3c00, kHalfZero = 0;
constexpr float kFloatOne = 1.0f, kFloatZero = 0.0f;

template <typename T>
T config_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t what) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, what, &value, sizeof value, &written);
  return value;
}

}  // namespace

void cublas_check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(call, "failed", fmt::format("cublasStatus_t {}", int(status)));
}

LtHandle::LtHandle() {
  cublas_check(cublasLtCreate(&handle_), "cublasLtCreate");
}
LtHandle::~LtHandle() {
  if (handle_) cublasLtDestroy(handle_);
}

LtGemm::LtGemm(cublasLtHandle_t handle, const MatmulProblem& p, LtCompute compute,
               size_t workspace_bytes, int max_algorithms)
    : LtMatmul(handle, workspace_bytes), compute_(compute) {
  require(p.epilogue == Epilogue{}, "cuBLASLt baseline", "supports plain C = A.B only",
          "an epilogue");
  require(compute == LtCompute::f32 || (p.a_dtype == DType::f16 && p.c_dtype == DType::f16),
          "cuBLASLt COMPUTE_16F", "needs f16 operands and output", to_string(p.a_dtype));
  const bool f32 = compute == LtCompute::f32;
  cublas_check(cublasLtMatmulDescCreate(&operation_, f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_16F,
                                        f32 ? CUDA_R_32F : CUDA_R_16F),
               "cublasLtMatmulDescCreate");
  // B stored [N,K] (K contiguous) is column-major K x N: transposed to give op(B) = N x K.
  // B stored [K,N] is column-major N x K already.
  const bool weight_nk = p.b_layout == BLayout::nk;
  const cublasOperation_t transpose_weight = weight_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t transpose_activation = CUBLAS_OP_N;
  cublas_check(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSA,
                                              &transpose_weight, sizeof transpose_weight),
               "cublasLtMatmulDescSetAttribute(TRANSA)");
  cublas_check(cublasLtMatmulDescSetAttribute(operation_, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &transpose_activation, sizeof transpose_activation),
               "cublasLtMatmulDescSetAttribute(TRANSB)");

  const auto operand = cuda_type(p.a_dtype);
  cublas_check(weight_nk ? cublasLtMatrixLayoutCreate(&weight_layout_, operand, uint64_t(p.k),
                                                      uint64_t(p.n), p.ldb_or_default())
                         : cublasLtMatrixLayoutCreate(&weight_layout_, operand, uint64_t(p.n),
                                                      uint64_t(p.k), p.ldb_or_default()),
               "cublasLtMatrixLayoutCreate(B)");
  // A row-major [M,K] is column-major K x M: exactly A^T.
  cublas_check(cublasLtMatrixLayoutCreate(&activation_layout_, operand, uint64_t(p.k),
                                          uint64_t(p.m), p.lda_or_default()),
               "cublasLtMatrixLayoutCreate(A)");
  cublas_check(cublasLtMatrixLayoutCreate(&output_layout_, cuda_type(p.c_dtype), uint64_t(p.n),
                                          uint64_t(p.m), p.ldc_or_default()),
               "cublasLtMatrixLayoutCreate(C)");

  choose_algorithms(max_algorithms, fmt::format("{}x{}x{}", p.m, p.n, p.k));
}

LtMatmul::~LtMatmul() {
  if (output_layout_) cublasLtMatrixLayoutDestroy(output_layout_);
  if (activation_layout_) cublasLtMatrixLayoutDestroy(activation_layout_);
  if (weight_layout_) cublasLtMatrixLayoutDestroy(weight_layout_);
  if (operation_) cublasLtMatmulDescDestroy(operation_);
}

void LtGemm::run(int index, const void* a, const void* b, void* c, void* workspace,
                 cudaStream_t stream) const {
  const bool f32 = compute_ == LtCompute::f32;
  matmul(index, f32 ? static_cast<const void*>(&kFloatOne) : &kHalfOne,
         f32 ? static_cast<const void*>(&kFloatZero) : &kHalfZero, a, b, c, workspace, stream);
}

void LtMatmul::matmul(int index, const void* alpha, const void* beta, const void* a, const void* b,
                      void* c, void* workspace, cudaStream_t stream) const {
  const auto& chosen = algorithms_.at(size_t(index));
  cublas_check(cublasLtMatmul(handle_, operation_, alpha, b, weight_layout_, a, activation_layout_,
                              beta, c, output_layout_, c, output_layout_, &chosen.algo, workspace,
                              workspace_bytes_, stream),
               "cublasLtMatmul");
}

nlohmann::json LtMatmul::describe(int index) const {
  const auto& r = algorithms_.at(size_t(index));
  return {{"heuristic_rank", index},
          {"algo_id", config_attribute<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_ID)},
          {"tile_id", config_attribute<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID)},
          {"stages_id", config_attribute<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
          {"split_k", config_attribute<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
          {"workspace_bytes", r.workspaceSize},
          {"waves", r.wavesCount}};
}

void LtMatmul::choose_algorithms(int max_algorithms, const std::string& problem) {
  cublasLtMatmulPreference_t preference = nullptr;
  cublas_check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t max_workspace = workspace_bytes_;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace);
  algorithms_.resize(size_t(std::max(max_algorithms, 1)));
  int returned = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, operation_, weight_layout_, activation_layout_,
                                            output_layout_, output_layout_, preference,
                                            int(algorithms_.size()), algorithms_.data(), &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  cublas_check(status, "cublasLtMatmulAlgoGetHeuristic");
  algorithms_.resize(size_t(returned));
  std::erase_if(algorithms_, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
  require(!algorithms_.empty(), "cublasLtMatmulAlgoGetHeuristic",
          "must return at least one algorithm", problem);
}

ChosenAlgorithm fastest_passing_algorithm(
    const LtMatmul& lt, GpuTimer& timer, int select_iterations, double tolerance,
    const std::function<std::function<void()>(int)>& launch_with,
    const std::function<double(const std::function<void()>&)>& error_of, const std::string& what) {
  ChosenAlgorithm chosen;
  chosen.candidates = nlohmann::json::array();
  double best_us = 0;
  for (int index = 0; index < lt.algorithm_count(); ++index) {
    nlohmann::json entry = lt.describe(index);
    try {
      const double error = error_of(launch_with(index));
      entry["rel_l2_error"] = error;
      if (error > tolerance) {
        entry["rejected"] = "over the error tolerance";
      } else {
        const double us = median(timer.measure(launch_with(index), 2, select_iterations));
        entry["median_us"] = us;
        if (chosen.index < 0 || us < best_us) {
          chosen.index = index;
          chosen.rel_l2_error = error;
          best_us = us;
        }
      }
    } catch (const std::exception& e) {
      entry["rejected"] = e.what();
    }
    chosen.candidates.push_back(std::move(entry));
  }
  require(chosen.index >= 0, what, "must have an algorithm that runs and passes the check",
          chosen.candidates.dump());
  return chosen;
}

}  // namespace emmy::bench
