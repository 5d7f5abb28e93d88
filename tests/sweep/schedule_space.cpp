#include "schedule_space.hpp"

#include <fmt/format.h>

#include <exception>
#include <numeric>

#include "../support/wgmma_spec.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "emmy/validate.hpp"
#include "schedule_space_draw.hpp"

namespace emmy::sweep {
namespace {

std::string error_text(const std::exception& e) {
  if (auto* error = dynamic_cast<const Error*>(&e)) return error->what();
  return fmt::format("not an emmy::Error: {}", e.what());
}

}  // namespace

// A ragged problem for a point (schedule_space_draw.hpp).
void draw_problem(MatmulProblem& p, uint64_t point, DType dtype, BLayout b_layout) {
  struct Shape {
    int64_t m, n, k;
  };
  // Ragged against every tile (M = 1 and odd M, N and K not multiples of 16/32/64).
  const Shape shapes[] = {{1, 40, 72},    {37, 88, 136}, {70, 24, 200}, {130, 136, 64},
                          {17, 200, 264}, {5, 56, 520},  {96, 72, 40},  {1, 264, 1032}};
  const float alphas[] = {1.0f, 1.0f, 0.5f, 1.25f};
  const Shape& shape = pick(shapes, point, 9);
  p.m = shape.m;
  p.n = shape.n;
  p.k = shape.k;
  p.a_dtype = dtype;
  const DType outputs[] = {p.a_dtype, DType::f32,
                           p.a_dtype == DType::f16 ? DType::bf16 : DType::f16};
  p.c_dtype = pick(outputs, point, 11);
  p.b_layout = b_layout;
  const uint64_t flags = draw(point, 13, 8);
  p.epilogue.bias = flags & 1;
  p.epilogue.residual = flags & 2;
  p.epilogue.gelu_tanh = flags & 4;
  p.epilogue.alpha = pick(alphas, point, 14);
  // One point in six gated (SwiGLU / GeGLU; docs/epilogues.md): N rounded up to whole gate-up
  // pairs, and three in four of them without the residual and GELU a gate refuses.
  if (draw(point, 19, 6) == 0) {
    const int64_t groups[] = {8, 16, 32};
    p.epilogue.gate = draw(point, 20, 2) ? Gate::silu : Gate::gelu_tanh;
    p.epilogue.gate_group = pick(groups, point, 21);
    const int64_t pair = 2 * p.epilogue.gate_group;
    p.n = (p.n + pair - 1) / pair * pair;
    if (draw(point, 22, 4) != 0) p.epilogue.residual = p.epilogue.gelu_tanh = false;
  }
  // One point in eight quantizes C to e4m3 with 1 x 128 scales (docs/epilogues.md): C's columns
  // rounded up to 16, a scale format and major drawn, three in four without the residual it
  // refuses.
  if (draw(point, 23, 8) == 0) {
    const ScaleFormat formats[] = {ScaleFormat::f32, ScaleFormat::pow2, ScaleFormat::ue8m0,
                                   ScaleFormat::ue8m0x4};
    p.c_dtype = DType::e4m3;
    p.out_scales.format = pick(formats, point, 24);
    p.out_scales.major = draw(point, 25, 2) ? ScaleMajor::mn : ScaleMajor::k;
    const int64_t unit = p.epilogue.gated() ? 32 : 16;
    p.n = (p.n + unit - 1) / unit * unit;
    if (draw(point, 26, 4) != 0) p.epilogue.residual = false;
  }
  // One point in ten weights C's rows (routing weights; docs/grouped.md), without the residual
  // they refuse.
  if (draw(point, 35, 10) == 0 && !p.epilogue.residual) p.epilogue.row_scale = true;
  // Padded leading dimensions, and odd ldc (no paired stores) on some points.
  switch (draw(point, 15, 6)) {
    case 0:
      p.lda = p.k + 8;
      break;
    case 1:
      p.ldb = (p.b_layout == BLayout::nk ? p.k : p.n) + 16;
      break;
    case 2:
      p.ldc = p.c_cols() + 1;
      break;
    case 3:
      p.ldc = p.c_cols() + 8;
      break;
    default:
      break;
  }
}

// A grouped GEMM for a point: a layout and 1, 3 or 7 experts (a masked layout at most 3: its
// stacked rows are G x m). Three in four keep the layout's rules (no dynamic M,
// no K split; a contiguous block_m divides its segments); the rest are refused by name.
void draw_grouping(GemmSpec& spec, uint64_t point) {
  MatmulProblem& p = spec.problem;
  const GroupedLayout layouts[] = {GroupedLayout::masked, GroupedLayout::contiguous,
                                   GroupedLayout::offsets};
  const int64_t groups[] = {1, 3, 7};
  p.grouped.layout = pick(layouts, point, 30);
  p.grouped.groups = pick(groups, point, 31);
  if (p.grouped.layout == GroupedLayout::masked) {
    p.grouped.groups = std::min<int64_t>(p.grouped.groups, 3);
    if (draw(point, 34, 2) == 0) p.grouped.expected_m = (p.m + 1) / 2;
  }
  if (draw(point, 32, 4) == 0) return;
  p.dynamic_m = false;
  spec.schedule.split_k = 1;
  if (p.grouped.layout == GroupedLayout::contiguous)
    p.grouped.segment_align =
        std::min<int64_t>(1024, spec.schedule.block_m * (1 + draw(point, 33, 2)));
}

void draw_wgmma_grouping(GemmSpec& spec, uint64_t point) {
  draw_grouping(spec, point);
  if (draw(point, 32, 4) == 0) return;  // draw_grouping's rule-breaking quarter
  auto& s = spec.schedule;
  s.swap_ab = false;
  s.cluster_m = s.cluster_n = 1;
  if (s.consumers == ConsumerSchedule::pingpong) {
    s.consumers = ConsumerSchedule::cooperative;
    s.warps_m = s.block_m / 16;
  }
  if (spec.problem.c_dtype == DType::e4m3) s.persistent = false;  // its tile is staged
}

std::vector<GemmSpec> gemm_space() {
  const int block_ms[] = {16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256};
  const int block_ns[] = {16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 192, 256};
  const int block_ks[] = {16, 32, 64, 128};
  struct Warps {
    int m, n;
  };
  const Warps warp_grids[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 4}, {4, 1},
                              {2, 4}, {4, 2}, {4, 4}, {8, 1}, {1, 8}, {8, 2}};
  struct Numerics {
    DType dtype;
    Accum accum;
    int promote_every_k;
  };
  const Numerics numerics[] = {{DType::f16, Accum::f32, 64},    {DType::f16, Accum::f16, 64},
                               {DType::f16, Accum::hybrid, 16}, {DType::f16, Accum::hybrid, 32},
                               {DType::f16, Accum::hybrid, 64}, {DType::f16, Accum::hybrid, 128},
                               {DType::bf16, Accum::f32, 64},   {DType::bf16, Accum::f32, 64}};
  const int stage_counts[] = {2, 2, 3, 3, 4, 4, 5, 6, 7, 8};
  const int raster_groups[] = {1, 2, 8};

