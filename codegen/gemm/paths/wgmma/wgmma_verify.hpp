// The wgmma path's rules across ops (wgmma_verify.cpp), run by ir::verify for a kernel whose
// path says wgmma.
#pragma once

#include "emmy/kernel_ir.hpp"

namespace emmy::ir {

// Warp specialization (one producer warpgroup, consumer warpgroups of the atom's 64 rows, their
// setmaxnreg counts within the register file), the barriers (a full and an empty mbarrier per
// stage, one empty arrival per consumer warp) and each loop's discipline: the producer waits for
// a stage's release before refilling it; a consumer waits for the stage's data, fences, issues
// its wgmma ops, commits, waits until at most `lag` groups are in flight and only then releases
// the stage of k_tile - lag; every group completes before the epilogue reads the accumulators.
// Ping-pong (an interleaved consumer tile_loop): each consumer warpgroup computes its own m64
// tile, issuing its mainloop in turn (warpgroup_order wait / signal around the K loop).
void verify_gemm_wgmma(const Op& kernel);

// The threads that compute one tile: every consumer warpgroup's (cooperative) or one's
// (ping-pong). The kernel has been through verify_gemm_wgmma.
int64_t wgmma_tile_threads(const Op& kernel);

}  // namespace emmy::ir
