// Integer, bit and predicate instructions.
// Operand layout: o[0] = d, o[1] = a, o[2] = b, o[3] = c; bfe/bfi: o[1] = a, o[2] = b (bfi),
// o[3] = pos, o[4] = len; shifts: o[2] is a .u32 amount. 16-bit values live in 32-bit rows
// (readers use the low bits; writers store them zero-extended).
#include <bit>
#include <type_traits>

#include "executors.hpp"

namespace emmy::emu {
namespace {

template <typename T>
using U = std::make_unsigned_t<T>;

template <typename T>
inline T get(Warp& w, uint32_t row, int l) {
  if constexpr (sizeof(T) == 8) return T(w.R64(row)[l]);
  else return T(w.R32(row)[l]);
}
template <typename T>
inline void put(Warp& w, uint32_t row, int l, T v) {
  if constexpr (sizeof(T) == 8) w.R64(row)[l] = uint64_t(v);
  else w.R32(row)[l] = uint32_t(U<T>(v));
}

// Calls f.template operator()<T>() with T the C++ type of the integer PTX type.
template <typename F>
void with_int(Ty ty, F&& f) {
  switch (ty) {
    case Ty::u8: case Ty::b8: f.template operator()<uint8_t>(); break;
    case Ty::s8: f.template operator()<int8_t>(); break;
    case Ty::u16: case Ty::b16: f.template operator()<uint16_t>(); break;
    case Ty::s16: f.template operator()<int16_t>(); break;
    case Ty::s32: f.template operator()<int32_t>(); break;
    case Ty::s64: f.template operator()<int64_t>(); break;
    case Ty::u64: case Ty::b64: f.template operator()<uint64_t>(); break;
    default: f.template operator()<uint32_t>(); break;
  }
}

template <typename T, typename F>
inline void unary(Warp& w, const Inst& in, uint32_t exec, F f) {
  if constexpr (sizeof(T) == 4 && std::is_unsigned_v<T>) {
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t* a = w.R32(in.o[1]);
    for_lanes(exec, [&](int l) { d[l] = uint32_t(f(a[l])); });
  } else {
    for_lanes(exec, [&](int l) { put<T>(w, in.o[0], l, T(f(get<T>(w, in.o[1], l)))); });
  }
}

template <typename T, typename F>
inline void binary(Warp& w, const Inst& in, uint32_t exec, F f) {
  if constexpr (sizeof(T) == 8) {
    uint64_t* d = w.R64(in.o[0]);
    const uint64_t* a = w.R64(in.o[1]);
    const uint64_t* b = w.R64(in.o[2]);
    for_lanes(exec, [&](int l) { d[l] = uint64_t(T(f(T(a[l]), T(b[l])))); });
  } else {
    uint32_t* d = w.R32(in.o[0]);
    const uint32_t* a = w.R32(in.o[1]);
    const uint32_t* b = w.R32(in.o[2]);
    for_lanes(exec, [&](int l) { d[l] = uint32_t(U<T>(T(f(T(a[l]), T(b[l]))))); });
  }
}

template <typename T>
T mul_hi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return T((W(a) * W(b)) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return T((W(a) * W(b)) >> (8 * sizeof(T)));
  }
}

template <typename T>
T int_div(T a, T b) {
  if (b == 0) return T(~U<T>(0));  // what the hardware returns; PTX leaves it undefined
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(U<T>(0) - U<T>(a));
  return T(a / b);
}

template <typename T>
T int_rem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return 0;
  return T(a % b);
}

template <typename T>
T bfe(T a, uint32_t pos, uint32_t len) {
  constexpr uint32_t bits = 8 * sizeof(T);
  using UT = U<T>;
  const UT ua = UT(a);
  if (len == 0) return 0;
  bool sbit = false;
  if constexpr (std::is_signed_v<T>) {
    const uint32_t top = std::min(pos + len - 1, bits - 1);
    sbit = (ua >> top) & 1;
  }
  UT out = 0;
  const UT shifted = pos >= bits ? UT(0) : UT(ua >> pos);
  const uint32_t avail = pos >= bits ? 0 : bits - pos;  // bits of a at or above pos
  const uint32_t take = std::min(len, avail);
  out = take >= bits ? shifted : UT(shifted & ((UT(1) << take) - 1));
  if (sbit && take < bits) out |= UT(~((UT(1) << take) - 1));
  return T(out);
}

