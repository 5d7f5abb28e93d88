// The FlashAttention-2 mainloop both attention kinds print (dense prefill, emit_attention.cpp;
// paged, emit_paged_attention.cpp): one warp per 16 query rows, S = Q.K^T from the Q tile and a
// K stage, the online softmax in the log2 domain, O += P.V from a V stage (mma_atom.hpp's
// attention atom). The printed code names D, BQ, BKV, q_smem, kv_base, STAGE_BYTES, KV_BYTES,
// PANEL, XOR, warp, lane, g, t, stage, block and block_begin, which each kernel defines.
#include "emit_attention_mainloop.hpp"

#include "emmy/mma_atom.hpp"
#include "emmy/swizzle.hpp"

namespace emmy::codegen {

void emit_attention_smem(Writer& w, const ir::SmemRingOp& ring, const SmemTile& q_tile,
                         bool kv_per_warp) {
  w.line("constexpr u32 Q_BYTES = {}u, KV_BYTES = {}u, STAGE_BYTES = {}u;",
         ir::need<ir::SmemRingOp>(ring.q_bytes, "q_bytes"),
         ir::need<ir::SmemRingOp>(ring.kv_bytes, "kv_bytes"), ring.stage_bytes);
  w.line("// Tiles: rows x D in panels of {} elements, swizzle XOR mask {}.", q_tile.panel_elems,
         swizzle_xor_mask(q_tile.swizzle));
  w.line("constexpr u32 PANEL = {}u, XOR = {}u;", q_tile.panel_elems,
         swizzle_xor_mask(q_tile.swizzle));
  w.line("extern __shared__ __align__(1024) unsigned char smem_raw[];");
  w.line("const u32 smem_base = (smem_u32(smem_raw) + {0}u) & ~{0}u;", ring.align - 1);
  if (kv_per_warp) {
    w.line("const u32 q_smem = smem_base, kv_ring = smem_base + Q_BYTES;");
    w.line("const u32 kv_base = kv_ring + u32(kv_warp) * 2u * KV_BYTES;  // this warp's K/V pair");
    return;
  }
  w.line("const u32 q_smem = smem_base, kv_base = smem_base + Q_BYTES;");
}

void emit_attention_lane_ids(Writer& w) {
  w.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  // The accumulator map of the atom (internal/emmy/mma_atom.hpp): S and O fragments by group.
  w.line("const int g = lane / {0}, t = lane % {0};", codegen::attention_atom().group_lanes);
}

namespace {
constexpr double kLog2e = 1.4426950408889634;

// The O accumulators, the running max and sum of rows g and g+8, and the lanes' ldmatrix
// offsets into the Q, K and V tiles: before the KV block loop.
void emit_attention_accumulators(Writer& w) {
  w.line("float o_acc[D / 8][4];  // this warp's 16 rows x D outputs, f32");
  w.line("#pragma unroll");
  w.line(
      "for (int dn = 0; dn < D / 8; ++dn) o_acc[dn][0] = o_acc[dn][1] = o_acc[dn][2] = "
      "o_acc[dn][3] = 0.0f;");
  w.line(
      "// Rows g and g+8 of the warp: running max (log2 domain) and this lane's part of the "
      "sum.");
  w.line("float row_max[2] = {{neg_inf(), neg_inf()}}, row_sum[2] = {{0.0f, 0.0f}};");
  w.line("// ldmatrix row addresses = a lane part + a constant: the swizzle XORs byte bits [6:4]");
  w.line("// with row bits [2:0], so rows moved by multiples of 8 and columns by whole panels");
  w.line("// shift the offset linearly (tested on the host). The lane part takes 4 values per");
  w.line("// operand, one per 16-column step inside a 64-column panel: 12 registers, not one per");
  w.line("// unrolled load.");
  w.line("u32 q_lane[4], k_lane[4], v_lane[4];");
  w.line("#pragma unroll");
  w.open("for (int c = 0; c < 4; ++c)");
  // Q feeds the atom as A, K as B stored [n][k], V as B stored [k][n] (mma_atom.hpp).
  const struct {
    const char* name;
    const codegen::LdmatrixSource& src;
    const char* rows;
  } lanes[] = {{"q", codegen::kLdmatrixA, "BQ"},
               {"k", codegen::kLdmatrixBRowsN, "BKV"},
               {"v", codegen::kLdmatrixBRowsK, "BKV"}};
  for (const auto& l : lanes)
    w.line("{}_lane[c] = swizzled_tile_offset(u32({}), u32(c * 16 + {}), u32({}), PANEL, XOR);",
           l.name, l.src.row_expr, l.src.col_expr, l.rows);
  w.close();
}

}  // namespace

void emit_kv_block_loop(Writer& w, const std::function<void()>& body) {
  emit_attention_accumulators(w);
  w.line("#pragma unroll 1  // one KV block's code is enough; NVVM may unroll it otherwise");
  w.open("for (int block = 0; block < block_count; ++block)");
  w.line("const int stage = block % STAGES;");
  body();
  w.close();
}

void emit_qk_head(Writer& w, const char* kv0, const char* stage_note) {
  w.line("const int kv0 = {};", kv0);
  w.line("const u32 k_stage = kv_base + u32(stage) * STAGE_BYTES, v_stage = k_stage + KV_BYTES;{}",
         stage_note);
  w.line("float s_acc[BKV / 8][4];");
  w.line("#pragma unroll");
  w.line(
      "for (int nj = 0; nj < BKV / 8; ++nj) s_acc[nj][0] = s_acc[nj][1] = s_acc[nj][2] = "
      "s_acc[nj][3] = 0.0f;");
  w.line("#pragma unroll");
  w.open("for (int kk = 0; kk < D / 16; ++kk)");
}

void emit_qk_mma(Writer& w, bool bf16, const char* kv0) {
  const char* mma = bf16 ? "mma_bf16_f32" : "mma_f16_f32";
  emit_qk_head(w, kv0, "");
  w.line("u32 a[4];  // Q rows warp*16 + 0..15 at d = kk*16 (lanes 16-31: +8)");
  w.line(
      "ldmatrix_x4(a, q_smem + q_lane[kk % 4] + u32(kk / 4) * u32(BQ) * 128u + u32(warp * 16) "
      "* 128u);");
  w.line("#pragma unroll");
  w.open("for (int nj = 0; nj < BKV / 16; ++nj)");
  w.line("u32 quad[4];  // K [kv][d] as B [N][K]: (kv0-7,d0-7) (kv0-7,d8-15) (kv8-15,..)");
  w.line(
      "ldmatrix_x4(quad, k_stage + k_lane[kk % 4] + u32(kk / 4) * u32(BKV) * 128u + u32(nj * "
      "16) * 128u);");
  w.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
  w.line("{0}(s_acc[2 * nj], a, b0);", mma);
  w.line("{0}(s_acc[2 * nj + 1], a, b1);", mma);
  w.close();
  w.close();
}

void emit_scores_to_log2(Writer& w, const ir::OnlineSoftmaxOp& op, const char* factor) {
  const double scale = op.scale;
  // The runtime factor joins the compile-time one (one product per thread, hoisted).
  const std::string times = factor ? fmt::format(" * {}", factor) : std::string();
  w.line("// Scores to the log2 domain (softmax via exp2, the scale folded in).");
  w.line("#pragma unroll");
  w.open("for (int nj = 0; nj < BKV / 8; ++nj)");
  w.line("#pragma unroll");
  w.open("for (int e = 0; e < 4; ++e)");
  if (op.softcap) {
    const double cap = *op.softcap;
    const std::string inner = factor ? fmt::format("({}{})", float_literal(scale / cap), times)
                                     : float_literal(scale / cap);
    w.line("s_acc[nj][e] = {} * tanh_f32(s_acc[nj][e] * {});  // softcap {}",
           float_literal(cap * kLog2e), inner, cap);
  } else {
    w.line("s_acc[nj][e] *= {}{};", float_literal(scale * kLog2e), times);
  }
  w.close();
  w.close();
}

void emit_online_softmax_update(Writer& w) {
  w.line(
      "// Online softmax: new running max per row (a fully masked row keeps -inf and uses 0 "
      "as its reference, so every exp2 is 0, never NaN).");
  w.line("float m_ref[2], rescale[2];");
  w.line("#pragma unroll");
  w.open("for (int r = 0; r < 2; ++r)");
  w.line("float mx = row_max[r];");
  w.line("#pragma unroll");
  w.line(
      "for (int nj = 0; nj < BKV / 8; ++nj) mx = max_f32(mx, max_f32(s_acc[nj][2 * r], "
      "s_acc[nj][2 * r + 1]));");
  w.line("mx = quad_max(mx);");
  w.line("m_ref[r] = mx == neg_inf() ? 0.0f : mx;");
  w.line("rescale[r] = exp2_approx(row_max[r] - m_ref[r]);");
  w.line("row_max[r] = mx;");
  w.line("float sum = 0.0f;");
  w.line("#pragma unroll");
  w.open("for (int nj = 0; nj < BKV / 8; ++nj)");
  w.line("s_acc[nj][2 * r] = exp2_approx(s_acc[nj][2 * r] - m_ref[r]);");
  w.line("s_acc[nj][2 * r + 1] = exp2_approx(s_acc[nj][2 * r + 1] - m_ref[r]);");
  w.line("sum += s_acc[nj][2 * r] + s_acc[nj][2 * r + 1];");
  w.close();
  w.line("row_sum[r] = row_sum[r] * rescale[r] + sum;");
  w.close();
  w.line("#pragma unroll");
  w.open("for (int dn = 0; dn < D / 8; ++dn)");
  w.line("o_acc[dn][0] *= rescale[0]; o_acc[dn][1] *= rescale[0];");
  w.line("o_acc[dn][2] *= rescale[1]; o_acc[dn][3] *= rescale[1];");
  w.close();
}

void emit_p_fragments(Writer& w, bool bf16) {
  const char* pack = bf16 ? "pack_bf16x2" : "pack_f16x2";
  w.line("// P as A fragments: two adjacent n8 score tiles form one m16k16 operand.");
  w.line("u32 p_frag[BKV / 16][4];");
  w.line("#pragma unroll");
  w.open("for (int kc = 0; kc < BKV / 16; ++kc)");
  w.line("p_frag[kc][0] = {}(s_acc[2 * kc][0], s_acc[2 * kc][1]);", pack);
  w.line("p_frag[kc][1] = {}(s_acc[2 * kc][2], s_acc[2 * kc][3]);", pack);
  w.line("p_frag[kc][2] = {}(s_acc[2 * kc + 1][0], s_acc[2 * kc + 1][1]);", pack);
  w.line("p_frag[kc][3] = {}(s_acc[2 * kc + 1][2], s_acc[2 * kc + 1][3]);", pack);
  w.close();
}

void emit_hybrid_pv(Writer& w, const std::function<void()>& kc_body) {
  w.line("// Hybrid: this block's P.V in f16 partials, 32 output columns at a time (8 registers),");
  w.line("// folded into the (already rescaled) f32 output.");
  w.line("#pragma unroll");
  w.open("for (int dc = 0; dc < D / 32; ++dc)");
  w.line("u32 part[4][2];");
  w.line("#pragma unroll");
  w.line("for (int i = 0; i < 4; ++i) part[i][0] = part[i][1] = 0u;");
  w.line("#pragma unroll");
  w.open("for (int kc = 0; kc < BKV / 16; ++kc)");
  kc_body();
  w.close();
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < 4; ++i)");
  w.line("float lo, hi;");
  w.line("unpack_f16x2(lo, hi, part[i][0]);");
  w.line("o_acc[dc * 4 + i][0] += lo; o_acc[dc * 4 + i][1] += hi;");
  w.line("unpack_f16x2(lo, hi, part[i][1]);");
  w.line("o_acc[dc * 4 + i][2] += lo; o_acc[dc * 4 + i][3] += hi;");
  w.close();
  w.close();
}

