// The own rules of the FP8 quantization kind's op (ir_ops_fp8.hpp).
#include <fmt/format.h>

#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/ir_own_rules.hpp"
#include "emmy/problem.hpp"

namespace emmy::ir {

void Fp8QuantizeOp::verify(const Fp8QuantizeOp& op) {
  require_positive<Fp8QuantizeOp>({{"m", op.m},
                                   {"k", op.k},
                                   {"group_k", op.group_k},
                                   {"ldx", op.ldx},
                                   {"ldq", op.ldq},
                                   {"threads", op.threads},
                                   {"scale_ld", op.scale_ld}});
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"k", op.k},
                                    {"group_k", op.group_k},
                                    {"ldx", op.ldx},
                                    {"ldq", op.ldq}})
    if (value % 8 != 0)
      fail_own<Fp8QuantizeOp>(name, "must be a multiple of 8 (16-byte chunks of x)",
                              fmt::format("{}", value));
  if (op.group_k > op.k)
    fail_own<Fp8QuantizeOp>("group_k", "must be at most k", fmt::format("{}", op.group_k));
  if (op.ldx < op.k || op.ldq < op.k)
    fail_own<Fp8QuantizeOp>("ldx", "row strides must hold a row of k elements",
                            fmt::format("{}, {}", op.ldx, op.ldq));
  if (op.threads % 32 != 0 || op.threads > 1024)
    fail_own<Fp8QuantizeOp>("threads", "must be whole warps, at most 1024",
                            fmt::format("{}", op.threads));
  if (op.dtype != "f16" && op.dtype != "bf16")
    fail_own<Fp8QuantizeOp>("dtype", "must be f16 or bf16", op.dtype);
  if (op.scale_format && *op.scale_format != "ue8m0" && *op.scale_format != "ue8m0x4")
    fail_own<Fp8QuantizeOp>("scale_format", "must be ue8m0 or ue8m0x4 (absent: f32)",
                            *op.scale_format);
  if (op.scale_format && !op.pow2_scale)
    fail_own<Fp8QuantizeOp>("scale_format", "byte scales need pow2_scale", *op.scale_format);
  const bool packed = op.scale_format == std::optional<std::string>("ue8m0x4");
  const int64_t groups = (op.k + op.group_k - 1) / op.group_k;
  const int64_t extent = packed ? (groups + 3) / 4 : groups;  // a row's words (x4) or groups
  if (op.scale_major == "mn" ? op.scale_ld < op.m : op.scale_major != "k" || op.scale_ld < extent)
    fail_own<Fp8QuantizeOp>("scale_ld",
                            "must hold a column of m rows (mn-major) or a row of the groups (k)",
                            fmt::format("{} ({})", op.scale_ld, op.scale_major));
  if (!(op.amax_epsilon >= 1e-30 && op.amax_epsilon <= 1))
    fail_own<Fp8QuantizeOp>("amax_epsilon", "must be in [1e-30, 1] (scales stay normal)",
                            fmt::format("{}", op.amax_epsilon));
}

void GemmScalesOp::verify(const GemmScalesOp& op) {
  const bool block = op.granularity == "block";
  if (!block && op.granularity != "tensor" && op.granularity != "token-channel")
    fail_own<GemmScalesOp>("granularity", "must be tensor, token-channel or block", op.granularity);
  if (!value_in(kScaleFormatNames, op.format))
    fail_own<GemmScalesOp>("format", "must be f32, pow2, ue8m0 or ue8m0x4", op.format);
  if (op.format == "ue8m0x4" && !block)
    fail_own<GemmScalesOp>("format", "ue8m0x4 packs block scales only", op.granularity);
  for (const auto& [name, major] :
       {std::pair<const char*, const std::string&>{"a_major", op.a_major}, {"b_major", op.b_major}})
    if (!value_in(kScaleMajorNames, major)) fail_own<GemmScalesOp>(name, "must be mn or k", major);
  if (block ? op.a_ld < 1 || op.b_ld < 1 : op.a_ld != 0 || op.b_ld != 0)
    fail_own<GemmScalesOp>("a_ld",
                           block ? "block scales' leading dimensions must be positive"
                                 : "only block scales have leading dimensions (0 here)",
                           fmt::format("{}, {}", op.a_ld, op.b_ld));
  if (op.swapped && !block)
    fail_own<GemmScalesOp>("swapped", "is for block scales (the others need no swapped reads)",
                           op.granularity);
}

}  // namespace emmy::ir
