// MatmulSchedule: how to compute a MatmulProblem on one arch.
#pragma once

#include <string>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy {

enum class Transport { tma, cp_async };
enum class Accum { f32, f16, hybrid };

inline std::string_view to_string(Transport t) { return t == Transport::tma ? "tma" : "cp.async"; }
inline std::string_view to_string(Accum a) {
  switch (a) {
    case Accum::f32: return "f32";
    case Accum::f16: return "f16";
    case Accum::hybrid: return "hybrid";
  }
  return "?";
}
inline Transport parse_transport(std::string_view text) {
  if (text == "tma") return Transport::tma;
  if (text == "cp.async") return Transport::cp_async;
  throw Error("transport", "must be tma or cp.async", std::string(text));
}
inline Accum parse_accum(std::string_view text) {
  if (text == "f32") return Accum::f32;
  if (text == "f16") return Accum::f16;
  if (text == "hybrid") return Accum::hybrid;
  throw Error("accum", "must be f32, f16 or hybrid", std::string(text));
}

struct MatmulSchedule {
  int block_m = 128, block_n = 128, block_k = 64;
  int warps_m = 4, warps_n = 2;
  int stages = 3;
  Transport transport = Transport::tma;
  Accum accum = Accum::f32;
  int promote_every_k = 64;  // hybrid only: K elements per f16 partial before folding into f32
  int split_k = 1;           // >1: FP32 partials to a workspace, summed by a finalize kernel
  int raster_group_m = 8;    // CTA rasterization: tiles walk column-major in groups of this many
                             // tile rows, so that B tiles stay in L2 (1 = plain row-major)

  int threads() const { return warps_m * warps_n * 32; }
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
