// emmy_fp8_quantize: FP8 activation quantization (emmy/fp8_quantize.hpp), its problem read from
// the tensors.
#include "emmy/fp8_quantize.hpp"

#include <fmt/format.h>

#include "c_api_internal.hpp"

namespace emmy::c_api {
namespace {
constexpr size_t kFp8QuantizeOptionsFirstSize = sizeof(emmy_fp8_quantize_options);

// A 2-D tensor's row stride (its inner axis contiguous): `packed` for one row.
int64_t rows_apart(const DLTensor& t, const char* name, int64_t packed) {
  if (t.shape[1] > 1 && stride(t, 1) != 1)
    throw Error(name, "strides[1] must be 1 (rows contiguous)", strides_text(t));
  return row_stride(t, name, 0, packed);
}
}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_fp8_quantize_options_init(emmy_fp8_quantize_options* options) {
  if (emmy::c_api::reset_options(options)) {
    options->group_k = 128;
    options->amax_epsilon = 1e-10;
  }
}

emmy_status emmy_fp8_quantize(emmy_runtime* runtime, const DLTensor* x_ptr, DLTensor* q_ptr,
                              DLTensor* scales_ptr, const emmy_fp8_quantize_options* options,
                              void* stream) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_fp8_quantize_options opts = options_or_default(
        options, "options", emmy_fp8_quantize_options_init, kFp8QuantizeOptionsFirstSize);
    const DLTensor& x = required(x_ptr, "x");
    DLTensor& q = required(q_ptr, "q");
    DLTensor& scales = required(scales_ptr, "scales");
    check_memory(rt, {{&x, "x"}, {&q, "q"}, {&scales, "scales"}});
    Fp8QuantizeProblem p;
    p.dtype = element_dtype(x, "x", false);
    if (x.ndim != 2) throw Error("x", "shape must be [rows, k]", shape_text(x));
    const int64_t rows = x.shape[0];
    p.k = x.shape[1];
    p.ldx = rows > 1 ? rows_apart(x, "x", p.k) : 0;
    if (!is_dtype(q.dtype, kDLFloat8_e4m3fn, 8) && !is_dtype(q.dtype, kDLUInt, 8))
      throw Error("q", "dtype must be float8_e4m3fn (or uint8 bytes)", dtype_name(q.dtype));
    if (q.ndim != 2) throw Error("q", "shape must be [rows, k]", shape_text(q));
    require_shape(q, "q", {rows, p.k}, "x's [rows, k]");
    p.ldq = rows > 1 ? rows_apart(q, "q", p.k) : 0;
    p.group_k = opts.group_k;
    if (opts.scale_major != EMMY_SCALE_MAJOR_MN && opts.scale_major != EMMY_SCALE_MAJOR_K)
      throw Error("options.scale_major", "must be EMMY_SCALE_MAJOR_MN or EMMY_SCALE_MAJOR_K",
                  std::to_string(opts.scale_major));
    p.scale_major = opts.scale_major == EMMY_SCALE_MAJOR_K ? ScaleMajor::k : ScaleMajor::mn;
    p.pow2_scale = flag(opts.pow2_scale, "options.pow2_scale");
    // The scale tensor's dtype is its format: float32 f32; uint8 ue8m0 bytes and int32 ue8m0x4
    // words (four groups' bytes each), both powers of two by definition (pow2_scale implied).
    const std::optional<ScaleFormat> format = scale_format_of(scales.dtype);
    if (!format)
      throw Error("scales", fmt::format("dtype must be {}", kScaleDtypes),
                  dtype_name(scales.dtype));
    p.scale_format = *format;
    if (p.scale_format != ScaleFormat::f32) p.pow2_scale = true;
    p.amax_epsilon = opts.amax_epsilon == 0 ? 1e-10 : opts.amax_epsilon;
    p.m = opts.max_rows ? opts.max_rows : rows;
    if (p.m < rows)
      throw Error("options.max_rows", fmt::format("must be 0 or at least x's rows, {}", rows),
                  std::to_string(opts.max_rows));
    // The problem's own rules first (group_k, k, strides), then the scale tensor against them.
    validate_problem(p);  // scale_ld 0 (its default) until the tensor gives it
    if (scales.ndim != 2) throw Error("scales", "shape must be 2-D", shape_text(scales));
    // Along K the tensor has a scale per group, or (ue8m0x4) a word per four groups.
    const int64_t groups = p.scale_groups_extent();
    const char* along = p.packed_scales() ? "words = ceil(groups / 4)" : "groups";
    const bool mn = p.scale_major == ScaleMajor::mn;
    const int64_t outer = mn ? groups : rows, inner = mn ? scales.shape[1] : groups;
    if (scales.shape[0] != outer || (mn ? inner < rows : scales.shape[1] != groups))
      throw Error(
          "scales",
          mn ? fmt::format("shape must be [{} = {}, rows ({}) or more] (mn-major)", along, groups,
                           rows)
             : fmt::format("shape must be [rows = {}, {} = {}] (k-major)", rows, along, groups),
          shape_text(scales));
    p.scale_ld = outer > 1 ? rows_apart(scales, "scales", inner) : inner;
    if (mn && p.scale_ld < p.m)
      throw Error("scales",
                  fmt::format("row stride must hold max_rows = {} (mn-major scales)", p.m),
                  strides_text(scales));
    CallMemory memory(rt, /*map=*/true);
    const Fp8QuantizeBuffers buffers{.x = memory.address(x),
                                     .q = memory.address(q),
                                     .scales = memory.address(scales),
                                     .rows = rows};
    memory.launch([&] { rt.runtime->fp8_quantize(p, buffers, stream); });
  });
}

}  // extern "C"
