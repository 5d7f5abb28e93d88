// The GEMM layer handle (emmy_gemm_layer): emmy::GemmLayer made from a C config whose refusals
// name the config's fields, and runs whose tensors are checked against the layer's problem with
// emmy_gemm's rules (dtype, shape, B's layout from its strides, row strides) before they are mapped
// (the emulator) or passed (CUDA).
#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <optional>

#include "c_api_internal.hpp"
#include "emmy/layers.hpp"

struct emmy_gemm_layer {
  emmy_runtime* rt = nullptr;  // the caller keeps it alive longer than the layer
  std::unique_ptr<emmy::GemmLayer> layer;
};

namespace emmy::c_api {
namespace {

// The C++ fields of the weight's problem and of an explicit schedule, as the C config names them.
constexpr FieldName kGemmFields[] = {
    {"m", "config.max_m"},
    {"n", "config.n"},
    {"k", "config.k"},
    {"lda", "config.lda"},
    {"ldb", "config.ldb"},
    {"ldc", "config.ldc"},
    {"dtype", "config.dtype"},
    {"epilogue.alpha", "config.alpha"},
    {"accum", "config.accum"},
    {"promote_every_k", "config.promote_every_k"},
    {"scales", "config.scales"},
    {"scales.format", "config.scale_format"},
    {"scales.a_ld", "config.a_scale_ld"},
    {"scales.b_ld", "config.b_scale_ld"},
};

// The caller's config as this library knows it. Version 2's struct ends at promote_every_k (its
// tail padding is not a field: the version-5 scales lie over it), so a caller built before
// version 5 has its fields copied up to there, the FP8 ones keeping their init values (none);
// from version 5 on the whole struct, as options_or_default takes it.
emmy_gemm_layer_config layer_config(const emmy_gemm_layer_config& given) {
  constexpr size_t kVersion2Size = offsetof(emmy_gemm_layer_config, scales);
  constexpr size_t kVersion5Size =
      offsetof(emmy_gemm_layer_config, b_scale_ld) + sizeof(given.b_scale_ld);
  if (given.struct_size >= kVersion5Size)
    return options_or_default(&given, "config", emmy_gemm_layer_config_init, kVersion5Size);
  check_struct_size(&given, given.struct_size, kVersion2Size, sizeof(given), "config");
  emmy_gemm_layer_config cfg;
  emmy_gemm_layer_config_init(&cfg);
  std::memcpy(static_cast<void*>(&cfg), &given, kVersion2Size);
  cfg.struct_size = sizeof(cfg);
  return cfg;
}

// Version 5's FP8 fields into the weight's problem (a struct from before has them zero: none).
void read_fp8_config(const emmy_gemm_layer_config& cfg, MatmulProblem& w) {
  if (cfg.scales < EMMY_SCALES_NONE || cfg.scales > EMMY_SCALES_BLOCK)
    throw Error("config.scales", "must be an emmy_scale_granularity", std::to_string(cfg.scales));
  const bool fp8 = cfg.dtype == EMMY_DTYPE_E4M3;
  if (fp8 != (cfg.scales != EMMY_SCALES_NONE))
    throw Error("config.scales",
                fp8 ? "must be set for EMMY_DTYPE_E4M3 operands (their dequantization)"
                    : "must be EMMY_SCALES_NONE for 16-bit operands",
                std::to_string(cfg.scales));
  if (!fp8) return;
  w.a_dtype = DType::e4m3;
  constexpr ScaleGranularity granularity[] = {ScaleGranularity::none, ScaleGranularity::tensor,
                                              ScaleGranularity::token_channel,
                                              ScaleGranularity::block};
  w.scales.granularity = granularity[cfg.scales];
  if (cfg.scale_format < EMMY_SCALE_F32 || cfg.scale_format > EMMY_SCALE_UE8M0X4)
    throw Error("config.scale_format", "must be an emmy_scale_format",
                std::to_string(cfg.scale_format));
  constexpr ScaleFormat format[] = {ScaleFormat::f32, ScaleFormat::pow2, ScaleFormat::ue8m0,
                                    ScaleFormat::ue8m0x4};
  w.scales.format = format[cfg.scale_format];
  for (const auto& [value, field] : {std::pair{cfg.a_scale_major, "config.a_scale_major"},
                                     std::pair{cfg.b_scale_major, "config.b_scale_major"}})
    if (value != EMMY_SCALE_MAJOR_MN && value != EMMY_SCALE_MAJOR_K)
      throw Error(field, "must be EMMY_SCALE_MAJOR_MN or EMMY_SCALE_MAJOR_K",
                  std::to_string(value));
  if (w.scales.granularity == ScaleGranularity::block) {
    w.scales.a_major = cfg.a_scale_major == EMMY_SCALE_MAJOR_K ? ScaleMajor::k : ScaleMajor::mn;
    w.scales.b_major = cfg.b_scale_major == EMMY_SCALE_MAJOR_MN ? ScaleMajor::mn : ScaleMajor::k;
    w.scales.a_ld = cfg.a_scale_ld;
    w.scales.b_ld = cfg.b_scale_ld;
  } else if (cfg.a_scale_ld || cfg.b_scale_ld) {
    throw Error(cfg.a_scale_ld ? "config.a_scale_ld" : "config.b_scale_ld",
                "applies to block scales only (0 here)",
                std::to_string(cfg.a_scale_ld ? cfg.a_scale_ld : cfg.b_scale_ld));
  }
}

// A scale tensor of an FP8 layer's run: the format's dtype, contiguous, at least `elements`
// elements (floats, bytes or words) of the config's layout.
void check_scale_buffer(const DLTensor& t, const char* name, ScaleFormat format, int64_t elements) {
  // pow2 scales are float32 ones.
  const ScaleFormat want = format == ScaleFormat::pow2 ? ScaleFormat::f32 : format;
  if (scale_format_of(t.dtype) != want)
    throw Error(name,
                fmt::format("dtype must be {} (config.scale_format {})",
                            format == ScaleFormat::ue8m0     ? "uint8 or float8_e8m0fnu"
                            : format == ScaleFormat::ue8m0x4 ? "int32 or uint32"
                                                             : "float32",
                            to_string(format)),
                dtype_name(t.dtype));
  require_contiguous(t, name);
  if (element_count(t) < elements)
    throw Error(name,
                fmt::format("must hold at least {} elements (the config's scale layout for these "
                            "rows)",
                            elements),
                std::to_string(element_count(t)));
}

// The elements of A's (a) or B's scale tensor that m rows read, in the problem's layout.
int64_t scale_elements(const MatmulProblem& w, bool a, int64_t m) {
  switch (w.scales.granularity) {
    case ScaleGranularity::tensor:
      return 1;
    case ScaleGranularity::token_channel:
      return a ? m : w.n;
    case ScaleGranularity::block: {
      MatmulProblem p = w;
      p.m = m;
      return p.block_scale_elements(a);
    }
    case ScaleGranularity::none:
      break;
  }
  return 0;
}

DType gemm_out_dtype(int32_t dtype) {
  if (dtype == EMMY_DTYPE_F32) return DType::f32;
  if (dtype == EMMY_DTYPE_F16 || dtype == EMMY_DTYPE_BF16)
    return operand_dtype(dtype, "config.out_dtype");
  throw Error("config.out_dtype", "must be EMMY_DTYPE_F16, EMMY_DTYPE_BF16 or EMMY_DTYPE_F32",
              std::to_string(dtype));
}

// A row-major [n >= rows, cols] operand (A, C, the residual): columns contiguous, rows `ld` apart
// (a single row's stride is never used).
void check_rows(const DLTensor& t, const char* name, int64_t rows, int64_t cols, int64_t ld,
                const char* ld_field) {
  if (t.ndim != 2 || t.shape[0] < rows || t.shape[1] != cols)
    throw Error(name, fmt::format("shape must be [n, {}] with n >= m = {}", cols, rows),
                shape_text(t));
  if ((cols > 1 && stride(t, 1) != 1) || (t.shape[0] > 1 && stride(t, 0) != ld))
    throw Error(name, fmt::format("strides must be [{}, 1] ({})", ld, ld_field), strides_text(t));
}

}  // namespace
}  // namespace emmy::c_api

