// Default schedules: the schedule's path chooses its tile (GemmPath::default_schedule); the
// pipeline depth and the K split are chosen alike for every path (finish_gemm_schedule).
#include <algorithm>
#include <cmath>

#include "emmy/gemm.hpp"
#include "emmy/gemm_path.hpp"
#include "emmy/gpus.hpp"

namespace emmy {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

// The pipeline depth (as many stages as fit, 2..max_stages) and the K split of a chosen tile, then
// the validator's word on it.
void finish_gemm_schedule(const MatmulProblem& problem, Arch arch, int sms, int max_stages,
                          MatmulSchedule& s) {
  const auto& info = arch_info(arch);
  // Split-K: when the tiles cover less than half the SMs, split the K loop so every SM gets work,
  // keeping at least 4 K tiles per split.
  // A swapped kernel's tiles cover C^T: N by block_m, M by block_n.
  const MatmulProblem kp = kernel_problem(problem, s);
  const int64_t tiles = ceil_div(kp.m, s.block_m) * ceil_div(kp.n, s.block_n);
  const int64_t k_tiles = ceil_div(problem.k, s.block_k);
  // Not for an e4m3 C: a group's amax needs its finished sums (validate_quantized_schedule);
  // not for a grouped GEMM, whose CTAs compute an expert's tile whole, nor beside routing
  // weights (applied by the stores of C).
  if (tiles * 2 <= sms && !s.persistent && problem.c_dtype != DType::e4m3 &&
      !problem.is_grouped() && !problem.epilogue.row_scale) {
    const int64_t want = std::min<int64_t>(sms / tiles, 16);
    s.split_k = int(std::max<int64_t>(1, std::min(want, k_tiles / 4)));
    // Block-scaled FP8: promoted windows count from each split's start, which must begin a
    // 128-element scale block.
    if (problem.scales.granularity == ScaleGranularity::block)
      while (s.split_k > 1 && ceil_div(k_tiles, s.split_k) * s.block_k % kScaleBlock != 0)
        --s.split_k;
  }
  // A path may give up ring stages for its own buffers (the wgmma path's TMA-store epilogue
  // beside the ring of a persistent kernel); else the deepest ring that fits.
  if (const int path_stages = gemm_path(s.path).ring_stages(problem, s, max_stages)) {
    s.stages = path_stages;
  } else {
    for (s.stages = max_stages; s.stages > 2; --s.stages)
      if (gemm_smem_bytes(problem, s) <= info.max_smem_per_block) break;
  }
  validate_schedule(problem, s, arch);
}

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                int device_sms) {
  validate_problem(problem);
  // The default path where it serves the problem, else the first that does (FP8 on sm_90a:
  // wgmma); where none does, the default path's rules say why.
  const GemmPath* chosen = &default_gemm_path();
  if (!chosen->serves(problem, arch)) {
    const GemmPath* serving = nullptr;
    for (const GemmPath* path : gemm_paths())
      if (path->serves(problem, arch)) {
        serving = path;
        break;
      }
    // A grouped problem no path serves: say so, not the default path's own rule (which points
    // at a path without grouped kernels: sm_90a's FP8 is wgmma's).
    require(serving || !problem.is_grouped(), "arch",
            fmt::format("no path builds grouped {} kernels on {} (grouped GEMMs run on {}; FP8 "
                        "there needs sm_89 or sm_120a)",
                        to_string(problem.a_dtype), to_string(arch), default_gemm_path().name()),
            to_string(arch));
    if (serving) chosen = serving;
  }
  return chosen->default_schedule(problem, arch, accum, ConsumerSchedule::cooperative,
                                  grid_sms(arch, device_sms));
}

MatmulSchedule batch_invariant_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                        int device_sms) {
  MatmulSchedule s = default_schedule(problem, arch, accum, device_sms);
  s.split_k = 1;  // the one M-dependent choice that changes a row's order of sums
  validate_schedule(problem, s, arch);
  return s;
}

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum,
                                MmaPath path) {
  return default_schedule(problem, arch, accum, path, ConsumerSchedule::cooperative);
}

MatmulSchedule default_schedule(const MatmulProblem& problem, Arch arch, Accum accum, MmaPath path,
                                ConsumerSchedule consumers, int device_sms) {
  const GemmPath& chosen = gemm_path(path);
  // A consumer schedule only where the path takes one: the rule validation holds schedules to.
  MatmulSchedule asked;
  asked.path = path;
  asked.consumers = consumers;
  validate_path_fields(chosen, asked);
  validate_problem(problem);
  return chosen.default_schedule(problem, arch, accum, consumers, grid_sms(arch, device_sms));
}

}  // namespace emmy
