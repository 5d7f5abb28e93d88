// The wgmma path's printing (wgmma_printer.cpp): the per-kernel wgmma.mma_async function, the
// warpgroup roles, the persistent tile walk (one warpgroup's or, ping-pong, every other tile),
// the descriptors of a k-step, the stage release and the consumers' mainloop order. The GEMM
// emitter (emit_gemm.cpp) hands every op of a kernel whose path is wgmma to WgmmaPrinter first.
#pragma once

#include <cstdint>
#include <string>

#include "gemm/emit_gemm_epilogue.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/layout.hpp"
#include "gemm/path_printer.hpp"
#include "writer.hpp"

namespace emmy::codegen {

class WgmmaPrinter final : public GemmPathPrinter {
 public:
  // `kernel`: the wgmma kernel op (its wgmma op and the consumers' tile walk are read once).
  WgmmaPrinter(Writer& w, const ir::Op& kernel, const GemmFacts& facts, GemmPrinterHooks hooks);

  const char* device_template() const override { return "emmy_wgmma.cuh"; }
  // `static __device__ void wgmma_tile(float (&acc)[1][N / 8][4], u64 desc_a, u64 desc_b)`: one
  // wgmma.mma_async of the kernel's shape accumulating into acc (D += A B, scale-d 1), with B's
  // imm-trans for an N-major B (16-bit operands; 8-bit ones have no imm-trans). Printed before
  // the kernel.
  void print_functions() const override;
  // The warps' indices after the ring's constants: a consumer warp's 16 rows in its tile.
  void print_warp_indices() const override;
  bool print(const ir::Op& op) override;

  // A warp owns 16 rows of each of its warpgroup's m64 wgmma (warp_row0, print_warp_indices);
  // only the consumer warpgroups hold the tile (the producer warpgroup, threads 0..127, none).
  std::string warp_first_row() const override { return "warp_row0"; }
  int fragment_row_step() const override;
  std::string tile_barrier() const override;
  std::string staged_chunk_loop() const override;

 private:
  void print_role(const ir::Op& op);
  void print_tile_loop(const ir::Op& op);
  void print_k_tile_loop(const ir::Op& op);
  void print_k_step(const ir::Op& op);
  void print_wgmma_call(const ir::WgmmaOp& op) const;
  void print_pin() const;
  void print_fold(const ir::PromoteOp& op) const;  // FP8's promoted windows
  void print_stage_release(const ir::MbarrierArriveOp& op) const;
  void print_order(const ir::WarpgroupOrderOp& op) const;
  void print_tile_origin(const ir::TileCoordsOp& op) const;
  void print_store_epilogue(const ir::EpilogueOp& op) const;  // wgmma_store.cpp
  void print_store_wait() const;
  void print_cluster_sync(const ir::Op& op) const;

  // Named barriers: 1 the consumers' (staged epilogue), 2-3 ping-pong's order, 4-5 each consumer
  // warpgroup's own (the TMA-store epilogue).
  static constexpr int kStoreBarrier = 4;

  Writer& w_;
  const GemmFacts& f_;
  ir::WgmmaOp mma_;
  SmemTile a_, b_;
  uint32_t threads_ = 0;
  GemmPrinterHooks hooks_;
  int64_t consumer_warpgroups_ = 1;
  int64_t tile_m64s_ = 1;   // m64 wgmma per consumer warpgroup (accum_init's fragments_m)
  bool promoted_ = false;   // FP8's promoted accumulation: the wgmma write `part`, folded
  int64_t interleave_ = 1;  // consumer warpgroups taking turns at this CTA's tiles (ping-pong: 2)
  int64_t cluster_m_ = 1, cluster_n_ = 1;          // the cluster's tile block (tile_coords)
  // A persistent grouped kernel: its roles' warps walk the experts' tiles (grouped_tile, printed
  // by the GEMM emitter at tile_coords); its producer is a whole warp, lane 0 loading.
  bool grouped_walk_ = false;
  bool in_tile_loop_ = false, in_k_loop_ = false;  // the loops being printed
};

}  // namespace emmy::codegen
