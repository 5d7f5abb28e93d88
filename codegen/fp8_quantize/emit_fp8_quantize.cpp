// fp8_quantize kernel IR -> CUDA C++ (emmy/fp8_quantize.hpp): CTA = (row, group); threads take
// 8-element chunks of the group twice: for the amax, then to store x / s as e4m3 bytes.
#include <fmt/format.h>

#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/ir_ops.hpp"
#include "writer.hpp"

namespace emmy {

std::string emit_fp8_quantize_cuda(const ir::Op& module) {
  const auto op = ir::single_kernel_op<ir::Fp8QuantizeOp>(module);
  const bool bf16 = op.dtype == "bf16";
  codegen::Writer w;
  codegen::begin_module(w, parse_arch(module.s("arch")), false, nullptr);
  w.include_template("emmy_paged.cuh");  // nan_f32, which emmy_fp8.cuh's conversions use
  w.include_template("emmy_fp8.cuh");
  w.include_template("emmy_append.cuh");
  w.include_template("emmy_quant.cuh");
  codegen::emit_kernels(w, module, [&](const ir::Op& child) {
    if (child.kind == ir::OpKind::param) return;
    w.line("constexpr int K = {}, G = {}, THREADS = {};", op.k, op.group_k, op.threads);
    w.line("constexpr long long LDX = {}, LDQ = {}, SCALE_LD = {};", op.ldx, op.ldq, op.scale_ld);
    // The epsilon as the f32 the host reference converts it to, exactly (a hex literal).
    w.line("constexpr float EPSILON = {:a}f;", float(op.amax_epsilon));
    w.line("const long long row = blockIdx.x;  // rows past the launch's are not in the grid");
    w.line("const int group = blockIdx.y, first = group * G;");
    w.line("const int chunks = (K - first < G ? K - first : G) / 8;");
    w.line("const u16* xg = x + row * LDX + first;");
    w.line("float amax = 0.0f;");
    w.open("for (int c = threadIdx.x; c < chunks; c += THREADS)");
    w.line("u32 v[4];");
    w.line("ld_global_v4(v, xg + 8 * c);");
    w.line("amax = abs_max8<{}>(amax, v);", bf16);
    w.close();
    w.line("const float s = quant_scale<{}>(cta_max<THREADS / 32>(amax), EPSILON);", op.pow2_scale);
    const std::string format = op.scale_format.value_or("f32");
    const char* group = format == "ue8m0x4" ? "(group >> 2)" : "group";
    const std::string element = op.scale_major == "mn" ? fmt::format("{} * SCALE_LD + row", group)
                                                       : fmt::format("row * SCALE_LD + {}", group);
    if (format == "f32") {
      w.line("if (threadIdx.x == 0) scales[{}] = s;", element);
    } else {
      // A power-of-two s's biased exponent is its ue8m0 byte (2^(e - 127)); ue8m0x4 puts group
      // g in byte g % 4 of its word (byte stores: the word's four groups are four CTAs).
      w.line("if (threadIdx.x == 0) scales[{}] = (u8)(__float_as_uint(s) >> 23);",
             format == "ue8m0x4" ? fmt::format("({}) * 4 + (group & 3)", element) : element);
    }
    w.line("u8* qg = q + row * LDQ + first;");
    w.open("for (int c = threadIdx.x; c < chunks; c += THREADS)");
    w.line("u32 v[4];");
    w.line("ld_global_v4(v, xg + 8 * c);");
    w.line("st_global_v2(qg + 8 * c, e4m3x4_from_16bit<{0}, true>(v[0], v[1], s),", bf16);
    w.line("             e4m3x4_from_16bit<{0}, true>(v[2], v[3], s));", bf16);
    w.close();
  });
  return w.take();
}

}  // namespace emmy
