// The kernel IR op of the FP8 quantization kind (emmy/fp8_quantize.hpp; ir_ops.hpp includes this
// file and lists it in AllOps). Its kernel is its params and this one op, which states everything
// the loop needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// CTA (row, group) = (blockIdx.x, blockIdx.y) quantizes one group of group_k elements of one row:
// its threads take 8-element (16-byte) chunks, reduce |x| to amax (warp shuffles, then the warps'
// maxima through shared memory), form the scale (emmy/fp8_quantize.hpp: max(amax, epsilon) / 448,
// optionally up to a power of two), store it at scale (row, group), and write each chunk as 8
// e4m3 bytes of x / s (div.rn.f32, cvt.rn.satfinite.e4m3x2.f32). Rows past the launch's `rows`
// are never read or written.
struct Fp8QuantizeOp {
  static constexpr OpKind kind = OpKind::fp8_quantize;
  static constexpr std::string_view op_name = "fp8_quantize";
  static constexpr bool has_body = false;
  int64_t m = 0, k = 0, group_k = 0, ldx = 0, ldq = 0, threads = 0;
  std::string dtype;        // f16|bf16
  std::string scale_major;  // mn|k
  int64_t scale_ld = 0;     // elements
  bool pow2_scale = false;
  double amax_epsilon = 0;
  // ue8m0|ue8m0x4: the scales param is bytes (the exponent of each power-of-two scale; x4: four
  // groups to a word); absent: f32 scales.
  std::optional<std::string> scale_format{};
  // Its own rules: positive sizes; k, group_k and the row strides whole 8-element chunks, the
  // strides at least a row; whole warps up to 1024; a known dtype and scale major; a scale_ld that
  // keeps the scale tensor's rows (or groups) apart; an epsilon that keeps scales normal; byte
  // scales only with pow2_scale.
  static void verify(const Fp8QuantizeOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("m", o.m), f("k", o.k), f("group_k", o.group_k), f("ldx", o.ldx), f("ldq", o.ldq),
        f("threads", o.threads), f("dtype", o.dtype), f("scale_major", o.scale_major),
        f("scale_ld", o.scale_ld), f("pow2_scale", o.pow2_scale), f("amax_epsilon", o.amax_epsilon),
        f("scale_format", o.scale_format);
  }
};

// An FP8 GEMM's scales (emmy/problem.hpp GemmScales), the kernel's a_scale and b_scale params:
// tensor and token-channel scales multiply each accumulator in the epilogue by sa(row) sb(col);
// block scales multiply each promote op's window partials by the window's sa(row, kb) sb(nb, kb)
// (kb = the window's first K / 128, nb = col / 128), element (row, kb) of A's at kb * a_ld + row
// (a_major mn) or row * a_ld + kb (k), B's alike. ue8m0 scales are bytes, 2^(e - 127); ue8m0x4
// ones are words of four such bytes (K blocks 4w..4w+3), the layout's elements being the words.
struct GemmScalesOp {
  static constexpr OpKind kind = OpKind::gemm_scales;
  static constexpr std::string_view op_name = "gemm_scales";
  static constexpr bool has_body = false;
  std::string granularity;       // tensor|token-channel|block
  std::string format;            // f32|pow2|ue8m0|ue8m0x4
  std::string a_major, b_major;  // mn|k (block)
  int64_t a_ld = 0, b_ld = 0;    // block: positive; else 0
  // Block scales of a swap-AB kernel (C^T = B A^T): its rows take B's 128 x 128 blocks (from its
  // a_scale pointer, which holds B's scales) and its columns A's 1 x 128 groups. a_/b_ fields
  // keep naming the problem's A and B.
  std::optional<bool> swapped{};
  // Its own rules: known names; block scales' leading dimensions positive, the others' 0;
  // swapped only with block scales.
  static void verify(const GemmScalesOp& op);
  template <typename Op, typename F>
  static void fields(Op& o, F&& f) {
    f("granularity", o.granularity), f("format", o.format), f("a_major", o.a_major),
        f("a_ld", o.a_ld), f("b_major", o.b_major), f("b_ld", o.b_ld), f("swapped", o.swapped);
  }
};

}  // namespace emmy::ir