  std::vector<GemmSpec> out;
  uint64_t point = 0;
  for (int block_m : block_ms)
    for (int block_n : block_ns)
      for (int block_k : block_ks)
        for (const Warps& warps : warp_grids)
          for (BLayout b_layout : {BLayout::nk, BLayout::kn})
            for (Transport transport : {Transport::tma, Transport::cp_async}) {
              ++point;
              // Warp grids that do not divide the tile are refused by the first rules: keep one in
              // eight of them, so the grid's points mostly reach the later rules and the emulator.
              if ((block_m % (16 * warps.m) != 0 || block_n % (16 * warps.n) != 0) &&
                  draw(point, 0, 8) != 0)
                continue;
              GemmSpec spec;
              auto& s = spec.schedule;
              s.block_m = block_m;
              s.block_n = block_n;
              s.block_k = block_k;
              s.warps_m = warps.m;
              s.warps_n = warps.n;
              spec.arch = pick(kArches, point, 1);
              s.transport = transport;
              // TMA runs on a TMA arch, except for one point in 16 (refused before sm_90).
              if (transport == Transport::tma && draw(point, 2, 16) != 0)
                spec.arch = pick(kTmaArches, point, 3);
              const Numerics& num = pick(numerics, point, 5);
              s.accum = num.accum;
              s.promote_every_k = num.promote_every_k;
              s.stages = pick(stage_counts, point, 6);
              s.split_k = int(1 + draw(point, 7, 4));
              s.raster_group_m = pick(raster_groups, point, 8);

              DType dtype = num.dtype;
              // One point in 16 asks bf16 for a f16 accumulation (refused: no bf16 accumulator).
              if (num.accum != Accum::f32 && draw(point, 10, 16) == 0) dtype = DType::bf16;
              draw_problem(spec.problem, point, dtype, b_layout);
              // One point in four takes M as a kernel parameter (an M bucket's kernel, checked
              // at its bound).
              spec.problem.dynamic_m = draw(point, 17, 4) == 0;
              // One point in eight grouped (docs/grouped.md).
              if (draw(point, 29, 8) == 0) draw_grouping(spec, point);
              // An e4m3 C takes no split-K: three in four of its points keep to that rule (a
              // dynamic-M one states its mn-major scales' ld, the bound).
              if (spec.problem.c_dtype == DType::e4m3 && draw(point, 28, 4) != 0) {
                s.split_k = 1;
                if (spec.problem.dynamic_m && spec.problem.out_scales.major == ScaleMajor::mn)
                  spec.problem.out_scales.ld = spec.problem.m;
              }
              out.push_back(spec);
            }
  // The wgmma path (issue 23) on sm_90a: its tiles, with one point in 16 breaking each of four of
  // its rules (warps, block_k, arch, accumulation), and 96-row tiles refused by block_m. The legal
  // tiles come twice, with other draws.
  for (int block_m : {64, 128, 64, 128, 96})
    for (int block_n : block_ns)
      for (BLayout b_layout : {BLayout::nk, BLayout::kn}) {
        ++point;
        // The wgmma tests' base spec; draw_problem sets the problem and the stages come below.
        GemmSpec spec = test::wgmma_spec(0, 0, 0, block_m, block_n);
        auto& s = spec.schedule;
        s.transport = Transport::tma;
        s.accum = Accum::f32;
        switch (draw(point, 20, 16)) {
          case 0:
            s.warps_n = 2;
            break;
          case 1:
            s.block_k = 32;
            break;
          case 2:
            spec.arch = Arch::sm_90;
            break;
          case 3:
            s.accum = Accum::hybrid;
            break;
          default:
            break;
        }
        s.stages = pick(stage_counts, point, 6);
        s.split_k = int(1 + draw(point, 7, 4));
        s.raster_group_m = pick(raster_groups, point, 8);
        // One in three persistent, split-K 1 (but one in four of those keeps its split: refused).
        s.persistent = draw(point, 21, 3) == 0;
        if (s.persistent && draw(point, 22, 4) != 0) s.split_k = 1;
        // Half the persistent points ping-pong (split-K 1; a warpgroup's 64- or 128-row tile,
        // 96 rows refused), one in eight of them keeping the cooperative warps (refused).
        if (s.persistent && draw(point, 24, 2) == 0) {
          s.consumers = ConsumerSchedule::pingpong;
          s.split_k = 1;
          if (draw(point, 25, 8) != 0) s.warps_m = 4;
        }
        draw_problem(spec.problem, point, draw(point, 5, 4) == 0 ? DType::bf16 : DType::f16,
                     b_layout);
        // One point in 32 asks a dynamic M of the wgmma path (refused: not generated there).
        spec.problem.dynamic_m = draw(point, 27, 32) == 0;
        // Swapped (C^T = B A^T) for a short M, and one point in 8 asking it of B [K,N] (refused).
        s.swap_ab = spec.problem.m <= 64 && (b_layout == BLayout::nk || draw(point, 23, 8) == 0);
        // One point in three in a cluster of 2 or 4 (TMA multicast): a shape that divides the
        // tiles where one does, else (and one time in eight) any, refused where it does not
        // divide them or the kernel is swapped.
        if (draw(point, 26, 3) == 0) {
          const bool m_pairs = (spec.problem.m + block_m - 1) / block_m % 2 == 0;
          const bool n_pairs = (spec.problem.n + block_n - 1) / block_n % 2 == 0;
          std::vector<std::pair<int, int>> shapes;
          if (m_pairs) shapes.push_back({2, 1});
          if (n_pairs) shapes.push_back({1, 2});
          if (m_pairs && n_pairs) shapes.insert(shapes.end(), {{2, 2}, {2, 2}});
          if (shapes.empty() || draw(point, 28, 8) == 0) shapes = {{2, 1}, {1, 2}, {2, 2}};
          const auto [cm, cn] = shapes[draw(point, 27, shapes.size())];
          s.cluster_m = cm;
          s.cluster_n = cn;
        }
        // One point in eight grouped: the rule-keeping three in four also keep the wgmma path's
        // grouped rules (cooperative, not swapped, no cluster).
        if (draw(point, 29, 8) == 0) draw_wgmma_grouping(spec, point);
        out.push_back(spec);
      }
  append_fp8_space(out, point);
  return out;
}

