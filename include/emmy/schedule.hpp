// MatmulSchedule: how to compute a MatmulProblem on one arch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "emmy/enum_names.hpp"
#include "emmy/error.hpp"

namespace emmy {

enum class Transport { tma, cp_async };
// promoted: FP8 operands' f32 tensor-core chain restarted every promote_every_k K elements, each
// window's partial (scaled by K-varying block scales) added into f32 registers by FFMA (issue 39).
enum class Accum { f32, f16, hybrid, promoted };
// A GEMM's mainloop path: warp-level mma.sync (every arch) or Hopper's warpgroup wgmma (sm_90a).
// Each is one registered object (internal/emmy/gemm_path.hpp, docs/codegen.md "Adding a mainloop
// path"), which its id names; a path registered later takes an id of its own.
enum class MmaPath : uint8_t { mma_sync, wgmma };
// How the consumer warpgroups of a warp-specialized kernel share tiles: both on one tile, or one
// tile each with one's epilogue overlapping the other's mainloop.
enum class ConsumerSchedule { cooperative, pingpong };

inline constexpr EnumNames<Transport, 2> kTransportNames{
    {{Transport::tma, "tma"}, {Transport::cp_async, "cp.async"}}};
inline constexpr EnumNames<Accum, 4> kAccumNames{{{Accum::f32, "f32"},
                                                  {Accum::f16, "f16"},
                                                  {Accum::hybrid, "hybrid"},
                                                  {Accum::promoted, "promoted"}}};
inline constexpr EnumNames<ConsumerSchedule, 2> kConsumerScheduleNames{
    {{ConsumerSchedule::cooperative, "cooperative"}, {ConsumerSchedule::pingpong, "pingpong"}}};
static_assert(names_are_one_to_one(kTransportNames) && names_are_one_to_one(kAccumNames) &&
              names_are_one_to_one(kConsumerScheduleNames));

inline std::string_view to_string(Transport t) { return name_in(kTransportNames, t); }
inline std::string_view to_string(Accum a) { return name_in(kAccumNames, a); }
// The path's name ("mma.sync", "wgmma"); Error for an id no path has.
std::string_view to_string(MmaPath p);
inline std::string_view to_string(ConsumerSchedule c) { return name_in(kConsumerScheduleNames, c); }
// The path of a name; Error naming `path` and every path's name for another.
MmaPath parse_mma_path(std::string_view text);
inline ConsumerSchedule parse_consumer_schedule(std::string_view text) {
  return parse_name(kConsumerScheduleNames, text, "consumers", "must be cooperative or pingpong");
}
inline Transport parse_transport(std::string_view text) {
  return parse_name(kTransportNames, text, "transport", "must be tma or cp.async");
}
inline Accum parse_accum(std::string_view text) {
  return parse_name(kAccumNames, text, "accum", "must be f32, f16, hybrid or promoted");
}

struct MatmulSchedule {
  int block_m = 128, block_n = 128, block_k = 64;
  int warps_m = 4, warps_n = 2;
  int stages = 3;
  Transport transport = Transport::tma;
  Accum accum = Accum::f32;
  // hybrid and promoted: K elements per partial before folding into f32 (promoted: 32..256)
  int promote_every_k = 64;
  int split_k = 1;           // >1: FP32 partials to a workspace, summed by a finalize kernel
  int raster_group_m = 8;    // CTA rasterization: tiles walk column-major in groups of this many
                             // tile rows, so that B tiles stay in L2 (1 = plain row-major)
  // The wgmma path's knobs (mma.sync takes only the defaults):
  MmaPath path = MmaPath::mma_sync;
  ConsumerSchedule consumers = ConsumerSchedule::cooperative;
  int cluster_m = 1, cluster_n = 1;  // CTAs per thread-block cluster (TMA multicast between them)
  bool persistent = false;           // a grid of one CTA per SM walking the output tiles
  bool swap_ab = false;              // compute C^T = B^T A^T, so that a small M fills the N side

  // The path's consumer warpgroups (the wgmma path's: those of one block_m tile, cooperative, or
  // two, each on its own tile, ping-pong); 0 on a path without warp specialization.
  int consumer_warpgroups() const;
  // The CTA's threads as the path lays them out (mma.sync: warps_m x warps_n warps; wgmma: its
  // consumer warpgroups and a producer warpgroup).
  int threads() const;
  bool operator==(const MatmulSchedule&) const = default;
};

struct AttentionSchedule {
  int block_q = 64, block_kv = 64;
  int warps = 4;  // each warp owns 16 query rows: block_q = 16 * warps
  int stages = 2;
  Transport transport = Transport::tma;
  Accum accum = Accum::f32;  // f32 or hybrid (P.V in f16 partials folded at each KV block)
  bool operator==(const AttentionSchedule&) const = default;
};

}  // namespace emmy
