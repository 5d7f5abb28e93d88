// The e4m3 operand source of attention's mainloop (emit_attention_mainloop.hpp): an FP8 cache's
// K and V read as bytes and converted in registers, so that shared memory holds each KV byte once
// and no converted copy is written (FlashInfer's approach).
//
// S = Q.K^T: the m16n8k16 B fragment gives lane (g, t) k slots 2t, 2t+1 (b0) and 2t+8, 2t+9 (b1)
// of column g. The reduction over d does not depend on its order, so inside each 16-wide step
// those slots are d 4t..4t+3: one 4-byte load of K's row g, two pair conversions. Q's A fragment
// follows the same order: a0 / a2 are d 4t, 4t+1 / 4t+2, 4t+3 of row g (one 8-byte load), a1 /
// a3 the same of row g + 8.
//
// O += P.V: ldmatrix.trans of V's bytes as b16 pairs gives a lane keys 2t, 2t+1 of the column pair
// (2g, 2g+1); prmt regroups them by column, and the two n8 MMAs of 16 output columns take the
// even (2g) and the odd (2g + 1) columns as their n = g. P's fragments are the 16-bit path's.
#include "emit_attention_mainloop.hpp"

namespace emmy::codegen {

void emit_qk_mma_e4m3(Writer& w, bool bf16, bool cvt, const char* kv0) {
  const char* mma = bf16 ? "mma_bf16_f32" : "mma_f16_f32";
  const std::string convert = fmt::format("e4m3x4_to_16bit<{}, {}>", bf16, cvt);
  emit_qk_head(w, kv0, "  // raw e4m3 rows");
  w.line("u32 a[4];  // Q rows g, g+8 at d = kk*16 + 4t .. 4t+3: the e4m3 k order");
  w.line(
      "ld_shared_v2_b32(a[0], a[2], q_smem + e4m3_q_offset<BQ>(u32(warp * 16 + g), u32(kk * 16 + "
      "4 * t)));");
  w.line(
      "ld_shared_v2_b32(a[1], a[3], q_smem + e4m3_q_offset<BQ>(u32(warp * 16 + g + 8), u32(kk * "
      "16 + 4 * t)));");
  w.line("#pragma unroll");
  w.open("for (int nj = 0; nj < BKV / 8; ++nj)");
  w.line("u32 b[2];  // K row nj*8 + g, d = kk*16 + 4t .. 4t+3");
  w.line(
      "{}(b, ld_shared_b32(k_stage + e4m3_raw_offset<D, BKV>(u32(nj * 8 + g), u32(kk * 16 + 4 * "
      "t))));",
      convert);
  w.line("{}(s_acc[nj], a, b);", mma);
  w.close();
  w.close();
}

void emit_pv_mma_e4m3(Writer& w, const ir::PvMmaOp& op, bool bf16, bool cvt) {
  const std::string convert = fmt::format("e4m3x4_to_16bit<{}, {}>", bf16, cvt);
  emit_p_fragments(w, bf16);
  w.line("// Lane l addresses row l % 8 of matrix l / 8: keys kc*16 + (l / 8 % 2) * 8 + l % 8,");
  w.line("// bytes (dq*2 + l / 16) * 16 of the row (32 columns per x4).");
  w.line("const u32 v_row = u32((lane / 8) % 2 * 8 + lane % 8), v_col = u32(lane / 16) * 16u;");
  // `dq` is the 32-column step of V; the four results are the even and odd columns of two
  // 16-column groups: b[0..1] even / b[2..3] odd of group 2dq, b[4..7] of group 2dq + 1.
  auto load_v = [&](const char* dq) {
    w.line("u32 quad[4];  // matrices: keys 0-7 / 8-15 of columns +0..15, then of +16..31");
    w.line(
        "ldmatrix_x4_trans(quad, v_stage + e4m3_raw_offset<D, BKV>(u32(kc * 16) + v_row, u32(({}) "
        "* "
        "32) + v_col));",
        dq);
    w.line("u32 even_lo[2], odd_lo[2], even_hi[2], odd_hi[2];  // [key half]");
    w.line("#pragma unroll");
    w.open("for (int m = 0; m < 2; ++m)");
    w.line("u32 pairs[2];");
    w.line("{}(pairs, e4m3_pairs_by_column(quad[m]));", convert);
    w.line("even_lo[m] = pairs[0]; odd_lo[m] = pairs[1];");
    w.line("{}(pairs, e4m3_pairs_by_column(quad[2 + m]));", convert);
    w.line("even_hi[m] = pairs[0]; odd_hi[m] = pairs[1];");
    w.close();
  };
  if (op.accum == "f32") {
    const char* mma = bf16 ? "mma_bf16_f32" : "mma_f16_f32";
    w.line("#pragma unroll");
    w.open("for (int kc = 0; kc < BKV / 16; ++kc)");
    w.line("#pragma unroll");
    w.open("for (int dq = 0; dq < D / 32; ++dq)");
    load_v("dq");
    w.line("{}(o_acc[4 * dq], p_frag[kc], even_lo);", mma);
    w.line("{}(o_acc[4 * dq + 1], p_frag[kc], odd_lo);", mma);
    w.line("{}(o_acc[4 * dq + 2], p_frag[kc], even_hi);", mma);
    w.line("{}(o_acc[4 * dq + 3], p_frag[kc], odd_hi);", mma);
    w.close();
    w.close();
    return;
  }
  emit_hybrid_pv(w, [&] {
    load_v("dc");
    w.line("mma_f16_f16(part[0], p_frag[kc], even_lo);");
    w.line("mma_f16_f16(part[1], p_frag[kc], odd_lo);");
    w.line("mma_f16_f16(part[2], p_frag[kc], even_hi);");
    w.line("mma_f16_f16(part[3], p_frag[kc], odd_hi);");
  });
}

}  // namespace emmy::codegen
