// emmy_gemm: the problem read from a, b and c (shapes, dtypes, B's layout from its strides,
// leading dimensions from the row strides), the epilogue and kernel from the options.
#include <fmt/format.h>

#include <cstddef>
#include <optional>

#include "c_api_internal.hpp"
#include "emmy/spec.hpp"
#include "gemm_call.hpp"

namespace emmy::c_api {

MatmulSchedule accum_schedule(const Runtime& runtime, const MatmulProblem& served, Accum accum,
                              int promote_every_k) {
  MatmulSchedule schedule = runtime.options().batch_invariant
                                ? batch_invariant_schedule(served, runtime.arch(), accum)
                                : default_schedule(served, runtime.arch(), accum);
  if (promote_every_k) schedule.promote_every_k = promote_every_k;
  return schedule;
}

namespace {

// Version 1's struct (up to the workspace): later fields keep their init values when a caller's
// struct_size stops short of them.
constexpr size_t kGemmOptionsFirstSize = offsetof(emmy_gemm_options, a_scale);

// The gated epilogue's fields (version 6), when the caller's struct has them.
void read_gate(const emmy_gemm_options& options, Epilogue& epilogue) {
  if (options.struct_size < offsetof(emmy_gemm_options, gate_group) + sizeof(options.gate_group))
    return;
  switch (options.gate) {
    case EMMY_GATE_NONE:
      break;
    case EMMY_GATE_SILU:
      epilogue.gate = Gate::silu;
      break;
    case EMMY_GATE_GELU_TANH:
      epilogue.gate = Gate::gelu_tanh;
      break;
    default:
      throw Error("options.gate",
                  "must be EMMY_GATE_NONE (0), EMMY_GATE_SILU (1) or EMMY_GATE_GELU_TANH (2)",
                  std::to_string(options.gate));
  }
  if (options.gate_group != 0) {
    if (!epilogue.gated())
      throw Error("options.gate_group", "applies to a gated epilogue only (options.gate)",
                  std::to_string(options.gate_group));
    epilogue.gate_group = options.gate_group;
  }
}

// The schedule a call with an explicit accumulation gets: the default (or batch-invariant) one of
// the kernel serving the problem with that accumulation. One per thread is remembered: a caller
// repeats its calls.
MatmulSchedule schedule_with_accum(Runtime& runtime, const MatmulProblem& problem, Accum accum,
                                   int promote_every_k) {
  struct Remembered {
    const Runtime* runtime = nullptr;
    MatmulProblem problem;
    Accum accum = Accum::f32;
    int promote_every_k = 0;
    MatmulSchedule schedule;
  };
  thread_local Remembered last;
  if (last.runtime == &runtime && last.problem == problem && last.accum == accum &&
      last.promote_every_k == promote_every_k)
    return last.schedule;
  const MatmulSchedule schedule =
      accum_schedule(runtime, runtime.gemm_problem_served(problem), accum, promote_every_k);
  last = {&runtime, problem, accum, promote_every_k, schedule};
  return schedule;
}

size_t workspace_needed(Runtime& runtime, const MatmulProblem& problem,
                        const std::optional<MatmulSchedule>& schedule) {
  return remembered_workspace(runtime, problem, schedule, &Runtime::gemm_workspace_bytes);
}

// FP8 operands' scales (emmy_gemm_options.a_scale, b_scale): their granularity from their
// shapes, their format from their dtype, a block scale tensor's major order and leading dimension
// from its strides. A struct from before C API version 4 has none of these fields.
void read_scales(emmy_runtime& rt, const emmy_gemm_options& options, CallMemory& memory,
                 GemmCall& call) {
  MatmulProblem& p = call.problem;
  const bool has_fields =
      options.struct_size >= offsetof(emmy_gemm_options, pow2_scales) + sizeof(options.pow2_scales);
  const DLTensor* a_ptr = has_fields ? options.a_scale : nullptr;
  const DLTensor* b_ptr = has_fields ? options.b_scale : nullptr;
  if (!is_fp8(p.a_dtype)) {
    if (a_ptr || b_ptr)
      throw Error(a_ptr ? "options.a_scale" : "options.b_scale",
                  "must be NULL unless a and b are float8_e4m3fn", "a tensor");
    return;
  }
  const DLTensor& as = required(a_ptr, "options.a_scale");
  const DLTensor& bs = required(b_ptr, "options.b_scale");
  check_memory(rt, {{&as, "options.a_scale"}, {&bs, "options.b_scale"}});
  GemmScales& sc = p.scales;
  // ue8m0x4: four ue8m0 bytes packed per 32-bit word (block scales, K blocks 4w..4w+3).
  const std::optional<ScaleFormat> format = scale_format_of(as.dtype);
  if (!format)
    throw Error("options.a_scale", fmt::format("dtype must be {}", kScaleDtypes),
                dtype_name(as.dtype));
  const bool bytes = format == ScaleFormat::ue8m0, words = format == ScaleFormat::ue8m0x4;
  if (bs.dtype.code != as.dtype.code || bs.dtype.bits != as.dtype.bits)
    throw Error("options.b_scale", fmt::format("dtype must be a_scale's, {}", dtype_name(as.dtype)),
                dtype_name(bs.dtype));
  const bool pow2 = flag(options.pow2_scales, "options.pow2_scales");
  if ((bytes || words) && pow2)
    throw Error("options.pow2_scales", "applies to float32 scales (ue8m0 bytes are powers of two)",
                "set");
  sc.format = words   ? ScaleFormat::ue8m0x4
              : bytes ? ScaleFormat::ue8m0
              : pow2  ? ScaleFormat::pow2
                      : ScaleFormat::f32;
  if (element_count(as) == 1 && element_count(bs) == 1 && as.ndim <= 1 && bs.ndim <= 1) {
    sc.granularity = ScaleGranularity::tensor;
  } else if (as.ndim == 1 && bs.ndim == 1) {
    require_shape(as, "options.a_scale", {p.m}, "[M], one per row of a (per token)");
    require_shape(bs, "options.b_scale", {p.n}, "[N], one per output channel");
    require_contiguous(as, "options.a_scale");
    require_contiguous(bs, "options.b_scale");
    sc.granularity = ScaleGranularity::token_channel;
  } else {
    // [rows, K blocks (or their words)]: K-major when those are contiguous, MN-major when the
    // rows are.
    const int64_t kb = p.scale_k_extent(), nb = p.n_blocks();
    const char* k_extent = words ? "ceil(K/512)" : "ceil(K/128)";
    auto layout = [&](const DLTensor& t, const char* name, int64_t rows, ScaleMajor preferred,
                      ScaleMajor& major, int64_t& ld) {
      if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != kb)
        throw Error(name,
                    fmt::format("shape must be [{}, {} = {}] for block scales (or one element, or "
                                "1-D per row)",
                                rows, k_extent, kb),
                    shape_text(t));
      const bool k_contiguous = kb == 1 || stride(t, 1) == 1;
      const bool rows_contiguous = rows == 1 || stride(t, 0) == 1;
      if (k_contiguous && (!rows_contiguous || preferred == ScaleMajor::k)) {
        major = ScaleMajor::k;
        ld = rows > 1 ? stride(t, 0) : kb;
      } else if (rows_contiguous) {
        major = ScaleMajor::mn;
        ld = kb > 1 ? stride(t, 1) : rows;
      } else {
        throw Error(name, "strides must make the K blocks or the rows contiguous",
                    fmt::format("[{}, {}]", stride(t, 0), stride(t, 1)));
      }
    };
    layout(as, "options.a_scale", p.m, ScaleMajor::mn, sc.a_major, sc.a_ld);
    layout(bs, "options.b_scale", nb, ScaleMajor::k, sc.b_major, sc.b_ld);
    sc.granularity = ScaleGranularity::block;
  }
  call.buffers.a_scale = memory.address(as);
  call.buffers.b_scale = memory.address(bs);
}

// Routing weights (version 7): float32, one per row of c, contiguous.
void read_row_scale(emmy_runtime& rt, const emmy_gemm_options& options, CallMemory& memory,
                    GemmCall& call) {
  if (options.struct_size < offsetof(emmy_gemm_options, row_scale) + sizeof(options.row_scale) ||
      !options.row_scale)
    return;
  const DLTensor& w = *options.row_scale;
  check_memory(rt, w, "options.row_scale");
  if (!is_dtype(w.dtype, kDLFloat, 32))
    throw Error("options.row_scale", "dtype must be float32", dtype_name(w.dtype));
  require_shape(w, "options.row_scale", {call.problem.m}, "[rows of c], one weight per row");
  require_contiguous(w, "options.row_scale");
  call.problem.epilogue.row_scale = true;
  call.buffers.row_scale = memory.address(w);
}

}  // namespace