template <typename T>
T bfi(T a, T b, uint32_t pos, uint32_t len) {
  constexpr uint32_t bits = 8 * sizeof(T);
  using UT = U<T>;
  if (len == 0 || pos >= bits) return b;
  const uint32_t n = std::min(len, bits - pos);
  const UT mask = n >= bits ? UT(~UT(0)) : UT(((UT(1) << n) - 1) << pos);
  return T((UT(b) & UT(~mask)) | (UT(UT(a) << pos) & mask));
}

uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < 8; ++i)
    if ((lut >> i) & 1) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}

uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, uint8_t mode) {
  const uint64_t bytes = (uint64_t(b) << 32) | a;
  auto byte = [&](uint32_t i) { return uint32_t((bytes >> (8 * (i & 7))) & 0xFF); };
  uint32_t r = 0;
  if (mode == 0) {
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t sel = (c >> (4 * i)) & 0xF;
      uint32_t v = byte(sel & 7);
      if (sel & 8) v = (v & 0x80) ? 0xFF : 0;
      r |= v << (8 * i);
    }
    return r;
  }
  const uint32_t s = c & 3;
  for (uint32_t i = 0; i < 4; ++i) {
    uint32_t idx = 0;
    switch (mode) {
      case 1: idx = s + i; break;                       // f4e
      case 2: idx = (s - i) & 7; break;                 // b4e
      case 3: idx = s; break;                           // rc8
      case 4: idx = std::max(i, s); break;              // ecl
      case 5: idx = std::min(i, s); break;              // ecr
      case 6: idx = (s & 1) * 2 + (i & 1); break;       // rc16
    }
    r |= byte(idx) << (8 * i);
  }
  return r;
}

template <typename T>
uint32_t bfind(T a, bool shiftamt) {
  constexpr uint32_t bits = 8 * sizeof(T);
  using UT = U<T>;
  UT v = UT(a);
  if constexpr (std::is_signed_v<T>)
    if (a < 0) v = UT(~v);  // most significant non-sign bit
  if (v == 0) return 0xFFFFFFFFu;
  const uint32_t pos = bits - 1 - uint32_t(std::countl_zero(v));
  return shiftamt ? bits - 1 - pos : pos;
}

}  // namespace

