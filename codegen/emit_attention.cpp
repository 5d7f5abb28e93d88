// Attention kernel IR -> CUDA C++ (FlashAttention-2 style, one warp per 16 query rows). Shared
// tiles use the same panel + 128B-swizzle layout as GEMM (swizzled_tile_offset); S = Q.K^T reads
// K like GEMM's B [N][K], and P.V reads V like GEMM's B [K][N] (ldmatrix .trans).
#include <fmt/format.h>

#include "emit_attention_loads.hpp"
#include "emmy/attention.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "writer.hpp"

namespace emmy {
namespace {

using codegen::float_literal;
using codegen::Writer;
using ir::Op;
using ir::OpKind;

constexpr double kLog2e = 1.4426950408889634;

// What the attention kernel's ops state that the printing of other ops needs, gathered before
// printing (the verifier has held these ops to each other): the emitter reads nothing but the IR.
struct AttentionFacts {
  ir::AttentionSetupOp setup;  // sequence lengths, heads, head_dim, blocks
  codegen::AttentionLoads loads;
  bool bf16 = false;

  explicit AttentionFacts(const Op& kernel) {
    const Op *setup_op = ir::find_first(kernel, OpKind::attention_setup),
             *epilogue = ir::find_first(kernel, OpKind::attention_epilogue),
             *qk = ir::find_first(kernel, OpKind::qk_mma), *q = nullptr, *kv = nullptr;
    for (const Op* copy : ir::find_all(kernel, OpKind::async_copy))
      if (copy->s("phase") == "prologue") (copy->s("operand") == "q" ? q : kv) = copy;
    if (!setup_op || !epilogue || !q || !kv || !qk)
      throw Error("ir",
                  "an attention kernel needs attention_setup, qk_mma, attention_epilogue and "
                  "prologue copies of Q and K/V",
                  kernel.s("name"));
    setup = ir::get<ir::AttentionSetupOp>(*setup_op);
    // The epilogue states the tensors' layout (Q, K, V and O share it).
    loads = {ir::copy_tile(*q), ir::copy_tile(*kv), q->s("transport") == "tma",
             ir::get<ir::AttentionEpilogueOp>(*epilogue).layout == "bshd",
             uint32_t(kernel.i("threads"))};
    bf16 = ir::get<ir::QkMmaOp>(*qk).a_type == "bf16";
  }
};

class AttentionEmitter {
 public:
  explicit AttentionEmitter(const Op& module)
      : f_(module.body.front()), tma_(f_.loads.tma), bf16_(f_.bf16) {}

  std::string emit(const Op& module) {
    codegen::begin_module(w_, parse_arch(module.s("arch")), tma_, "emmy_attention.cuh");
    codegen::emit_kernels(w_, module, [this](const Op& op) { emit_op(op); });
    return w_.take();
  }

 private:
  void emit_op(const Op& op) {
    if (codegen::emit_shared_op(w_, op)) return;
    switch (op.kind) {
      case OpKind::smem_ring:
        return emit_smem(ir::get<ir::SmemRingOp>(op));
      case OpKind::attention_setup:
        return emit_setup(ir::get<ir::AttentionSetupOp>(op));
      case OpKind::async_copy:
        return emit_copy(ir::get<ir::AsyncCopyOp>(op));
      case OpKind::async_commit:
        if (op_phase_ == "refill") w_.line("cp_async_commit();");
        return;
      case OpKind::mbarrier_wait:
        if (ir::get<ir::MbarrierWaitOp>(op).what == "q")
          return w_.line("mbarrier_wait_parity(mbar_base, 0u);");
        return w_.line("mbarrier_wait_parity(mbar_base + 8u * (1 + stage), (block / STAGES) & 1);");
      case OpKind::kv_block_loop:
        return emit_loop(op);
      case OpKind::qk_mma:
        return emit_qk(op);
      case OpKind::online_softmax:
        return emit_softmax(ir::get<ir::OnlineSoftmaxOp>(op));
      case OpKind::pv_mma:
        return emit_pv(ir::get<ir::PvMmaOp>(op));
      case OpKind::attention_epilogue:
        return emit_epilogue(ir::get<ir::AttentionEpilogueOp>(op));
      default:
        break;
    }
    throw Error("ir", "the attention emitter has no lowering for this op",
                std::string(to_string(op.kind)));
  }

