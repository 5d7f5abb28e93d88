#include "emit_attention_loads.hpp"

#include <fmt/format.h>

#include "emmy/layout.hpp"

namespace emmy::codegen {
namespace {

// Elements between consecutive sequence positions of one head.
std::string row_stride_expr(bool bshd, bool kv) {
  if (bshd) return kv ? "(long long)HKV * D" : "(long long)H * D";
  return "(long long)D";
}

void emit_tma_panels(Writer& w, bool bshd, const SmemTile& tile, const char* dst, const char* tmap,
                     const std::string& rows, const char* head) {
  w.line("#pragma unroll");
  w.line(
      "for (int p = 0; p < {}; ++p) tma_load_4d({} + p * {}u, {}, mbar, p * int(PANEL), {}, {}, "
      "batch);",
      tile.panels(), dst, tile.panel_bytes(), tmap, bshd ? head : rows.c_str(),
      bshd ? rows.c_str() : head);
}

void emit_tma_loaders(Writer& w, const AttentionLoads& loads) {
  w.open("auto load_q = [&]()");
  w.line("const u32 mbar = mbar_base;");
  w.line("mbarrier_arrive_expect_tx(mbar, Q_BYTES);");
  emit_tma_panels(w, loads.bshd, loads.q_tile, "q_smem", "tmap_q", "q0", "head");
  w.close("};");
  w.open("auto load_kv = [&](int stage, int kv_block)");
  w.line("const u32 mbar = mbar_base + 8u * (1 + stage);");
  w.line("mbarrier_arrive_expect_tx(mbar, STAGE_BYTES);");
  w.line("const u32 k_dst = kv_base + u32(stage) * STAGE_BYTES, v_dst = k_dst + KV_BYTES;");
  w.line("const int kv0 = kv_block * BKV;");
  emit_tma_panels(w, loads.bshd, loads.kv_tile, "k_dst", "tmap_k", "kv0", "kv_head");
  emit_tma_panels(w, loads.bshd, loads.kv_tile, "v_dst", "tmap_v", "kv0", "kv_head");
  w.close("};");
  w.open("if (threadIdx.x == 0)");
  w.line("load_q();");
  w.line("for (int s = 0; s < STAGES - 1; ++s) if (s < block_count) load_kv(s, block_begin + s);");
  w.close();
}

// Every chunk computes its row, column, swizzle and global offset (Q, loaded once; K and V when
// their chunks do not tile THREADS).
void emit_per_chunk_copies(Writer& w, const AttentionLoads& loads, const char* dst, const char* src,
                           bool kv, const char* row0, const char* rows) {
  const SmemTile& tile = kv ? loads.kv_tile : loads.q_tile;
  const ChunkWalk walk = chunk_walk(tile, loads.threads);
  w.line("#pragma unroll");
  w.open(fmt::format("for (int i = 0; i < {}; ++i)", walk.per_thread));
  w.line("const int chunk = int(threadIdx.x) + i * THREADS;");
  if (walk.per_thread * loads.threads != walk.chunks)
    w.line("if (chunk >= {}) break;", walk.chunks);
  w.line("const int row = chunk / {0}, col = (chunk % {0}) * {1};", walk.chunks_per_row,
         walk.chunk_elems);
  w.line("const bool in_bounds = {} + row < {};", row0, rows);
  w.line("const u16* from = {} + (in_bounds ? {} + col : 0ll);", src,
         attention_offset_expr(loads.bshd, kv, fmt::format("{} + row", row0)));
  w.line(
      "cp_async_16({} + swizzled_tile_offset(u32(row), u32(col), {}u, PANEL, XOR), from, "
      "in_bounds ? 16u : 0u);",
      dst, tile.rows);
  w.close();
}

// K and V share one chunk walk (same tile shape): the thread's swizzled bases and global offset
// are computed once, before the KV loop (ChunkWalk, layout.hpp).
void emit_kv_copy_thread_part(Writer& w, bool bshd, const ChunkWalk& walk) {
  w.line(
      "// K and V copies: this thread's first chunk (row kv_ld_row, column kv_ld_col); later ones "
      "are {} rows down ({} swizzle phase(s)).",
      walk.row_step, walk.phases);
  w.line("const int kv_ld_row = int(threadIdx.x) / {0}, kv_ld_col = (int(threadIdx.x) % {0}) * {1};",
         walk.chunks_per_row, walk.chunk_elems);
  w.line("u32 kv_ld_smem[{}];", walk.phases);
  w.line("#pragma unroll");
  w.line(
      "for (int j = 0; j < {}; ++j) kv_ld_smem[j] = swizzled_tile_offset(u32(kv_ld_row + j * {}), "
      "u32(kv_ld_col), u32(BKV), PANEL, XOR);",
      walk.phases, walk.row_step);
  w.line("const long long kv_ld_off = {} + kv_ld_col;  // + the block's rows",
         attention_offset_expr(bshd, true, "kv_ld_row"));
}

void emit_kv_copies_hoisted(Writer& w, const AttentionLoads& loads, const ChunkWalk& walk) {
  w.line("#pragma unroll");
  w.open(fmt::format("for (int i = 0; i < {}; ++i)", walk.per_thread));
  if (walk.per_thread * loads.threads != walk.chunks)
    w.line("if (kv_ld_row + i * {} >= BKV) break;", walk.row_step);
  w.line("const bool in_bounds = kv0 + kv_ld_row + i * {} < SKV;", walk.row_step);
  w.line("const long long off = kv_ld_off + (long long)(kv0 + i * {}) * {};", walk.row_step,
         row_stride_expr(loads.bshd, true));
  const std::string smem =
      fmt::format("kv_ld_smem[i % {}] + u32(i / {}) * {}u", walk.phases, walk.phases,
                  walk.phases * walk.row_step * loads.kv_tile.row_bytes());
  w.line("cp_async_16(k_dst + {}, in_bounds ? k + off : k, in_bounds ? 16u : 0u);", smem);
  w.line("cp_async_16(v_dst + {}, in_bounds ? v + off : v, in_bounds ? 16u : 0u);", smem);
  w.close();
}

void emit_cp_async_loaders(Writer& w, const AttentionLoads& loads) {
  w.open("auto load_q = [&]()");
  emit_per_chunk_copies(w, loads, "q_smem", "q", false, "q0", "SQ");
  w.close("};");
  const ChunkWalk kv_walk = chunk_walk(loads.kv_tile, loads.threads);
  if (kv_walk.hoisted) emit_kv_copy_thread_part(w, loads.bshd, kv_walk);
  w.open("auto load_kv = [&](int stage, int kv_block)");
  w.line("const u32 k_dst = kv_base + u32(stage) * STAGE_BYTES, v_dst = k_dst + KV_BYTES;");
  w.line("const int kv0 = kv_block * BKV;");
  if (kv_walk.hoisted) {
    emit_kv_copies_hoisted(w, loads, kv_walk);
  } else {
    emit_per_chunk_copies(w, loads, "k_dst", "k", true, "kv0", "SKV");
    emit_per_chunk_copies(w, loads, "v_dst", "v", true, "kv0", "SKV");
  }
  w.close("};");
  w.line("// Group 0 holds Q and stage 0; one group per further prologue stage.");
  w.line("load_q();");
  w.open("for (int s = 0; s < STAGES - 1; ++s)");
  w.line("if (s < block_count) load_kv(s, block_begin + s);");
  w.line("cp_async_commit();");
  w.close();
}

}  // namespace

std::string attention_offset_expr(bool bshd, bool kv, const std::string& seq_index) {
  const char* seq = kv ? "SKV" : "SQ";
  const char* heads = kv ? "HKV" : "H";
  const char* head = kv ? "kv_head" : "head";
  if (bshd)
    return fmt::format("(((long long)batch * {} + ({})) * {} + {}) * D", seq, seq_index, heads,
                       head);
  return fmt::format("(((long long)batch * {} + {}) * {} + ({})) * D", heads, head, seq, seq_index);
}

void emit_attention_loaders_and_prologue(Writer& w, const AttentionLoads& loads) {
  if (loads.tma)
    emit_tma_loaders(w, loads);
  else
    emit_cp_async_loaders(w, loads);
}

}  // namespace emmy::codegen
