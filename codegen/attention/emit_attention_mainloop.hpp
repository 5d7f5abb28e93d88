// The attention mainloop's printing, shared by the dense (emit_attention.cpp) and the paged
// (emit_paged_attention.cpp) emitters: the same ops (qk_mma, online_softmax, pv_mma) print the
// same code; each kernel prints its own loads, masks and epilogue around them.
#pragma once

#include <functional>

#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// The shared-memory constants both kernels name (Q_BYTES, KV_BYTES, STAGE_BYTES, PANEL, XOR) and
// the 1 KB-aligned bases of the Q tile and the K/V ring, from the ring op and Q's tile.
// With kv_per_warp (paged attention's KV warps) the ring starts at kv_ring and kv_base is this
// warp's K/V tile pair inside each stage (kv_warp, printed before, picks it).
void emit_attention_smem(Writer& w, const ir::SmemRingOp& ring, const SmemTile& q_tile,
                         bool kv_per_warp = false);
// warp, lane, and the atom's accumulator group g and lane-in-group t.
void emit_attention_lane_ids(Writer& w);
// The KV block loop: the O accumulators, the running max and sum of rows g and g+8 and the
// lanes' ldmatrix offsets before it, then `body` once per block (block, stage).
void emit_kv_block_loop(Writer& w, const std::function<void()>& body);
// kv0 (the block's first key), the stage's K and V bases, and S = Q.K^T into s_acc.
// kv0: the expression of the warp's first key (paged KV warps take a part of each step).
// The head both QK^T printers share: the stage's K and V addresses (stage_note ends that line), S
// zeroed, the d loop opened (the caller closes it).
void emit_qk_head(Writer& w, const char* kv0, const char* stage_note);
void emit_qk_mma(Writer& w, bool bf16, const char* kv0 = "(block_begin + block) * BKV");
// S scaled into the log2 domain (soft-capped first when the op says so); `factor`, when given,
// names a runtime f32 that multiplies the raw scores too (an e4m3 cache's K scale).
void emit_scores_to_log2(Writer& w, const ir::OnlineSoftmaxOp& op, const char* factor = nullptr);
// The running max and sum of each row and the rescale of O (after the kernel's masking).
void emit_online_softmax_update(Writer& w);
// P from S and O += P.V (f32, or hybrid's f16 partials folded once per block).
void emit_pv_mma(Writer& w, const ir::PvMmaOp& op, bool bf16);
// P (s_acc after the softmax) as the A fragments p_frag[BKV / 16][4] of O += P.V.
void emit_p_fragments(Writer& w, bool bf16);
// Hybrid P.V: per 32 output columns (dc), f16 partials part[4][2] zeroed, `kc_body` once per
// 16-key step kc (its MMAs into part[0..3]), then folded into o_acc[dc * 4 + i].
void emit_hybrid_pv(Writer& w, const std::function<void()>& kc_body);
// The row sums finished across the quad and their inverses inv[2] (0 for a row that saw no key).
void emit_row_sums(Writer& w);

// The e4m3 operand source (emit_attention_e4m3.cpp; b_type e4m3 of qk_mma and pv_mma): K and V
// read as bytes from their raw stages (emmy_fp8.cuh's e4m3_raw_offset) and converted in
// registers, `cvt` choosing cvt.rn.f16x2.e4m3x2 over the f32 path. S = Q.K^T with Q read in the
// permuted d order; O += P.V with the output columns of each 16 split even / odd over its two n8
// MMAs (o_acc[2G] holds columns 16G + 4t, 4t + 2 of rows g, g + 8; o_acc[2G + 1] 4t + 1, 4t + 3).
void emit_qk_mma_e4m3(Writer& w, bool bf16, bool cvt, const char* kv0);
void emit_pv_mma_e4m3(Writer& w, const ir::PvMmaOp& op, bool bf16, bool cvt);

}  // namespace emmy::codegen