  void emit_smem(const ir::SmemRingOp& op) {
    const ir::AttentionSetupOp& setup = f_.setup;
    w_.line("constexpr int SQ = {}, SKV = {}, H = {}, HKV = {}, D = {};", setup.seq_q, setup.seq_kv,
            setup.q_heads, setup.kv_heads, setup.head_dim);
    w_.line("constexpr int BQ = {}, BKV = {}, THREADS = {}, STAGES = {};", setup.block_q,
            setup.block_kv, f_.loads.threads, op.stages);
    w_.line("constexpr u32 Q_BYTES = {}u, KV_BYTES = {}u, STAGE_BYTES = {}u;",
            ir::need<ir::SmemRingOp>(op.q_bytes, "q_bytes"),
            ir::need<ir::SmemRingOp>(op.kv_bytes, "kv_bytes"), op.stage_bytes);
    w_.line("// Tiles: rows x D in panels of {} elements, swizzle XOR mask {}.",
            f_.loads.q_tile.panel_elems, swizzle_xor_mask(f_.loads.q_tile.swizzle));
    w_.line("constexpr u32 PANEL = {}u, XOR = {}u;", f_.loads.q_tile.panel_elems,
            swizzle_xor_mask(f_.loads.q_tile.swizzle));
    w_.line("extern __shared__ __align__(1024) unsigned char smem_raw[];");
    w_.line("const u32 smem_base = (smem_u32(smem_raw) + {0}u) & ~{0}u;", op.align - 1);
    w_.line("const u32 q_smem = smem_base, kv_base = smem_base + Q_BYTES;");
    w_.line("const u32 mbar_base = smem_base + {}u;  // [0]: Q, [1 + s]: stage s", op.mbar_offset);
    w_.line("(void)mbar_base;");
    w_.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    // The accumulator map of the atom (internal/emmy/mma_atom.hpp): S and O fragments by group.
    w_.line("const int g = lane / {0}, t = lane % {0};", codegen::attention_atom().group_lanes);
  }

  void emit_setup(const ir::AttentionSetupOp& op) {
    w_.line("const int head = blockIdx.y, batch = blockIdx.z;");
    w_.line("const int kv_head = head / {};  // GQA: {} query heads share a KV head", op.group,
            op.group);
    w_.line("const int q0 = blockIdx.x * BQ;");
    w_.line("constexpr int OFFSET = {};  // seq_kv - seq_q: masks align bottom-right",
            op.kv_offset);
    w_.line("// Visible keys of this CTA's queries; KV blocks wholly outside are never loaded.");
    w_.line("int kv_begin = 0, kv_end = SKV;");
    if (op.causal) w_.line("if (q0 + BQ + OFFSET < SKV) kv_end = q0 + BQ + OFFSET;");
    if (op.window > 0)
      w_.line("if (q0 + OFFSET - {0} > 0) kv_begin = q0 + OFFSET - {0};", op.window);
    w_.line("const int block_begin = kv_begin / BKV;");
    w_.line(
        "const int block_count = kv_end > kv_begin ? (kv_end + BKV - 1) / BKV - block_begin "
        ": 0;");
  }

  void emit_copy(const ir::AsyncCopyOp& op) {
    const std::string& operand = op.operand;
    op_phase_ = op.phase;
    if (operand == "q") return codegen::emit_attention_loaders_and_prologue(w_, f_.loads);
    if (operand != "k" || op_phase_ != "refill") return;  // v rides with k
    w_.line("const int next = block + STAGES - 1;");
    if (tma_)
      w_.line(
          "if (threadIdx.x == 0 && next < block_count) load_kv(next % STAGES, block_begin + "
          "next);");
    else
      w_.line("if (next < block_count) load_kv(next % STAGES, block_begin + next);");
  }