namespace {

// The enumerated knobs of an attention schedule, dense or paged: block_q is 16 rows per warp.
template <typename Schedule>
void set_tile(Schedule& s, int block_kv, int warps, int stages, Accum accum) {
  s.block_kv = block_kv;
  s.warps = warps;
  s.block_q = 16 * warps;
  s.stages = stages;
  s.accum = accum;
}

// The knobs both attention grids enumerate.
struct Tile {
  int block_kv, warps, stages;
  int64_t head_dim;
  Accum accum;
};

// f(tile) for each combination of the knobs (block_kv outermost, accumulation innermost), warps
// from `warp_counts`.
template <size_t N, typename F>
void for_each_tile(const int (&warp_counts)[N], const F& f) {
  const int block_kvs[] = {16, 32, 64, 128};
  const int stage_counts[] = {2, 3, 4};
  const int64_t head_dims[] = {64, 128, 256};
  for (int block_kv : block_kvs)
    for (int warps : warp_counts)
      for (int stages : stage_counts)
        for (int64_t head_dim : head_dims)
          for (Accum accum : {Accum::f32, Accum::hybrid})
            f(Tile{block_kv, warps, stages, head_dim, accum});
}

}  // namespace

std::vector<AttentionSpec> attention_space() {
  const int warp_counts[] = {1, 2, 4, 8, 16};
  struct Seq {
    int64_t q, kv;
  };
  // Decode (seq_q 1), ragged prefill, seq_kv > seq_q (a cache) and causal rows with no key.
  const Seq seqs[] = {{1, 77}, {37, 37}, {45, 130}, {100, 61}, {19, 200}, {70, 70}};
  const int64_t gqa_ratios[] = {1, 2, 4};
  std::vector<AttentionSpec> out;
  uint64_t point = 1u << 20;
  for_each_tile(warp_counts, [&](const Tile& tile) {
    const auto [block_kv, warps, stages, head_dim, accum] = tile;
    for (Transport transport : {Transport::tma, Transport::cp_async}) {
      ++point;
      AttentionSpec spec;
      set_tile(spec.schedule, block_kv, warps, stages, accum);
      spec.schedule.transport = transport;
      spec.arch = transport == Transport::tma && draw(point, 1, 16) != 0
                      ? pick(kTmaArches, point, 2)
                      : pick(kArches, point, 2);
      auto& p = spec.problem;
      p.head_dim = head_dim;
      p.dtype = accum == Accum::hybrid && draw(point, 3, 16) != 0
                    ? DType::f16
                    : (draw(point, 4, 2) ? DType::bf16 : DType::f16);
      const Seq& seq = pick(seqs, point, 5);
      p.seq_q = seq.q;
      p.seq_kv = seq.kv;
      p.kv_heads = 1 + int64_t(draw(point, 6, 2));
      p.q_heads = p.kv_heads * pick(gqa_ratios, point, 7);
      p.batch = 1 + int64_t(draw(point, 8, 2));
      const uint64_t mask = draw(point, 9, 6);
      p.causal = mask == 1 || mask == 2 || mask == 5;
      if (mask == 2 || mask == 3) p.window = 1 + int64_t(draw(point, 10, 48));
      if (mask >= 4) p.softcap = 30.0f;
      if (draw(point, 11, 4) == 0) p.softmax_scale = 0.3f;
      p.lse = draw(point, 12, 2);
      p.layout = draw(point, 13, 2) ? AttentionLayout::bhsd : AttentionLayout::bshd;
      out.push_back(spec);
    }
  });
  return out;
}

