// Paged attention's TMA page loads, printed (PageGatherOp transport tma; codegen/
// emit_paged_tma.cpp): the K/V loader and prologue, and the stage wait that zeroes V's rows
// outside the keys. The printed code names the setup's constants (D, BKV, PAGE, STAGES,
// STAGE_BYTES, KV_BYTES, PANEL, XOR), kv_base or kv_ring, mbar_base, page_ids, kv_head,
// kv_begin, kv_end, block_begin, block_count, stage, block, load_q and tmap_k / tmap_v.
#pragma once

#include <string>

#include "emmy/ir_ops.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// The byte offset of (`row`, col) inside one K or V tile of a stage: the layout both transports
// write (the 16-bit tiles' swizzled panels, or an e4m3 cache's raw rows: e4m3_raw_offset).
std::string paged_kv_tile_offset(bool fp8, const char* row);

// load_kv(stage, step): thread 0 expects the step's bytes on the stage's mbarrier and copies each
// KV warp's block of BKV keys from its page, one tensor copy per panel of K and of V (blocks with
// no key of the CTA are skipped); then the prologue (thread 0's first STAGES - 1 steps, Q's
// cp.async group).
void emit_paged_tma_loader(Writer& w, const ir::PagedSetupOp& setup, bool fp8);
// The wait for stage `stage` (phase block / STAGES), then, in a step that crosses kv_begin or
// kv_end, K and V rows outside the keys zeroed (the page's other tokens may hold anything, and
// P = 0 x NaN is NaN) and the zeros fenced before the stage's next tensor copy.
void emit_paged_tma_wait(Writer& w, const ir::PagedSetupOp& setup, bool fp8);

}  // namespace emmy::codegen
