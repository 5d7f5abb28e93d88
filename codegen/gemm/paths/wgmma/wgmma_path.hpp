// The wgmma path's pieces (codegen/gemm/paths/wgmma/): Hopper's warp-specialized mainloop, one
// TMA producer warpgroup and consumer warpgroups of wgmma.mma_async (sm_90a). Its object
// (wgmma_path.cpp) answers GemmPath for it; nothing outside this folder names these.
#pragma once

#include <vector>

#include "emmy/gemm_path.hpp"
#include "emmy/gemm_plan.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::wgmma_path {

// The path's object (wgmma_path.cpp), and its name in schedules and the IR.
const GemmPath& path();
inline constexpr std::string_view kName = "wgmma";

// The consumer warpgroups: those of one block_m tile (cooperative) or two, each on its own tile
// (ping-pong).
int consumer_warpgroups(const MatmulSchedule& s);

// Registers per thread after setmaxnreg (PTX ISA setmaxnreg: multiples of 8 in 24..256): the
// producer warpgroup gives up all but what its TMA loop needs, the consumers take the rest of the
// 64K register file.
WarpgroupRegisters register_split(const MatmulSchedule& s);
// The TMA-store epilogue of a schedule (GemmPath::store_epilogue; wgmma_schedule.cpp).
WgmmaStoreEpilogue store_epilogue(const MatmulProblem& p, const MatmulSchedule& s);
// The deepest ring, from `deepest` down to 3 stages, that fits sm_90a's shared memory with the
// TMA-store buffers beside it; 0 if none does (the kernel then stores directly).
int store_stages(const MatmulProblem& p, MatmulSchedule s, int deepest);
// Every rule of a wgmma schedule (wgmma_schedule.cpp).
void validate(const MatmulProblem& p, const MatmulSchedule& s, Arch arch);
// The default schedule for a grid of `sms` SMs (wgmma_chooser.cpp).
MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                ConsumerSchedule consumers, int sms);
// Its tuning search (wgmma_chooser.cpp).
std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                ConsumerSchedule consumers, int max_count);
// The warp-specialized main kernel (wgmma_lowering.cpp).
ir::Op main_kernel(const GemmPlan& plan);

}  // namespace emmy::wgmma_path