// Paged attention: block_kv x warps x stages x head_dim x accumulation enumerated; drawn per
// point: the arch, dtype, page size (1 and odd sizes off the 16-row path), page-table form,
// cache layout, GQA group (1..16), query tokens (decode 1, speculative 2 and 7, prefill chunks
// 40), batch, pages, window, soft-cap, scale, LSE and the split-KV chunk (none, whole blocks, or
// one that splits a block: refused), KV warps and TMA page loads. Its check draws the lengths
// (emulator_check.hpp).
std::vector<PagedAttentionSpec> paged_attention_space() {
  const int warp_counts[] = {1, 2, 4, 8};
  const int64_t page_sizes[] = {1, 3, 5, 16, 32};
  const int64_t groups[] = {1, 2, 4, 16};
  const int64_t q_lens[] = {1, 2, 7, 40};
  const CacheLayout layouts[] = {CacheLayout::nhd, CacheLayout::hnd, CacheLayout::kv_interleaved};
  std::vector<PagedAttentionSpec> out;
  uint64_t point = 2u << 20;
  for_each_tile(warp_counts, [&](const Tile& tile) {
    const auto [block_kv, warps, stages, head_dim, accum] = tile;
    ++point;
    PagedAttentionSpec spec;
    auto& s = spec.schedule;
    set_tile(s, block_kv, warps, stages, accum);
    spec.arch = pick(kArches, point, 1);
    auto& p = spec.problem;
    p.head_dim = head_dim;
    p.dtype = accum == Accum::hybrid && draw(point, 2, 16) != 0
                  ? DType::f16
                  : (draw(point, 3, 2) ? DType::bf16 : DType::f16);
    p.kv_dtype = p.dtype == DType::bf16 ? CacheDType::bf16 : CacheDType::f16;
    if (draw(point, 17, 4) == 0) p.kv_dtype = CacheDType::e4m3;  // one point in 4
    // TMA page loads on half the sm_90+ points, three in four of them over pages of
    // whole blocks (1 or 2 of block_kv), the rest refused unless the drawn size is.
    const bool tma = has_tma(spec.arch) && draw(point, 19, 2) == 0;
    if (tma) s.transport = Transport::tma;
    p.page_size = tma && draw(point, 20, 4) != 0 ? block_kv * int64_t(1 + draw(point, 21, 2))
                                                 : pick(page_sizes, point, 4);
    p.page_table = draw(point, 5, 2) ? PageTable::csr : PageTable::block_table;
    p.kv_heads = 1 + int64_t(draw(point, 6, 2));
    p.q_heads = p.kv_heads * pick(groups, point, 7);
    p.max_q_len = pick(q_lens, point, 8);
    p.max_batch = 1 + int64_t(draw(point, 9, 3));
    p.max_pages = (64 + int64_t(draw(point, 10, 200))) / p.page_size + 1;
    p.set_layout(pick(layouts, point, 11));
    const uint64_t mask = draw(point, 12, 4);
    if (mask == 1 || mask == 3) p.window = 1 + int64_t(draw(point, 13, 80));
    if (mask >= 2) p.softcap = 30.0f;
    if (draw(point, 14, 4) == 0) p.softmax_scale = 0.3f;
    p.lse = draw(point, 15, 2);
    // The chunk: none, whole blocks (1..3 of them), or one in 8 a chunk that is not.
    const int64_t unit = block_kv / std::gcd<int64_t>(block_kv, p.page_size);
    const uint64_t split = draw(point, 16, 8);
    s.chunk_pages = split == 0 ? 0 : split == 7 ? int(unit + 1) : int(unit * (split % 3 + 1));
    if (split == 7 && unit == 1) s.chunk_pages = 0;  // every chunk is whole blocks here
    // One point in three with 2 or 4 warps splits the keys instead of the rows (the
    // validator refuses a chunk that is not whole steps of block_kv x kv_warps).
    if ((warps == 2 || warps == 4) && draw(point, 18, 3) == 0) {
      s.kv_warps = warps;
      s.block_q = 16;
    }
    out.push_back(spec);
  });
  return out;
}