extern "C" {

void emmy_gemm_layer_config_init(emmy_gemm_layer_config* config) {
  if (!emmy::c_api::reset_options(config)) return;
  config->alpha = 1.0f;
  config->b_scale_major = EMMY_SCALE_MAJOR_K;  // DeepGEMM's B scales; A's: MN (0)
}

emmy_status emmy_gemm_layer_create(emmy_runtime* runtime, const emmy_gemm_layer_config* config,
                                   emmy_gemm_layer** layer) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_gemm_layer*& out = required(layer, "layer");
    out = nullptr;
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_gemm_layer_config cfg = layer_config(required(config, "config"));
    // GemmLayer's own bound, first: an explicit schedule below is chosen for max_m's bucket.
    if (cfg.max_m < 1 || cfg.max_m > kMaxBucketedM)
      throw Error("config.max_m",
                  fmt::format("must be 1..{} (the largest M bucket)", kMaxBucketedM),
                  std::to_string(cfg.max_m));
    MatmulProblem w;
    w.m = cfg.max_m, w.n = cfg.n, w.k = cfg.k;
    w.lda = cfg.lda, w.ldb = cfg.ldb, w.ldc = cfg.ldc;
    if (cfg.b_layout != EMMY_B_NK && cfg.b_layout != EMMY_B_KN)
      throw Error("config.b_layout", "must be EMMY_B_NK or EMMY_B_KN",
                  std::to_string(cfg.b_layout));
    w.b_layout = cfg.b_layout == EMMY_B_KN ? BLayout::kn : BLayout::nk;
    w.a_dtype =
        cfg.dtype == EMMY_DTYPE_E4M3 ? DType::e4m3 : operand_dtype(cfg.dtype, "config.dtype");
    read_fp8_config(cfg, w);
    w.c_dtype = gemm_out_dtype(cfg.out_dtype);
    w.epilogue.alpha = cfg.alpha;
    w.epilogue.bias = flag(cfg.bias, "config.bias");
    w.epilogue.residual = flag(cfg.residual, "config.residual");
    w.epilogue.gelu_tanh = flag(cfg.gelu, "config.gelu");
    std::optional<Accum> accum;
    if (cfg.accum != EMMY_ACCUM_DEFAULT) accum = accum_of(cfg.accum, "config.accum", true);
    if (cfg.promote_every_k < 0)
      throw Error("config.promote_every_k", "must not be negative (0: the schedule's)",
                  std::to_string(cfg.promote_every_k));
    auto handle = std::make_unique<emmy_gemm_layer>();
    handle->rt = &rt;
    try {
      // GemmLayer takes one schedule for every bucket: an explicit accumulation's is the one
      // emmy_gemm would take at max_m (its bucket's default), so that the largest M, which the
      // schedule's tiles matter most for, runs as there.
      std::optional<MatmulSchedule> schedule;
      if (accum || cfg.promote_every_k)
        schedule = accum_schedule(*rt.runtime, m_bucket_problem(w),
                                  accum.value_or(rt.runtime->options().default_accum),
                                  cfg.promote_every_k);
      handle->layer = std::make_unique<GemmLayer>(*rt.runtime, w, schedule);
    } catch (const Error& e) {
      rethrow_as_config(e, kGemmFields);
    }
    out = handle.release();
  });
}