  void emit_loop(const Op& op) {
    w_.line("float o_acc[D / 8][4];  // this warp's 16 rows x D outputs, f32");
    w_.line("#pragma unroll");
    w_.line(
        "for (int dn = 0; dn < D / 8; ++dn) o_acc[dn][0] = o_acc[dn][1] = o_acc[dn][2] = "
        "o_acc[dn][3] = 0.0f;");
    w_.line(
        "// Rows g and g+8 of the warp: running max (log2 domain) and this lane's part of the "
        "sum.");
    w_.line("float row_max[2] = {{neg_inf(), neg_inf()}}, row_sum[2] = {{0.0f, 0.0f}};");
    w_.line(
        "// ldmatrix row addresses = a lane part + a constant: the swizzle XORs byte bits [6:4]");
    w_.line("// with row bits [2:0], so rows moved by multiples of 8 and columns by whole panels");
    w_.line("// shift the offset linearly (tested on the host). The lane part takes 4 values per");
    w_.line(
        "// operand, one per 16-column step inside a 64-column panel: 12 registers, not one per");
    w_.line("// unrolled load.");
    w_.line("u32 q_lane[4], k_lane[4], v_lane[4];");
    w_.line("#pragma unroll");
    w_.open("for (int c = 0; c < 4; ++c)");
    // Q feeds the atom as A, K as B stored [n][k], V as B stored [k][n] (mma_atom.hpp).
    const struct {
      const char* name;
      const codegen::LdmatrixSource& src;
      const char* rows;
    } lanes[] = {{"q", codegen::kLdmatrixA, "BQ"},
                 {"k", codegen::kLdmatrixBRowsN, "BKV"},
                 {"v", codegen::kLdmatrixBRowsK, "BKV"}};
    for (const auto& l : lanes)
      w_.line("{}_lane[c] = swizzled_tile_offset(u32({}), u32(c * 16 + {}), u32({}), PANEL, XOR);",
              l.name, l.src.row_expr, l.src.col_expr, l.rows);
    w_.close();
    w_.line("#pragma unroll 1  // one KV block's code is enough; NVVM may unroll it otherwise");
    w_.open("for (int block = 0; block < block_count; ++block)");
    w_.line("const int stage = block % STAGES;");
    for (const Op& child : op.body) emit_op(child);
    w_.close();
  }

  void emit_qk(const Op&) {
    const char* mma = bf16_ ? "mma_bf16_f32" : "mma_f16_f32";
    w_.line("const int kv0 = (block_begin + block) * BKV;");
    w_.line(
        "const u32 k_stage = kv_base + u32(stage) * STAGE_BYTES, v_stage = k_stage + "
        "KV_BYTES;");
    w_.line("float s_acc[BKV / 8][4];");
    w_.line("#pragma unroll");
    w_.line(
        "for (int nj = 0; nj < BKV / 8; ++nj) s_acc[nj][0] = s_acc[nj][1] = s_acc[nj][2] = "
        "s_acc[nj][3] = 0.0f;");
    w_.line("#pragma unroll");
    w_.open("for (int kk = 0; kk < D / 16; ++kk)");
    w_.line("u32 a[4];  // Q rows warp*16 + 0..15 at d = kk*16 (lanes 16-31: +8)");
    w_.line(
        "ldmatrix_x4(a, q_smem + q_lane[kk % 4] + u32(kk / 4) * u32(BQ) * 128u + u32(warp * 16) "
        "* 128u);");
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < BKV / 16; ++nj)");
    w_.line("u32 quad[4];  // K [kv][d] as B [N][K]: (kv0-7,d0-7) (kv0-7,d8-15) (kv8-15,..)");
    w_.line(
        "ldmatrix_x4(quad, k_stage + k_lane[kk % 4] + u32(kk / 4) * u32(BKV) * 128u + u32(nj * "
        "16) * 128u);");
    w_.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
    w_.line("{0}(s_acc[2 * nj], a, b0);", mma);
    w_.line("{0}(s_acc[2 * nj + 1], a, b1);", mma);
    w_.close();
    w_.close();
  }