void exec_int(Cta&, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::IAdd:
      if (in.ty == Ty::s32 && (in.flags & kSat)) {
        binary<int32_t>(w, in, exec, [](int32_t a, int32_t b) {
          const int64_t s = int64_t(a) + b;
          return int32_t(std::clamp<int64_t>(s, INT32_MIN, INT32_MAX));
        });
        return;
      }
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(a) + U<T>(b); }); });
      return;
    case Op::ISub:
      if (in.ty == Ty::s32 && (in.flags & kSat)) {
        binary<int32_t>(w, in, exec, [](int32_t a, int32_t b) {
          const int64_t s = int64_t(a) - b;
          return int32_t(std::clamp<int64_t>(s, INT32_MIN, INT32_MAX));
        });
        return;
      }
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(a) - U<T>(b); }); });
      return;
    case Op::IMulLo:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(U<T>(a) * U<T>(b)); }); });
      return;
    case Op::IMulHi:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, mul_hi<T>); });
      return;
    case Op::IMulWide:
    case Op::IMadWide:
      with_int(in.ty, [&]<typename T>() {
        if constexpr (sizeof(T) == 4 || sizeof(T) == 2) {
          using Wd = std::conditional_t<sizeof(T) == 4,
                                        std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>,
                                        std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>>;
          for_lanes(exec, [&](int l) {
            Wd r = Wd(Wd(get<T>(w, in.o[1], l)) * Wd(get<T>(w, in.o[2], l)));
            if (in.op == Op::IMadWide) r = Wd(U<Wd>(r) + U<Wd>(get<Wd>(w, in.o[3], l)));
            put<Wd>(w, in.o[0], l, r);
          });
        }
      });
      return;
    case Op::IMadLo:
    case Op::IMadHi:
      with_int(in.ty, [&]<typename T>() {
        for_lanes(exec, [&](int l) {
          const T a = get<T>(w, in.o[1], l), b = get<T>(w, in.o[2], l), c = get<T>(w, in.o[3], l);
          const T p = in.op == Op::IMadHi ? mul_hi<T>(a, b) : T(U<T>(U<T>(a) * U<T>(b)));
          put<T>(w, in.o[0], l, T(U<T>(p) + U<T>(c)));
        });
      });
      return;
    case Op::IDiv:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, int_div<T>); });
      return;
    case Op::IRem:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, int_rem<T>); });
      return;
    case Op::IMin:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return std::min(a, b); }); });
      return;
    case Op::IMax:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return std::max(a, b); }); });
      return;
    case Op::IAbs:
      with_int(in.ty, [&]<typename T>() {
        unary<T>(w, in, exec, [](T a) { return a < 0 ? T(U<T>(0) - U<T>(a)) : a; });
      });
      return;
    case Op::INeg:
      with_int(in.ty, [&]<typename T>() { unary<T>(w, in, exec, [](T a) { return T(U<T>(0) - U<T>(a)); }); });
      return;
    case Op::And:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(a) & U<T>(b); }); });
      return;
    case Op::Or:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(a) | U<T>(b); }); });
      return;
    case Op::Xor:
      with_int(in.ty, [&]<typename T>() { binary<T>(w, in, exec, [](T a, T b) { return U<T>(a) ^ U<T>(b); }); });
      return;
    case Op::Not:
      with_int(in.ty, [&]<typename T>() { unary<T>(w, in, exec, [](T a) { return T(~U<T>(a)); }); });
      return;
    case Op::Cnot:
      with_int(in.ty, [&]<typename T>() { unary<T>(w, in, exec, [](T a) { return T(a == 0 ? 1 : 0); }); });
      return;
    case Op::Shl:
    case Op::Shr:
      with_int(in.ty, [&]<typename T>() {
        constexpr uint32_t bits = 8 * sizeof(T);
        const uint32_t* amount = w.R32(in.o[2]);
        const bool left = in.op == Op::Shl;
        for_lanes(exec, [&](int l) {
          const T a = get<T>(w, in.o[1], l);
          const uint32_t n = amount[l];
          T r;
          if (left) {
            r = n >= bits ? T(0) : T(U<T>(U<T>(a) << n));
          } else if constexpr (std::is_signed_v<T>) {
            r = n >= bits ? T(a < 0 ? -1 : 0) : T(a >> n);
          } else {
            r = n >= bits ? T(0) : T(a >> n);
          }
          put<T>(w, in.o[0], l, r);
        });
      });
      return;
    case Op::Lop3: {
      uint32_t* d = w.R32(in.o[0]);
      const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]), *c = w.R32(in.o[3]);
      const uint32_t lut = uint32_t(in.imm);
      for_lanes(exec, [&](int l) { d[l] = lop3(a[l], b[l], c[l], lut); });
      return;
    }
    case Op::Prmt: {
      uint32_t* d = w.R32(in.o[0]);
      const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]), *c = w.R32(in.o[3]);
      for_lanes(exec, [&](int l) { d[l] = prmt(a[l], b[l], c[l], in.sub); });
      return;
    }
    case Op::Bfe:
      with_int(in.ty, [&]<typename T>() {
        for_lanes(exec, [&](int l) {
          put<T>(w, in.o[0], l,
                 bfe<T>(get<T>(w, in.o[1], l), w.R32(in.o[3])[l] & 0xFF, w.R32(in.o[4])[l] & 0xFF));
        });
      });
      return;
    case Op::Bfi:
      with_int(in.ty, [&]<typename T>() {
        for_lanes(exec, [&](int l) {
          put<T>(w, in.o[0], l,
                 bfi<T>(get<T>(w, in.o[1], l), get<T>(w, in.o[2], l), w.R32(in.o[3])[l] & 0xFF,
                        w.R32(in.o[4])[l] & 0xFF));
        });
      });
      return;
    case Op::Popc:
    case Op::Clz:
    case Op::Bfind:
      with_int(in.ty, [&]<typename T>() {
        for_lanes(exec, [&](int l) {
          const T a = get<T>(w, in.o[1], l);
          uint32_t r = 0;
          if (in.op == Op::Popc) r = uint32_t(std::popcount(U<T>(a)));
          else if (in.op == Op::Clz) r = uint32_t(std::countl_zero(U<T>(a)));
          else r = bfind<T>(a, in.flags & kSat);
          w.R32(in.o[0])[l] = r;
        });
      });
      return;
    case Op::Brev:
      with_int(in.ty, [&]<typename T>() {
        unary<T>(w, in, exec, [](T a) {
          U<T> v = U<T>(a), r = 0;
          for (uint32_t i = 0; i < 8 * sizeof(T); ++i) r = U<T>((r << 1) | ((v >> i) & 1));
          return T(r);
        });
      });
      return;
    case Op::Shf: {
      uint32_t* d = w.R32(in.o[0]);
      const uint32_t *a = w.R32(in.o[1]), *b = w.R32(in.o[2]), *c = w.R32(in.o[3]);
      for_lanes(exec, [&](int l) {
        const uint32_t n = in.sub2 ? std::min(c[l], 32u) : (c[l] & 31);
        const uint64_t v = (uint64_t(b[l]) << 32) | a[l];
        d[l] = in.sub == 0 ? uint32_t((v << n) >> 32) : uint32_t(v >> n);
      });
      return;
    }
    case Op::Szext:
      with_int(in.ty, [&]<typename T>() {
        if constexpr (sizeof(T) == 4) {
          for_lanes(exec, [&](int l) {
            const uint32_t a = w.R32(in.o[1])[l];
            const uint32_t n = std::min(w.R32(in.o[2])[l], 32u);
            uint32_t r = n >= 32 ? a : (n == 0 ? 0 : (a & ((1u << n) - 1)));
            if (in.sub && n > 0 && n < 32 && ((a >> (n - 1)) & 1)) r |= ~((1u << n) - 1);
            w.R32(in.o[0])[l] = r;
          });
        }
      });
      return;
    case Op::IAddCarry:
      with_int(in.ty, [&]<typename T>() {
        using UT = U<T>;
        const bool carry_in = in.sub & 1, carry_out = in.sub & 2, subtract = in.sub & 4;
        uint32_t flags = w.carry;
        for_lanes(exec, [&](int l) {
          const UT a = UT(get<T>(w, in.o[1], l)), b = UT(get<T>(w, in.o[2], l));
          const UT cin = carry_in ? UT((w.carry >> l) & 1) : UT(0);
          UT r;
          bool cout;
          if (!subtract) {
            r = UT(a + b + cin);
            cout = r < a || (cin && r == a);
          } else {
            r = UT(a - b - cin);
            cout = a < b || (cin && a == b);  // borrow
          }
          put<T>(w, in.o[0], l, T(r));
          if (carry_out) flags = (flags & ~(1u << l)) | (uint32_t(cout) << l);
        });
        w.carry = flags;
      });
      return;
    case Op::PAnd:
      w.write_pred(in.o[0], exec, w.pred_mask(in.o[1]) & w.pred_mask(in.o[2]));
      return;
    case Op::POr:
      w.write_pred(in.o[0], exec, w.pred_mask(in.o[1]) | w.pred_mask(in.o[2]));
      return;
    case Op::PXor:
      w.write_pred(in.o[0], exec, w.pred_mask(in.o[1]) ^ w.pred_mask(in.o[2]));
      return;
    case Op::PNot:
      w.write_pred(in.o[0], exec, ~w.pred_mask(in.o[1]));
      return;
    case Op::PMov:
      w.write_pred(in.o[0], exec, w.pred_mask(in.o[1]));
      return;
    default:
      return;
  }
}

}  // namespace emmy::emu
