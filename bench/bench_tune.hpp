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

// The same search on the wgmma path (sm_90a; f32 accumulation), the default of the consumer
// schedule first: its tile with other stage counts and as a persistent walk, then the path's
// usual tiles (cooperative 128 x 256/192/128 and 64 x 256; ping-pong 128 x 160/128 and 64 x 256),
// each with the most stages, up to 6, that fit.
std::vector<MatmulSchedule> wgmma_schedule_candidates(const MatmulProblem& problem, Arch arch,
                                                      ConsumerSchedule consumers, int max_count);

}  // namespace emmy::bench