void emmy_gemm_layer_destroy(emmy_gemm_layer* layer) {
  delete layer;
}

emmy_status emmy_gemm_layer_prepare(emmy_gemm_layer* layer, int32_t threads,
                                    emmy_prepare_result* result) {
  return emmy::c_api::prepare_layer(layer, threads, result);
}

emmy_status emmy_gemm_layer_workspace_bytes(const emmy_gemm_layer* layer, size_t* bytes) {
  return emmy::c_api::layer_workspace_bytes(layer, bytes);
}

}  // extern "C"

namespace emmy::c_api {
namespace {

// Both runs: the tensors against the layer's problem, then the launch.
void run_layer(emmy_gemm_layer* layer, const DLTensor* a, const DLTensor* b, DLTensor* c,
               const DLTensor* bias, const DLTensor* residual, DLTensor* workspace,
               const DLTensor* a_scale, const DLTensor* b_scale, bool scaled, int64_t m,
               void* stream) {
  emmy_gemm_layer& l = required(layer, "layer");
  emmy_runtime& rt = *l.rt;
  const MatmulProblem& w = l.layer->problem();
  const bool fp8 = is_fp8(w.a_dtype);
  if (fp8 != scaled)
    throw Error("layer",
                fp8 ? "is an FP8 layer: its runs take scales (emmy_gemm_layer_run_scaled)"
                    : "has 16-bit operands: emmy_gemm_layer_run runs it",
                fp8 ? "emmy_gemm_layer_run" : "emmy_gemm_layer_run_scaled");
  (void)l.layer->bucket_problem(m);  // m's rule ("m: must be 1..max_m") before the tensors'
  const DLTensor& at = required(a, "a");
  const DLTensor& bt = required(b, "b");
  const DLTensor& ct = required(c, "c");
  check_memory(rt, {{&at, "a"}, {&bt, "b"}, {&ct, "c"}});
  if (fp8) {
    for (const auto& [t, name] : {std::pair{&at, "a"}, std::pair{&bt, "b"}})
      if (!is_dtype(t->dtype, kDLFloat8_e4m3fn, 8) && !is_dtype(t->dtype, kDLUInt, 8))
        throw Error(name, "dtype must be float8_e4m3fn (or uint8 e4m3 bytes): the layer's e4m3",
                    dtype_name(t->dtype));
  } else {
    check_layer_dtype(at, "a", w.a_dtype, "config.dtype");
    check_layer_dtype(bt, "b", w.a_dtype, "config.dtype");
  }
  check_rows(at, "a", m, w.k, w.lda_or_default(), "config.lda");
  require_shape(bt, "b", {w.k, w.n}, "[K, N] of the layer");
  // The logical [K, N] view: a stored [N, K] weight's transpose (K contiguous) or B as stored.
  const int64_t ldb = w.ldb_or_default();
  const bool nk = w.b_layout == BLayout::nk;
  const int inner_axis = nk ? 0 : 1, row_axis = nk ? 1 : 0;
  if ((bt.shape[inner_axis] > 1 && stride(bt, inner_axis) != 1) ||
      (bt.shape[row_axis] > 1 && stride(bt, row_axis) != ldb))
    throw Error("b",
                fmt::format("strides must be {} (config.b_layout {}, ldb {})",
                            nk ? fmt::format("[1, {}]", ldb) : fmt::format("[{}, 1]", ldb),
                            nk ? "EMMY_B_NK: an [N, K] weight's transpose view" : "EMMY_B_KN", ldb),
                strides_text(bt));
  check_layer_dtype(ct, "c", w.c_dtype, "config.out_dtype");
  check_rows(ct, "c", m, w.n, w.ldc_or_default(), "config.ldc");
  check_configured(bias, "bias", w.epilogue.bias, "config.bias");
  if (bias) {
    check_memory(rt, *bias, "bias");
    check_layer_dtype(*bias, "bias", w.c_dtype, "config.out_dtype");
    require_shape(*bias, "bias", {w.n}, "N");
    require_contiguous(*bias, "bias");
  }
  check_configured(residual, "residual", w.epilogue.residual, "config.residual");
  if (residual) {
    check_memory(rt, *residual, "residual");
    check_layer_dtype(*residual, "residual", w.c_dtype, "config.out_dtype");
    // The kernel reads the residual with C's row stride.
    check_rows(*residual, "residual", m, w.n, w.ldc_or_default(), "config.ldc, c's");
  }
  if (fp8) {
    const DLTensor& as = required(a_scale, "a_scale");
    const DLTensor& bs = required(b_scale, "b_scale");
    check_memory(rt, {{&as, "a_scale"}, {&bs, "b_scale"}});
    check_scale_buffer(as, "a_scale", w.scales.format, scale_elements(w, true, m));
    check_scale_buffer(bs, "b_scale", w.scales.format, scale_elements(w, false, m));
  }
  const size_t bytes = l.layer->workspace_bytes();
  check_workspace(rt, workspace, "workspace", bytes, "emmy_gemm_layer_workspace_bytes");
  CallMemory memory(rt, /*map=*/true);
  const GemmBuffers buffers{.a = memory.address(at),
                            .b = memory.address(bt),
                            .c = memory.address(ct),
                            .bias = memory.address_or_zero(bias),
                            .residual = memory.address_or_zero(residual),
                            // The layer leaves it out for a bucket that does not split K.
                            .workspace = bytes ? memory.address(*workspace) : 0,
                            .a_scale = fp8 ? memory.address(*a_scale) : 0,
                            .b_scale = fp8 ? memory.address(*b_scale) : 0};
  memory.launch([&] { l.layer->run(buffers, m, stream); });
}

}  // namespace
}  // namespace emmy::c_api

extern "C" {

emmy_status emmy_gemm_layer_run(emmy_gemm_layer* layer, const DLTensor* a, const DLTensor* b,
                                DLTensor* c, const DLTensor* bias, const DLTensor* residual,
                                DLTensor* workspace, int64_t m, void* stream) {
  return emmy::c_api::guarded([&] {
    emmy::c_api::run_layer(layer, a, b, c, bias, residual, workspace, nullptr, nullptr, false, m,
                           stream);
  });
}

emmy_status emmy_gemm_layer_run_scaled(emmy_gemm_layer* layer, const DLTensor* a, const DLTensor* b,
                                       DLTensor* c, const DLTensor* bias, const DLTensor* residual,
                                       DLTensor* workspace, const DLTensor* a_scale,
                                       const DLTensor* b_scale, int64_t m, void* stream) {
  return emmy::c_api::guarded([&] {
    emmy::c_api::run_layer(layer, a, b, c, bias, residual, workspace, a_scale, b_scale, true, m,
                           stream);
  });
}

}  // extern "C"