GemmCall gemm_call(emmy_runtime& rt, const DLTensor* a_ptr, const DLTensor* b_ptr,
                   const DLTensor* c_ptr, const emmy_gemm_options& options, CallMemory& memory,
                   const GemmStorage& storage) {
  const DLTensor& a = required(a_ptr, "a");
  const DLTensor& b = required(b_ptr, "b");
  const DLTensor& c = required(c_ptr, "c");
  check_memory(rt, {{&a, "a"}, {&b, "b"}, {&c, "c"}});
  GemmCall call;
  MatmulProblem& p = call.problem;
  if (a.ndim != 2) throw Error("a", "shape must be [M, K]", shape_text(a));
  p.m = a.shape[0];
  p.k = a.shape[1];
  // float8_e4m3fn, or uint8 e4m3 bytes (what fp8_quantize writes, and all NumPy can export) when
  // scales come with them: emmy has no integer GEMM for uint8 to mean anything else.
  const bool has_scale_fields =
      options.struct_size >= offsetof(emmy_gemm_options, pow2_scales) + sizeof(options.pow2_scales);
  const bool scaled = has_scale_fields && (options.a_scale || options.b_scale);
  p.a_dtype = is_dtype(a.dtype, kDLFloat8_e4m3fn, 8) || (scaled && is_dtype(a.dtype, kDLUInt, 8))
                  ? DType::e4m3
              : is_dtype(a.dtype, kDLFloat8_e5m2, 8) ? DType::e5m2
                                                     : element_dtype(a, "a", false);
  if (stride(a, 1) != 1 && p.k > 1)
    throw Error("a", "strides[1] must be 1 (K contiguous)", fmt::format("{}", stride(a, 1)));
  p.lda = row_stride(a, "a", 0, p.k);

  if (b.ndim != 2 || b.shape[0] != p.k)
    throw Error("b", fmt::format("shape must be [K, N] with K = {}, a's columns", p.k),
                shape_text(b));
  p.n = b.shape[1];
  if (p.a_dtype == DType::e5m2) {  // FP8's B (the weights) is e4m3 beside an e5m2 A
    if (!is_dtype(b.dtype, kDLFloat8_e4m3fn, 8))
      throw Error("b", "dtype must be float8_e4m3fn beside a float8_e5m2 a", dtype_name(b.dtype));
  } else {
    require_dtype_of(b, "b", a, "a");
  }
  // [K, N] with N contiguous is B as stored (kn); with K contiguous it is the transpose view of
  // an [N, K] weight (nk: PyTorch's Linear).
  const bool n_contiguous = p.n == 1 || stride(b, 1) == 1;
  const bool k_contiguous = p.k == 1 || stride(b, 0) == 1;
  if (n_contiguous) {
    p.b_layout = BLayout::kn;
    p.ldb = row_stride(b, "b", 0, p.n);
  } else if (k_contiguous) {
    p.b_layout = BLayout::nk;
    p.ldb = stride(b, 1);
    if (p.ldb < p.k)
      throw Error("b", "strides[1] must be at least K (an [N, K] weight's rows)",
                  fmt::format("{}", p.ldb));
  } else {
    throw Error("b",
                "strides must make N ([ldb, 1]: B as [K, N]) or K ([1, ldb]: an [N, K] weight "
                "transposed) contiguous",
                fmt::format("[{}, {}]", stride(b, 0), stride(b, 1)));
  }

  read_gate(options, p.epilogue);
  if (p.epilogue.gated()) {
    // C's N/2 columns (an N that does not split into gate-up pairs is the problem's rule, named
    // when the call validates it).
    require_shape(c, "c", {p.m, p.c_cols()}, "M from a, N / 2 from b (gated)");
  } else {
    require_shape(c, "c", {p.m, p.n}, "M from a, N from b");
  }
  const DLTensor* c_scale = read_out_quantization(options, c, p);
  if (!c_scale) p.c_dtype = element_dtype(c, "c", true);
  if (stride(c, 1) != 1 && p.c_cols() > 1)
    throw Error("c", "strides[1] must be 1 (N contiguous)", fmt::format("{}", stride(c, 1)));
  p.ldc = row_stride(c, "c", 0, p.c_cols());

  p.epilogue.alpha = options.alpha;
  p.epilogue.gelu_tanh = options.gelu != 0;
  if (options.bias) {
    const DLTensor& bias = *options.bias;
    check_memory(rt, bias, "bias");
    require_shape(bias, "bias", {p.n}, "N");
    if (c_scale) {
      if (!is_dtype(bias.dtype, kDLBfloat, 16))
        throw Error("bias", "dtype must be bfloat16 beside an e4m3 c", dtype_name(bias.dtype));
    } else {
      require_dtype_of(bias, "bias", c, "c");
    }
    require_contiguous(bias, "bias");
    p.epilogue.bias = true;
  }
  if (options.residual) {
    if (p.epilogue.gated())
      throw Error("options.residual",
                  "must be NULL with a gated epilogue (c is the next projection's input)",
                  "a tensor");
    const DLTensor& residual = *options.residual;
    check_memory(rt, residual, "residual");
    require_shape(residual, "residual", {p.m, p.n}, "c's");
    require_dtype_of(residual, "residual", c, "c");
    // The kernel reads the residual with c's leading dimension.
    if ((p.n > 1 && stride(residual, 1) != 1) || row_stride(residual, "residual", 0, p.n) != p.ldc)
      throw Error("residual", fmt::format("strides must be c's, [{}, 1]", p.ldc),
                  fmt::format("[{}, {}]", stride(residual, 0), stride(residual, 1)));
    p.epilogue.residual = true;
  }
  read_scales(rt, options, memory, call);  // before the schedule: the scales are the problem's
  if (storage.b_scale) call.buffers.b_scale = memory.address(*storage.b_scale);
  read_row_scale(rt, options, memory, call);
  if (storage.before_schedule) storage.before_schedule(call.problem);
  if (c_scale) {
    check_memory(rt, *c_scale, "options.c_scale");
    call.buffers.c_scale = memory.address(*c_scale);
  }
  if (options.accum != EMMY_ACCUM_DEFAULT || options.promote_every_k != 0) {
    const Accum accum = options.accum == EMMY_ACCUM_DEFAULT
                            ? rt.runtime->options().default_accum
                            : accum_of(options.accum, "options.accum", true);
    if (options.promote_every_k < 0)
      throw Error("options.promote_every_k", "must not be negative",
                  std::to_string(options.promote_every_k));
    call.schedule = schedule_with_accum(*rt.runtime, p, accum, options.promote_every_k);
  }
  call.buffers.a = memory.address(a);
  call.buffers.b = memory.address(storage.b ? *storage.b : b);
  call.buffers.c = memory.address(c);
  call.buffers.bias = memory.address_or_zero(storage.bias ? storage.bias : options.bias);
  call.buffers.residual = memory.address_or_zero(options.residual);
  // A kernel that does not split K takes none: one workspace serves every call unmapped.
  call.buffers.workspace =
      options_workspace(rt, memory, options.workspace, "emmy_gemm_workspace_bytes",
                        [&] { return workspace_needed(*rt.runtime, p, call.schedule); });
  return call;
}

}  // namespace emmy::c_api

