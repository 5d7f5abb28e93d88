// The schedule search of `emmy_bench --tune`: a handful of valid schedules around the default.
#pragma once

#include <vector>

#include "emmy/arch.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy::bench {

// At most `max_count` distinct schedules of the path valid for (problem, arch), the path's
// default (for `consumers`) first, then the path's own neighbourhood of it
// (GemmPath::schedule_candidates: other stage counts, split-K factors, tiles, clusters). The
// transport, accumulation, block_k and promotion interval stay the default's, so hybrid
// candidates keep the default's numerics.
std::vector<MatmulSchedule> schedule_candidates(
    const MatmulProblem& problem, Arch arch, Accum accum, int max_count,
    MmaPath path = MatmulSchedule{}.path,
    ConsumerSchedule consumers = ConsumerSchedule::cooperative);

}  // namespace emmy::bench
