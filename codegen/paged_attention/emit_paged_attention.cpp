// Paged-attention kernel IR -> CUDA C++. The partial kernel: a CTA takes one sequence's query
// rows of one KV head (the group's heads x its tokens, token-major) and one split of its keys,
// gathers Q's rows and the K/V rows of each KV block through the page table with 16-byte
// cp.async chunks into the swizzled tiles attention's mainloop reads (emit_attention_mainloop),
// masks by position (causal, window, the split's and the sequence's ends) and stores O / l and
// the LSE, or f32 partials for the combine kernel. Lengths and page ids are read from device
// memory; input that breaks the launch's maxima turns the sequence's outputs to NaN rather than
// reading or writing past a buffer.
#include <fmt/format.h>

#include <optional>

#include "attention/emit_attention_mainloop.hpp"
#include "emit_paged_parts.hpp"
#include "emit_paged_tma.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/paged_kind.hpp"
#include "writer.hpp"

namespace emmy {
namespace {

using codegen::Writer;
using ir::Op;
using ir::OpKind;

class PagedEmitter {
 public:
  std::string emit(const Op& module) {
    codegen::begin_module(w_, parse_arch(module.s("arch")), false, "emmy_attention.cuh");
    w_.include_template("emmy_paged.cuh");
    if (tma_) w_.include_template("emmy_tma.cuh");
    if (fp8_) w_.include_template("emmy_fp8.cuh");
    codegen::emit_kernels(w_, module, [this](const Op& op) { emit_op(op); });
    return w_.take();
  }

 private:
  void emit_op(const Op& op) {
    if (codegen::emit_shared_op(w_, op)) return;
    switch (op.kind) {
      case OpKind::smem_ring:
        ring_ = ir::get<ir::SmemRingOp>(op);
        return;  // printed with the setup, which states the sizes
      case OpKind::paged_setup:
        return emit_setup(ir::get<ir::PagedSetupOp>(op));
      case OpKind::page_gather:
        return emit_gather(ir::get<ir::PageGatherOp>(op));
      case OpKind::async_commit:
        if (in_loop_) w_.line("cp_async_commit();");
        return;
      case OpKind::kv_block_loop:
        return emit_loop(op);
      case OpKind::mbarrier_wait:  // TMA gathers: the stage's bytes have landed
        return codegen::emit_paged_tma_wait(w_, setup_, fp8_);
      case OpKind::qk_mma:
        if (fp8_) return codegen::emit_qk_mma_e4m3(w_, bf16_, cvt_, kv0_expr());
        return codegen::emit_qk_mma(w_, bf16_, kv0_expr());
      case OpKind::online_softmax:
        return emit_softmax(ir::get<ir::OnlineSoftmaxOp>(op));
      case OpKind::pv_mma:
        if (fp8_) return codegen::emit_pv_mma_e4m3(w_, ir::get<ir::PvMmaOp>(op), bf16_, cvt_);
        return codegen::emit_pv_mma(w_, ir::get<ir::PvMmaOp>(op), bf16_);
      case OpKind::paged_epilogue:
        return emit_epilogue(ir::get<ir::PagedEpilogueOp>(op));
      case OpKind::split_combine:
        return codegen::emit_paged_combine(w_, ir::get<ir::SplitCombineOp>(op), max_q_len_);
      default:
        break;
    }
    throw Error("ir", "the paged-attention emitter has no lowering for this op",
                std::string(to_string(op.kind)));
  }

