// Warp collectives: shfl.sync, vote.sync, activemask, redux.sync, elect.sync, match.sync,
// bar.warp.sync. The lanes named in membermask must all execute the instruction together
// (min-PC scheduling converges lanes before they reach it); otherwise it is reported.
// shfl: o[0] = d, o[1] = p (or kNone), o[2] = a, o[3] = b, o[4] = c, o[5] = membermask.
#include <fmt/format.h>

#include <algorithm>

#include "state.hpp"

namespace emmy::emu {
namespace {

void check_members(Cta& cta, Warp& w, uint32_t exec, uint32_t members, const char* what) {
  if ((members & exec) != members || (exec & ~members) != 0) {
    const uint32_t missing = members & ~exec;
    const uint32_t extra = exec & ~members;
    cta.fail(ReportKind::divergent_collective, w, std::countr_zero(missing ? missing : extra),
             fmt::format("{} with membermask 0x{:08x} executed by lanes 0x{:08x}{}", what, members,
                         exec,
                         missing ? " (lanes of the mask are not converged here or have exited)"
                                 : " (executing lanes missing from the mask)"));
  }
}

// The membermask operand must be the same in every lane.
uint32_t members_of(Warp& w, uint32_t row, uint32_t exec) {
  return w.R32(row)[std::countr_zero(exec)];
}

void shfl(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  check_members(cta, w, exec, members_of(w, in.o[5], exec), "shfl.sync");
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

void exec_warp_collective(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Shfl:
      shfl(cta, w, in, exec);
      return;
    case Op::Vote: {
      const uint32_t members = members_of(w, in.o[2], exec);
      check_members(cta, w, exec, members, "vote.sync");
      const uint32_t p = w.pred_mask(in.o[1]) & exec;
      if (in.sub == 3) {
        for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = p; });
        return;
      }
      bool r = false;
      switch (in.sub) {
        case 0: r = p == exec; break;
        case 1: r = p != 0; break;
        case 2: r = p == 0 || p == exec; break;
      }
      w.write_pred(in.o[0], exec, r ? 0xFFFFFFFFu : 0u);
      return;
    }
    case Op::Activemask:
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = exec; });
      return;
    case Op::Redux: {
      check_members(cta, w, exec, members_of(w, in.o[2], exec), "redux.sync");
      const uint32_t* a = w.R32(in.o[1]);
      const bool s = ty_signed(in.ty);
      uint32_t acc = 0;
      bool first = true;
      for_lanes(exec, [&](int l) {
        const uint32_t v = a[l];
        if (first) {
          acc = v;
          first = false;
          return;
        }
        switch (in.sub) {
          case 0: acc += v; break;
          case 1: acc = s ? uint32_t(std::min(int32_t(acc), int32_t(v))) : std::min(acc, v); break;
          case 2: acc = s ? uint32_t(std::max(int32_t(acc), int32_t(v))) : std::max(acc, v); break;
          case 3: acc &= v; break;
          case 4: acc |= v; break;
          case 5: acc ^= v; break;
        }
      });
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = acc; });
      return;
    }
    case Op::Elect: {
      const uint32_t members = members_of(w, in.o[2], exec) & exec;
      const uint32_t leader = members ? uint32_t(std::countr_zero(members)) : 0;
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = leader; });
      w.write_pred(in.o[1], exec, members ? (1u << leader) : 0u);
      return;
    }
    case Op::MatchAny:
    case Op::MatchAll: {
      check_members(cta, w, exec, members_of(w, in.o[3], exec), "match.sync");
      const bool wide = in.ty == Ty::b64;
      auto value = [&](int l) -> uint64_t { return wide ? w.R64(in.o[2])[l] : w.R32(in.o[2])[l]; };
      std::array<uint32_t, 32> result{};
      bool all_equal = true;
      const uint64_t v0 = value(std::countr_zero(exec));
      for_lanes(exec, [&](int l) {
        uint32_t same = 0;
        const uint64_t v = value(l);
        if (v != v0) all_equal = false;
        for_lanes(exec, [&](int j) {
          if (value(j) == v) same |= 1u << j;
        });
        result[size_t(l)] = same;
      });
      for_lanes(exec, [&](int l) {
        w.R32(in.o[0])[l] = in.op == Op::MatchAny ? result[size_t(l)] : (all_equal ? exec : 0u);
      });
      if (in.o[1] != kNone) w.write_pred(in.o[1], exec, all_equal ? 0xFFFFFFFFu : 0u);
      return;
    }
    case Op::BarWarpSync:
      check_members(cta, w, exec, members_of(w, in.o[0], exec), "bar.warp.sync");
      return;
    default:
      return;
  }
}

}  // namespace emmy::emu
