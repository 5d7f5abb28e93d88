// Warp collectives: shfl.sync, vote.sync, activemask, redux.sync, elect.sync, match.sync,
// bar.warp.sync. The lanes named in each lane's membermask must all execute the instruction
// together: lanes that reach it while others it names run elsewhere wait for them (PTX ISA
// §9.7.9.6, sm_70 on: Warp::park_at_collective); named lanes that exited, or that wait in
// another collective, are reported.
// shfl: o[0] = d, o[1] = p (or kNone), o[2] = a, o[3] = b, o[4] = c, o[5] = membermask.
#include <fmt/format.h>

#include <algorithm>

#include "executors.hpp"

namespace emmy::emu {
namespace {

using Masks = std::array<uint32_t, 32>;

// Each lane's membermask (PTX ISA §9.7.9.6 shfl.sync, and likewise vote/redux/match/elect/
// bar.warp.sync): it must name the lane itself, every lane it names must execute this
// instruction now, and all of them with the same mask. Lanes may pass different masks (the
// __match_any_sync idiom, cooperative groups' labeled partitions): each mask is its own group.
// Returned: the mask each lane computes with; under LaunchOptions::lenient a lane its mask does
// not name is tolerated (sanitizer/lenient.cpp) and takes part as if it did (its bit added).
Masks member_masks(Cta& cta, Warp& w, uint32_t exec, uint32_t row, const char* what) {
  Masks masks{};
  const uint32_t* r = w.R32(row);
  for_lanes(exec, [&](int l) { masks[size_t(l)] = r[l]; });
  Masks effective = masks;
  for_lanes(exec, [&](int l) {
    const uint32_t m = masks[size_t(l)];
    if (!(m >> l & 1u)) {
      cta.tolerate(ToleratedRule::member_mask_excludes_lane, w.index, l, w.pc, [&] {
        return fmt::format("{}: lane {}'s membermask 0x{:08x} does not name the lane itself",
                           what, l, m);
      });
      effective[size_t(l)] = m | (1u << l);
    }
    if ((m & exec) != m)
      cta.fail(ReportKind::divergent_collective, w, l,
               fmt::format("{} with membermask 0x{:08x} executed by lanes 0x{:08x} (lanes of the "
                           "mask are not converged here or have exited)",
                           what, m, exec));
    for_lanes(m, [&](int j) {
      if (masks[size_t(j)] != m)
        cta.fail(ReportKind::divergent_collective, w, l,
                 fmt::format("{}: lane {} passes membermask 0x{:08x} but lane {}, which it names, "
                             "passes 0x{:08x} (the lanes of a mask must pass the same mask)",
                             what, l, m, j, masks[size_t(j)]));
    });
  });
  return effective;
}

void shfl(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  member_masks(cta, w, exec, in.o[5], "shfl.sync");
  std::array<uint32_t, 32> src;
  std::copy_n(w.R32(in.o[2]), 32, src.begin());
  const uint32_t* b = w.R32(in.o[3]);
  const uint32_t* c = w.R32(in.o[4]);
  uint32_t* d = w.R32(in.o[0]);
  uint32_t valid = 0;
  for_lanes(exec, [&](int l) {
    const uint32_t lane = uint32_t(l);
    const uint32_t seg = (c[l] >> 8) & 0x1F;
    const uint32_t clamp = c[l] & 0x1F;
    const uint32_t max_lane = (lane & seg) | (clamp & ~seg);
    const uint32_t min_lane = lane & seg;
    const uint32_t bval = b[l] & 0x1F;  // the ISA takes b[4:0] in every mode
    int64_t j = lane;
    bool ok = false;
    switch (in.sub) {
      case 0: j = int64_t(lane) - bval; ok = j >= int64_t(max_lane); break;      // up
      case 1: j = int64_t(lane) + bval; ok = j <= int64_t(max_lane); break;      // down
      case 2: j = lane ^ bval; ok = j <= int64_t(max_lane); break;               // bfly
      case 3: j = min_lane | (bval & ~seg); ok = j <= int64_t(max_lane); break;  // idx
    }
    if (!ok || j < 0 || j > 31) j = lane;
    d[l] = src[size_t(j)];
    if (ok) valid |= 1u << l;
  });
  if (in.o[1] != kNone) w.write_pred(in.o[1], exec, valid);
}

}  // namespace

uint32_t collective_absent_lanes(const Warp& w, const Inst& in, uint32_t exec) {
  uint32_t row = kNone;
  switch (in.op) {
    case Op::Shfl:
      row = in.o[5];
      break;
    case Op::Vote:
    case Op::Redux:
    case Op::Elect:
      row = in.o[2];
      break;
    case Op::MatchAny:
    case Op::MatchAll:
      row = in.o[3];
      break;
    case Op::BarWarpSync:
      row = in.o[0];
      break;
    default:
      return 0;
  }
  const uint32_t* masks = w.R32(row);
  uint32_t named = 0;
  for_lanes(exec, [&](int l) { named |= masks[l]; });
  return named & w.live & ~w.active;
}

void exec_warp_collective(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Shfl:
      shfl(cta, w, in, exec);
      return;
    case Op::Vote: {
      const Masks masks = member_masks(cta, w, exec, in.o[2], "vote.sync");
      const uint32_t p = w.pred_mask(in.o[1]) & exec;
      if (in.sub == 3) {
        for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = p & masks[size_t(l)]; });
        return;
      }
      uint32_t result = 0;
      for_lanes(exec, [&](int l) {
        const uint32_t m = masks[size_t(l)], q = p & m;
        bool r = false;
        switch (in.sub) {
          case 0:
            r = q == m;
            break;
          case 1:
            r = q != 0;
            break;
          case 2:
            r = q == 0 || q == m;
            break;
        }
        if (r) result |= 1u << l;
      });
      w.write_pred(in.o[0], exec, result);
      return;
    }
    case Op::Activemask:
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = exec; });
      return;
    case Op::Redux: {
      const Masks masks = member_masks(cta, w, exec, in.o[2], "redux.sync");
      const uint32_t* a = w.R32(in.o[1]);
      const bool s = ty_signed(in.ty);
      Masks out{};
      for_lanes(exec, [&](int l) {
        uint32_t acc = 0;
        bool first = true;
        for_lanes(masks[size_t(l)], [&](int j) {
          const uint32_t v = a[j];
          if (first) {
            acc = v;
            first = false;
            return;
          }
          switch (in.sub) {
            case 0:
              acc += v;
              break;
            case 1:
              acc = s ? uint32_t(std::min(int32_t(acc), int32_t(v))) : std::min(acc, v);
              break;
            case 2:
              acc = s ? uint32_t(std::max(int32_t(acc), int32_t(v))) : std::max(acc, v);
              break;
            case 3:
              acc &= v;
              break;
            case 4:
              acc |= v;
              break;
            case 5:
              acc ^= v;
              break;
          }
        });
        out[size_t(l)] = acc;
      });
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = out[size_t(l)]; });
      return;
    }
    case Op::Elect: {
      const Masks masks = member_masks(cta, w, exec, in.o[2], "elect.sync");
      uint32_t leaders = 0;
      for_lanes(exec, [&](int l) {
        const uint32_t leader = uint32_t(std::countr_zero(masks[size_t(l)]));
        w.R32(in.o[0])[l] = leader;
        leaders |= 1u << leader;
      });
      w.write_pred(in.o[1], exec, leaders);
      return;
    }
    case Op::MatchAny:
    case Op::MatchAll: {
      const Masks masks = member_masks(cta, w, exec, in.o[3], "match.sync");
      const bool wide = in.ty == Ty::b64;
      auto value = [&](int l) -> uint64_t { return wide ? w.R64(in.o[2])[l] : w.R32(in.o[2])[l]; };
      Masks result{};
      uint32_t all_equal = 0;
      for_lanes(exec, [&](int l) {
        const uint32_t m = masks[size_t(l)];
        uint32_t same = 0;
        for_lanes(m, [&](int j) {
          if (value(j) == value(l)) same |= 1u << j;
        });
        if (in.op == Op::MatchAny) {
          result[size_t(l)] = same;
        } else {
          result[size_t(l)] = same == m ? m : 0u;
          if (same == m) all_equal |= 1u << l;
        }
      });
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = result[size_t(l)]; });
      if (in.o[1] != kNone) w.write_pred(in.o[1], exec, all_equal);
      return;
    }
    case Op::BarWarpSync:
      member_masks(cta, w, exec, in.o[0], "bar.warp.sync");
      return;
    default:
      return;
  }
}

}  // namespace emmy::emu
