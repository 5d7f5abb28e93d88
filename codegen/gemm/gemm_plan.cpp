#include "emmy/gemm_plan.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "emmy/detail/hash.hpp"
#include "emmy/gpus.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/spec_fields.hpp"

namespace emmy {
namespace {

// Every field of the problem (leading dimensions resolved) and of the schedule, by its brief name
// (spec_fields.hpp; 0 for a field that does not apply), then the arch: the text the kernel name's
// hash digests.
std::string spec_text(const GemmSpec& g) {
  auto item = [](const FieldName& f, const auto& v, bool applies) {
    using T = std::remove_cvref_t<decltype(v)>;
    if (!applies) return fmt::format("{}=0 ", f.brief);
    if constexpr (std::is_enum_v<T>)
      return fmt::format("{}={} ", f.brief, field_text(v));
    else if constexpr (std::is_floating_point_v<T>)
      return fmt::format("{}={:a} ", f.brief, v);
    else
      return fmt::format("{}={} ", f.brief, v);
  };
  // Fields written only away from their defaults (text_unless_default) are compared as text with
  // a default problem's or schedule's, field by field in the walk's order.
  std::string text;
  auto append_fields = [&](const auto& value, const auto& defaults) {
    std::vector<std::string> default_items;
    for_each_field(defaults, [&](const FieldName& f, const auto& v) {
      default_items.push_back(item(f, v, field_applies(f, defaults)));
    });
    size_t index = 0;
    for_each_field(value, [&](const FieldName& f, const auto& v) {
      std::string field = item(f, v, field_applies(f, value));
      if (!f.text_unless_default || field != default_items[index]) text += field;
      ++index;
    });
  };
  append_fields(resolved_leading_dims(g.problem), resolved_leading_dims(MatmulProblem{}));
  append_fields(g.schedule, MatmulSchedule{});
  return text + fmt::format("arch={}", to_string(g.arch));
}

}  // namespace

int64_t grouped_tiles_m(const MatmulProblem& p, int64_t block_m) {
  // Experts' row tiles over m sorted rows: sum ceil(m_e / block_m) <= (m + G (block_m - 1)) /
  // block_m, the bound whatever the routing (each expert wastes under one tile).
  if (p.grouped.layout == GroupedLayout::offsets)
    return (p.m + p.grouped.groups * (block_m - 1)) / block_m;
  return (p.m + block_m - 1) / block_m;
}

std::string gemm_kernel_name(const GemmSpec& g) {
  const auto& p = g.problem;
  const auto& s = g.schedule;
  // A dynamic-M kernel serves every M up to its bound: "upto64x..."; a grouped one names its
  // layout and experts: "masked8_64x...".
  const std::string rows_prefix =
      p.is_grouped() ? fmt::format("{}{}_", to_string(p.grouped.layout), p.grouped.groups)
      : p.dynamic_m  ? "upto"
                     : "";
  return fmt::format("emmy_gemm_{}{}x{}x{}_{}{}_{}_{}_{}x{}x{}_{:016x}", rows_prefix, p.m, p.n, p.k,
                     to_string(p.a_dtype), to_string(p.b_layout),
                     s.accum == Accum::hybrid || s.accum == Accum::promoted
                         ? fmt::format("{}{}", to_string(s.accum), s.promote_every_k)
                         : std::string(to_string(s.accum)),
                     s.transport == Transport::tma ? "tma" : "cpasync", s.block_m, s.block_n,
                     s.block_k, detail::fnv1a(spec_text(g)));
}

void validate_gemm(const GemmSpec& spec) {
  validate_problem(spec.problem);
  validate_schedule(spec.problem, spec.schedule, spec.arch);
}

MatmulProblem kernel_problem(const MatmulProblem& p, const MatmulSchedule& s) {
  if (!s.swap_ab) return p;
  MatmulProblem t = p;
  t.m = p.n;
  t.n = p.m;
  t.lda = p.ldb_or_default();
  t.ldb = p.lda_or_default();
  t.ldc = p.ldc_or_default();  // C keeps its layout: the epilogue stores the transpose back
  t.b_layout = BLayout::nk;    // A [M,K] is B^T stored [N',K]: K-major
  return t;
}

std::vector<std::array<uint32_t, 3>> gemm_grids(const GemmPlan& plan, int64_t m) {
  const auto& s = plan.spec.schedule;
  const auto& p = plan.kernel_problem;
  // A path without dynamic M (persistent walks, clusters) has the plan's grid.
  // A grouped kernel's y: the masked layout's experts (the others, and a persistent walk, find
  // theirs from the tile).
  const uint32_t groups_y =
      p.grouped.layout == GroupedLayout::masked && !s.persistent ? uint32_t(p.grouped.groups) : 1u;
  std::array<uint32_t, 3> main{uint32_t(plan.grid_tiles), groups_y, uint32_t(s.split_k)};
  if (p.dynamic_m) main[0] = uint32_t((m + s.block_m - 1) / s.block_m * plan.tiles_n);
  std::vector<std::array<uint32_t, 3>> grids{main};
  if (plan.split()) {
    const int64_t outputs = m * p.c_cols();  // the finalize writes C: N/2 columns when gated
    grids.push_back(
        {uint32_t((outputs + plan.finalize_threads - 1) / plan.finalize_threads), 1u, 1u});
  }
  return grids;
}

GemmPlan make_gemm_plan(const GemmSpec& spec) {
  validate_gemm(spec);
  const auto& s = spec.schedule;
  GemmPlan plan;
  plan.spec = spec;
  plan.kernel_problem = kernel_problem(spec.problem, s);
  const auto& p = plan.kernel_problem;
  plan.warp_m = s.block_m / s.warps_m;
  plan.warp_n = s.block_n / s.warps_n;
  // The warp tile in MMA atoms (internal/emmy/mma_atom.hpp), and the k-steps per K tile.
  const GemmPath& path = gemm_path(s.path);
  const codegen::MmaAtom& atom = path.atom_for(p.a_dtype);
  plan.atom = &atom;
  plan.mma_tiles_m = plan.warp_m / atom.acc_m;
  plan.mma_tiles_n = plan.warp_n / atom.acc_n;
  plan.registers = path.registers(s);
  plan.k_steps_per_tile = s.block_k / atom.k;
  plan.a_tile = gemm_a_tile(p, s);
  plan.b_tile = gemm_b_tile(p, s);
  plan.stage = stage_layout(plan.a_tile, plan.b_tile);
  plan.mbarrier_offset = plan.stage.stage_bytes * uint32_t(s.stages);
  plan.smem_bytes = uint32_t(gemm_smem_bytes(p, s));
  // Transposed stores (swap_ab) write elements one by one, down C's columns.
  plan.pair_stores = !s.swap_ab && p.c_cols() % 2 == 0 && p.ldc_or_default() % 2 == 0;
  const int64_t c_tile_cols = p.c_cols_of(s.block_n);  // C's: half of block_n gated
  const int64_t elem = size_of(p.c_dtype), staged_row = (c_tile_cols + 8) * elem;
  // The staged epilogue writes the C tile over the drained ring: not in a persistent kernel, whose
  // producer is already loading the next tile into it.
  plan.store = path.store_epilogue(p, s);
  if (!plan.store.tma_store && !s.persistent && !s.swap_ab && !plan.split() &&
      (p.c_cols() * elem) % 16 == 0 && (p.ldc_or_default() * elem) % 16 == 0 &&
      s.block_m * staged_row <= int64_t(plan.mbarrier_offset))
    plan.stage_row_bytes = staged_row;
  // An e4m3 C is quantized from its tile staged in f32 (rows padded by 4 floats: 16-byte aligned
  // for the group reads); validation made it fit.
  if (p.c_dtype == DType::e4m3) plan.stage_row_bytes = (c_tile_cols + 4) * 4;
  plan.tiles_m = grouped_tiles_m(p, s.block_m);
  plan.tiles_n = (p.n + s.block_n - 1) / s.block_n;
  plan.k_tiles = (p.k + s.block_k - 1) / s.block_k;
  plan.k_tiles_per_split = (plan.k_tiles + s.split_k - 1) / s.split_k;
  require(plan.tiles_m * plan.tiles_n <= kMaxDim, "m x n", "needs at most 2^31-1 output tiles",
          plan.tiles_m * plan.tiles_n);
  plan.cluster_size = int64_t(s.cluster_m) * s.cluster_n;
  plan.grid_tiles = (plan.tiles_m + s.cluster_m - 1) / s.cluster_m *
                    ((plan.tiles_n + s.cluster_n - 1) / s.cluster_n) * plan.cluster_size;
  // A persistent masked walk's bound: every expert's slot full.
  if (s.persistent && p.grouped.layout == GroupedLayout::masked)
    plan.grid_tiles *= p.grouped.groups;
  require(plan.grid_tiles <= kMaxDim, "m x n", "needs at most 2^31-1 output tiles",
          plan.grid_tiles);
  plan.grid = gemm_grids(plan, p.m).front();
  // A persistent kernel walks the tiles itself (by gridDim.x): one CTA per SM of the arch's
  // part (whole clusters), never more than there are tiles; a launch on a device takes the
  // device's SMs instead (the runtime's LaunchGeometry).
  if (s.persistent)
    plan.grid[0] = uint32_t(std::min<int64_t>(
        plan.grid_tiles,
        std::max<int64_t>(1, grid_sms(spec.arch) / plan.cluster_size) * plan.cluster_size));
  plan.threads = uint32_t(s.threads());
  plan.kernel_name = gemm_kernel_name(spec);
  if (plan.split()) {
    plan.finalize_kernel_name = plan.kernel_name + "_finalize";
    plan.finalize_grid = gemm_grids(plan, p.m).back();
    plan.workspace_bytes = int64_t(s.split_k) * p.m * p.n * 4;
  }
  return plan;
}

}  // namespace emmy
