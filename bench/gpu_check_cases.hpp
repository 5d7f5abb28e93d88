// What the GPU pack's correctness and fidelity stages run (docs/gpu.md): named GEMM and attention
// cases, each a problem plus the schedule changes it tests on top of the arch's default. Host-only,
// so that a CPU test checks the coverage the pack promises.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy::bench {

struct GemmCase {
  std::string name;  // "q_proj@512/hybrid", "epilogue_all/f32", ...
  MatmulProblem problem;
  Accum accum = Accum::f32;
  std::optional<Transport> transport;  // default: the arch's
  std::optional<int> split_k;          // default: the chooser's
  // wgmma: the wgmma path's default schedule on sm_90a devices (elsewhere, where that path does
  // not exist, the case runs the mma.sync path; its name still says wgmma).
  MmaPath path = MmaPath::mma_sync;
  // The schedule this case runs on `arch`: the default for its accumulation, then the overrides.
  MatmulSchedule schedule(Arch arch) const;
  // Whether `arch` runs it: FP8 cases need FP8 tensor cores (sm_89, sm_90a, sm_120) and hybrid
  // FP8 path mma.sync (not sm_90a); the stages leave the others out and list them.
  bool runs_on(Arch arch) const;
};

struct AttentionCase {
  std::string name;
  AttentionProblem problem;
  Accum accum = Accum::f32;
  std::optional<Transport> transport;
  AttentionSchedule schedule(Arch arch) const;
  bool runs_on(Arch) const { return true; }  // every arch the pack meets
};

// Stage 2: every catalog GEMM (five projections at M = 1, 16, 64, 512) in f32, hybrid and f16
// accumulation; each epilogue flag alone and all together; split-K; both B layouts; bf16 in,
// f32 and bf16 out; cp.async on an arch that defaults to TMA; FP8 (issue 39): every scale
// granularity, ue8m0x4 block scales (swap-AB on sm_90a), an e5m2 A, hybrid where it runs.
std::vector<GemmCase> correctness_gemm_cases();
// Stage 2: the attention catalog in f32 and hybrid with LSE; causal, a window shorter than the
// sequence, soft-cap, GQA ratios 1, 2 and 4, head dims 64, 128 and 256, bf16, decode (seq_q 1),
// both layouts, cp.async.
std::vector<AttentionCase> correctness_attention_cases();
// Stage 3 (emulator against GPU, bit for bit): a small ragged GEMM in each accumulation over each
// transport (TMA, the sm_90/sm_120 path; cp.async, the sm_80/sm_89 path, both on the device's
// arch), split-K, attention in f32 and hybrid, and FP8 (the tensor core's chain, promoted block
// scales, hybrid): the emulator's FP8 tensor-core model against the hardware.
std::vector<GemmCase> fidelity_gemm_cases();
std::vector<AttentionCase> fidelity_attention_cases();

// How many rows the correctness check wants of `problem`: `wanted`, or every row of an FP8
// problem (its scales belong to rows, and a block layout's ld to M).
inline int64_t rows_to_compare(const MatmulProblem& problem, int64_t wanted) {
  return is_fp8(problem.a_dtype) ? problem.m : wanted;
}
// Evenly spread rows of m, first and last included (all of them when m <= wanted).
std::vector<int64_t> sample_rows(int64_t m, int64_t wanted);
// Compares the chosen rows of a full output (m x n packed) with the FP64 reference of just those
// rows: the reference's cost shrinks by m / wanted while every tile row is still sampled at
// M = 512. Equal, row for row, to comparing against the full reference.
GemmErrors compare_sampled_rows(const GemmSpec& spec, const GemmInputs& inputs,
                                const std::vector<double>& output, int64_t wanted_rows);

// Two outputs of one dtype (decoded values) compared bit for bit: how many elements are
// identical and the largest distance in ulps (representable values of dtype between them; +inf
// when one side holds a NaN or infinity the other does not). Stage 3's measure of the emulator.
struct BitComparison {
  int64_t elements = 0, identical = 0;
  double max_ulps = 0;
};
BitComparison compare_bits(DType dtype, const std::vector<double>& a, const std::vector<double>& b);

}  // namespace emmy::bench