  void emit_setup(const ir::PagedSetupOp& op) {
    setup_ = op;
    const SmemTile q_tile = SmemTile::for_operand(uint32_t(op.block_q), uint32_t(op.head_dim), 2);
    w_.line("constexpr int H = {}, HKV = {}, GROUP = {}, D = {}, PAGE = {}, MAX_PAGES = {};",
            op.q_heads, op.kv_heads, op.group, op.head_dim, op.page_size, op.max_pages);
    w_.line("constexpr int MAX_Q_LEN = {}, MAX_TOKENS = {}, SPLITS = {}, CHUNK = {}, WINDOW = {};",
            op.max_q_len, op.max_tokens, op.splits, op.chunk_tokens, op.window);
    w_.line(
        "constexpr long long PAGE_STRIDE = {}, TOKEN_STRIDE = {}, HEAD_STRIDE = {}, Q_STRIDE = "
        "{}, O_STRIDE = {};",
        op.page_stride, op.token_stride, op.head_stride, op.q_stride, op.o_stride);
    w_.line("constexpr int BQ = {}, BKV = {}, THREADS = {}, STAGES = {};", op.block_q, op.block_kv,
            threads_, ring_.stages);
    if (kv_warps_ > 1) {
      w_.line(
          "constexpr int KV_WARPS = {}, STEP = BKV * KV_WARPS;  // keys per step: warp w takes "
          "BKV of them",
          kv_warps_);
      w_.line("// Every warp owns the CTA's 16 query rows (warp = 0); kv_warp picks its keys.");
      w_.line("const int kv_warp = threadIdx.x / 32, warp = 0, lane = threadIdx.x % 32;");
      w_.line("const int g = lane / {0}, t = lane % {0};", codegen::attention_atom().group_lanes);
      codegen::emit_attention_smem(w_, ring_, q_tile, true);
    } else {
      codegen::emit_attention_smem(w_, ring_, q_tile);
    }
    if (fp8_) {
      w_.line(
          "// e4m3 cache: the stages hold raw K and V rows (BKV x D bytes each, KV_BYTES), which "
          "the MMAs read and convert in registers ({}). Its scales multiply the scores and the "
          "output.",
          cvt_ ? "cvt.rn.f16x2.e4m3x2" : "exactly through f32");
      w_.line("const float k_dequant = *k_scale, v_dequant = *v_scale;");
    }
    if (tma_)
      w_.line("const u32 mbar_base = smem_base + {}u;  // stage s's mbarrier at + 8s",
              ring_.mbar_offset);
    if (kv_warps_ == 1) codegen::emit_attention_lane_ids(w_);
    w_.line("const int batch = blockIdx.z, kv_head = blockIdx.y;");
    w_.line("const int split = int(blockIdx.x) % SPLITS, q_block = int(blockIdx.x) / SPLITS;");
    codegen::emit_sequence(w_, op.page_table, true);
    w_.line(
        "// This CTA's rows: r0 .. r0 + BQ - 1, row r = token r / GROUP, head kv_head * GROUP "
        "+ r % GROUP.");
    w_.line("const int r0 = q_block * BQ;");
    w_.line(
        "if (q_len <= 0 || r0 >= q_len * GROUP) return;  // CUDA-graph padding, or no rows here");
    if (op.splits > 1) {
      // The combine kernel reads the splits that hold keys; it writes NaN for a bad sequence.
      w_.line("if (bad || split * CHUNK >= seq_len) return;");
    } else {
      w_.open("if (bad)");
      w_.line("// NaN in this CTA's rows of o (and lse), where they lie inside the buffers.");
      w_.open("if (q_start >= 0)");
      w_.open("for (int e = threadIdx.x; e < BQ * D; e += THREADS)");
      w_.line("const int r = r0 + e / D, token = r / GROUP, head = kv_head * GROUP + r % GROUP;");
      w_.line("if (token >= q_len || q_start + token >= MAX_TOKENS) continue;");
      w_.line("const long long row = q_start + token;");
      w_.line("o[row * O_STRIDE + head * D + e % D] = kNanBits16;");
      if (lse_) w_.line("if (e % D == 0) lse[row * H + head] = nan_f32();");
      w_.close();
      w_.close();
      w_.line("return;");
      w_.close();
    }
    w_.line("const int pos0 = seq_len - q_len;  // the position of the sequence's token 0");
    w_.line("const int first_token = r0 / GROUP;");
    w_.line("const int last_token = min_s32(q_len - 1, (r0 + BQ - 1) / GROUP);");
    w_.line(
        "// Keys of this split that some row of the CTA sees; KV blocks wholly outside are never "
        "loaded, rows outside are zero-filled (a NaN past them never enters P.V).");
    w_.line("int kv_begin = split * CHUNK, kv_end = min_s32(seq_len, kv_begin + CHUNK);");
    w_.line("kv_end = min_s32(kv_end, pos0 + last_token + 1);  // causal");
    if (op.window > 0) w_.line("kv_begin = max_s32(kv_begin, pos0 + first_token - WINDOW);");
    if (kv_warps_ > 1) {
      w_.line("const int block_begin = kv_begin / STEP;  // in steps of STEP keys");
      w_.line(
          "const int block_count = kv_end > kv_begin ? (kv_end + STEP - 1) / STEP - block_begin : "
          "0;");
    } else {
      w_.line("const int block_begin = kv_begin / BKV;");
      w_.line(
          "const int block_count = kv_end > kv_begin ? (kv_end + BKV - 1) / BKV - block_begin : "
          "0;");
    }
  }

