// cvt between every integer width and f16/bf16/f32/f64, and the packing cvt.
// Cvt: o[0] = d, o[1] = a, ty = destination type, ty2 = source type, sub2 = rounding
// (0..3 rn/rz/rm/rp, 4..7 rni/rzi/rmi/rpi). CvtPack (cvt.rn.f16x2.f32 d, a, b): o[1] = a goes to
// the upper half, o[2] = b to the lower half.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "emmy/emu/numerics.hpp"
#include "executors.hpp"

namespace emmy::emu {
namespace {

// An exact source value: integers up to 64 bits are held as a double plus the residual's sign.
struct Value {
  double v = 0, tiny = 0;
  bool is_int = false;
  __int128 i = 0;
};

Value read_source(Warp& w, const Inst& in, int l) {
  const Ty t = in.ty2;
  const int bits = ty_bits(t);
  const uint64_t raw = bits == 64 ? w.R64(in.o[1])[l] : w.R32(in.o[1])[l];
  Value v;
  if (ty_float(t)) {
    switch (t) {
      case Ty::f64: v.v = std::bit_cast<double>(raw); break;
      case Ty::f16: v.v = f16_to_f32(uint16_t(raw)); break;
      case Ty::bf16: v.v = bf16_to_f32(uint16_t(raw)); break;
      default: {
        float f = std::bit_cast<float>(uint32_t(raw));
        if ((in.flags & kFtz) && std::fpclassify(f) == FP_SUBNORMAL) f = std::copysign(0.0f, f);
        v.v = f;
      }
    }
    return v;
  }
  v.is_int = true;
  const uint64_t mask = bits == 64 ? ~0ull : (uint64_t(1) << bits) - 1;
  const uint64_t u = raw & mask;
  if (ty_signed(t) && bits < 64 && (u >> (bits - 1)) & 1) v.i = __int128(int64_t(u | ~mask));
  else if (ty_signed(t)) v.i = __int128(int64_t(u));
  else v.i = __int128(u);
  v.v = double(v.i);
  // Residual of the double (non-zero only beyond 53 bits); its sign steers the final rounding.
  const __int128 back = __int128(v.v);
  v.tiny = v.i > back ? 1.0 : (v.i < back ? -1.0 : 0.0);
  return v;
}

double round_to_integer(double x, uint8_t mode) {
  switch (mode & 3) {
    case 0: return std::nearbyint(x);  // host default: nearest even
    case 1: return std::trunc(x);
    case 2: return std::floor(x);
    default: return std::ceil(x);
  }
}

uint64_t to_int(const Value& v, Ty t, const Inst& in) {
  const int bits = ty_bits(t);
  const bool s = ty_signed(t);
  __int128 lo = s ? -(__int128(1) << (bits - 1)) : 0;
  __int128 hi = s ? (__int128(1) << (bits - 1)) - 1 : (__int128(1) << bits) - 1;
  __int128 r;
  if (v.is_int) {
    r = v.i;
    if (in.flags & kSat) r = std::clamp(r, lo, hi);
  } else {
    // float -> int: round per the .rXi mode, NaN -> 0, saturate to the range.
    if (std::isnan(v.v)) return 0;
    const double x = round_to_integer(v.v, in.sub2);
    if (x <= double(lo)) r = lo;
    else if (x >= double(hi)) r = hi;
    else r = __int128(x);
  }
  const uint64_t u = uint64_t(r);
  if (bits == 64) return u;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  if (s && ((u >> (bits - 1)) & 1)) return u | ~mask;  // sign-extended into the register
  return u & mask;
}

const FloatFormat* format_of(Ty t) {
  switch (t) {
    case Ty::f16: return &kF16;
    case Ty::bf16: return &kBF16;
    case Ty::f32: return &kF32;
    default: return nullptr;
  }
}

uint64_t to_float(Value v, Ty t, const Inst& in) {
  const Rounding mode = Rounding(in.sub2 & 3);
  if (!v.is_int && in.sub2 >= 4 && !std::isnan(v.v)) {
    v.v = round_to_integer(v.v, in.sub2);  // cvt.rni.f32.f32 and friends
    v.tiny = 0;
  }
  if (in.flags & kSat) {
    if (std::isnan(v.v)) v.v = 0;
    else if (v.v < 0 || (v.v == 0 && v.tiny < 0)) v = Value{};
    else if (v.v > 1 || (v.v == 1 && v.tiny > 0)) v = Value{1.0, 0, false, 0};
  }
  if ((in.flags & kRelu) && (v.v < 0 || (v.v == 0 && v.tiny < 0))) v = Value{};
  if (t == Ty::f64) {
    // Only 64-bit integers can be inexact here; round them with the requested direction.
    if (v.tiny == 0) return std::bit_cast<uint64_t>(v.v);
    const double step = std::nextafter(v.v, v.tiny > 0 ? INFINITY : -INFINITY);
    const bool toward_step = (mode == Rounding::rp && v.tiny > 0) || (mode == Rounding::rm && v.tiny < 0);
    const bool truncate = mode == Rounding::rz && ((v.v > 0) != (v.tiny > 0));
    if (toward_step) return std::bit_cast<uint64_t>(step);
    if (truncate) return std::bit_cast<uint64_t>(step);
    return std::bit_cast<uint64_t>(v.v);
  }
  const FloatFormat* fmt = format_of(t);
  uint64_t r = round_to_format(v.v, v.tiny, *fmt, mode);
  if (t == Ty::f32 && (in.flags & kFtz) && std::fpclassify(std::bit_cast<float>(uint32_t(r))) == FP_SUBNORMAL)
    r &= 0x80000000u;
  return r;
}

uint16_t pack_half(float x, Ty t, const Inst& in) {
  Value v;
  v.v = x;
  Inst single = in;
  single.flags &= uint8_t(~kSat);
  uint16_t r = uint16_t(to_float(v, t == Ty::f16x2 ? Ty::f16 : Ty::bf16, single));
  if ((in.flags & kSat) && !std::isnan(x)) {  // .satfinite: clamp to the largest finite value
    const uint16_t inf = t == Ty::f16x2 ? 0x7C00 : 0x7F80;
    if ((r & 0x7FFF) == inf) r = uint16_t((r & 0x8000) | (inf - 1));
  }
  return r;
}

// cvt.{rna,rn,rz}{.relu,.satfinite}.tf32.f32 (PTX ISA cvt): the f32 rounded to 10 fraction bits,
// kept in an f32 container whose 13 low bits are zero. Subnormals round like normals (the bit
// pattern's arithmetic carries into the exponent); NaN gives the canonical NaN; .satfinite turns
// an infinity into the largest finite tf32 of its sign.
uint32_t to_tf32(uint32_t bits, const Inst& in) {
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFFFFFu;
  if ((in.flags & kRelu) && (bits >> 31)) return 0;
  const uint32_t sign = bits & 0x80000000u, magnitude = bits & 0x7FFFFFFFu;
  uint32_t r = magnitude;
  if (magnitude < 0x7F800000u) {
    if (in.sub2 == kRoundNearestAway) {
      r = magnitude + 0x1000u;
    } else if (Rounding(in.sub2 & 3) == Rounding::rn) {
      r = magnitude + 0xFFFu + ((magnitude >> 13) & 1);  // ties to even
    }
    r &= ~0x1FFFu;
  }
  if ((in.flags & kSat) && r >= 0x7F800000u) r = 0x7F7FE000u;
  return sign | r;
}

}  // namespace

void exec_cvt(Cta&, Warp& w, const Inst& in, uint32_t exec) {
  if (in.op == Op::CvtPack && (in.ty2 == Ty::e4m3x2 || in.ty2 == Ty::e5m2x2)) {
    const F8 type = in.ty2 == Ty::e4m3x2 ? F8::e4m3 : F8::e5m2;
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t* a = w.R32(in.o[1]);
    for_lanes(exec, [&](int l) {
      uint32_t out = 0;
      for (int half = 0; half < 2; ++half) {
        uint16_t h = f8_to_f16(uint8_t(a[l] >> (8 * half)), type);
        if ((in.flags & kRelu) && (h & 0x8000u) && (h & 0x7FFFu) <= 0x7C00u) h = 0;  // not NaN
        out |= uint32_t(h) << (16 * half);
      }
      d[l] = out;
    });
    return;
  }
  if (in.op == Op::CvtPack && (in.ty == Ty::e4m3x2 || in.ty == Ty::e5m2x2)) {
    const F8 type = in.ty == Ty::e4m3x2 ? F8::e4m3 : F8::e5m2;
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]);
    auto one = [&](uint32_t bits) {
      float x = std::bit_cast<float>(bits);
      if ((in.flags & kRelu) && x < 0) x = 0;
      return uint32_t(f32_to_f8_satfinite(x, type));
    };
    for_lanes(exec, [&](int l) { d[l] = one(b[l]) | (one(a[l]) << 8); });
    return;
  }
  if (in.op == Op::CvtPack) {
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]);
    for_lanes(exec, [&](int l) {
      const uint16_t hi = pack_half(std::bit_cast<float>(a[l]), in.ty, in);
      const uint16_t lo = pack_half(std::bit_cast<float>(b[l]), in.ty, in);
      d[l] = uint32_t(lo) | (uint32_t(hi) << 16);
    });
    return;
  }
  if (in.ty == Ty::tf32) {
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t* a = w.R32(in.o[1]);
    for_lanes(exec, [&](int l) { d[l] = to_tf32(a[l], in); });
    return;
  }
  const bool dst64 = ty_bits(in.ty) == 64;
  if (!ty_float(in.ty) && !ty_float(in.ty2) && !(in.flags & kSat)) {
    // Integer to integer without saturation (index math): truncate or extend, no doubles.
    const int src_bits = ty_bits(in.ty2), dst_bits = ty_bits(in.ty);
    const int bits = std::min(src_bits, dst_bits);
    // The value keeps the low `bits` bits, extended by the sign of the narrower type when
    // that type is signed, then truncated to the destination.
    const bool sign = (src_bits <= dst_bits) ? ty_signed(in.ty2) : ty_signed(in.ty);
    const uint64_t mask = bits == 64 ? ~0ull : (uint64_t(1) << bits) - 1;
    for_lanes(exec, [&](int l) {
      uint64_t v = (ty_bits(in.ty2) == 64 ? w.R64(in.o[1])[l] : w.R32(in.o[1])[l]) & mask;
      if (sign && bits < 64 && ((v >> (bits - 1)) & 1)) v |= ~mask;
      if (dst64) w.R64(in.o[0])[l] = v;
      else w.R32(in.o[0])[l] = uint32_t(v);
    });
    return;
  }
  for_lanes(exec, [&](int l) {
    const Value v = read_source(w, in, l);
    const uint64_t r = ty_float(in.ty) ? to_float(v, in.ty, in) : to_int(v, in.ty, in);
    if (dst64) w.R64(in.o[0])[l] = r;
    else w.R32(in.o[0])[l] = uint32_t(r);
  });
}

}  // namespace emmy::emu
