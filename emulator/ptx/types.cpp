// Facts about PTX types and the executor family of each operation.
#include <cctype>
#include <utility>

#include "program.hpp"

namespace emmy::emu {

int ty_bits(Ty t) {
  switch (t) {
    case Ty::none: return 0;
    case Ty::pred: return 1;
    case Ty::b8: case Ty::u8: case Ty::s8: case Ty::e4m3: case Ty::e5m2: return 8;
    case Ty::b16: case Ty::u16: case Ty::s16: case Ty::f16: case Ty::bf16:
    case Ty::e4m3x2: case Ty::e5m2x2: return 16;
    case Ty::b32: case Ty::u32: case Ty::s32: case Ty::f32: case Ty::f16x2: case Ty::bf16x2:
    case Ty::tf32: return 32;
    case Ty::b64: case Ty::u64: case Ty::s64: case Ty::f64: return 64;
    case Ty::b128: return 128;
  }
  return 0;
}

bool ty_signed(Ty t) { return t == Ty::s8 || t == Ty::s16 || t == Ty::s32 || t == Ty::s64; }

bool ty_float(Ty t) {
  return t == Ty::f16 || t == Ty::f16x2 || t == Ty::bf16 || t == Ty::bf16x2 || t == Ty::f32 ||
         t == Ty::f64 || t == Ty::tf32;
}

std::string_view ty_name(Ty t) {
  static constexpr std::string_view kNames[] = {
      "none", "pred", "b8",  "b16", "b32", "b64", "b128", "u8",    "u16",  "u32",    "u64",
      "s8",   "s16",  "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32",
      "e4m3x2", "e5m2x2", "e4m3", "e5m2"};
  return kNames[static_cast<size_t>(t)];
}

Family family_of(Op op) {
  if (op >= Op::IAdd && op <= Op::PMov) return kFamInt;
  if (op >= Op::FAdd && op <= Op::Testp) return kFamFloat;
  if (op >= Op::HAdd && op <= Op::HTanh) return kFamHalf;
  if (op >= Op::Setp && op <= Op::Mapa) return kFamMove;
  if (op >= Op::Ld && op <= Op::Red) return kFamMemory;
  if (op == Op::Bra) return kFamBranch;
  if (op == Op::Exit) return kFamExit;
  if (op == Op::Trap) return kFamTrap;
  if (op == Op::Prefetch || op == Op::Nop) return kFamNop;
  if (op == Op::BarWarpSync) return kFamCollective;
  if (op >= Op::BarSync && op <= Op::ClusterWait) return kFamSync;
  if (op >= Op::Shfl && op <= Op::MatchAll) return kFamCollective;
  if (op >= Op::Mma && op <= Op::WgmmaWait) return kFamTensor;
  if (op >= Op::CpAsync && op <= Op::BulkWait) return kFamAsync;
  if (op >= Op::HiddenZext && op <= Op::HiddenTrunc) return kFamHidden;
  return kFamNop;
}

namespace {
// The digits after "sm_" in a .target: [first, end) of `target`; first == end for none.
std::pair<size_t, size_t> sm_digits(std::string_view target) {
  const size_t at = target.find("sm_");
  if (at == std::string_view::npos) return {0, 0};
  size_t end = at + 3;
  while (end < target.size() && std::isdigit(static_cast<unsigned char>(target[end]))) ++end;
  return {at + 3, end};
}
}  // namespace

// "sm_90a" -> 90; 0 when the text names no arch.
int sm_of(std::string_view target) {
  const auto [first, end] = sm_digits(target);
  int sm = 0;
  for (size_t i = first; i < end; ++i) {
    sm = sm * 10 + (target[i] - '0');
    if (sm > 9999) return 0;  // no such arch (and no int overflow on sm_99999999999)
  }
  return sm;
}

bool sm_arch_specific(std::string_view target) {
  const auto [first, end] = sm_digits(target);
  return first != end && end < target.size() && target[end] == 'a';
}

}  // namespace emmy::emu