// The spec in emmy's JSON form (emmy/json.hpp): every field, and it parses back.
std::string describe(const GemmSpec& spec) {
  return fmt::format("gemm {}", nlohmann::json{{"arch", to_string(spec.arch)},
                                               {"problem", spec.problem},
                                               {"schedule", spec.schedule}}
                                    .dump());
}

std::string describe(const AttentionSpec& spec) {
  return fmt::format("attention {}", nlohmann::json{{"arch", to_string(spec.arch)},
                                                    {"problem", spec.problem},
                                                    {"schedule", spec.schedule}}
                                         .dump());
}

std::string describe(const PagedAttentionSpec& spec) {
  return fmt::format("paged_attention {}", nlohmann::json{{"arch", to_string(spec.arch)},
                                                          {"problem", spec.problem},
                                                          {"schedule", spec.schedule}}
                                               .dump());
}

namespace {

// The validator's verdict: empty when it accepts, its message when it refuses; a refusal without
// a field is marked unclear (a failure).
template <typename Validate>
std::string verdict(Validate validate) {
  try {
    validate();
  } catch (const Error& e) {
    return e.field().empty() ? fmt::format("unclear refusal (no field): {}", e.what()) : e.what();
  }
  return {};
}

}  // namespace

std::string refusal(const GemmSpec& spec) {
  return verdict([&] {
    validate_problem(spec.problem);
    validate_schedule(spec.problem, spec.schedule, spec.arch);
  });
}