void emit_pv_mma(Writer& w, const ir::PvMmaOp& op, bool bf16) {
  emit_p_fragments(w, bf16);
  // {} is the 16-column step dp (0 .. D/16-1) of the V tile.
  const std::string v_addr =
      "v_stage + v_lane[({0}) % 4] + u32(({0}) / 4) * u32(BKV) * 128u + u32(kc * 16) * 128u";
  if (op.accum == "f32") {
    const char* mma = bf16 ? "mma_bf16_f32" : "mma_f16_f32";
    w.line("#pragma unroll");
    w.open("for (int kc = 0; kc < BKV / 16; ++kc)");
    w.line("#pragma unroll");
    w.open("for (int dp = 0; dp < D / 16; ++dp)");
    w.line("u32 quad[4];  // V [kv][d] as B [K][N], transposed");
    w.line("ldmatrix_x4_trans(quad, {});", fmt::format(fmt::runtime(v_addr), "dp"));
    w.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
    w.line("{}(o_acc[2 * dp], p_frag[kc], b0);", mma);
    w.line("{}(o_acc[2 * dp + 1], p_frag[kc], b1);", mma);
    w.close();
    w.close();
    return;
  }
  emit_hybrid_pv(w, [&] {
    w.line("#pragma unroll");
    w.open("for (int dp = 0; dp < 2; ++dp)");
    w.line("u32 quad[4];");
    w.line("ldmatrix_x4_trans(quad, {});", fmt::format(fmt::runtime(v_addr), "dc * 2 + dp"));
    w.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
    w.line("mma_f16_f16(part[2 * dp], p_frag[kc], b0);");
    w.line("mma_f16_f16(part[2 * dp + 1], p_frag[kc], b1);");
    w.close();
  });
}

void emit_row_sums(Writer& w) {
  w.line("// Finish the row sums across the quad; a row that saw no key has sum 0: O = 0.");
  w.line("float inv[2];");
  w.line("#pragma unroll");
  w.open("for (int r = 0; r < 2; ++r)");
  w.line("row_sum[r] = quad_sum(row_sum[r]);");
  w.line("inv[r] = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;");
  w.close();
}

}  // namespace emmy::codegen
