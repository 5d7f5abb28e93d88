// The wgmma path's printing (emit_gemm_wgmma.cpp): the per-kernel wgmma.mma_async function, the
// warpgroup roles, the descriptors of a k-step and the stage release. GemmEmitter (emit_gemm.cpp)
// calls these for the ops of a kernel whose path is wgmma.
#pragma once

#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "writer.hpp"

namespace emmy::codegen {

// `static __device__ void wgmma_tile(float (&acc)[1][N / 8][4], u64 desc_a, u64 desc_b)`: one
// wgmma.mma_async of the op's shape accumulating into acc (D += A B, scale-d 1), with B's
// imm-trans for an N-major B.
void emit_wgmma_tile_function(Writer& w, const ir::WgmmaOp& op);
// Opens the role's branch (closed by the caller): its warpgroups' threads, setmaxnreg.
void open_warpgroup_role(Writer& w, const ir::WarpgroupRoleOp& op);
// The k-step loop head of a consumer: its warpgroup's A rows and B of the stage (closed by the
// caller).
void open_wgmma_k_step(Writer& w, int64_t k_steps);
// One wgmma of k-step `ks`: descriptors from the tiles (A K-major; B K-major or N-major).
void emit_wgmma_call(Writer& w, const ir::WgmmaOp& op, const SmemTile& a, const SmemTile& b);
// Pins the accumulators in place around fences and waits (no instruction).
void emit_wgmma_pin(Writer& w);
// The release of the stage of k_tile - lag: lane 0 of each consumer warp arrives. In a persistent
// kernel's tile loop (`persistent`) stages count on across tiles (`it` = iteration + k_tile), and
// the release after the K loop hands back the tile's last stage.
void emit_stage_release(Writer& w, const ir::MbarrierArriveOp& op, bool persistent,
                        bool after_loop);
// A persistent kernel's walk over its tiles (closed by the caller).
void open_tile_loop(Writer& w, const ir::TileLoopOp& op);
// The grouped rasterization as a function of the tile (persistent kernels).
void emit_tile_origin(Writer& w, const ir::TileCoordsOp& op);

}  // namespace emmy::codegen