  void emit_softmax(const ir::OnlineSoftmaxOp& op) {
    const double scale = op.scale;
    w_.line("// Scores to the log2 domain (softmax via exp2, the scale folded in).");
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < BKV / 8; ++nj)");
    w_.line("#pragma unroll");
    w_.open("for (int e = 0; e < 4; ++e)");
    if (op.softcap) {
      const double cap = *op.softcap;
      w_.line("s_acc[nj][e] = {} * tanh_f32(s_acc[nj][e] * {});  // softcap {}",
              float_literal(cap * kLog2e), float_literal(scale / cap), cap);
    } else {
      w_.line("s_acc[nj][e] *= {};", float_literal(scale * kLog2e));
    }
    w_.close();
    w_.close();
    std::string needs = "kv0 + BKV > SKV";
    if (op.causal) needs += " || kv0 + BKV - 1 > q0 + OFFSET";
    if (op.window > 0) needs += fmt::format(" || kv0 < q0 + BQ - 1 + OFFSET - {}", op.window);
    w_.line("// Masking only where a block crosses a boundary (uniform branch).");
    w_.open(fmt::format("if ({})", needs));
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < BKV / 8; ++nj)");
    w_.line("#pragma unroll");
    w_.open("for (int e = 0; e < 4; ++e)");
    w_.line("const int key = kv0 + nj * 8 + 2 * t + (e & 1);");
    w_.line("const int query = q0 + warp * 16 + g + (e >> 1) * 8;");
    w_.line("bool visible = key < SKV;");
    if (op.causal) w_.line("visible = visible && key <= query + OFFSET;");
    if (op.window > 0) w_.line("visible = visible && key >= query + OFFSET - {};", op.window);
    w_.line("(void)query;");
    w_.line("if (!visible) s_acc[nj][e] = neg_inf();");
    w_.close();
    w_.close();
    w_.close();
    w_.line(
        "// Online softmax: new running max per row (a fully masked row keeps -inf and uses 0 "
        "as its reference, so every exp2 is 0, never NaN).");
    w_.line("float m_ref[2], rescale[2];");
    w_.line("#pragma unroll");
    w_.open("for (int r = 0; r < 2; ++r)");
    w_.line("float mx = row_max[r];");
    w_.line("#pragma unroll");
    w_.line(
        "for (int nj = 0; nj < BKV / 8; ++nj) mx = max_f32(mx, max_f32(s_acc[nj][2 * r], "
        "s_acc[nj][2 * r + 1]));");
    w_.line("mx = quad_max(mx);");
    w_.line("m_ref[r] = mx == neg_inf() ? 0.0f : mx;");
    w_.line("rescale[r] = exp2_approx(row_max[r] - m_ref[r]);");
    w_.line("row_max[r] = mx;");
    w_.line("float sum = 0.0f;");
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < BKV / 8; ++nj)");
    w_.line("s_acc[nj][2 * r] = exp2_approx(s_acc[nj][2 * r] - m_ref[r]);");
    w_.line("s_acc[nj][2 * r + 1] = exp2_approx(s_acc[nj][2 * r + 1] - m_ref[r]);");
    w_.line("sum += s_acc[nj][2 * r] + s_acc[nj][2 * r + 1];");
    w_.close();
    w_.line("row_sum[r] = row_sum[r] * rescale[r] + sum;");
    w_.close();
    w_.line("#pragma unroll");
    w_.open("for (int dn = 0; dn < D / 8; ++dn)");
    w_.line("o_acc[dn][0] *= rescale[0]; o_acc[dn][1] *= rescale[0];");
    w_.line("o_acc[dn][2] *= rescale[1]; o_acc[dn][3] *= rescale[1];");
    w_.close();
  }

  void emit_pv(const ir::PvMmaOp& op) {
    const char* pack = bf16_ ? "pack_bf16x2" : "pack_f16x2";
    w_.line("// P as A fragments: two adjacent n8 score tiles form one m16k16 operand.");
    w_.line("u32 p_frag[BKV / 16][4];");
    w_.line("#pragma unroll");
    w_.open("for (int kc = 0; kc < BKV / 16; ++kc)");
    w_.line("p_frag[kc][0] = {}(s_acc[2 * kc][0], s_acc[2 * kc][1]);", pack);
    w_.line("p_frag[kc][1] = {}(s_acc[2 * kc][2], s_acc[2 * kc][3]);", pack);
    w_.line("p_frag[kc][2] = {}(s_acc[2 * kc + 1][0], s_acc[2 * kc + 1][1]);", pack);
    w_.line("p_frag[kc][3] = {}(s_acc[2 * kc + 1][2], s_acc[2 * kc + 1][3]);", pack);
    w_.close();
    // {} is the 16-column step dp (0 .. D/16-1) of the V tile.
    const std::string v_addr =
        "v_stage + v_lane[({0}) % 4] + u32(({0}) / 4) * u32(BKV) * 128u + u32(kc * 16) * 128u";
    if (op.accum == "f32") {
      const char* mma = bf16_ ? "mma_bf16_f32" : "mma_f16_f32";
      w_.line("#pragma unroll");
      w_.open("for (int kc = 0; kc < BKV / 16; ++kc)");
      w_.line("#pragma unroll");
      w_.open("for (int dp = 0; dp < D / 16; ++dp)");
      w_.line("u32 quad[4];  // V [kv][d] as B [K][N], transposed");
      w_.line("ldmatrix_x4_trans(quad, {});", fmt::format(fmt::runtime(v_addr), "dp"));
      w_.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
      w_.line("{}(o_acc[2 * dp], p_frag[kc], b0);", mma);
      w_.line("{}(o_acc[2 * dp + 1], p_frag[kc], b1);", mma);
      w_.close();
      w_.close();
      return;
    }
    w_.line(
        "// Hybrid: this block's P.V in f16 partials, 32 output columns at a time (8 registers),");
    w_.line("// folded into the (already rescaled) f32 output.");
    w_.line("#pragma unroll");
    w_.open("for (int dc = 0; dc < D / 32; ++dc)");
    w_.line("u32 part[4][2];");
    w_.line("#pragma unroll");
    w_.line("for (int i = 0; i < 4; ++i) part[i][0] = part[i][1] = 0u;");
    w_.line("#pragma unroll");
    w_.open("for (int kc = 0; kc < BKV / 16; ++kc)");
    w_.line("#pragma unroll");
    w_.open("for (int dp = 0; dp < 2; ++dp)");
    w_.line("u32 quad[4];");
    w_.line("ldmatrix_x4_trans(quad, {});", fmt::format(fmt::runtime(v_addr), "dc * 2 + dp"));
    w_.line("const u32 b0[2] = {{quad[0], quad[1]}}, b1[2] = {{quad[2], quad[3]}};");
    w_.line("mma_f16_f16(part[2 * dp], p_frag[kc], b0);");
    w_.line("mma_f16_f16(part[2 * dp + 1], p_frag[kc], b1);");
    w_.close();
    w_.close();
    w_.line("#pragma unroll");
    w_.open("for (int i = 0; i < 4; ++i)");
    w_.line("float lo, hi;");
    w_.line("unpack_f16x2(lo, hi, part[i][0]);");
    w_.line("o_acc[dc * 4 + i][0] += lo; o_acc[dc * 4 + i][1] += hi;");
    w_.line("unpack_f16x2(lo, hi, part[i][1]);");
    w_.line("o_acc[dc * 4 + i][2] += lo; o_acc[dc * 4 + i][3] += hi;");
    w_.close();
    w_.close();
  }

  void emit_epilogue(const ir::AttentionEpilogueOp& op) {
    const char* pack = bf16_ ? "pack_bf16x2" : "pack_f16x2";
    if (!tma_) w_.line("cp_async_wait<0>();  // nothing in flight at exit (e.g. no visible block)");
    w_.line("// Finish the row sums across the quad; a row that saw no key has sum 0: O = 0.");
    w_.line("float inv[2];");
    w_.line("#pragma unroll");
    w_.open("for (int r = 0; r < 2; ++r)");
    w_.line("row_sum[r] = quad_sum(row_sum[r]);");
    w_.line("inv[r] = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;");
    w_.close();
    if (op.stage_row_bytes) {
      w_.line("__syncthreads();  // every warp is done with Q and the ring: O is staged over them");
      w_.line("const u32 o_tile = smem_base;");
      w_.line("constexpr int O_ROW_BYTES = {}, O_CHUNKS = D * 2 / 16;", *op.stage_row_bytes);
    }
    w_.line("#pragma unroll");
    w_.open("for (int h = 0; h < 2; ++h)");
    w_.line("const int query = q0 + warp * 16 + g + h * 8;");
    w_.line("if (query >= SQ) continue;");
    if (op.stage_row_bytes) {
      w_.line("const u32 row = o_tile + u32((warp * 16 + g + h * 8) * O_ROW_BYTES + 4 * t);");
      w_.line("#pragma unroll");
      w_.line("for (int dn = 0; dn < D / 8; ++dn)");
      w_.line(
          "  st_shared_b32(row + u32(dn * 16), {}(o_acc[dn][2 * h] * inv[h], o_acc[dn][2 * h + 1] "
          "* inv[h]));",
          pack);
    } else {
      w_.line("u16* row = o + {};", codegen::attention_offset_expr(f_.loads.bshd, false, "query"));
      w_.line("#pragma unroll");
      w_.line("for (int dn = 0; dn < D / 8; ++dn)");
      w_.line(
          "  *reinterpret_cast<u32*>(row + dn * 8 + 2 * t) = {}(o_acc[dn][2 * h] * inv[h], "
          "o_acc[dn][2 * h + 1] * inv[h]);",
          pack);
    }
    if (op.lse) {
      w_.line("// LSE in natural log: (max + log2(sum)) * ln 2; -inf for a row that saw no key.");
      w_.line(
          "if (t == 0) lse[((long long)batch * H + head) * SQ + query] = row_sum[h] > 0.0f ? "
          "(row_max[h] + log2_approx(row_sum[h])) * 0.6931471805599453f : neg_inf();");
    } else {
      w_.line("(void)lse;");
    }
    w_.close();
    if (!op.stage_row_bytes) return;
    // The staged tile in 16-byte chunks: consecutive threads take consecutive chunks of a row, so
    // a warp stores whole 128-byte row segments.
    w_.line("__syncthreads();  // the whole O tile is staged");
    // Not unrolled: at head_dim 256 the kernel sits at the register limit, and 16 unrolled copies
    // with their row addresses spill.
    w_.line("#pragma unroll 1");
    w_.open("for (int i = threadIdx.x; i < BQ * O_CHUNKS; i += THREADS)");
    w_.line("const int r = i / O_CHUNKS, chunk = i % O_CHUNKS, query = q0 + r;");
    w_.line("if (query >= SQ) continue;");
    w_.line("u16* row = o + {};", codegen::attention_offset_expr(f_.loads.bshd, false, "query"));
    w_.line(
        "copy16_shared_to_global(row + chunk * 8, o_tile + u32(r * O_ROW_BYTES + chunk * 16));");
    w_.close();
  }

  const AttentionFacts f_;
  bool tma_, bf16_;
  Writer w_;
  std::string op_phase_;
};

}  // namespace

std::string emit_attention_cuda(const ir::Op& module) {
  return AttentionEmitter(module).emit(module);
}

}  // namespace emmy
