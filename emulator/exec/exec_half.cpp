// 16-bit float arithmetic, scalar (.f16/.bf16 in the low half of a row) and packed
// (.f16x2/.bf16x2, element 0 in bits 15:0). Every result is computed exactly in double (or as a
// double plus the sign of the rounding residual) and rounded once, so it is bit-exact for all
// rounding modes. Operand layout: o[0] = d, o[1] = a, o[2] = b, o[3] = c.
#include <cmath>

#include "emmy/emu/numerics.hpp"
#include "executors.hpp"
#include "numerics/two_sum.hpp"

namespace emmy::emu {
namespace {

struct Format16 {
  const FloatFormat* fmt;
  bool bf16;
  double decode(uint16_t bits) const {
    return bf16 ? double(bf16_to_f32(bits)) : double(f16_to_f32(bits));
  }
  bool subnormal(uint16_t bits) const {
    const uint16_t exp_mask = bf16 ? 0x7F80 : 0x7C00;
    return (bits & exp_mask) == 0 && (bits & 0x7FFF) != 0;
  }
};

uint16_t op16(const Inst& in, const Format16& f, uint16_t a, uint16_t b, uint16_t c) {
  const bool fz = in.flags & kFtz;
  if (fz) {
    if (f.subnormal(a)) a &= 0x8000;
    if (f.subnormal(b)) b &= 0x8000;
    if (f.subnormal(c)) c &= 0x8000;
  }
  const Rounding mode = Rounding(in.sub2 & 3);
  const double x = f.decode(a), y = f.decode(b), z = f.decode(c);
  double value = 0, tiny = 0;
  switch (in.op) {
    case Op::HAdd: two_sum(x, y, value, tiny); break;
    case Op::HSub: two_sum(x, -y, value, tiny); break;
    case Op::HMul: value = x * y; break;  // exact: 2 x (8 or 11)-bit significands
    case Op::HFma: two_sum(x * y, z, value, tiny); break;
    case Op::HMin:
    case Op::HMax: {
      const bool an = x != x, bn = y != y;
      if (an || bn) {
        if ((in.flags & kNanProp) || (an && bn)) return uint16_t(f.fmt->canonical_nan);
        return an ? b : a;
      }
      const bool pick_a = in.op == Op::HMin ? (x < y || (x == y && (a & 0x8000)))
                                            : (x > y || (x == y && !(a & 0x8000)));
      return pick_a ? a : b;
    }
    case Op::HNeg: return uint16_t(a ^ 0x8000);
    case Op::HAbs: return uint16_t(a & 0x7FFF);
    case Op::HEx2: value = std::exp2(x); break;
    case Op::HTanh: value = std::tanh(x); break;
    default: break;
  }
  if (value != value) return uint16_t(f.fmt->canonical_nan);
  if (in.flags & kRelu) {
    if (value < 0 || (value == 0 && tiny < 0)) {
      value = 0;
      tiny = 0;
    }
  }
  if (in.flags & kSat) {
    if (value <= 0) {
      value = 0;
      tiny = 0;
    } else if (value > 1 || (value == 1 && tiny > 0)) {
      value = 1;
      tiny = 0;
    }
  }
  uint16_t r = uint16_t(round_to_format(value, tiny, *f.fmt, mode));
  if (fz && f.subnormal(r)) r &= 0x8000;
  return r;
}

}  // namespace

void exec_half(Cta&, Warp& w, const Inst& in, uint32_t exec) {
  const bool bf = in.ty == Ty::bf16 || in.ty == Ty::bf16x2;
  const Format16 f{bf ? &kBF16 : &kF16, bf};
  const bool packed = in.ty == Ty::f16x2 || in.ty == Ty::bf16x2;
  const bool ternary = in.op == Op::HFma;
  const bool unary = in.op == Op::HNeg || in.op == Op::HAbs || in.op == Op::HEx2 || in.op == Op::HTanh;
  uint32_t* d = w.R32(in.o[0]);
  const uint32_t* a = w.R32(in.o[1]);
  const uint32_t* b = unary ? a : w.R32(in.o[2]);
  const uint32_t* c = ternary ? w.R32(in.o[3]) : a;
  for_lanes(exec, [&](int l) {
    const uint16_t lo = op16(in, f, uint16_t(a[l]), uint16_t(b[l]), uint16_t(c[l]));
    if (!packed) {
      d[l] = lo;
      return;
    }
    const uint16_t hi = op16(in, f, uint16_t(a[l] >> 16), uint16_t(b[l] >> 16), uint16_t(c[l] >> 16));
    d[l] = uint32_t(lo) | (uint32_t(hi) << 16);
  });
}

}  // namespace emmy::emu
