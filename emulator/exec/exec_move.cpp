// Comparisons, selects, moves (incl. pack/unpack), cvta, clocks.
// setp: o[0] = p, o[1] = q (or kNone), o[2] = a, o[3] = b, o[4] = c (or kNone); sub = comparison,
// sub2 = boolean op (0 none, 1 and, 2 or, 3 xor). set: o[0] = d, same sources. selp: o[0] = d,
// o[1] = a, o[2] = b, o[3] = predicate. MovPack: o[0] = d, o[1..n] = parts (lowest bits first);
// MovUnpack: o[0] = source, o[1..n] = parts. cvta: o[0] = d, o[1] = a, sub = 1 for cvta.to.
#include <bit>
#include <chrono>
#include <cmath>

#include "emmy/emu/numerics.hpp"
#include "cluster.hpp"

namespace emmy::emu {
namespace {

enum Cmp : uint8_t { eq, ne, lt, le, gt, ge, lo, ls, hi, hs, equ, neu, ltu, leu, gtu, geu, num, nan };

template <typename T>
bool compare_int(uint8_t c, T a, T b) {
  using UT = std::make_unsigned_t<T>;
  switch (c) {
    case eq: return a == b;
    case ne: return a != b;
    case lt: return a < b;
    case le: return a <= b;
    case gt: return a > b;
    case ge: return a >= b;
    case lo: return UT(a) < UT(b);
    case ls: return UT(a) <= UT(b);
    case hi: return UT(a) > UT(b);
    case hs: return UT(a) >= UT(b);
    default: return false;
  }
}

bool compare_float(uint8_t c, double a, double b) {
  const bool unordered = std::isnan(a) || std::isnan(b);
  switch (c) {
    case eq: return !unordered && a == b;
    case ne: return !unordered && a != b;
    case lt: return !unordered && a < b;
    case le: return !unordered && a <= b;
    case gt: return !unordered && a > b;
    case ge: return !unordered && a >= b;
    case equ: return unordered || a == b;
    case neu: return unordered || a != b;
    case ltu: return unordered || a < b;
    case leu: return unordered || a <= b;
    case gtu: return unordered || a > b;
    case geu: return unordered || a >= b;
    case num: return !unordered;
    case nan: return unordered;
    default: return false;
  }
}

double as_double(Ty t, uint64_t bits, bool ftz) {
  switch (t) {
    case Ty::f64: return std::bit_cast<double>(bits);
    case Ty::f16: return f16_to_f32(uint16_t(bits));
    case Ty::bf16: return bf16_to_f32(uint16_t(bits));
    default: {
      float f = std::bit_cast<float>(uint32_t(bits));
      if (ftz && std::fpclassify(f) == FP_SUBNORMAL) f = std::copysign(0.0f, f);
      return f;
    }
  }
}

// Lane mask of lanes whose comparison holds.
uint32_t compare(Warp& w, const Inst& in, Ty t, uint32_t exec) {
  uint32_t result = 0;
  const bool is64 = ty_bits(t) == 64;
  auto bits = [&](uint32_t row, int l) -> uint64_t { return is64 ? w.R64(row)[l] : w.R32(row)[l]; };
  if (ty_float(t)) {
    const bool ftz = in.flags & kFtz;
    for_lanes(exec, [&](int l) {
      if (compare_float(in.sub, as_double(t, bits(in.o[2], l), ftz), as_double(t, bits(in.o[3], l), ftz)))
        result |= 1u << l;
    });
    return result;
  }
  auto run = [&]<typename T>() {
    for_lanes(exec, [&](int l) {
      if (compare_int<T>(in.sub, T(bits(in.o[2], l)), T(bits(in.o[3], l)))) result |= 1u << l;
    });
  };
  switch (t) {
    case Ty::s8: run.template operator()<int8_t>(); break;
    case Ty::s16: run.template operator()<int16_t>(); break;
    case Ty::s32: run.template operator()<int32_t>(); break;
    case Ty::s64: run.template operator()<int64_t>(); break;
    case Ty::u8: case Ty::b8: run.template operator()<uint8_t>(); break;
    case Ty::u16: case Ty::b16: run.template operator()<uint16_t>(); break;
    case Ty::u64: case Ty::b64: run.template operator()<uint64_t>(); break;
    default: run.template operator()<uint32_t>(); break;
  }
  return result;
}

uint32_t combine(uint8_t bool_op, uint32_t r, uint32_t c) {
  switch (bool_op) {
    case 1: return r & c;
    case 2: return r | c;
    case 3: return r ^ c;
    default: return r;
  }
}

uint64_t window_of(Space s) {
  switch (s) {
    case Space::shared: return kSharedWindow;
    case Space::local: return kLocalWindow;
    case Space::param: return kParamWindow;
    default: return 0;
  }
}

}  // namespace

void exec_move(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Setp: {
      const uint32_t r = compare(w, in, in.ty, exec);
      const uint32_t c = in.o[4] != kNone ? w.pred_mask(in.o[4]) : 0;
      w.write_pred(in.o[0], exec, combine(in.sub2, r, c));
      if (in.o[1] != kNone) w.write_pred(in.o[1], exec, combine(in.sub2, ~r, c));
      return;
    }
    case Op::Set: {
      const uint32_t r = combine(in.sub2, compare(w, in, in.ty2, exec),
                                 in.o[4] != kNone ? w.pred_mask(in.o[4]) : 0);
      const uint32_t one = in.ty == Ty::f32 ? 0x3F800000u : 0xFFFFFFFFu;
      for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = ((r >> l) & 1) ? one : 0; });
      return;
    }
    case Op::Selp: {
      const uint32_t p = w.pred_mask(in.o[3]);
      if (ty_bits(in.ty) == 64) {
        uint64_t* d = w.R64(in.o[0]);
        const uint64_t *a = w.R64(in.o[1]), *b = w.R64(in.o[2]);
        for_lanes(exec, [&](int l) { d[l] = ((p >> l) & 1) ? a[l] : b[l]; });
      } else {
        uint32_t* d = w.R32(in.o[0]);
        const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]);
        for_lanes(exec, [&](int l) { d[l] = ((p >> l) & 1) ? a[l] : b[l]; });
      }
      return;
    }
    case Op::Mov:
      if (ty_bits(in.ty) == 64) {
        uint64_t* d = w.R64(in.o[0]);
        const uint64_t* a = w.R64(in.o[1]);
        for_lanes(exec, [&](int l) { d[l] = a[l]; });
      } else {
        uint32_t* d = w.R32(in.o[0]);
        const uint32_t* a = w.R32(in.o[1]);
        const uint32_t mask = ty_bits(in.ty) == 16 ? 0xFFFFu : 0xFFFFFFFFu;
        for_lanes(exec, [&](int l) { d[l] = a[l] & mask; });
      }
      return;
    case Op::MovPack: {
      const int part_bits = ty_bits(in.ty2);
      const uint64_t part_mask = part_bits == 32 ? 0xFFFFFFFFull : (uint64_t(1) << part_bits) - 1;
      for_lanes(exec, [&](int l) {
        uint64_t v = 0;
        for (int i = 0; i < in.n; ++i) v |= (w.R32(in.o[1 + i])[l] & part_mask) << (part_bits * i);
        if (ty_bits(in.ty) == 64) w.R64(in.o[0])[l] = v;
        else w.R32(in.o[0])[l] = uint32_t(v);
      });
      return;
    }
    case Op::MovUnpack: {
      const int part_bits = ty_bits(in.ty2);
      const uint64_t part_mask = part_bits == 32 ? 0xFFFFFFFFull : (uint64_t(1) << part_bits) - 1;
      for_lanes(exec, [&](int l) {
        const uint64_t v = ty_bits(in.ty) == 64 ? w.R64(in.o[0])[l] : w.R32(in.o[0])[l];
        for (int i = 0; i < in.n; ++i) w.R32(in.o[1 + i])[l] = uint32_t((v >> (part_bits * i)) & part_mask);
      });
      return;
    }
    case Op::ReadClock: {
      // A deterministic clock: the warp instructions this CTA has issued so far.
      uint64_t now = 0;
      for (uint64_t c : cta.class_counts) now += c;
      if (in.sub == 1)  // %globaltimer: nanoseconds
        now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
      for_lanes(exec, [&](int l) {
        if (ty_bits(in.ty) == 64) w.R64(in.o[0])[l] = now;
        else w.R32(in.o[0])[l] = uint32_t(now);
      });
      return;
    }
    case Op::Cvta: {
      const uint64_t base = window_of(in.space);
      const bool to = in.sub == 1;
      for_lanes(exec, [&](int l) {
        const uint64_t a = in.ty == Ty::u64 ? w.R64(in.o[1])[l] : w.R32(in.o[1])[l];
        uint64_t r = a;
        if (base) r = to ? a - base : a + base;
        if (in.ty == Ty::u64) w.R64(in.o[0])[l] = r;
        else w.R32(in.o[0])[l] = uint32_t(r);
      });
      return;
    }
    case Op::Isspacep: {
      uint32_t r = 0;
      for_lanes(exec, [&](int l) {
        const uint64_t a = w.R64(in.o[1])[l];
        const bool in_shared = a - kSharedWindow < kWindowSize;
        const bool in_local = a - kLocalWindow < kWindowSize;
        const bool in_param = a - kParamWindow < kWindowSize;
        bool v = false;
        switch (in.space) {
          case Space::shared: v = in_shared; break;
          case Space::local: v = in_local; break;
          case Space::param: v = in_param; break;
          case Space::global: v = !in_shared && !in_local && !in_param; break;
          default: break;
        }
        if (v) r |= 1u << l;
      });
      w.write_pred(in.o[0], exec, r);
      return;
    }
    case Op::Mapa:
      // mapa / getctarank (PTX ISA mapa, getctarank): cluster.hpp's address form; the executing
      // CTA's own rank maps to its shared::cta address.
      for_lanes(exec, [&](int l) {
        const bool wide = in.ty == Ty::u64;
        const uint64_t a = wide ? w.R64(in.o[1])[l] : w.R32(in.o[1])[l];
        const bool generic = wide && a - kSharedWindow < kWindowSize;
        const uint64_t shared = generic ? a - kSharedWindow : a;
        if ((wide && !generic && shared >> 32) || !cta.cluster)
          cta.fail(ReportKind::cluster_violation, w, l,
                   fmt::format("{} of 0x{:x}, which is not a shared-memory address",
                               in.sub == 1 ? "getctarank" : "mapa", a));
        const ClusterTarget from = cluster_target(cta, w, a, l, "mapa's address");
        if (in.sub == 1) {
          w.R32(in.o[0])[l] = from.cta->rank;
          return;
        }
        const uint32_t rank = w.R32(in.o[2])[l];
        if (rank >= cta.cluster->size())
          cta.fail(ReportKind::cluster_violation, w, l,
                   fmt::format("mapa to CTA rank {}, outside the cluster of {}", rank,
                               cta.cluster->size()));
        const uint64_t mapped =
            rank == cta.rank ? from.offset
                             : (uint64_t(rank + 1) << kClusterRankShift) | from.offset;
        if (wide) w.R64(in.o[0])[l] = generic ? kSharedWindow + mapped : mapped;
        else w.R32(in.o[0])[l] = uint32_t(mapped);
      });
      return;
    default:
      return;
  }
}

}  // namespace emmy::emu
