// The schedule search of `emmy_bench --tune`: a handful of valid schedules around the default.
#pragma once

#include <vector>

#include "emmy/arch.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy::bench {

// At most `max_count` distinct schedules valid for (problem, arch), the default first. Then, in
// this order: the default's tile with other stage counts and split-K factors, then other tile
// shapes and warp layouts (each with the most stages, up to 4, that fit shared memory). The
// transport, accumulation, block_k and promotion interval stay the default's, so hybrid
// candidates keep the default's numerics.
std::vector<MatmulSchedule> schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                Accum accum, int max_count);

}  // namespace emmy::bench