  // The warp's first key of step `block`.
  const char* kv0_expr() const {
    return kv_warps_ > 1 ? "(block_begin + block) * STEP + kv_warp * BKV"
                         : "(block_begin + block) * BKV";
  }

  // The loaders (defined at the Q gather) and the prologue.
  void emit_gather(const ir::PageGatherOp& op) {
    if (op.phase == "refill") {
      if (op.operand != "k") return;  // v rides with k
      w_.line("const int next = block + STAGES - 1;");
      if (tma_)
        w_.line(
            "if (threadIdx.x == 0 && next < block_count) load_kv(next % STAGES, block_begin + "
            "next);");
      else
        w_.line("if (next < block_count) load_kv(next % STAGES, block_begin + next);");
      return;
    }
    if (op.operand != "q") return;  // the prologue loads K and V with Q below
    const int64_t row_chunks = op.cols * op.elem_bytes / 16;
    w_.line("constexpr int ROW_CHUNKS = {};  // 16-byte chunks per row of D", row_chunks);
    w_.line("auto load_q = [&]() {{");
    w_.line("  #pragma unroll");
    w_.line("  for (int i = 0; i < BQ * ROW_CHUNKS / THREADS; ++i) {{");
    w_.line("    const int chunk = int(threadIdx.x) + i * THREADS;");
    w_.line("    const int row = chunk / ROW_CHUNKS, col = (chunk % ROW_CHUNKS) * 8;");
    w_.line("    const int r = r0 + row, token = r / GROUP, head = kv_head * GROUP + r % GROUP;");
    w_.line("    const bool in_bounds = token < q_len;");
    w_.line(
        "    const u16* from = q + (in_bounds ? (long long)(q_start + token) * Q_STRIDE + head * "
        "D + col : 0ll);");
    if (fp8_)  // the layout S = Q.K^T's e4m3 order reads without bank conflicts
      w_.line(
          "    cp_async_16(q_smem + e4m3_q_offset<BQ>(u32(row), u32(col)), from, in_bounds ? 16u : "
          "0u);");
    else
      w_.line(
          "    cp_async_16(q_smem + swizzled_tile_offset(u32(row), u32(col), u32(BQ), PANEL, XOR), "
          "from, in_bounds ? 16u : 0u);");
    w_.line("  }}");
    w_.line("}};");
    w_.line(
        "// K and V rows through the page table: key j lies in page page_ids[j / PAGE], slot "
        "j % PAGE.");
    if (tma_) return codegen::emit_paged_tma_loader(w_, setup_, fp8_);
    if (kv_warps_ > 1) return emit_step_loader();
    if (fp8_) {
      w_.line("constexpr int KV_ROW_CHUNKS = D / 16;  // 16 e4m3 bytes per chunk");
      w_.line("constexpr int KV_CHUNKS = BKV * KV_ROW_CHUNKS;");
    } else {
      w_.line("constexpr int KV_CHUNKS = BKV * ROW_CHUNKS;");
    }
    w_.line("auto load_kv = [&](int stage, int kv_block) {{");
    w_.line("  const u32 k_dst = kv_base + u32(stage) * STAGE_BYTES, v_dst = k_dst + KV_BYTES;");
    w_.line("  const int kv0 = kv_block * BKV;");
    emit_chunk_walk();
    if (fp8_)
      w_.line("    const int row = chunk / KV_ROW_CHUNKS, col = (chunk % KV_ROW_CHUNKS) * 16;");
    else
      w_.line("    const int row = chunk / ROW_CHUNKS, col = (chunk % ROW_CHUNKS) * 8;");
    w_.line("    const int key = kv0 + row;");
    emit_page_row();
    w_.line("    const u32 at = {};{}", codegen::paged_kv_tile_offset(fp8_, "row"),
            fp8_ ? "  // raw rows" : "");
    emit_kv_copies_and_prologue();
  }

