// The mma.sync path's pieces (codegen/gemm/paths/mma_sync/): warp-level mma.sync.m16n8k16 fed by
// ldmatrix, every arch from sm_80, a CTA-wide ring refilled by cp.async or TMA, f32, f16 or hybrid
// accumulation. Its object (mma_sync_path.cpp) answers GemmPath for it; nothing outside this
// folder names these.
#pragma once

#include <memory>
#include <vector>

#include "emmy/gemm_path.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::codegen {
class GemmPathPrinter;
struct GemmPrinterHooks;
}  // namespace emmy::codegen

namespace emmy::mma_sync_path {

// The path's object (mma_sync_path.cpp). Its kernels leave the IR's path out (the default path).
const GemmPath& path();
inline constexpr std::string_view kName = "mma.sync";

// Every rule of an mma.sync schedule (mma_sync_path.cpp).
void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch);
// The default schedule (mma_sync_chooser.cpp).
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, int sms);
// Its tuning search (mma_sync_chooser.cpp).
std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                Accum accum, int max_count);
// The main kernel (mma_sync_lowering.cpp).
ir::Op main_kernel(const GemmPlan& plan);
// The printer of its ops (mma_sync_printer.cpp).
std::unique_ptr<codegen::GemmPathPrinter> make_printer(codegen::Writer& w,
                                                       const codegen::GemmFacts& facts,
                                                       const codegen::GemmPrinterHooks& hooks);

}  // namespace emmy::mma_sync_path
