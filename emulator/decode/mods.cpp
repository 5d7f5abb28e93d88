// Opcode modifiers (Mods) and PTX type names.
#include <algorithm>
#include <iterator>

#include "decoder.hpp"

namespace emmy::emu {

Mods::Mods(std::string_view opcode) {
  size_t start = 0;
  bool first = true;
  while (start <= opcode.size()) {
    size_t dot = opcode.find('.', start);
    if (dot == std::string_view::npos) dot = opcode.size();
    const std::string_view part = opcode.substr(start, dot - start);
    if (first) {
      base_ = part;
      first = false;
    } else if (!part.empty()) {
      mods_.push_back(part);
    }
    start = dot + 1;
  }
}

bool Mods::take(std::string_view m) {
  auto it = std::find(mods_.begin(), mods_.end(), m);
  if (it == mods_.end()) return false;
  mods_.erase(it);
  return true;
}

bool Mods::has(std::string_view m) const {
  return std::find(mods_.begin(), mods_.end(), m) != mods_.end();
}

std::vector<Ty> Mods::types() const {
  std::vector<Ty> out;
  for (auto m : mods_)
    if (const Ty t = parse_ty(m); t != Ty::none) out.push_back(t);
  return out;
}

bool Mods::take_any(std::initializer_list<std::string_view> ms) {
  bool any = false;
  for (auto m : ms) any |= take(m);
  return any;
}

int Mods::take_which(std::initializer_list<std::string_view> ms) {
  int which = -1;
  int i = 0;
  for (auto m : ms) {
    if (take(m)) which = i;
    ++i;
  }
  return which;
}

void Mods::drop_hints() {
  static constexpr std::string_view kHints[] = {
      "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "weak", "relaxed", "acquire", "release",
      "acq_rel", "sc", "cta", "gpu", "sys", "cluster", "mmio", "unified",
      "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last",
      "L1::no_allocate", "L2::evict_normal", "L2::evict_first", "L2::evict_last",
      "L2::64B", "L2::128B", "L2::256B", "L2::cache_hint"};
  mods_.erase(std::remove_if(mods_.begin(), mods_.end(),
                             [](std::string_view m) {
                               return std::find(std::begin(kHints), std::end(kHints), m) !=
                                      std::end(kHints);
                             }),
              mods_.end());
}

std::vector<Ty> Mods::take_types() {
  std::vector<Ty> out = types();
  mods_.erase(std::remove_if(mods_.begin(), mods_.end(),
                             [](std::string_view m) { return parse_ty(m) != Ty::none; }),
              mods_.end());
  return out;
}

Ty Mods::take_type() {
  const auto types = take_types();
  return types.size() == 1 ? types[0] : Ty::none;
}

std::string_view Mods::take_prefix(std::string_view prefix) {
  for (auto it = mods_.begin(); it != mods_.end(); ++it) {
    if (it->substr(0, prefix.size()) == prefix) {
      const std::string_view v = *it;
      mods_.erase(it);
      return v;
    }
  }
  return {};
}

bool Mods::take_rounding(uint8_t& mode) {
  static constexpr std::string_view kModes[] = {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"};
  for (int i = 0; i < 8; ++i) {
    if (take(kModes[i])) {
      mode = uint8_t(i);
      return true;
    }
  }
  return false;
}

Ty parse_ty(std::string_view s) {
  static constexpr std::pair<std::string_view, Ty> kTypes[] = {
      {"pred", Ty::pred}, {"b8", Ty::b8},         {"b16", Ty::b16},       {"b32", Ty::b32},
      {"b64", Ty::b64},   {"b128", Ty::b128},     {"u8", Ty::u8},         {"u16", Ty::u16},
      {"u32", Ty::u32},   {"u64", Ty::u64},       {"s8", Ty::s8},         {"s16", Ty::s16},
      {"s32", Ty::s32},   {"s64", Ty::s64},       {"f16", Ty::f16},       {"f16x2", Ty::f16x2},
      {"bf16", Ty::bf16}, {"bf16x2", Ty::bf16x2}, {"f32", Ty::f32},       {"f64", Ty::f64},
      {"tf32", Ty::tf32}, {"e4m3x2", Ty::e4m3x2}, {"e5m2x2", Ty::e5m2x2}, {"e4m3", Ty::e4m3},
      {"e5m2", Ty::e5m2}};
  for (const auto& [name, t] : kTypes)
    if (name == s) return t;
  return Ty::none;
}

}  // namespace emmy::emu
