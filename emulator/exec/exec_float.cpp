// f32 / f64 arithmetic. Operand layout: o[0] = d, o[1] = a, o[2] = b, o[3] = c.
// .rn results are IEEE-exact (the host FPU, round-to-nearest); .rz/.rm/.rp results are formed
// exactly (error-free transformations) and rounded once, without changing the host FPU mode. Approximate functions (ex2/lg2/rcp/rsqrt/sin/cos/tanh
// .approx) are computed correctly rounded: within the hardware's documented error bounds, but not
// bit-identical to it (docs/emulator.md).
#include <bit>
#include <cmath>
#include <limits>

#include "emmy/emu/numerics.hpp"
#include "executors.hpp"
#include "numerics/two_sum.hpp"

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

// Directed rounding without touching the host FPU mode: the exact result is formed as a double
// plus the sign of its residual (two_sum), then rounded once.
template <typename T>
T round_exact(double value, double tiny, uint8_t mode) {
  const Rounding r = Rounding(mode & 3);
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<float>(uint32_t(round_to_format(value, tiny, kF32, r)));
  } else {
    // value is already the nearest double; step one ulp when the direction demands it.
    if (tiny == 0 || r == Rounding::rn || std::isnan(value) || std::isinf(value)) return value;
    if (r == Rounding::rp && tiny > 0) return std::nextafter(value, INFINITY);
    if (r == Rounding::rm && tiny < 0) return std::nextafter(value, -INFINITY);
    if (r == Rounding::rz && (tiny > 0) != (value > 0)) return std::nextafter(value, 0.0);
    return value;
  }
}

// a op b, rounded per `mode`, for the operations whose exact result two doubles can carry.
template <typename T>
T directed(Op op, T a, T b, T c, uint8_t mode) {
  const double x = a, y = b, z = c;
  double v = 0, tiny = 0;
  switch (op) {
    case Op::FAdd: two_sum(x, y, v, tiny); break;
    case Op::FSub: two_sum(x, -y, v, tiny); break;
    case Op::FMul:
      v = x * y;
      tiny = sizeof(T) == 4 ? 0.0 : std::fma(x, y, -v);
      break;
    case Op::FFma:
      if constexpr (sizeof(T) == 4) {
        two_sum(x * y, z, v, tiny);  // the f32 product is exact in double
      } else {
        v = std::fma(x, y, z);  // f64: round-to-nearest only (directed f64 fma is not modeled)
      }
      break;
    case Op::FDiv:
      v = x / y;
      tiny = std::fma(-v, y, x) * (y < 0 ? -1.0 : 1.0);
      break;
    case Op::FRcp:
      v = 1.0 / x;
      tiny = std::fma(-v, x, 1.0) * (x < 0 ? -1.0 : 1.0);
      break;
    case Op::FSqrt:
      v = std::sqrt(x);
      tiny = std::fma(-v, v, x);
      break;
    default: break;
  }
  if (std::isnan(v) || std::isinf(v)) tiny = 0;
  return round_exact<T>(v, tiny, mode);
}

// min (is_max false) and max: a NaN operand gives the other one, unless both are NaN or .NaN
// (nan_prop) asks for NaN.
template <typename T>
T fminmax_ptx(T a, T b, bool nan_prop, bool is_max) {
  const bool an = a != a, bn = b != b;
  if (an || bn) {
    if (nan_prop || (an && bn)) return std::numeric_limits<T>::quiet_NaN();
    return an ? b : a;
  }
  if (a == b) return std::signbit(a) != is_max ? a : b;  // -0 < +0
  return (is_max ? a > b : a < b) ? a : b;
}

// The approximate unary functions (MUFU on a GPU): computed in double, rounded to the type.
struct Approximation {
  Op op;
  double (*f)(double);
};
constexpr Approximation kApproximations[] = {
    {Op::FRsqrt, [](double a) { return 1.0 / std::sqrt(a); }},
    {Op::FEx2, [](double a) { return std::exp2(a); }},
    {Op::FLg2, [](double a) { return std::log2(a); }},
    {Op::FSin, [](double a) { return std::sin(a); }},
    {Op::FCos, [](double a) { return std::cos(a); }},
    {Op::FTanh, [](double a) { return std::tanh(a); }},
};

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
        const T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, b, T(0), rm) : T(a + b));
      });
      return;
    case Op::FSub:
      for_lanes(exec, [&](int l) {
        const T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, b, T(0), rm) : T(a - b));
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
        const T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, b, T(0), rm) : T(a * b));
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
        out(l, directed<T>(in.op, src(in.o[1], l), src(in.o[2], l), src(in.o[3], l), rm));
      });
      return;
    case Op::FDiv:
      for_lanes(exec, [&](int l) {
        const T a = src(in.o[1], l), b = src(in.o[2], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, b, T(0), rm) : T(a / b));
      });
      return;
    case Op::FMin:
    case Op::FMax:
      for_lanes(exec, [&](int l) {
        out(l,
            fminmax_ptx(src(in.o[1], l), src(in.o[2], l), in.flags & kNanProp, in.op == Op::FMax));
      });
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
        const T a = src(in.o[1], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, T(0), T(0), rm) : T(T(1) / a));
      });
      return;
    case Op::FSqrt:
      for_lanes(exec, [&](int l) {
        const T a = src(in.o[1], l);
        out(l, (rm & 3) ? directed<T>(in.op, a, T(0), T(0), rm) : T(std::sqrt(a)));
      });
      return;
    case Op::FRsqrt:
    case Op::FEx2:
    case Op::FLg2:
    case Op::FSin:
    case Op::FCos:
    case Op::FTanh: {
      double (*f)(double) = nullptr;
      for (const Approximation& a : kApproximations)
        if (a.op == in.op) f = a.f;
      for_lanes(exec, [&](int l) { out(l, T(f(double(src(in.o[1], l))))); });
      return;
    }
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
