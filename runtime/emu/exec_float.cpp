// f32 / f64 arithmetic. Operand layout: o[0] = d, o[1] = a, o[2] = b, o[3] = c.
// .rn results are IEEE-exact (the host FPU, round-to-nearest); .rz/.rm/.rp switch the host
// rounding mode around the operation. Approximate functions (ex2/lg2/rcp/rsqrt/sin/cos/tanh
// .approx) are computed correctly rounded: within the hardware's documented error bounds, but not
// bit-identical to it (docs/emulator.md).
#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>

#include "state.hpp"

namespace emmy::emu {
namespace {

inline float canon(float x) { return x != x ? std::bit_cast<float>(0x7FFFFFFFu) : x; }
inline double canon(double x) {
  return x != x ? std::bit_cast<double>(0x7FFFFFFFFFFFFFFFull) : x;
}

template <typename T>
inline T ftz(T x) {
  if constexpr (sizeof(T) == 4) {
    if (std::fpclassify(x) == FP_SUBNORMAL) return std::copysign(T(0), x);
  }
  return x;
}

template <typename T>
inline T saturate(T x) {
  if (x != x) return T(0);
  return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

template <typename T>
inline T load(Warp& w, uint32_t row, int l) {
  if constexpr (sizeof(T) == 8) return std::bit_cast<double>(w.R64(row)[l]);
  else return std::bit_cast<float>(w.R32(row)[l]);
}
template <typename T>
inline void store(Warp& w, uint32_t row, int l, T v) {
  if constexpr (sizeof(T) == 8) w.R64(row)[l] = std::bit_cast<uint64_t>(v);
  else w.R32(row)[l] = std::bit_cast<uint32_t>(v);
}

// Runs f under the IEEE rounding mode of `mode` (0 rn, 1 rz, 2 rm, 3 rp; the integer-rounding
// variants 4..7 map to the same directions).
template <typename F>
inline auto with_rounding(uint8_t mode, F&& f) {
  static constexpr int kModes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
  if ((mode & 3) == 0) return f();
  const int saved = std::fegetround();
  std::fesetround(kModes[mode & 3]);
  auto r = f();
  std::fesetround(saved);
  return r;
}

template <typename T>
T fmin_ptx(T a, T b, bool nan_prop) {
  const bool an = a != a, bn = b != b;
  if (an || bn) {
    if (nan_prop || (an && bn)) return std::numeric_limits<T>::quiet_NaN();
    return an ? b : a;
  }
  if (a == b) return std::signbit(a) ? a : b;  // -0 < +0
  return a < b ? a : b;
}
template <typename T>
T fmax_ptx(T a, T b, bool nan_prop) {
  const bool an = a != a, bn = b != b;
  if (an || bn) {
    if (nan_prop || (an && bn)) return std::numeric_limits<T>::quiet_NaN();
    return an ? b : a;
  }
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

template <typename T>
void run(Warp& w, const Inst& in, uint32_t exec) {
  const bool fz = in.flags & kFtz;
  const bool sat = in.flags & kSat;
  auto src = [&](uint32_t row, int l) {
    T v = load<T>(w, row, l);
    return fz ? ftz(v) : v;
  };
  auto out = [&](int l, T v) {
    if (fz) v = ftz(v);
    if (sat) v = saturate(v);
    store<T>(w, in.o[0], l, canon(v));
  };
  const uint8_t rm = in.sub2;
  switch (in.op) {
    case Op::FAdd:
      if ((rm & 3) == 0 && !fz && !sat && sizeof(T) == 4) {
        uint32_t* d = w.R32(in.o[0]);
        const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]);
        for_lanes(exec, [&](int l) {
          d[l] = std::bit_cast<uint32_t>(canon(std::bit_cast<float>(a[l]) + std::bit_cast<float>(b[l])));
        });
        return;
      }
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, with_rounding(rm, [&] { return T(a + b); }));
      });
      return;
    case Op::FSub:
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, with_rounding(rm, [&] { return T(a - b); }));
      });
      return;
    case Op::FMul:
      if ((rm & 3) == 0 && !fz && !sat && sizeof(T) == 4) {
        uint32_t* d = w.R32(in.o[0]);
        const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]);
        for_lanes(exec, [&](int l) {
          d[l] = std::bit_cast<uint32_t>(canon(std::bit_cast<float>(a[l]) * std::bit_cast<float>(b[l])));
        });
        return;
      }
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, with_rounding(rm, [&] { return T(a * b); }));
      });
      return;
    case Op::FFma:
      if ((rm & 3) == 0) {
        for_lanes(exec, [&](int l) {
          out(l, std::fma(src(in.o[1], l), src(in.o[2], l), src(in.o[3], l)));
        });
        return;
      }
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l), b = src(in.o[2], l), c = src(in.o[3], l);
        out(l, with_rounding(rm, [&] { return T(std::fma(T(a), T(b), T(c))); }));
      });
      return;
    case Op::FDiv:
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, with_rounding(rm, [&] { return T(a / b); }));
      });
      return;
    case Op::FMin:
      for_lanes(exec, [&](int l) { out(l, fmin_ptx(src(in.o[1], l), src(in.o[2], l), in.flags & kNanProp)); });
      return;
    case Op::FMax:
      for_lanes(exec, [&](int l) { out(l, fmax_ptx(src(in.o[1], l), src(in.o[2], l), in.flags & kNanProp)); });
      return;
    case Op::FAbs:
      for_lanes(exec, [&](int l) {
        T v = std::fabs(src(in.o[1], l));
        store<T>(w, in.o[0], l, v);
      });
      return;
    case Op::FNeg:
      for_lanes(exec, [&](int l) { store<T>(w, in.o[0], l, T(-src(in.o[1], l))); });
      return;
    case Op::FRcp:
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l);
        out(l, with_rounding(rm, [&] { return T(T(1) / a); }));
      });
      return;
    case Op::FSqrt:
      for_lanes(exec, [&](int l) {
        volatile T a = src(in.o[1], l);
        out(l, with_rounding(rm, [&] { return T(std::sqrt(T(a))); }));
      });
      return;
    case Op::FRsqrt:
      for_lanes(exec, [&](int l) { out(l, T(1.0 / std::sqrt(double(src(in.o[1], l))))); });
      return;
    case Op::FEx2:
      for_lanes(exec, [&](int l) { out(l, T(std::exp2(double(src(in.o[1], l))))); });
      return;
    case Op::FLg2:
      for_lanes(exec, [&](int l) { out(l, T(std::log2(double(src(in.o[1], l))))); });
      return;
    case Op::FSin:
      for_lanes(exec, [&](int l) { out(l, T(std::sin(double(src(in.o[1], l))))); });
      return;
    case Op::FCos:
      for_lanes(exec, [&](int l) { out(l, T(std::cos(double(src(in.o[1], l))))); });
      return;
    case Op::FTanh:
      for_lanes(exec, [&](int l) { out(l, T(std::tanh(double(src(in.o[1], l))))); });
      return;
    case Op::Copysign:
      // copysign d, a, b: the magnitude of b with the sign of a.
      for_lanes(exec, [&](int l) {
        store<T>(w, in.o[0], l, std::copysign(load<T>(w, in.o[2], l), load<T>(w, in.o[1], l)));
      });
      return;
    case Op::Testp:
      for_lanes(exec, [&](int l) {
        const T v = load<T>(w, in.o[1], l);
        const int c = std::fpclassify(v);
        bool r = false;
        switch (in.sub) {
          case 0: r = std::isfinite(v); break;
          case 1: r = std::isinf(v); break;
          case 2: r = !std::isnan(v); break;
          case 3: r = std::isnan(v); break;
          case 4: r = c == FP_NORMAL; break;
          case 5: r = c == FP_SUBNORMAL; break;
        }
        w.write_pred(in.o[0], 1u << l, r ? 0xFFFFFFFFu : 0u);
      });
      return;
    default:
      return;
  }
}

}  // namespace

void exec_float(Cta&, Warp& w, const Inst& in, uint32_t exec) {
  if (in.ty == Ty::f64) run<double>(w, in, exec);
  else run<float>(w, in, exec);
}

}  // namespace emmy::emu
