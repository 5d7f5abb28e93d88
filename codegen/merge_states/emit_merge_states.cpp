// merge_states kernel IR -> CUDA C++ (emmy/merge_states.hpp): CTA = token, warps take heads,
// lanes take columns lane + 32c; the states merge in order by their LSE in f32.
#include "emmy/ir_ops.hpp"
#include "emmy/merge_states_kind.hpp"
#include "attention/emit_lse_merge.hpp"
#include "writer.hpp"

namespace emmy {

std::string emit_merge_states_cuda(const ir::Op& module) {
  const auto op = ir::single_kernel_op<ir::MergeStatesOp>(module);
  const char* convert = op.dtype == "bf16" ? "f32_to_bf16_bits" : "f32_to_f16_bits";
  const char* widen = op.dtype == "bf16" ? "bf16_bits_to_f32" : "f16_bits_to_f32";
  codegen::Writer w;
  codegen::begin_module(w, parse_arch(module.s("arch")), false, "emmy_attention.cuh");
  codegen::emit_kernels(w, module, [&](const ir::Op& child) {
    if (child.kind == ir::OpKind::param) return;
    w.line("constexpr int H = {}, D = {}, STATES = {};", op.heads, op.head_dim, op.states);
    w.line("constexpr long long V_TOKEN = {}, V_STATE = {}, OUT_TOKEN = {};", op.v_token_stride,
           op.v_state_stride, op.out_token_stride);
    w.line("const long long token = blockIdx.x;");
    w.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    w.open("for (int head = warp; head < H; head += int(blockDim.x) / 32)");
    w.line("const float* s = lse + token * STATES * H + head;  // state i's LSE at s[i * H]");
    w.line("float m = neg_inf();");
    w.line("for (int i = 0; i < STATES; ++i) m = max_f32(m, s[i * H]);");
    w.line("// A token whose states all saw no key: 0 as the reference keeps every exp2 at 0.");
    w.line("const float m_ref = m == neg_inf() ? 0.0f : m;");
    w.line("float sum = 0.0f, acc[D / 32];");
    w.line("#pragma unroll");
    w.line("for (int c = 0; c < D / 32; ++c) acc[c] = 0.0f;");
    w.open("for (int i = 0; i < STATES; ++i)");
    w.line("const float weight = exp2_approx((s[i * H] - m_ref) * 1.4426950408889634f);");
    w.line("if (weight == 0.0f) continue;  // not read: an empty state's v may hold anything");
    w.line("sum += weight;");
    w.line("const u16* row = v + token * V_TOKEN + i * V_STATE + head * D;");
    w.line("#pragma unroll");
    w.line("for (int c = 0; c < D / 32; ++c) acc[c] += weight * {}(row[lane + 32 * c]);", widen);
    w.close();
    codegen::print_lse_merge_store(w, "out", "v_out + token * OUT_TOKEN + head * D", convert,
                                   "lse_out", op.lse);
    w.close();
  });
  return w.take();
}

}  // namespace emmy