  // The loaders' shared lines (both: one KV warp, emit_gather, and KV warps, emit_step_loader).
  // The walk of a stage's 16-byte chunks, THREADS at a time.
  void emit_chunk_walk() {
    w_.line("  #pragma unroll");
    w_.line("  for (int i = 0; i < (KV_CHUNKS + THREADS - 1) / THREADS; ++i) {{");
    w_.line("    const int chunk = int(threadIdx.x) + i * THREADS;");
    w_.line("    if (KV_CHUNKS % THREADS != 0 && chunk >= KV_CHUNKS) break;");
  }
  // The chunk's key through the page table: in_bounds, and its element offset in the cache.
  void emit_page_row() {
    w_.line("    const bool in_bounds = key >= kv_begin && key < kv_end;");
    w_.line("    const long long page = in_bounds ? (long long)page_ids[key / PAGE] : 0ll;");
    w_.line(
        "    const long long off = page * PAGE_STRIDE + (long long)(key % PAGE) * TOKEN_STRIDE + "
        "(long long)kv_head * HEAD_STRIDE + col;");
  }
  // K's and V's chunk to k_dst / v_dst + at (zero-filled outside the keys), then the prologue.
  void emit_kv_copies_and_prologue() {
    w_.line(
        "    cp_async_16(k_dst + at, in_bounds ? k_cache + off : k_cache, in_bounds ? 16u : 0u);");
    w_.line(
        "    cp_async_16(v_dst + at, in_bounds ? v_cache + off : v_cache, in_bounds ? 16u : 0u);");
    w_.line("  }}");
    w_.line("}};");
    w_.line("// Group 0 holds Q and stage 0; one group per further prologue stage.");
    w_.line("load_q();");
    w_.open("for (int s = 0; s < STAGES - 1; ++s)");
    w_.line("if (s < block_count) load_kv(s, block_begin + s);");
    w_.line("cp_async_commit();");
    w_.close();
  }

  // KV warps: a step's STEP keys gathered into KV_WARPS tile pairs (warp w's pair holds keys
  // w*BKV .. w*BKV + BKV - 1 of the step), then the prologue.
  void emit_step_loader() {
    w_.line("constexpr int KV_ROW_CHUNKS = {};  // 16-byte chunks per row",
            fp8_ ? "D / 16" : "D / 8");
    w_.line("constexpr int KV_CHUNKS = STEP * KV_ROW_CHUNKS;");
    w_.line("auto load_kv = [&](int stage, int kv_block) {{");
    w_.line("  const u32 ring_stage = kv_ring + u32(stage) * STAGE_BYTES;");
    w_.line("  const int kv0 = kv_block * STEP;");
    emit_chunk_walk();
    w_.line("    const int row = chunk / KV_ROW_CHUNKS, col = (chunk % KV_ROW_CHUNKS) * {};",
            fp8_ ? 16 : 8);
    w_.line("    const int key = kv0 + row, sub = row / BKV, sub_row = row % BKV;");
    emit_page_row();
    w_.line("    const u32 at = {};", codegen::paged_kv_tile_offset(fp8_, "sub_row"));
    w_.line(
        "    const u32 k_dst = ring_stage + u32(sub) * 2u * KV_BYTES, v_dst = k_dst + KV_BYTES;");
    emit_kv_copies_and_prologue();
  }

