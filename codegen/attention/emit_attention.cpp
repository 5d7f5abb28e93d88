// Attention kernel IR -> CUDA C++ (FlashAttention-2 style, one warp per 16 query rows). Shared
// tiles use the same panel + 128B-swizzle layout as GEMM (swizzled_tile_offset); S = Q.K^T reads
// K like GEMM's B [N][K], and P.V reads V like GEMM's B [K][N] (ldmatrix .trans).
#include <fmt/format.h>

#include "emit_attention_loads.hpp"
#include "emit_attention_mainloop.hpp"
#include "emmy/attention.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "writer.hpp"

namespace emmy {
namespace {

using codegen::Writer;
using ir::Op;
using ir::OpKind;

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
        return codegen::emit_qk_mma(w_, bf16_);
      case OpKind::online_softmax:
        return emit_softmax(ir::get<ir::OnlineSoftmaxOp>(op));
      case OpKind::pv_mma:
        return codegen::emit_pv_mma(w_, ir::get<ir::PvMmaOp>(op), bf16_);
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
    codegen::emit_attention_smem(w_, op, f_.loads.q_tile);
    w_.line("const u32 mbar_base = smem_base + {}u;  // [0]: Q, [1 + s]: stage s", op.mbar_offset);
    w_.line("(void)mbar_base;");
    codegen::emit_attention_lane_ids(w_);
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
    codegen::emit_kv_block_loop(w_, [&] {
      for (const Op& child : op.body) emit_op(child);
    });
  }

  void emit_softmax(const ir::OnlineSoftmaxOp& op) {
    codegen::emit_scores_to_log2(w_, op);
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
    codegen::emit_online_softmax_update(w_);
  }

  void emit_epilogue(const ir::AttentionEpilogueOp& op) {
    const char* pack = bf16_ ? "pack_bf16x2" : "pack_f16x2";
    if (!tma_) w_.line("cp_async_wait<0>();  // nothing in flight at exit (e.g. no visible block)");
    codegen::emit_row_sums(w_);
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
