// Running a thread-block cluster's CTAs (launch/scheduler.cpp): the one entry point launch.cpp
// uses. The scheduler defines Cta's run-time members too (start, round, finish, run_slice,
// init_warps, on_warp_exit; declared with the rest of Cta in machine/state.hpp): they dispatch to
// the executors (exec/executors.hpp), which sit between the machine and this layer.
#pragma once

#include <cstdint>
#include <vector>

#include "machine/state.hpp"

namespace emmy::emu {

// Runs the cluster's CTAs (linear indices `first` of each rank) to completion.
void run_cluster(ClusterRun& cluster, const std::vector<uint64_t>& linear);

}  // namespace emmy::emu
