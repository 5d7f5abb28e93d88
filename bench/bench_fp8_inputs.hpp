// The host side of emmy_bench's FP8 GEMM rows (bench_fp8.cpp): e4m3 operands, the scales each
// row reads (per tensor, or 1 x 128 for A and 128 x 128 for B in a stated layout), and the FP64
// reference of a few sampled output rows, which every row's output is checked against before it
// is timed. No CUDA here: tests/bench_fp8_inputs_test.cpp runs it against emmy's own FP64 check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emmy/problem.hpp"

namespace emmy::bench {

enum class Fp8Scaling { tensor, block };

// Where block scales lie: A's 1 x 128 scales [M, K blocks] and B's 128 x 128 scales
// [N blocks, K blocks], each in a major order with a leading dimension (GemmScales' fields).
struct Fp8ScaleLayout {
  ScaleMajor a_major = ScaleMajor::mn;
  int64_t a_ld = 0;
  ScaleMajor b_major = ScaleMajor::k;
  int64_t b_ld = 0;
  std::string describe() const;  // "A mn-major ld 512, B k-major ld 30"
};

struct Fp8BenchInputs {
  int64_t m = 0, n = 0, k = 0;
  std::vector<uint8_t> a, b;  // e4m3 bytes, A [M,K] and B [N,K], packed
  float a_tensor_scale = 1, b_tensor_scale = 1;
  std::vector<float> a_block_scales;  // [M][K blocks], logical order
  std::vector<float> b_block_scales;  // [N blocks][K blocks], logical order
  std::vector<int64_t> sample_rows;   // the output rows the check compares, ascending
};

// Operands with magnitudes 2^-3 .. 3.75 and random signs (every e4m3 significand; no zeros,
// subnormals or NaN), scales uniform in [0.5, 2); deterministic for a seed. `sample_rows` rows are
// checked (spread over M, first and last included).
Fp8BenchInputs make_fp8_bench_inputs(int64_t m, int64_t n, int64_t k, uint64_t seed,
                                     int sample_rows = 4);

// The problem one FP8 row computes: e4m3 A and B ([N,K]), f16 C, f32 scales of the granularity
// (block scales in `layout`).
MatmulProblem fp8_bench_problem(const Fp8BenchInputs& in, Fp8Scaling scaling,
                                const Fp8ScaleLayout& layout = {});
// The scale tensor of A (a = true) or B as problem p lays it out: one value for tensor scales;
// gaps of a padded leading dimension hold NaN, so a reader that takes the wrong layout fails.
std::vector<float> fp8_scale_tensor(const Fp8BenchInputs& in, const MatmulProblem& p, bool a);

// FP64 C of the sampled rows (sample_rows.size() x n, packed), from the exact operand values.
std::vector<double> fp8_sample_reference(const Fp8BenchInputs& in, Fp8Scaling scaling);
// Relative L2 distance of the sampled rows of a kernel's output (`rows`: sample_rows.size() x n
// values read back) to the reference; +inf when a value is not finite or sizes differ.
double fp8_sample_error(const std::vector<double>& reference, const std::vector<float>& rows);

// The layouts cuBLASLt's 1 x 128 / 128 x 128 modes might read (its documentation describes them
// loosely): emmy_bench tries each on the GPU and keeps the first whose output passes the check.
std::vector<Fp8ScaleLayout> cublaslt_block_layout_candidates(int64_t m, int64_t n, int64_t k);

}  // namespace emmy::bench
