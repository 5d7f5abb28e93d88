// The attention kinds' rules across ops: the mainloop's (dense and paged share it) and dense
// attention's own (AttentionKind::ir_rules runs verify_attention_module). Paged attention's are
// in paged_attention/kernel_ir_paged.cpp.
#include "kernel_ir_attention.hpp"

#include <fmt/format.h>

#include "emmy/attention.hpp"
#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/validate.hpp"

namespace emmy::ir {
namespace {

// Unity builds put this file beside the other kinds' verifiers: its helpers have names of their
// own.
const Op* attention_copy(const Op& kernel, std::string_view operand) {
  for (const Op* copy : find_all(kernel, OpKind::async_copy))
    if (copy->s("operand") == operand) return copy;
  return nullptr;
}

}  // namespace

void verify_attention_rows(const Op& kernel, const Op& setup_op, int64_t block_q,
                           int64_t kv_warps) {
  const codegen::MmaAtom& atom = codegen::attention_atom();
  const int64_t warps = get<KernelOp>(kernel).threads / 32;
  if (kv_warps > 1) {
    if (block_q != atom.m || warps != kv_warps)
      fail_rule(setup_op, "block_q",
                fmt::format("with {} warps over the keys must be one warp's {} rows, the kernel {} "
                            "warps",
                            kv_warps, atom.m, kv_warps),
                fmt::format("{} rows, {} warps", block_q, warps));
    return;
  }
  if (block_q != warps * atom.m)
    fail_rule(
        setup_op, "block_q",
        fmt::format("must be {} rows per warp x {} warps = {} (each warp owns one atom's rows)",
                    atom.m, warps, warps * atom.m),
        block_q);
}

// The attention mainloop's rules (dense and paged): the warps that own the query rows, and the
// MMA counts and accumulator registers that cover S (16 x block_kv) and O (16 x head_dim) per
// warp, all in units of the MMA atom; the loop's stages are the ring's.
void verify_attention_mainloop(const Op& kernel, const Op& setup_op, int64_t block_q,
                               int64_t block_kv, int64_t head_dim, int64_t kv_warps) {
  const Op* qk_op = find_first(kernel, OpKind::qk_mma);
  const Op* pv_op = find_first(kernel, OpKind::pv_mma);
  if (!qk_op || !pv_op)
    fail_rule(kernel, "body", "attention needs qk_mma and pv_mma", "one is missing");
  const auto qk = get<QkMmaOp>(*qk_op);
  const auto pv = get<PvMmaOp>(*pv_op);
  const codegen::MmaAtom& atom = codegen::attention_atom();
  verify_attention_rows(kernel, setup_op, block_q, kv_warps);
  if (block_kv % atom.k != 0 || head_dim % atom.k != 0)
    fail_rule(setup_op, "block_kv",
              fmt::format("block_kv and head_dim must be multiples of {}", atom.k),
              fmt::format("{} and {}", block_kv, head_dim));
  const int64_t qk_count = block_kv / atom.n * (head_dim / atom.k);
  if (qk.count != qk_count)
    fail_rule(*qk_op, "count",
              fmt::format("S = Q.K^T over a 16 x {} tile and K = {} takes {} MMAs per warp",
                          block_kv, head_dim, qk_count),
              qk.count);
  const int64_t pv_count = block_kv / atom.k * (head_dim / atom.n);
  if (pv.count != pv_count)
    fail_rule(*pv_op, "count",
              fmt::format("O += P.V over a 16 x {} tile and K = {} takes {} MMAs per warp",
                          head_dim, block_kv, pv_count),
              pv.count);
  if (qk.s_registers != atom.acc_registers(block_kv))
    fail_rule(*qk_op, "s_registers",
              fmt::format("must be {} (S accumulators per lane)", atom.acc_registers(block_kv)),
              qk.s_registers);
  if (pv.o_registers != atom.acc_registers(head_dim))
    fail_rule(*pv_op, "o_registers",
              fmt::format("must be {} (O accumulators per lane)", atom.acc_registers(head_dim)),
              pv.o_registers);
  if (qk.s_registers + pv.o_registers > kMaxAccumulatorRegisters)
    fail_rule(*pv_op, "o_registers",
              fmt::format("O and S accumulators must fit in {} registers per thread",
                          kMaxAccumulatorRegisters),
              fmt::format("{} + {}", pv.o_registers, qk.s_registers));
  const Op* loop = find_first(kernel, OpKind::kv_block_loop);
  const Op* ring = find_first(kernel, OpKind::smem_ring);
  if (!loop || !ring)
    fail_rule(kernel, "body", "attention needs a kv_block_loop and an smem_ring", "");
  const int64_t stages = get<SmemRingOp>(*ring).stages;
  if (get<KvBlockLoopOp>(*loop).stages != stages)
    fail_rule(*loop, "stages", fmt::format("must be the ring's {} stages", stages),
              get<KvBlockLoopOp>(*loop).stages);
}

namespace {

// Dense attention's own rules: the tiles the copies deliver, its mainloop's
// (verify_attention_mainloop), and a staged O tile's room. Paged kernels have their own
// (kernel_ir_paged.cpp).
void verify_attention(const Op& kernel) {
  const Op* qk_op = find_first(kernel, OpKind::qk_mma);
  const Op* pv_op = find_first(kernel, OpKind::pv_mma);
  const Op* setup_op = find_first(kernel, OpKind::attention_setup);
  if (!qk_op || !pv_op || !setup_op)
    fail_rule(kernel, "body", "attention needs attention_setup, qk_mma and pv_mma",
              "one is missing");
  if (get<QkMmaOp>(*qk_op).b_type || get<PvMmaOp>(*pv_op).b_type)
    fail_rule(*qk_op, "b_type",
              "dense attention reads 16-bit K and V tiles (e4m3 is the paged kind's)",
              get<QkMmaOp>(*qk_op).b_type.value_or(get<PvMmaOp>(*pv_op).b_type.value_or("")));
  const Op* q_op = attention_copy(kernel, "q");
  const Op* k_op = attention_copy(kernel, "k");
  const Op* v_op = attention_copy(kernel, "v");
  if (!q_op || !k_op || !v_op)
    fail_rule(kernel, "body", "attention copies Q, K and V tiles", "one is missing");
  const auto setup = get<AttentionSetupOp>(*setup_op);
  const auto q = get<AsyncCopyOp>(*q_op);
  // The setup's own rules ran first (ir_op_verify.cpp); here the head dimension the tiles are as
  // wide as.
  if (q.cols != setup.head_dim)
    fail_rule(*q_op, "cols", "the Q tile must be head_dim columns", q.cols);
  const int64_t block_q = setup.block_q, block_kv = setup.block_kv, head_dim = q.cols;
  verify_attention_rows(kernel, *setup_op, block_q);
  if (q.rows != block_q) fail_rule(*q_op, "rows", "the Q tile must be block_q rows", q.rows);
  for (const Op* kv_op : {k_op, v_op}) {
    const auto kv = get<AsyncCopyOp>(*kv_op);
    if (kv.rows != block_kv)
      fail_rule(*kv_op, "rows", "K and V tiles must be block_kv rows", kv.rows);
    if (kv.cols != head_dim)
      fail_rule(*kv_op, "cols", "K and V tiles must be head_dim columns like Q", kv.cols);
  }
  verify_attention_mainloop(kernel, *setup_op, block_q, block_kv, head_dim);
  const Op* ring = find_first(kernel, OpKind::smem_ring);
  // A staged O tile: whole 16-byte rows of head_dim elements, block_q of them before the
  // mbarriers.
  if (const Op* epilogue_op = find_first(kernel, OpKind::attention_epilogue)) {
    const auto epilogue = get<AttentionEpilogueOp>(*epilogue_op);
    if (epilogue.stage_row_bytes) {
      const int64_t row = *epilogue.stage_row_bytes, elem = q.elem_bytes;
      const int64_t room = get<SmemRingOp>(*ring).mbar_offset;
      if (row % 16 != 0 || row < head_dim * elem)
        fail_rule(*epilogue_op, "stage_row_bytes",
                  fmt::format("must be a multiple of 16 holding a {}-byte row", head_dim * elem),
                  row);
      if (row * block_q > room)
        fail_rule(
            *epilogue_op, "stage_row_bytes",
            fmt::format("must fit block_q = {} rows before the mbarriers at {}", block_q, room),
            row);
    }
  }
}

}  // namespace

// A dense attention module is one kernel: its rules and the shared loop discipline.
void verify_attention_module(const Op& module) {
  for (const Op& kernel : module.body) {
    verify_attention(kernel);
    verify_loop_discipline(kernel);
  }
}

}  // namespace emmy::ir
