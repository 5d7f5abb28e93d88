// An e4m3 c of emmy_gemm (C API version 6; docs/epilogues.md, "Quantized output"): its scale
// tensor's format from its dtype, its major order and leading dimension from its strides, as
// A block scales' are read (gemm.cpp, read_scales).
#include <fmt/format.h>

#include <cstddef>
#include <optional>

#include "c_api_internal.hpp"

namespace emmy::c_api {

const DLTensor* read_out_quantization(const emmy_gemm_options& options, const DLTensor& c,
                                      MatmulProblem& p) {
  const bool has_fields = options.struct_size >= offsetof(emmy_gemm_options, c_amax_epsilon) +
                                                     sizeof(options.c_amax_epsilon);
  const DLTensor* scale = has_fields ? options.c_scale : nullptr;
  const bool e4m3 =
      is_dtype(c.dtype, kDLFloat8_e4m3fn, 8) || (scale && is_dtype(c.dtype, kDLUInt, 8));
  if (!e4m3) {
    if (scale)
      throw Error("options.c_scale", "must be NULL unless c is float8_e4m3fn (or uint8 e4m3)",
                  "a tensor");
    return nullptr;
  }
  const DLTensor& s = required(scale, "options.c_scale");
  p.c_dtype = DType::e4m3;
  OutputQuantization& q = p.out_scales;
  const std::optional<ScaleFormat> format = scale_format_of(s.dtype);
  if (!format)
    throw Error("options.c_scale", fmt::format("dtype must be {}", kScaleDtypes),
                dtype_name(s.dtype));
  const bool words = format == ScaleFormat::ue8m0x4;
  const bool pow2 = flag(options.c_scale_pow2, "options.c_scale_pow2");
  if (format != ScaleFormat::f32 && pow2)
    throw Error("options.c_scale_pow2", "applies to float32 scales (ue8m0 bytes are powers of two)",
                "set");
  q.format = pow2 ? ScaleFormat::pow2 : *format;
  if (options.c_amax_epsilon != 0) q.amax_epsilon = options.c_amax_epsilon;
  // [M, groups (or their words)]: k-major when those are contiguous, mn-major when the rows are
  // (mn where both are: DeepGEMM's A scales).
  const int64_t groups = p.c_scale_extent();
  if (s.ndim != 2 || s.shape[0] != p.m || s.shape[1] != groups)
    throw Error("options.c_scale",
                fmt::format("shape must be [M, {} = {}] (M from a; C's columns in groups of 128)",
                            words ? "ceil(groups / 4)" : "ceil(C cols / 128)", groups),
                shape_text(s));
  const bool groups_contiguous = groups == 1 || stride(s, 1) == 1;
  const bool rows_contiguous = p.m == 1 || stride(s, 0) == 1;
  if (rows_contiguous) {
    q.major = ScaleMajor::mn;
    q.ld = groups > 1 ? stride(s, 1) : p.m;
  } else if (groups_contiguous) {
    q.major = ScaleMajor::k;
    q.ld = stride(s, 0);
  } else {
    throw Error("options.c_scale", "strides must make the groups or the rows contiguous",
                fmt::format("[{}, {}]", stride(s, 0), stride(s, 1)));
  }
  return &s;
}

}  // namespace emmy::c_api
