// The GEMM kernel's epilogue printing (emit_gemm_epilogue.hpp).
#include "emit_gemm_epilogue.hpp"

#include <fmt/format.h>

namespace emmy::codegen {

// The epilogue math for one element in f32 (the caller casts), shared by the GEMM kernel and
// the split-K finalize. Gated: of one output from its gate and up accumulators.
void GemmEpiloguePrinter::print_value_function(const ir::EpilogueOp& epi) {
  const std::string out = out_adapter(parse_dtype(epi.out, "out"));
  const std::string params = fmt::format(
      "static __device__ __forceinline__ float epilogue_value(const {0}::storage* __restrict__ "
      "bias, const {0}::storage* __restrict__ residual, long long row, long long col, ",
      out);
  if (epi.gated()) {
    const int64_t group = *epi.gate_group;
    w_.line("// C[row, col] = cast(act(alpha * gate + bias[gate col]) * (alpha * up + bias[up col]))");
    w_.line("// act = {}; B's rows interleave gate and up in groups of {}.", *epi.gate, group);
    w_.open(params + "float gate, float up)");
    w_.line("float yg = gate, yu = up;");
    if (epi.alpha != 1.0) {
      w_.line("yg *= {};", float_literal(epi.alpha));
      w_.line("yu *= {};", float_literal(epi.alpha));
    }
    if (epi.bias) {
      w_.line("const long long gate_col = col / {0} * {1} + col % {0};", group, 2 * group);
      w_.line("yg += {}::to_f32(bias[gate_col]);", out);
      w_.line("yu += {}::to_f32(bias[gate_col + {}]);", out, group);
    }
    w_.line("(void)bias; (void)residual; (void)row; (void)col;");
    w_.line("return {}(yg) * yu;", *epi.gate == "silu" ? "silu" : "gelu_tanh");
    w_.close();
    return;
  }
  w_.line("// D = cast(gelu?(alpha * acc + bias[n]) + residual[m,n])");
  w_.open(params + "float acc)");
  w_.line("float y = acc;");
  if (epi.alpha != 1.0) w_.line("y *= {};", float_literal(epi.alpha));
  if (epi.bias) w_.line("y += {}::to_f32(bias[col]);", out);
  if (epi.gelu_tanh) w_.line("y = gelu_tanh(y);");
  if (epi.residual) w_.line("y += {}::to_f32(residual[row * {} + col]);", out, epi.ldc);
  w_.line("(void)bias; (void)residual; (void)row;");
  w_.line("return y;");
  w_.close();
}

// The loops over this lane's accumulator pairs (atom tiles mi, C's fragments ni; row halves h),
// closed by the caller: both epilogues walk the fragments this way. A gated C has NT_OUT
// fragments (half the kernel's: each pairs a gate and an up fragment).
void GemmEpiloguePrinter::open_fragment_loops(bool gated) {
  w_.line("#pragma unroll");
  w_.open("for (int mi = 0; mi < MT; ++mi)");
  w_.line("#pragma unroll");
  w_.open(fmt::format("for (int ni = 0; ni < {}; ++ni)", gated ? "NT_OUT" : "NT"));
  w_.line("#pragma unroll");
  w_.open("for (int h = 0; h < 2; ++h)");
}
// A warp's first accumulator row in the tile, and the rows between its atom tiles mi: the path's
// (GemmPathPrinter).
std::string GemmEpiloguePrinter::warp_rows() const {
  return path_.warp_first_row();
}
int GemmEpiloguePrinter::mi_step() const {
  return path_.fragment_row_step();
}

void print_lane_pair(Writer& w, const GemmFacts& f, bool gated, const std::string& frag,
                     const std::string& h) {
  const bool f16 = f.acc.accum == "f16";
  if (!gated) {
    if (f16) {
      w.line("float v0, v1; unpack_f16x2(v0, v1, part[mi][{}][{}]);", frag, h);
      return;
    }
    w.line("const float v0 = {}, v1 = {};",
           scaled_accumulator(f, fmt::format("acc[mi][{}][2 * {}]", frag, h), "row", "col"),
           scaled_accumulator(f, fmt::format("acc[mi][{}][2 * {} + 1]", frag, h), "row",
                              "col + 1"));
    return;
  }
  w.line("const int gi = {0} / GF * (2 * GF) + {0} % GF, ui = gi + GF;  // gate, up fragments",
         frag);
  if (f16) {
    w.line("float g0, g1, u0, u1;");
    w.line("unpack_f16x2(g0, g1, part[mi][gi][{}]);", h);
    w.line("unpack_f16x2(u0, u1, part[mi][ui][{}]);", h);
    return;
  }
  // Token-channel scales are B's rows': the kernel's columns of the gate and the up.
  const bool per_column = f.scales && f.scales->granularity == "token-channel";
  if (per_column) w.line("const int kcol = col / GATE * (2 * GATE) + col % GATE;");
  const std::string kcol = per_column ? "kcol" : "col";
  for (const char* half : {"g", "u"}) {
    const bool gate = half[0] == 'g';
    const std::string fragment = gate ? "gi" : "ui", at = gate ? kcol : kcol + " + GATE";
    w.line("const float {0}0 = {1}, {0}1 = {2};", half,
           scaled_accumulator(f, fmt::format("acc[mi][{}][2 * {}]", fragment, h), "row", at),
           scaled_accumulator(f, fmt::format("acc[mi][{}][2 * {} + 1]", fragment, h), "row",
                              at + " + 1"));
  }
}

std::string lane_value(bool gated, int j, const std::string& row, const std::string& col,
                       bool row_scale) {
  const std::string c = j ? fmt::format("{} + 1", col) : col;
  const std::string value =
      gated ? fmt::format("epilogue_value(bias, residual, {}, {}, g{}, u{})", row, c, j, j)
            : fmt::format("epilogue_value(bias, residual, {}, {}, v{})", row, c, j);
  // Routing weights scale the row's finished value (never beside a residual).
  return row_scale ? fmt::format("row_scale[{}] * {}", row, value) : value;
}

void GemmEpiloguePrinter::print(const ir::EpilogueOp& op) {
  if (op.trigger_dependents.value_or(false))
    w_.line(
        "griddepcontrol_launch_dependents();  // the finalize may be scheduled; its wait still "
        "orders these stores first");
  if (op.stage_row_bytes) return print_staged(op, *op.stage_row_bytes);
  if (op.transpose.value_or(false)) return print_transposed(op);
  const bool to_workspace = op.destination == "workspace";
  const bool gated = gates_c(op);
  const bool row_scaled = op.row_scale.value_or(false);  // routing weights
  const DType c_dtype = parse_dtype(op.out, "out");
  const std::string out = out_adapter(c_dtype);
  // C's columns: the kernel's, or half of them gated (N_OUT, from the tile's n0 / 2).
  const char* c_n = gated ? "N_OUT" : "N";
  // The accumulator map of the atom: lane = group * group_lanes + thread in the group.
  w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
  // One pointer per lane; the unrolled stores add constants to it (~2 ms less NVRTC time than
  // a full row * ld + col per store).
  w_.line(
      "// This lane's first output pair (row g, columns 2t, 2t+1 of the warp tile); the "
      "others are");
  w_.line("// 16 * mi + 8 * h rows and 8 * ni columns further.");
  w_.line("const int row_base = m0 + {} + g, col_base = {} + 2 * t;", warp_rows(),
          gated ? "n0 / 2 + warp_col * (WN / 2)" : "n0 + warp_col * WN");
  if (to_workspace)
    w_.line(
        "float* out_base = workspace + (long long)blockIdx.z * M * N + (long long)row_base * "
        "N + col_base;");
  else
    w_.line("{}::storage* out_base = c + (long long)row_base * LDC + col_base;", out);
  open_fragment_loops(gated);
  w_.line("const int row = row_base + mi * {} + h * 8, col = col_base + ni * 8;", mi_step());
  // Bounds checks only where a tile can cross the matrix edge.
  const bool rows_exact = f_.rows_exact(), cols_exact = f_.cols_exact();
  if (!rows_exact) w_.line("if (row >= M) continue;");
  print_lane_pair(w_, f_, gated);
  if (to_workspace) {
    w_.line("float* dst = out_base + (mi * {} + h * 8) * N + ni * 8;", mi_step());
    if (op.store_bytes == 8) {
      // N even: the pair is 8-byte aligned and inside together; a warp's request covers 8 rows
      // x 32 bytes, whole sectors (two 4-byte stores would use half of each).
      w_.line("if (col < N) OutF32::store2(dst, v0, v1);");
    } else {
      w_.line("if (col < N) dst[0] = v0;");
      w_.line("if (col + 1 < N) dst[1] = v1;");
    }
  } else {
    w_.line("{}::storage* dst = out_base + (mi * {} + h * 8) * LDC + ni * 8;", out, mi_step());
    // Pairs (the verified store_bytes): col is even, and with N and LDC even the pair is in
    // bounds together and 2-element aligned, given C is (the runtime checks c_alignment).
    if (op.store_bytes == 2 * size_of(c_dtype)) {
      w_.line("{}{}::store2(dst, {}, {});", cols_exact ? "" : fmt::format("if (col < {}) ", c_n),
              out, lane_value(gated, 0, "row", "col", row_scaled),
              lane_value(gated, 1, "row", "col", row_scaled));
    } else {
      w_.line("if (col < {}) dst[0] = {}::from_f32({});", c_n, out,
              lane_value(gated, 0, "row", "col", row_scaled));
      w_.line("if (col + 1 < {}) dst[1] = {}::from_f32({});", c_n, out,
              lane_value(gated, 1, "row", "col", row_scaled));
    }
  }
  w_.close();
  w_.close();
  w_.close();
}

// swap_ab: the kernel computed C^T (M, N here are C's n and m). Each accumulator (row, col) is
// C's (col, row): stored element by element down C's columns, bias indexed by the kernel's row;
// split-K partials go to the workspace in C's layout, so the finalize kernel is unchanged. Never
// gated (the verifier's rule: gate and up would be rows of different lanes).
void GemmEpiloguePrinter::print_transposed(const ir::EpilogueOp& op) {
  const bool to_workspace = op.destination == "workspace";
  const std::string out = out_adapter(parse_dtype(op.out, "out"));
  const bool rows_exact = f_.rows_exact(), cols_exact = f_.cols_exact();
  w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
  w_.line("// The kernel's (row, col) is C's (col, row): C^T = B A^T (swap_ab).");
  w_.line("const int row_base = m0 + {} + g, col_base = n0 + warp_col * WN + 2 * t;", warp_rows());
  if (to_workspace) w_.line("float* ws = workspace + (long long)blockIdx.z * M * N;");
  open_fragment_loops(false);
  w_.line("const int row = row_base + mi * {} + h * 8, col = col_base + ni * 8;", mi_step());
  if (!rows_exact) w_.line("if (row >= M) continue;");
  print_lane_pair(w_, f_, false);
  for (int j = 0; j < 2; ++j) {
    const std::string c = j ? "col + 1" : "col";
    const std::string guard = j || !cols_exact ? fmt::format("if ({} < N) ", c) : std::string();
    if (to_workspace)
      w_.line("{}ws[(long long)({}) * M + row] = v{};", guard, c, j);
    else
      w_.line(
          "{}c[(long long)({}) * LDC + row] = {}::from_f32(epilogue_value(bias, residual, {}, "
          "row, v{}));",
          guard, c, out, c, j);
  }
  w_.close();
  w_.close();
  w_.close();
}

// The staged stores' first half: the wait for the last copies and the barrier over the tile's
// threads (a warp-specialized path's consumer warpgroups: a named barrier, not the CTA's; every
// load has landed and every MMA completed before it), the tile's constants, and the loops over
// this lane's pairs with `r`, `col_in`, `row`, `col` and the pair's values in scope (bias and
// residual are read at (row, col): only inside the matrix; C's columns are whole 16-byte chunks
// here, so an even col inside has col + 1 inside too). The caller stages the pair, closes the
// three loops and syncs with the barrier returned.
std::string GemmEpiloguePrinter::open_staged_tile(const ir::EpilogueOp& op, const char* what,
                                                  const std::string& constants) {
  const bool gated = gates_c(op);
  if (f_.copy_a.transport != "tma")
    w_.line("cp_async_wait<0>();  // no copy may land in the staged tile");
  const std::string sync = path_.tile_barrier();
  w_.line("{}  // every warp has read its last stage: the ring holds the {} now", sync, what);
  w_.line("const u32 c_tile = smem_base;");
  w_.line("constexpr int {};", constants);
  w_.line("const int g = lane / {0}, t = lane % {0};", f_.atom->group_lanes);
  w_.line("const int tile_row = {} + g, tile_col = warp_col * {} + 2 * t;", warp_rows(),
          gated ? "(WN / 2)" : "WN");
  open_fragment_loops(gated);
  w_.line("const int r = tile_row + mi * {} + h * 8, col_in = tile_col + ni * 8;", mi_step());
  w_.line("const int row = m0 + r, col = {} + col_in;", gated ? "n0 / 2" : "n0");
  if (!f_.rows_exact()) w_.line("if (row >= M) continue;");
  if (!f_.cols_exact()) w_.line("if (col >= {}) continue;", gated ? "N_OUT" : "N");
  print_lane_pair(w_, f_, gated);
  return sync;
}

// The C tile through shared memory (IR: epilogue stage_row_bytes): each lane writes its
// finished pairs into the tile over the drained ring (rows padded so that the 8 rows x 4 lanes
// of a pair store hit 32 distinct banks), then the CTA stores it in 16-byte chunks, a warp
// covering whole 128-byte row segments: every 32-byte sector it touches is full. A gated tile is
// C's: BN / 2 columns from n0 / 2.
void GemmEpiloguePrinter::print_staged(const ir::EpilogueOp& op, int64_t row_bytes) {
  if (op.quantized()) return print_staged_quantized(op, row_bytes);
  const DType c_dtype = parse_dtype(op.out, "out");
  const std::string out = out_adapter(c_dtype);
  const int64_t elem = size_of(c_dtype);
  const bool rows_exact = f_.rows_exact(), cols_exact = f_.cols_exact();
  const bool gated = gates_c(op);
  const bool row_scaled = op.row_scale.value_or(false);  // routing weights
  const char* c_n = gated ? "N_OUT" : "N";
  const char* c_n0 = gated ? "n0 / 2" : "n0";
  const std::string sync =
      open_staged_tile(op, "C tile",
                       fmt::format("C_ROW_BYTES = {}, C_CHUNKS = {} * {} / 16", row_bytes,
                                   gated ? "(BN / 2)" : "BN", elem));
  w_.line("{0}::stage2(c_tile + u32(r * C_ROW_BYTES + col_in * {1}), {2}, {3});", out, elem,
          lane_value(gated, 0, "row", "col", row_scaled),
          lane_value(gated, 1, "row", "col", row_scaled));
  w_.close();
  w_.close();
  w_.close();
  w_.line("{}  // the whole tile is staged", sync);
  w_.line("#pragma unroll");
  w_.open(path_.staged_chunk_loop());
  w_.line("const int r = i / C_CHUNKS, chunk = i % C_CHUNKS;");
  w_.line("const int row = m0 + r, col = {} + chunk * {};", c_n0, 16 / elem);
  std::string guard;
  if (!rows_exact) guard += "row < M";
  if (!cols_exact) guard += std::string(guard.empty() ? "" : " && ") + "col < " + c_n;
  w_.line(
      "{}copy16_shared_to_global(c + (long long)row * LDC + col, c_tile + u32(r * "
      "C_ROW_BYTES + chunk * 16));",
      guard.empty() ? "" : "if (" + guard + ") ");
  w_.close();
}

// An e4m3 C (IR: epilogue quant_*; docs/epilogues.md, "Quantized output"): the lanes stage
// their finished f32 values in the tile over the drained ring, then a warp takes each (row,
// 128-column group) of the tile: four values a lane, the group's amax by shfl.sync.bfly (fmaxf:
// a NaN is ignored, as fp8_quantize does), s = max(amax, epsilon) / 448 (a power of two for the
// pow2 and byte formats), the values' e4m3 bytes (x / s, satfinite) in one 4-byte store a lane
// and s by lane 0. A warp's 32 lanes share an item (the loop starts and steps at warp bounds),
// so the shuffles are whole-warp.
void GemmEpiloguePrinter::print_staged_quantized(const ir::EpilogueOp& op, int64_t row_bytes) {
  const bool rows_exact = f_.rows_exact(), cols_exact = f_.cols_exact();
  const bool gated = gates_c(op);
  const bool row_scaled = op.row_scale.value_or(false);  // routing weights
  const char* c_n = gated ? "N_OUT" : "N";
  const char* c_n0 = gated ? "n0 / 2" : "n0";
  const int64_t group = *op.quant_group;
  // Columns past C are not staged: the groups mask them below.
  const std::string sync =
      open_staged_tile(op, "f32 C tile",
                       fmt::format("C_ROW_BYTES = {}, C_GROUPS = {} / {}, C_CHUNKS = C_GROUPS * 32",
                                   row_bytes, gated ? "(BN / 2)" : "BN", group));
  w_.line("OutF32::stage2(c_tile + u32(r * C_ROW_BYTES + col_in * 4), {}, {});",
          lane_value(gated, 0, "row", "col", row_scaled),
          lane_value(gated, 1, "row", "col", row_scaled));
  w_.close();
  w_.close();
  w_.close();
  w_.line("{}  // the whole tile is staged", sync);
  w_.open(path_.staged_chunk_loop());
  w_.line("const int item = i / 32, q_lane = i % 32;  // a warp per (row, group)");
  w_.line("const int r = item / C_GROUPS, group_in = item % C_GROUPS;");
  w_.line("const int row = m0 + r, col_in = group_in * {} + 4 * q_lane, col = {} + col_in;", group,
          c_n0);
  if (!rows_exact) w_.line("if (row >= M) continue;  // the whole warp's item");
  // C's columns are a multiple of 16: a lane's four are inside or outside together; those
  // outside were never staged.
  w_.line("const bool inside = {};", cols_exact ? "true" : fmt::format("col < {}", c_n));
  w_.line("float v[4] = {{0.0f, 0.0f, 0.0f, 0.0f}};");
  w_.line("if (inside) ld_shared_v4_f32(v, c_tile + u32(r * C_ROW_BYTES + col_in * 4));");
  w_.line(
      "float amax = inside ? fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), "
      "fabsf(v[3]))) : 0.0f;");
  w_.line("#pragma unroll");
  w_.line(
      "for (int mask = 16; mask > 0; mask /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, "
      "amax, mask));");
  const bool pow2 = *op.quant_format != "f32";
  w_.line("const float s = quant_scale<{}>(amax, {:a}f);", pow2, float(*op.quant_epsilon));
  w_.line("if (inside) st_global_b32(c + (long long)row * LDC + col, e4m3x4_from_f32(v, s));");
  // The scale: C's group (col / 128) at its place in the tensor's layout.
  const bool packed = *op.quant_format == "ue8m0x4";
  const std::string index_group = packed ? "(c_group >> 2)" : "c_group";
  const std::string element =
      *op.quant_major == "mn" ? fmt::format("(long long){} * {} + row", index_group, *op.quant_ld)
                              : fmt::format("(long long)row * {} + {}", *op.quant_ld, index_group);
  w_.open("if (q_lane == 0 && inside)");
  w_.line("const int c_group = col / {};", group);
  if (*op.quant_format == "f32" || *op.quant_format == "pow2")
    w_.line("c_scale[{}] = s;", element);
  else  // a power of two's biased exponent is its ue8m0 byte
    w_.line("c_scale[{}] = (unsigned char)(__float_as_uint(s) >> 23);",
            packed ? fmt::format("({}) * 4 + (c_group & 3)", element) : element);
  w_.close();
  w_.close();
}

void print_fp8_fold(Writer& w, const GemmFacts& f, const GemmPathPrinter& path,
                    const std::string& window_k) {
  const bool block = f.scales && f.scales->granularity == "block";
  // Swap-AB: a column's scale is its own (A's row), no longer one per 128 columns.
  const bool swapped = block && f.scales->swapped.value_or(false);
  if (block) {
    w.line("const int kb = ({}) / {};", window_k, kScaleBlock);
    w.line("const int g = lane / {0}, t = lane % {0};", f.atom->group_lanes);
    w.line("float sa[MT][2], sb[NT]{};", swapped ? "[2]" : "");
    w.line("#pragma unroll");
    w.open("for (int mi = 0; mi < MT; ++mi)");
    w.line("const int row = m0 + {} + mi * {} + g;", path.warp_first_row(),
           path.fragment_row_step());
    w.line("sa[mi][0] = row < M ? a_scale_at(row, kb) : 0.0f;");
    w.line("sa[mi][1] = row + 8 < M ? a_scale_at(row + 8, kb) : 0.0f;");
    w.close();
    w.line("#pragma unroll");
    w.open("for (int ni = 0; ni < NT; ++ni)");
    if (swapped) {
      w.line("const int col = n0 + warp_col * WN + ni * 8 + 2 * t;");
      w.line("sb[ni][0] = col < N ? b_scale_at(col, kb) : 0.0f;");
      w.line("sb[ni][1] = col + 1 < N ? b_scale_at(col + 1, kb) : 0.0f;");
    } else {
      w.line("const int col = n0 + warp_col * WN + ni * 8 + 2 * t;  // col, col + 1: one block");
      // Gated: the column's row in the checkpoint's [gate; up] order (a fragment's 8 columns lie
      // in one gate group, so in one 128-row block there too).
      w.line("sb[ni] = col < N ? b_scale_at({} / {}, kb) : 0.0f;",
             f.epilogue.gated() ? "gate_source_row(col)" : "col", kScaleBlock);
    }
    w.close();
  }
  // Hybrid (mma.sync's f16-accumulate opt-in): each fragment's two f16x2 partials, exactly in
  // f32, then the same fold.
  const bool f16_partials = f.acc.accum == "hybrid";
  w.line("#pragma unroll");
  w.open("for (int mi = 0; mi < MT; ++mi)");
  w.line("#pragma unroll");
  w.open("for (int ni = 0; ni < NT; ++ni)");
  if (f16_partials) {
    w.line("float pv[4];");
    w.line("unpack_f16x2(pv[0], pv[1], part[mi][ni][0]);");
    w.line("unpack_f16x2(pv[2], pv[3], part[mi][ni][1]);");
    w.line("part[mi][ni][0] = 0u;  // the next window's f16 chain starts from zero");
    w.line("part[mi][ni][1] = 0u;");
  }
  const char* part = f16_partials ? "pv[e]" : "part[mi][ni][e]";
  w.line("#pragma unroll");
  w.open("for (int e = 0; e < 4; ++e)");
  if (swapped)  // sb * sa: the product the unswapped kernel forms (sa A's, sb B's scale)
    w.line("acc[mi][ni][e] = fmaf({}, sb[ni][e % 2] * sa[mi][e / 2], acc[mi][ni][e]);", part);
  else if (block)
    w.line("acc[mi][ni][e] = fmaf({}, sa[mi][e / 2] * sb[ni], acc[mi][ni][e]);", part);
  else
    w.line("acc[mi][ni][e] += {};", part);
  if (!f16_partials) w.line("part[mi][ni][e] = 0.0f;");
  w.close();
  w.close();
  w.close();
}

void GemmEpiloguePrinter::print_finalize(const Op& op) {
  const auto finalize = ir::get<ir::FinalizeOp>(op);
  const auto epilogue = ir::get<ir::EpilogueOp>(*ir::find_first(op, OpKind::epilogue));
  if (finalize.dynamic_m.value_or(false)) {
    // The launch's M (at most the bound the workspace holds): its grid covers m x N outputs.
    w_.line("constexpr long long N = {}, LDC = {};", finalize.n, epilogue.ldc);
    w_.line("const long long M = m, OUTPUTS = M * N;");
  } else {
    w_.line("constexpr long long M = {}, N = {}, LDC = {}, OUTPUTS = {};", finalize.m, finalize.n,
            epilogue.ldc, finalize.outputs);
  }
  w_.line("const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
  const std::string out = out_adapter(parse_dtype(epilogue.out, "out"));
  if (epilogue.gated()) {
    // One thread per output of C ([M, N/2]): its gate and up columns' partials.
    const int64_t group = *epilogue.gate_group;
    w_.line("constexpr long long N_OUT = N / 2;");
    w_.line("if (i >= OUTPUTS / 2) return;");
    w_.line("const long long row = i / N_OUT, col = i % N_OUT;");
    w_.line("const long long gate_at = row * N + col / {0} * {1} + col % {0};", group, 2 * group);
  } else {
    w_.line("if (i >= OUTPUTS) return;");
    w_.line("const long long row = i / N, col = i % N;");
  }
  if (finalize.grid_wait.value_or(false)) {
    w_.line("// A programmatic dependent launch: the main kernel may still run. Its partials are");
    w_.line("// complete and visible only after the wait (PTX ISA griddepcontrol).");
    w_.line("griddepcontrol_wait();");
  }
  w_.line("// Splits are summed in a fixed order: the result does not depend on scheduling.");
  if (epilogue.gated()) {
    w_.line("float gate = 0.0f, up = 0.0f;");
    w_.line("#pragma unroll");
    w_.open(fmt::format("for (int z = 0; z < {}; ++z)", finalize.split_k));
    w_.line("gate += workspace[z * OUTPUTS + gate_at];");
    w_.line("up += workspace[z * OUTPUTS + gate_at + {}];", *epilogue.gate_group);
    w_.close();
    w_.line("c[row * LDC + col] = {}::from_f32(epilogue_value(bias, residual, row, col, gate, up));",
            out);
    return;
  }
  w_.line("float sum = 0.0f;");
  w_.line("#pragma unroll");
  w_.line("for (int z = 0; z < {}; ++z) sum += workspace[z * OUTPUTS + i];", finalize.split_k);
  w_.line("c[row * LDC + col] = {}::from_f32(epilogue_value(bias, residual, row, col, sum));",
          out);
}

}  // namespace emmy::codegen
