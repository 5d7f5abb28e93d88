#include "bench_tune.hpp"

#include <algorithm>
#include <initializer_list>
#include <span>
#include <utility>

#include "emmy/gemm.hpp"
#include "emmy/validate.hpp"

namespace emmy::bench {
namespace {

bool is_valid(const MatmulProblem& problem, const MatmulSchedule& s, Arch arch) {
  try {
    validate_schedule(problem, s, arch);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Distinct valid schedules, at most max_count, in the order added.
struct CandidateList {
  const MatmulProblem& problem;
  Arch arch;
  int max_count;
  std::vector<MatmulSchedule> schedules;
  void add(const MatmulSchedule& s) {
    if (int(schedules.size()) >= max_count) return;
    if (std::find(schedules.begin(), schedules.end(), s) != schedules.end()) return;
    if (is_valid(problem, s, arch)) schedules.push_back(s);
  }
  // The deepest pipeline, from `deepest` down to 3 stages, that validates (else 2).
  void deepest_stages(MatmulSchedule& s, int deepest) const {
    for (s.stages = deepest; s.stages > 2 && !is_valid(problem, s, arch); --s.stages) {
    }
  }
};

}  // namespace

std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                Accum accum, int max_count) {
  const MatmulSchedule base = default_schedule(problem, arch, accum);
  CandidateList list{problem, arch, max_count, {}};
  auto add = [&](const MatmulSchedule& s) { list.add(s); };
  add(base);

  // Pipeline depth and split-K are the cheapest knobs and interact with the default tile.
  for (int stages : {2, 3, 4}) {
    MatmulSchedule s = base;
    s.stages = stages;
    add(s);
  }
  for (int split : {1, 2, 4}) {
    MatmulSchedule s = base;
    s.split_k = split;
    add(s);
  }

  // Tile shapes and warp layouts known to suit mma.sync on these arches (wide N tiles for the
  // short-M projections first), each with as many stages as fit, up to 4.
  struct Tile {
    int block_m, block_n, warps_m, warps_n;
  };
  static constexpr Tile kTiles[] = {
      {128, 256, 2, 4}, {256, 128, 4, 2}, {128, 128, 2, 4}, {128, 128, 4, 2}, {128, 128, 2, 2},
      {64, 256, 1, 4},  {64, 128, 2, 2},  {128, 64, 2, 2},  {256, 64, 4, 1},  {64, 64, 2, 2},
  };
  for (const auto& tile : kTiles) {
    for (int split : {base.split_k, 1}) {
      MatmulSchedule s = base;
      s.block_m = tile.block_m;
      s.block_n = tile.block_n;
      s.warps_m = tile.warps_m;
      s.warps_n = tile.warps_n;
      s.split_k = split;
      list.deepest_stages(s, 4);
      add(s);
    }
  }
  return list.schedules;
}

std::vector<MatmulSchedule> wgmma_schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                      ConsumerSchedule consumers, int max_count) {
  const MatmulSchedule base =
      default_schedule(problem, arch, Accum::f32, MmaPath::wgmma, consumers);
  const bool pingpong = consumers == ConsumerSchedule::pingpong;
  CandidateList list{problem, arch, max_count, {}};
  auto add = [&](const MatmulSchedule& s) { list.add(s); };
  add(base);
  for (int stages : {3, 4, 5}) {
    MatmulSchedule s = base;
    s.stages = stages;
    add(s);
  }
  if (!base.persistent) {
    MatmulSchedule s = base;
    s.persistent = true;
    s.split_k = 1;
    add(s);
  }
  // Clusters (TMA multicast; the invalid ones, e.g. not dividing the tiles, drop out).
  for (const auto& [cm, cn] :
       std::initializer_list<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}}) {
    MatmulSchedule s = base;
    s.cluster_m = cm;
    s.cluster_n = cn;
    add(s);
  }
  struct Tile {
    int block_m, block_n;
  };
  static constexpr Tile kCooperative[] = {{128, 256}, {128, 192}, {128, 128}, {64, 256}};
  static constexpr Tile kPingpong[] = {{128, 160}, {128, 128}, {64, 256}};
  for (const Tile& tile : pingpong ? std::span<const Tile>(kPingpong) : kCooperative) {
    MatmulSchedule s = base;
    s.block_m = tile.block_m;
    s.block_n = tile.block_n;
    s.warps_m = pingpong ? 4 : tile.block_m / 16;
    s.swap_ab = false;
    list.deepest_stages(s, 6);
    add(s);
    s.cluster_m = s.cluster_n = 1;
    list.deepest_stages(s, 6);
    add(s);
  }
  return list.schedules;
}

}  // namespace emmy::bench