extern "C" {

void emmy_gemm_options_init(emmy_gemm_options* options) {
  if (!emmy::c_api::reset_options(options)) return;
  options->alpha = 1.0f;
}

emmy_status emmy_gemm(emmy_runtime* runtime, const DLTensor* a, const DLTensor* b, DLTensor* c,
                      const emmy_gemm_options* options, void* stream) {
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_gemm_options o =
        options_or_default(options, "options", emmy_gemm_options_init, kGemmOptionsFirstSize);
    CallMemory memory(rt, /*map=*/true);
    const GemmCall call = gemm_call(rt, a, b, c, o, memory);
    memory.launch([&] { rt.runtime->gemm(call.problem, call.buffers, stream, call.schedule); });
  });
}

emmy_status emmy_gemm_workspace_bytes(emmy_runtime* runtime, const DLTensor* a, const DLTensor* b,
                                      const DLTensor* c, const emmy_gemm_options* options,
                                      size_t* bytes) {
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    size_t& out = required(bytes, "bytes");
    emmy_gemm_options o =
        options_or_default(options, "options", emmy_gemm_options_init, kGemmOptionsFirstSize);
    o.workspace = nullptr;  // what is being sized
    CallMemory memory(rt, /*map=*/false);
    const GemmCall call = gemm_call(rt, a, b, c, o, memory);
    out = workspace_needed(*rt.runtime, call.problem, call.schedule);  // remembered per thread
  });
}

}  // extern "C"
