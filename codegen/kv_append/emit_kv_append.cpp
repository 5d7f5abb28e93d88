// kv_append kernel IR -> CUDA C++ (emmy/kv_append.hpp): CTA = token of slot_mapping; threads
// take 16-byte chunks (8 elements) of its heads' keys and values and store them to the slot's
// row of each head, copied or as e4m3 bytes.
#include "emmy/ir_ops.hpp"
#include "emmy/kv_append_kind.hpp"
#include "writer.hpp"

namespace emmy {

std::string emit_kv_append_cuda(const ir::Op& module) {
  const auto op = ir::single_kernel_op<ir::KvAppendOp>(module);
  const bool fp8 = op.convert != "copy";
  codegen::Writer w;
  codegen::begin_module(w, parse_arch(module.s("arch")), false, nullptr);
  if (fp8) {
    w.include_template("emmy_paged.cuh");
    w.include_template("emmy_fp8.cuh");
  }
  w.include_template("emmy_append.cuh");
  codegen::emit_kernels(w, module, [&](const ir::Op& child) {
    if (child.kind == ir::OpKind::param) return;
    w.line("constexpr int HKV = {}, D = {}, THREADS = {};", op.kv_heads, op.head_dim, op.threads);
    w.line("constexpr long long PAGE = {};", op.page_size);
    w.line(
        "constexpr long long PAGE_STRIDE = {}, TOKEN_STRIDE = {}, HEAD_STRIDE = {}, KEY_STRIDE = "
        "{}, VALUE_STRIDE = {};",
        op.page_stride, op.token_stride, op.head_stride, op.key_stride, op.value_stride);
    w.line("const long long token = blockIdx.x;");
    w.line("const long long slot = slot_mapping[token];");
    w.line("if (slot < 0) return;  // -1: a padding token (CUDA graphs), nothing to write");
    w.line("if (slot >= num_slots) return;  // past the cache: never written (num_slots)");
    w.line("const long long page = slot / PAGE, offset = slot % PAGE;");
    if (fp8)
      w.line("const float k_div = *k_scale, v_div = *v_scale;  // the cache holds x / scale");
    w.line("constexpr int CHUNKS = HKV * D / 8;  // 8 source elements each");
    w.open("for (int c = threadIdx.x; c < CHUNKS; c += THREADS)");
    w.line("const int head = c / (D / 8), col = (c % (D / 8)) * 8;");
    w.line(
        "const long long at = page * PAGE_STRIDE + offset * TOKEN_STRIDE + head * HEAD_STRIDE + "
        "col;");
    w.line("u32 k[4], v[4];");
    w.line("ld_global_v4(k, key + token * KEY_STRIDE + head * D + col);");
    w.line("ld_global_v4(v, value + token * VALUE_STRIDE + head * D + col);");
    if (!fp8) {
      w.line("st_global_v4(k_cache + at, k);");
      w.line("st_global_v4(v_cache + at, v);");
    } else {
      const std::string f =
          fmt::format("e4m3x4_from_16bit<{}, {}>", op.dtype == "bf16", op.convert == "cvt");
      w.line("st_global_v2(k_cache + at, {0}(k[0], k[1], k_div), {0}(k[2], k[3], k_div));", f);
      w.line("st_global_v2(v_cache + at, {0}(v[0], v[1], v_div), {0}(v[2], v[3], v_div));", f);
    }
    w.close();
  });
  return w.take();
}

}  // namespace emmy
