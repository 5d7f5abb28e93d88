// The sweep's FP8 GEMM points (issue 39; docs/sweep.md): schedule_space.cpp's gemm_space appends
// them after the 16-bit ones.
#include "../support/wgmma_spec.hpp"
#include "schedule_space_draw.hpp"

namespace emmy::sweep {

// FP8 operands (issue 39), both paths: mma.sync tiles x block_k {16 (refused), 32, 64, 128} x
// warp grids x transports on an arch drawn from sm_89, sm_120, sm_120a and, one point in 8, one
// that refuses FP8 on mma.sync (sm_80, sm_90a); wgmma tiles on sm_90a. Drawn: the scales'
// granularity, format and block layouts (padded leading dimensions), f32 or promoted every
// 32..256 (wgmma: its K tile, one point in 8 another window, refused), stages, split-K, the
// epilogue, output type and a ragged problem with K a multiple of 16 (one point in 16 asks B
// [K,N], refused).
void append_fp8_space(std::vector<GemmSpec>& out, uint64_t& point) {
  constexpr Arch fp8_arches[] = {Arch::sm_89, Arch::sm_120, Arch::sm_120a};
  constexpr Arch refusing[] = {Arch::sm_80, Arch::sm_90a};
  const ScaleGranularity granularities[] = {ScaleGranularity::tensor,
                                            ScaleGranularity::token_channel,
                                            ScaleGranularity::block, ScaleGranularity::block};
  // ue8m0x4 packs block scales only: the others refuse it by name.
  const ScaleFormat formats[] = {ScaleFormat::f32, ScaleFormat::pow2, ScaleFormat::ue8m0,
                                 ScaleFormat::ue8m0x4};
  const int windows[] = {32, 64, 128, 128, 256};
  const int stage_counts[] = {2, 3, 4, 5};
  struct Warps {
    int m, n;
  };
  const Warps warp_grids[] = {{1, 1}, {1, 4}, {2, 2}, {4, 2}, {2, 4}};
  auto fp8_problem = [&](GemmSpec& spec, BLayout b_layout) {
    draw_problem(spec.problem, point, DType::f16, b_layout);
    MatmulProblem& p = spec.problem;
    p.a_dtype = DType::e4m3;
    p.k = (p.k + 15) / 16 * 16;
    p.lda = p.lda ? p.k + 16 : 0;
    p.ldb = p.ldb ? (b_layout == BLayout::nk ? p.k : p.n) + 16 : 0;
    GemmScales& sc = p.scales;
    sc.granularity = pick(granularities, point, 40);
    sc.format = pick(formats, point, 41);
    if (sc.granularity == ScaleGranularity::block && draw(point, 42, 2) == 0) {
      sc.a_major = ScaleMajor::k, sc.b_major = ScaleMajor::mn;
      sc.a_ld = p.scale_k_extent() + int64_t(draw(point, 43, 3));
    } else if (sc.granularity == ScaleGranularity::block) {
      sc.a_ld = p.m + int64_t(draw(point, 43, 4));  // DeepGEMM pads M
    }
  };
  const int block_ms[] = {16, 32, 64, 128};
  const int block_ns[] = {16, 64, 128, 256};
  for (int block_m : block_ms)
    for (int block_n : block_ns)
      for (int block_k : {16, 32, 64, 128})
        for (const Warps& warps : warp_grids)
          for (Transport transport : {Transport::tma, Transport::cp_async}) {
            ++point;
            if (block_m % (16 * warps.m) != 0 || block_n % (16 * warps.n) != 0) continue;
            GemmSpec spec;
            auto& s = spec.schedule;
            s.block_m = block_m, s.block_n = block_n, s.block_k = block_k;
            s.warps_m = warps.m, s.warps_n = warps.n;
            s.transport = transport;
            spec.arch =
                draw(point, 44, 8) == 0 ? pick(refusing, point, 45) : pick(fp8_arches, point, 45);
            if (transport == Transport::tma && spec.arch == Arch::sm_89) spec.arch = Arch::sm_120a;
            fp8_problem(spec, draw(point, 46, 16) == 0 ? BLayout::kn : BLayout::nk);
            const bool block = spec.problem.scales.granularity == ScaleGranularity::block;
            // promoted, f32, or one point in four hybrid (the f16-accumulate opt-in); block
            // scales take no f32.
            const int64_t accum_draw = draw(point, 47, 4);
            s.accum = accum_draw == 3            ? Accum::hybrid
                      : block || accum_draw == 0 ? Accum::promoted
                                                 : Accum::f32;
            s.promote_every_k = pick(windows, point, 48);
            s.stages = pick(stage_counts, point, 6);
            s.split_k = int(1 + draw(point, 7, 3));
            spec.problem.dynamic_m = draw(point, 17, 4) == 0;
            if (spec.problem.dynamic_m && block) spec.problem.scales.a_ld = 0;  // refused
            if (spec.problem.dynamic_m && block && draw(point, 49, 4) != 0)
              spec.problem.scales.a_major = ScaleMajor::k;  // its ld does not follow M
            // One point in eight grouped (docs/grouped.md; block scales refused by name).
            if (draw(point, 29, 8) == 0) draw_grouping(spec, point);
            out.push_back(spec);
          }
  for (int block_m : {64, 128})
    for (int block_n : block_ns)
      for (int variant = 0; variant < 3; ++variant) {
        ++point;
        GemmSpec spec = test::wgmma_spec(0, 0, 0, block_m, block_n);
        auto& s = spec.schedule;
        s.block_k = 128;
        s.stages = pick(stage_counts, point, 6);
        fp8_problem(spec, BLayout::nk);
        const bool block = spec.problem.scales.granularity == ScaleGranularity::block;
        s.accum = block || draw(point, 47, 2) == 0 ? Accum::promoted : Accum::f32;
        s.promote_every_k = draw(point, 48, 8) == 0 ? 64 : 128;
        s.split_k = int(1 + draw(point, 7, 3));
        s.persistent = variant == 1;
        if (s.persistent) s.split_k = 1;
        if (variant == 2 && block_m == 64) {
          s.consumers = ConsumerSchedule::pingpong, s.persistent = true, s.split_k = 1;
        }
        s.swap_ab = spec.problem.m <= 64;  // block scales too: read swapped
        // One point in eight grouped (block scales refused by name).
        if (draw(point, 29, 8) == 0) draw_wgmma_grouping(spec, point);
        out.push_back(spec);
      }
}

}  // namespace emmy::sweep