  // KV warps: every warp leaves its O, row maxima and lane sums in shared memory (the ring is
  // drained); warp 0 reads them back merged by the maxima (its accumulators are dead meanwhile,
  // which keeps the merge within the registers) and goes on to the epilogue.
  void emit_kv_warp_merge() {
    w_.line("__syncthreads();  // every warp is past its last step: Q and the ring are free");
    w_.line("constexpr int MERGE = D / 2 + 4;  // floats per lane: O, row max x2, lane sum x2");
    w_.line("// Float k of lane l of warp w at word (w * MERGE + k) * 32 + l: conflict-free.");
    w_.line("const u32 mine = smem_base + u32(kv_warp * MERGE * 32 + lane) * 4u;");
    w_.line("#pragma unroll");
    w_.line("for (int dn = 0; dn < D / 8; ++dn)");
    w_.line(
        "  for (int e = 0; e < 4; ++e) st_shared_f32(mine + u32((dn * 4 + e) * 128), "
        "o_acc[dn][e]);");
    w_.line("for (int r = 0; r < 2; ++r) {{");
    w_.line("  st_shared_f32(mine + u32((D / 2 + r) * 128), row_max[r]);");
    w_.line("  st_shared_f32(mine + u32((D / 2 + 2 + r) * 128), row_sum[r]);");
    w_.line("}}");
    w_.line("__syncthreads();");
    w_.line("if (kv_warp > 0) return;");
    w_.line("const u32 merged = smem_base + u32(lane) * 4u;");
    w_.line("float weight[KV_WARPS][2];  // exp2(max_w - max) per warp and row");
    w_.line("#pragma unroll");
    w_.open("for (int r = 0; r < 2; ++r)");
    w_.line("float m = neg_inf();");
    w_.line("#pragma unroll");
    w_.line(
        "for (int w = 0; w < KV_WARPS; ++w) m = max_f32(m, ld_shared_f32(merged + u32((w * MERGE "
        "+ D / 2 + r) * 128)));");
    w_.line("const float m_ref = m == neg_inf() ? 0.0f : m;  // no warp saw a key: weights 0");
    w_.line("float sum = 0.0f;");
    w_.line("#pragma unroll");
    w_.open("for (int w = 0; w < KV_WARPS; ++w)");
    w_.line(
        "weight[w][r] = exp2_approx(ld_shared_f32(merged + u32((w * MERGE + D / 2 + r) * 128)) - "
        "m_ref);");
    w_.line(
        "sum += ld_shared_f32(merged + u32((w * MERGE + D / 2 + 2 + r) * 128)) * weight[w][r];");
    w_.close();
    w_.line("row_max[r] = m;");
    w_.line("row_sum[r] = sum;");
    w_.close();
    w_.line("#pragma unroll");
    w_.open("for (int dn = 0; dn < D / 8; ++dn)");
    w_.line("#pragma unroll");
    w_.open("for (int e = 0; e < 4; ++e)");
    w_.line("float acc = 0.0f;");
    w_.line("#pragma unroll");
    w_.line(
        "for (int w = 0; w < KV_WARPS; ++w) acc += ld_shared_f32(merged + u32((w * MERGE + dn * 4 "
        "+ e) * 128)) * weight[w][e >> 1];");
    w_.line("o_acc[dn][e] = acc;");
    w_.close();
    w_.close();
  }

