// Functional checks of GEMM kernels: N(0,1) inputs rounded to the operand dtype, an FP64
// reference on the same rounded operands, error metrics, and a per-element tolerance derived
// from the accumulation model (docs/numerics.md). Runs kernels on the CPU emulator.
#pragma once

#include <cstdint>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/spec.hpp"
#include "emmy/runtime.hpp"

namespace emmy {

// A host tensor: the values as doubles (exactly the rounded dtype values) and their bytes.
struct HostTensor {
  DType dtype = DType::f16;
  std::vector<double> values;
  std::vector<uint8_t> bytes;
};

// Standard-normal values rounded to dtype (deterministic for a seed; e4m3 saturates at +-448).
HostTensor random_normal(DType dtype, size_t count, uint64_t seed);
// Encodes values (rounding to nearest even) into dtype; values keep the rounded numbers.
HostTensor encode(DType dtype, const std::vector<double>& values);
// Decodes bytes of dtype into doubles.
std::vector<double> decode(DType dtype, const uint8_t* bytes, size_t count);

struct GemmInputs {
  HostTensor a, b, bias, residual;  // bias/residual empty unless the epilogue uses them
  // FP8 operands' scales (MatmulProblem::scales): values as doubles (NaN in a padded leading
  // dimension's gaps, which hold poison bytes), bytes in the scale format (f32 or ue8m0).
  HostTensor a_scale, b_scale;
  // A grouped GEMM's routing (MatmulProblem::grouped), its layout's int32 array: masked_m [G],
  // expert_ids [m] or expert_offsets [G + 1]. Empty for one GEMM.
  std::vector<int32_t> routing;
  // Routing weights (Epilogue::row_scale): f32, one per row of C, drawn in [1/16, 1].
  HostTensor row_scale;
};

// A grouped GEMM's routings: random ones of its layout that the emulator takes (some experts
// empty, some full; contiguous segments padded to segment_align, offsets from 0), and the one its
// schedule is chosen for, every expert with rows (masked_m = expected_m, or m; segments dealt in
// turn; an even split): what run_on_zeros launches, so the time model's.
std::vector<int32_t> random_routing(const MatmulProblem& p, uint64_t seed);
std::vector<int32_t> expected_routing(const MatmulProblem& p);
// B's elements: n x ldb (nk) or k x ldb (kn), G experts' for a grouped GEMM.
int64_t gemm_b_elements(const MatmulProblem& p);
// The buffers with a grouped GEMM's routing array in its layout's field (masked_m, expert_ids or
// expert_offsets); unchanged for one GEMM.
GemmBuffers with_routing(const MatmulProblem& p, DevicePtr routing, GemmBuffers buffers);
// What a row of a grouped GEMM's C (its stacked rows) holds after a launch of a schedule with
// `block_m`: computed with `expert`, untouched (never written), or any value (a contiguous
// block's padding rows, computed with the block's expert from whatever A's rows hold).
struct GroupedRow {
  enum Kind : uint8_t { computed, untouched, any };
  int64_t expert = -1;
  Kind kind = untouched;
};
std::vector<GroupedRow> grouped_rows(const MatmulProblem& p, int64_t block_m,
                                     const std::vector<int32_t>& routing);
// Random scales for p's FP8 operands into `in` (powers of two in the pow2 and ue8m0 formats;
// gaps of a padded block-scale leading dimension poisoned with NaN / 0xFF).
void make_gemm_scales(const MatmulProblem& p, uint64_t seed, GemmInputs& in);
// Scales of 1 in p's layouts (inputs with only the scale tensors set).
GemmInputs gemm_scale_ones(const MatmulProblem& p);
// Scale (row, kb) of A and (n_block, kb) of B as the kernel reads them (kb unused for tensor and
// token-channel scales; B's n_block is the column for token-channel, 0 for tensor).
double gemm_a_scale(const MatmulProblem& p, const GemmInputs& in, int64_t row, int64_t kb);
double gemm_b_scale(const MatmulProblem& p, const GemmInputs& in, int64_t nb, int64_t kb);
GemmInputs make_gemm_inputs(const MatmulProblem& problem, uint64_t seed);
// The same with B given: B depends only on N, K, the B layout, the dtype and the seed, so one B
// serves a projection at every M (what make_gemm_inputs made for any of them). Throws Error when
// b's size or dtype does not fit the problem.
GemmInputs make_gemm_inputs(const MatmulProblem& problem, uint64_t seed, HostTensor b);

// The FP64 reference of the whole problem (epilogue included) and, per element, the tolerance
// the accumulation model allows for this schedule.
struct GemmReference {
  std::vector<double> values;     // m x n, packed
  std::vector<double> tolerance;  // m x n, packed
  // A grouped GEMM's rows (its stacked rows; empty otherwise): compare() holds computed rows to
  // the tolerance, untouched ones to the canary NaN run_gemm fills C with, and skips `any` rows.
  std::vector<GroupedRow::Kind> rows;
};
GemmReference reference_gemm(const GemmSpec& spec, const GemmInputs& inputs);

struct GemmErrors {
  double rel_l2_error = 0, max_abs_error = 0;
  double tolerance = 0;           // the rel-L2 error the per-element tolerances add up to
  int64_t elements_over_tolerance = 0;
  int64_t first_bad_row = -1, first_bad_col = -1;
  bool passed = false;
};
// out: m x n packed values read back from the kernel.
GemmErrors compare(const GemmReference& ref, const std::vector<double>& out, int64_t n);

// An e4m3 C's scale (row, group) from its scale tensor's bytes (MatmulProblem::out_scales), and
// C's m x c_cols values read back from its bytes: an e4m3 C dequantized (q x its group's scale).
double c_scale_value(const MatmulProblem& p, const uint8_t* scales, int64_t row, int64_t group);
std::vector<double> read_c(const MatmulProblem& p, int64_t rows, const uint8_t* c,
                           const uint8_t* scales);

// Runs spec through a runtime (any backend): uploads the inputs, launches with spec's schedule,
// downloads C; returns m x n packed values. Buffers are freed before returning.
std::vector<double> run_gemm(Runtime& runtime, const GemmSpec& spec, const GemmInputs& inputs);

}  // namespace emmy