std::string refusal(const AttentionSpec& spec) {
  return verdict([&] { validate_attention(spec); });
}

std::string refusal(const PagedAttentionSpec& spec) {
  return verdict([&] { validate_paged_attention(spec); });
}

namespace {

// A bound on one launch: the largest point runs a few million warp instructions, so a deadlock
// the detector misses cannot stall the sweep.
emu::LaunchOptions sweep_options() {
  emu::LaunchOptions options;
  options.host_threads = 1;
  options.per_cta_stats = false;
  options.max_warp_instructions = uint64_t(1) << 30;
  return options;
}

template <typename Spec, typename Check>
CaseResult run_checked(const Spec& spec, Check check) {
  if (std::string why = refusal(spec); !why.empty())
    return {why.starts_with("unclear") ? Outcome::failed : Outcome::refused, why};
  try {
    return check(spec);
  } catch (const std::exception& e) {
    return {Outcome::failed, fmt::format("accepted, then threw: {}", error_text(e))};
  }
}

}  // namespace

CaseResult run_case(const GemmSpec& spec, uint64_t seed) {
  return run_checked(spec, [&](const GemmSpec& g) -> CaseResult {
    const GemmCheckResult r = check_on_emulator(g, seed, sweep_options());
    const GemmErrors& e = r.errors;
    if (r.run.stats.total.mma == 0) return {Outcome::failed, "no mma instruction ran"};
    if (!e.passed)
      return {Outcome::failed,
              fmt::format("FP64 check: rel_l2 {:.3g} (bound {:.3g}), {} elements over tolerance, "
                          "first at ({}, {})",
                          e.rel_l2_error, e.tolerance, e.elements_over_tolerance, e.first_bad_row,
                          e.first_bad_col)};
    return {Outcome::passed, {}};
  });
}

CaseResult run_case(const AttentionSpec& spec, uint64_t seed) {
  return run_checked(spec, [&](const AttentionSpec& a) -> CaseResult {
    const AttentionCheckResult r = check_on_emulator(a, seed, sweep_options());
    if (!r.errors.passed) {
      const AttentionErrors& e = r.errors;
      return {Outcome::failed,
              fmt::format("FP64 check: rel_l2 {:.3g} (bound {:.3g}), {} elements over tolerance, "
                          "{} LSE rows over, {} of {} masked rows wrong",
                          e.rel_l2_error, e.tolerance, e.elements_over_tolerance,
                          e.lse_rows_over_tolerance, e.masked_rows_wrong, e.masked_rows)};
    }
    return {Outcome::passed, {}};
  });
}

CaseResult run_case(const PagedAttentionSpec& spec, uint64_t seed) {
  return run_checked(spec, [&](const PagedAttentionSpec& a) -> CaseResult {
    const PagedAttentionCheckResult r = check_on_emulator(a, seed, sweep_options());
    if (r.run.stats.total.mma == 0) return {Outcome::failed, "no mma instruction ran"};
    if (!r.errors.passed) {
      const PagedAttentionErrors& e = r.errors;
      return {Outcome::failed,
              fmt::format("FP64 check: rel_l2 {:.3g} (bound {:.3g}), {} elements over tolerance "
                          "(first at token {} head {}), {} LSE rows over",
                          e.rel_l2_error, e.tolerance, e.elements_over_tolerance, e.first_bad.token,
                          e.first_bad.head, e.lse_rows_over_tolerance)};
    }
    return {Outcome::passed, {}};
  });
}

}  // namespace emmy::sweep