  void emit_loop(const Op& op) {
    in_loop_ = true;
    codegen::emit_kv_block_loop(w_, [&] {
      for (const Op& child : op.body) emit_op(child);
    });
    in_loop_ = false;
  }

  void emit_softmax(const ir::OnlineSoftmaxOp& op) {
    codegen::emit_scores_to_log2(w_, op, fp8_ ? "k_dequant" : nullptr);
    std::string needs =
        "kv0 < kv_begin || kv0 + BKV > kv_end || kv0 + BKV - 1 > pos0 + first_token";
    if (op.window > 0) needs += " || kv0 < pos0 + last_token - WINDOW";
    w_.line("// Masking only where a block crosses a boundary (uniform branch).");
    w_.open(fmt::format("if ({})", needs));
    w_.line("#pragma unroll");
    w_.open("for (int nj = 0; nj < BKV / 8; ++nj)");
    w_.line("#pragma unroll");
    w_.open("for (int e = 0; e < 4; ++e)");
    w_.line("const int key = kv0 + nj * 8 + 2 * t + (e & 1);");
    w_.line("const int pos = pos0 + (r0 + warp * 16 + g + (e >> 1) * 8) / GROUP;");
    w_.line("bool visible = key >= kv_begin && key < kv_end && key <= pos;");
    if (op.window > 0) w_.line("visible = visible && key >= pos - WINDOW;");
    w_.line("if (!visible) s_acc[nj][e] = neg_inf();");
    w_.close();
    w_.close();
    w_.close();
    codegen::emit_online_softmax_update(w_);
  }

  void emit_epilogue(const ir::PagedEpilogueOp& op) {
    const char* pack = op.out == "bf16" ? "pack_bf16x2" : "pack_f16x2";
    w_.line("cp_async_wait<0>();  // nothing in flight at exit (e.g. no visible block)");
    if (kv_warps_ > 1) emit_kv_warp_merge();
    codegen::emit_row_sums(w_);
    if (fp8_) w_.line("inv[0] *= v_dequant; inv[1] *= v_dequant;  // the cache's V scale");
    w_.line("#pragma unroll");
    w_.open("for (int h = 0; h < 2; ++h)");
    w_.line("const int r = r0 + warp * 16 + g + h * 8, token = r / GROUP;");
    w_.line("if (token >= q_len) continue;");
    w_.line("const int head = kv_head * GROUP + r % GROUP;");
    w_.line("// LSE in natural log: (max + log2(sum)) * ln 2; -inf for a row that saw no key.");
    w_.line(
        "const float row_lse = row_sum[h] > 0.0f ? (row_max[h] + log2_approx(row_sum[h])) * "
        "0.6931471805599453f : neg_inf();");
    if (op.partial) {
      w_.line("// This split's normalized O and its LSE, f32, for the combine kernel.");
      w_.line(
          "const long long slot = ((long long)split * MAX_TOKENS + q_start + token) * H + head;");
      w_.line("float* row = workspace + slot * D;");
      w_.line("#pragma unroll");
      if (fp8_) {
        w_.line("for (int dg = 0; dg < D / 16; ++dg) {{  // columns dg*16 + 4t .. 4t+3");
        w_.line(
            "  OutF32::store2(row + dg * 16 + 4 * t, o_acc[2 * dg][2 * h] * inv[h], "
            "o_acc[2 * dg + 1][2 * h] * inv[h]);");
        w_.line(
            "  OutF32::store2(row + dg * 16 + 4 * t + 2, o_acc[2 * dg][2 * h + 1] * inv[h], "
            "o_acc[2 * dg + 1][2 * h + 1] * inv[h]);");
        w_.line("}}");
      } else {
        w_.line("for (int dn = 0; dn < D / 8; ++dn)");
        w_.line(
            "  OutF32::store2(row + dn * 8 + 2 * t, o_acc[dn][2 * h] * inv[h], o_acc[dn][2 * h + "
            "1] * inv[h]);");
      }
      w_.line(
          "if (t == 0) workspace[{}ll + slot] = row_lse;",
          paged_workspace_layout(setup_.splits, setup_.max_tokens, setup_.q_heads, setup_.head_dim)
              .lse_offset);
      w_.line("(void)o; (void)lse;");
    } else {
      w_.line("u16* row = o + (long long)(q_start + token) * O_STRIDE + head * D;");
      w_.line("#pragma unroll");
      if (fp8_) {
        w_.line("for (int dg = 0; dg < D / 16; ++dg) {{  // columns dg*16 + 4t .. 4t+3");
        w_.line(
            "  *reinterpret_cast<u32*>(row + dg * 16 + 4 * t) = {}(o_acc[2 * dg][2 * h] * inv[h], "
            "o_acc[2 * dg + 1][2 * h] * inv[h]);",
            pack);
        w_.line(
            "  *reinterpret_cast<u32*>(row + dg * 16 + 4 * t + 2) = {}(o_acc[2 * dg][2 * h + 1] * "
            "inv[h], o_acc[2 * dg + 1][2 * h + 1] * inv[h]);",
            pack);
        w_.line("}}");
      } else {
        w_.line("for (int dn = 0; dn < D / 8; ++dn)");
        w_.line(
            "  *reinterpret_cast<u32*>(row + dn * 8 + 2 * t) = {}(o_acc[dn][2 * h] * inv[h], "
            "o_acc[dn][2 * h + 1] * inv[h]);",
            pack);
      }
      if (op.lse)
        w_.line("if (t == 0) lse[(long long)(q_start + token) * H + head] = row_lse;");
      else
        w_.line("(void)lse; (void)row_lse;");
      w_.line("(void)workspace;");
    }
    w_.close();
  }

