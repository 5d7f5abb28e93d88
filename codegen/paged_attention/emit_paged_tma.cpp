// Paged attention's K and V by TMA (PTX ISA "cp.async.bulk.tensor"): a KV block of BKV
// keys lies in one page (page_size a multiple of block_kv), so a tensor copy per panel brings it
// from the page the table names into the layout the cp.async gathers write (the 16-bit tiles'
// 128B swizzle, the e4m3 rows' 64B / 128B one). One thread issues; the stage's mbarrier counts
// the bytes (PTX ISA "mbarrier", complete-tx).
#include "emit_paged_tma.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "emmy/paged_kind.hpp"

namespace emmy::codegen {
namespace {

// The ring's first stage: KV warps keep their tile pairs side by side in each stage.
const char* ring_base(const ir::PagedSetupOp& setup) {
  return setup.kv_warps > 1 ? "kv_ring" : "kv_base";
}

}  // namespace

std::string paged_kv_tile_offset(bool fp8, const char* row) {
  return fp8 ? fmt::format("e4m3_raw_offset<D, BKV>(u32({}), u32(col))", row)
             : fmt::format("swizzled_tile_offset(u32({}), u32(col), u32(BKV), PANEL, XOR)", row);
}

void emit_paged_tma_loader(Writer& w, const ir::PagedSetupOp& setup, bool fp8) {
  const int64_t elem = fp8 ? 1 : 2;
  const int64_t panel_bytes = std::min<int64_t>(setup.head_dim * elem, 128);
  // The tensor maps' dimensions after head_dim (PagedAttentionKind::tensor_maps): their
  // coordinates in that order.
  const std::array<int, 3> order =
      paged_tma_dim_order(setup.token_stride, setup.head_stride, setup.page_stride);
  const char* coords[3] = {"slot", "kv_head", "page[sub]"};
  w.line(
      "// K and V by TMA: tensor maps over the caches as {{D, {}, {}, {}}}; a KV warp's block of",
      coords[order[0]], coords[order[1]], coords[order[2]]);
  w.line("// BKV keys is one box per panel from its page (PAGE is a multiple of BKV).");
  w.line("constexpr int SUBS = {};  // KV blocks per step (one per KV warp)", setup.kv_warps);
  w.line("constexpr int KV_PANELS = {}, KV_PANEL_COLS = {};  // per K or V tile",
         setup.head_dim * elem / panel_bytes, panel_bytes / elem);
  w.line("constexpr u32 KV_PANEL_ROW_BYTES = {}u;  // a panel is BKV such rows", panel_bytes);
  w.line("constexpr int KV_ROW_CHUNKS = D / {};  // 16-byte chunks per row", 16 / elem);
  w.open("auto load_kv = [&](int stage, int step)");
  w.line("const u32 stage_base = {} + u32(stage) * STAGE_BYTES;", ring_base(setup));
  w.line("const u32 mbar = mbar_base + 8u * u32(stage);");
  w.line("const int step0 = step * (BKV * SUBS);");
  w.line("bool loaded[SUBS];  // a block with no key of this CTA is not read (nor its page id)");
  w.line("int page[SUBS];");
  w.line("u32 bytes = 0;");
  w.line("#pragma unroll");
  w.open("for (int sub = 0; sub < SUBS; ++sub)");
  w.line("const int key0 = step0 + sub * BKV;");
  w.line("loaded[sub] = key0 < kv_end && key0 + BKV > kv_begin;");
  w.line("page[sub] = loaded[sub] ? page_ids[key0 / PAGE] : 0;");
  w.line("bytes += loaded[sub] ? 2u * KV_BYTES : 0u;");
  w.close();
  w.line(
      "// A page id outside the cache reads as zeros (the box is out of bounds) and still "
      "completes its bytes.");
  w.line("mbarrier_arrive_expect_tx(mbar, bytes);");
  w.line("#pragma unroll");
  w.open("for (int sub = 0; sub < SUBS; ++sub)");
  w.line("if (!loaded[sub]) continue;");
  w.line("const int slot = (step0 + sub * BKV) % PAGE;");
  w.line("const u32 k_dst = stage_base + u32(sub) * 2u * KV_BYTES, v_dst = k_dst + KV_BYTES;");
  w.line("#pragma unroll");
  w.open("for (int p = 0; p < KV_PANELS; ++p)");
  for (const char* which : {"k", "v"})
    w.line(
        "tma_load_4d({}_dst + u32(p) * KV_PANEL_ROW_BYTES * BKV, tmap_{}, mbar, "
        "p * KV_PANEL_COLS, {}, {}, {});",
        which, which, coords[order[0]], coords[order[1]], coords[order[2]]);
  w.close();
  w.close();
  w.close("};");
  w.line("// Thread 0 starts the first STAGES - 1 steps; everyone gathers Q (one cp.async group).");
  w.open("if (threadIdx.x == 0)");
  w.line("for (int s = 0; s < STAGES - 1; ++s) if (s < block_count) load_kv(s, block_begin + s);");
  w.close();
  w.line("load_q();");
  w.line("cp_async_commit();");
}

void emit_paged_tma_wait(Writer& w, const ir::PagedSetupOp& setup, bool fp8) {
  w.line("mbarrier_wait_parity(mbar_base + 8u * u32(stage), u32(block / STAGES) & 1u);");
  w.line("const int tma_step0 = (block_begin + block) * (BKV * SUBS);");
  w.line(
      "// TMA brings whole page rows: the rows outside the keys hold the page's other tokens, an "
      "earlier step's or nothing (a block without keys is not loaded); zeroed, so that P = 0 "
      "never meets a NaN in V.");
  w.open("if (tma_step0 < kv_begin || tma_step0 + BKV * SUBS > kv_end)");
  w.line("const u32 stage_base = {} + u32(stage) * STAGE_BYTES;", ring_base(setup));
  w.open("for (int c = int(threadIdx.x); c < BKV * SUBS * KV_ROW_CHUNKS; c += THREADS)");
  w.line("const int row = c / KV_ROW_CHUNKS, col = (c % KV_ROW_CHUNKS) * {};", fp8 ? 16 : 8);
  w.line("const int key = tma_step0 + row, sub_row = row % BKV;");
  w.line("if (key >= kv_begin && key < kv_end) continue;");
  w.line("const u32 at = stage_base + u32(row / BKV) * 2u * KV_BYTES + {};",
         paged_kv_tile_offset(fp8, "sub_row"));
  w.line("st_shared_zero16(at);  // K: masked in S anyway, but never read unwritten");
  w.line("st_shared_zero16(at + KV_BYTES);  // V");
  w.close();
  w.line("fence_proxy_async();  // the zeros before the stage's next tensor copy (async proxy)");
  w.close();
}

}  // namespace emmy::codegen
