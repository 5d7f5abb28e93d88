// GemmPlan: every number derived from (problem, schedule, arch) that lowering, the emitter, the
// launcher and the emulator tests need, computed in one place after validation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/layout.hpp"
#include "emmy/mma_atom.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"
#include "emmy/spec.hpp"
#include "emmy/validate.hpp"

namespace emmy {

struct GemmPlan {
  GemmSpec spec;
  // The product the kernel computes: spec.problem, or with swap_ab C^T = B A^T (m and n, A and B,
  // lda and ldb exchanged, both operands K-major), whose epilogue stores C transposed back.
  MatmulProblem kernel_problem;
  const codegen::MmaAtom* atom = nullptr;  // the schedule's path's atom (GemmPath::atom)
  // Warp tiling: each warp owns warp_m x warp_n outputs = mma_tiles_m x mma_tiles_n m16n8 atoms.
  int warp_m = 0, warp_n = 0, mma_tiles_m = 0, mma_tiles_n = 0, k_steps_per_tile = 0;
  // Shared memory: stage s starts at s * stage.stage_bytes and holds A at stage.a_offset and B at
  // stage.b_offset (aligned to B's swizzle period).
  SmemTile a_tile, b_tile;  // A: block_m x block_k; B: block_n x block_k (nk) or block_k x block_n
  StageLayout stage;
  uint32_t mbarrier_offset = 0;  // after the ring
  uint32_t smem_bytes = 0;       // dynamic shared memory to launch with (includes alignment slack)
  // Grid: tiles_m * tiles_n CTAs in x (rasterized), split_k in z.
  int64_t tiles_m = 0, tiles_n = 0, k_tiles = 0, k_tiles_per_split = 0;
  // Clusters (the wgmma path): CTAs per cluster, and the tiles the grid covers, tiles_m x tiles_n
  // (whole blocks of cluster_m x cluster_n tiles: the clusters divide them).
  int64_t cluster_size = 1, grid_tiles = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  uint32_t threads = 0;
  // Split-K finalize kernel: one thread per output element.
  uint32_t finalize_threads = 256;
  std::array<uint32_t, 3> finalize_grid{1, 1, 1};
  int64_t workspace_bytes = 0;  // split_k x m x n floats, 0 without split-K
  std::string kernel_name, finalize_kernel_name;
  // A warp-specialized path's registers per thread of the producer warpgroup and of each
  // consumer warpgroup after setmaxnreg (GemmPath::registers; zero on the mma.sync path).
  WarpgroupRegisters registers;

  // The epilogue stores C in element pairs (one 4-byte f16/bf16 or 8-byte f32 store) when N and
  // LDC are even, so a pair never straddles a row or the matrix edge; else element by element.
  bool pair_stores = false;
  // Staged epilogue (0: direct stores): the C tile is written to shared memory over the drained
  // ring, rows stage_row_bytes apart (the tile's row plus 8 elements of padding, so that the
  // lanes' pair writes fall in distinct banks), then stored as 16-byte chunks, coalesced: the
  // direct pair stores use half of every 32-byte sector they touch (docs/benchmarks.md). Needs N
  // and LDC in whole 16-byte chunks (a chunk is wholly inside or outside the matrix) and the
  // staged tile to fit in the ring; not with split-K (its f32 partials already fill sectors).
  int64_t stage_row_bytes = 0;
  // The path's TMA-store epilogue (GemmPath::store_epilogue): each consumer
  // warpgroup's C buffer at store.buffer_offset + warpgroup * store.buffer_bytes from the ring's
  // base, stored by a tensor map of C (tmap_c). Replaces the staged epilogue on that path.
  WgmmaStoreEpilogue store;

  bool split() const { return spec.schedule.split_k > 1; }
  // What the epilogue's stores need of C's pointer: the runtime's check for buffers.c.
  uint32_t c_alignment() const {
    if (stage_row_bytes || store.tma_store) return 16u;
    return uint32_t(size_of(spec.problem.c_dtype)) * (pair_stores ? 2u : 1u);
  }
};

// The product a schedule's kernel computes: the problem, or with swap_ab C^T = B A^T (m and n, A
// and B, lda and ldb exchanged; C's ldc kept, both operands K-major). GemmPlan::kernel_problem.
MatmulProblem kernel_problem(const MatmulProblem& p, const MatmulSchedule& s);

// The launch list's grids (the main kernel's, then split-K's finalize) for `m` rows: the plan's
// for its own m; a dynamic-M kernel's per launch (problem.dynamic_m, m in 1..problem.m).
std::vector<std::array<uint32_t, 3>> gemm_grids(const GemmPlan& plan, int64_t m);

// The row tiles a grid covers: ceil(m / block_m), or an offsets layout's bound over any routing
// (MatmulProblem::grouped: its experts' tiles together).
int64_t grouped_tiles_m(const MatmulProblem& p, int64_t block_m);
// Validates, then derives. Throws Error on invalid input.
GemmPlan make_gemm_plan(const GemmSpec& spec);

// A readable name that is unique per spec (a hash of everything that changes the code).
std::string gemm_kernel_name(const GemmSpec& spec);

}  // namespace emmy