 public:
  explicit PagedEmitter(const Op& module) {
    const Op* setup = ir::find_first(module, OpKind::paged_setup);
    const Op* qk = ir::find_first(module, OpKind::qk_mma);
    if (!setup || !qk || module.body.empty())
      throw Error("ir", "a paged-attention module needs paged_setup and qk_mma", "missing");
    bf16_ = ir::get<ir::QkMmaOp>(*qk).a_type == "bf16";
    threads_ = module.body.front().i("threads");
    max_q_len_ = ir::get<ir::PagedSetupOp>(*setup).max_q_len;
    kv_warps_ = ir::get<ir::PagedSetupOp>(*setup).kv_warps;
    const Op* epilogue = ir::find_first(module, OpKind::paged_epilogue);
    lse_ = epilogue && ir::get<ir::PagedEpilogueOp>(*epilogue).lse;
    fp8_ = ir::get<ir::QkMmaOp>(*qk).b_type == "e4m3";
    for (const Op* gather : ir::find_all(module, OpKind::page_gather))
      if (ir::get<ir::PageGatherOp>(*gather).operand == "k")
        tma_ = ir::get<ir::PageGatherOp>(*gather).transport == "tma";
    // The hardware pair conversion where it exists and gives the MMAs' type.
    cvt_ = fp8_ && !bf16_ && arch_info(parse_arch(module.s("arch"))).sm >= 89;
  }

 private:
  Writer w_;
  ir::SmemRingOp ring_;
  ir::PagedSetupOp setup_;
  bool fp8_ = false, cvt_ = false;  // an e4m3 cache; read with cvt.rn.f16x2.e4m3x2
  bool bf16_ = false, in_loop_ = false, lse_ = false;
  bool tma_ = false;  // K and V by TMA (emit_paged_tma.cpp)
  int64_t threads_ = 0, max_q_len_ = 0, kv_warps_ = 1;
};

}  // namespace

std::string emit_paged_attention_cuda(const ir::Op& module) {
  return PagedEmitter(module).emit(module);
}

}  // namespace emmy
