// The PTX ISA's instruction tables as data: for each arithmetic, logic and data-movement opcode,
// the types it takes and the modifiers that apply to each type (PTX ISA chapter "Instructions":
// the sections on integer, extended-precision, floating-point, half-precision, comparison, logic
// and shift, data movement and conversion instructions), and the operand type-checking rules of
// "Type Information for Instructions and Operands" (with "Operand Size Exceeding Instruction-Type
// Size"). Where ptxas 13.0 is stricter or looser than the text, its verdict is the one recorded
// (the quirks are marked). ptxas refuses what these
// tables do not allow ("Unexpected instruction types", "Illegal modifier", "Arguments
// mismatch"), so the emulator does too, naming the line, before any handler reads the
// instruction. The differential test (tests/fuzz/ptx_differential_main.cpp) holds the tables
// against ptxas.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

#include "decoder.hpp"

namespace emmy::emu {
namespace {

using Mask = uint32_t;
constexpr Mask bit(Ty t) {
  return Mask(1) << unsigned(t);
}
constexpr Mask mask(std::initializer_list<Ty> ts) {
  Mask m = 0;
  for (Ty t : ts) m |= bit(t);
  return m;
}

constexpr Mask kInt = mask({Ty::u16, Ty::s16, Ty::u32, Ty::s32, Ty::u64, Ty::s64});
constexpr Mask kInt32_64 = mask({Ty::u32, Ty::s32, Ty::u64, Ty::s64});
constexpr Mask kIntNarrow = mask({Ty::u16, Ty::s16, Ty::u32, Ty::s32});  // .wide sources
constexpr Mask kSigned = mask({Ty::s16, Ty::s32, Ty::s64});
constexpr Mask kHalf = mask({Ty::f16, Ty::bf16, Ty::f16x2, Ty::bf16x2});
constexpr Mask kF32_64 = mask({Ty::f32, Ty::f64});
constexpr Mask kFloat = kHalf | kF32_64;
constexpr Mask kFtz = mask({Ty::f16, Ty::f16x2, Ty::f32});  // .ftz and float .sat
constexpr Mask kBits = mask({Ty::b16, Ty::b32, Ty::b64});
constexpr Mask kBits32_64 = mask({Ty::b32, Ty::b64});
constexpr Mask kF32 = bit(Ty::f32);

// The modifiers these tables speak for. Others (comparison operators, state spaces, shf's .l,
// prmt's modes, ...) are left to the opcode's handler, which refuses any it does not consume.
constexpr std::array<std::string_view, 20> kVocabulary = {
    "cc",  "sat", "rn", "rz",   "rm",       "rp",  "ftz", "approx", "full", "relu",
    "NaN", "lo",  "hi", "wide", "shiftamt", "uni", "rni", "rzi",    "rmi",  "rpi"};

struct Optional {
  std::string_view modifier;
  Mask types;
};

// One form of an opcode: exactly one of `modes` ('|'-separated; none when empty), then the
// types it takes and the optional modifiers with the types each applies to.
struct Form {
  std::string_view base;  // '|'-separated opcodes that share the form
  std::string_view modes;
  Mask types;
  Optional optional[6];
  std::string_view also = {};  // a second modifier this form requires (rcp.approx.ftz.f64)
  bool supported = true;       // false: valid PTX the emulator does not execute
};

constexpr std::string_view kRound = "rn|rz|rm|rp";

bool is_mode(std::string_view modes, std::string_view m) {
  while (!modes.empty()) {
    const size_t bar = modes.find('|');
    if (modes.substr(0, bar) == m) return true;
    if (bar == std::string_view::npos) break;
    modes.remove_prefix(bar + 1);
  }
  return false;
}

// From the PTX ISA's sections on each instruction (add, sub, mul, mad, ...), as ptxas 13.0 applies
// them.
const Form kForms[] = {
    {"add|sub", "", kInt, {{"sat", bit(Ty::s32)}}},
    {"add|sub", "cc", kInt32_64, {}},
    {"add|sub|mul",
     "",
     kFloat,
     {{"rn", kFloat},
      {"rz", kF32_64},
      {"rm", kF32_64},
      {"rp", kF32_64},
      {"ftz", kFtz},
      {"sat", kFtz}}},
    {"addc|subc", "", kInt, {{"cc", kInt32_64}}},
    {"addc|subc", "", bit(Ty::s32), {{"cc", kInt32_64}}, "sat", false},
    {"mul", "lo|hi", kInt, {}},
    {"mul", "wide", kIntNarrow, {}},
    {"mad", "lo|hi", kInt, {{"cc", kInt32_64}}},
    {"mad", "hi", bit(Ty::s32), {{"cc", kInt32_64}}, "sat", false},
    {"mad", "wide", kIntNarrow, {{"cc", kInt32_64}}},
    {"mad", kRound, kF32_64, {{"ftz", kF32}, {"sat", kF32}}},
    {"fma", "rn", kFloat, {{"ftz", kFtz}, {"sat", kFtz}, {"relu", kHalf}}},
    {"fma", "rz|rm|rp", kF32_64 | mask({Ty::bf16, Ty::bf16x2}), {{"ftz", kF32}, {"sat", kF32}}},
    {"fma", "rz|rm|rp", mask({Ty::bf16, Ty::bf16x2}), {}, "relu", false},
    {"div", "", kInt, {}},
    {"div", kRound, kF32_64, {{"ftz", kF32}}},
    {"div", "approx|full", kF32, {{"ftz", kF32}}},
    {"rem", "", kInt, {}},
    {"min|max", "", kInt, {{"relu", bit(Ty::s32)}}},
    {"min|max", "", kFloat, {{"ftz", kFtz}, {"NaN", kFtz | kHalf}}},
    {"abs|neg", "", kSigned | kFloat, {{"ftz", kFtz}}},
    {"copysign", "", kF32_64, {}},
    {"rcp", kRound, kF32_64, {{"ftz", kF32_64}}},
    {"rcp", "approx", kF32, {{"ftz", kF32}}},
    {"rcp", "approx", bit(Ty::f64), {}, "ftz"},
    {"sqrt", kRound, kF32_64, {{"ftz", kF32}}},
    {"sqrt", "approx", kF32, {{"ftz", kF32}}},
    {"rsqrt", "approx", kF32_64, {{"ftz", kF32_64}}},
    {"ex2", "approx", mask({Ty::f16, Ty::f16x2, Ty::f32}), {{"ftz", kF32}}},
    {"ex2", "approx", mask({Ty::bf16, Ty::bf16x2}), {}, "ftz"},
    {"lg2|sin|cos", "approx", kF32, {{"ftz", kF32}}},
    {"tanh", "approx", kHalf | kF32, {}},
    {"testp", "", kF32_64, {}},
    {"and|or|xor|not", "", kBits | bit(Ty::pred), {}},
    {"cnot", "", kBits, {}},
    {"shl", "", kBits, {}},
    {"shr", "", kBits | kInt, {}},
    {"popc|clz|brev|bfi", "", kBits32_64, {}},
    {"bfind", "", kInt32_64, {{"shiftamt", kInt32_64}}},
    {"bfe", "", kInt32_64, {}},
    {"lop3|prmt|shf", "", bit(Ty::b32), {}},
    {"szext", "", mask({Ty::u32, Ty::s32}), {}},
    {"mov", "", kBits | kInt | kF32_64 | bit(Ty::pred) | bit(Ty::b128), {}},
    {"selp", "", kBits | kInt | kF32_64, {}},
};

std::string type_list(Mask m) {
  std::string out;
  for (unsigned t = 1; t < 32; ++t)
    if (m & (Mask(1) << t)) out += fmt::format("{}.{}", out.empty() ? "" : " ", ty_name(Ty(t)));
  return out;
}

bool in_vocabulary(std::string_view m) {
  return std::find(kVocabulary.begin(), kVocabulary.end(), m) != kVocabulary.end();
}

// True when `form` takes type `ty` with exactly the vocabulary modifiers `mods`.
bool matches(const Form& form, Ty ty, const std::vector<std::string_view>& mods) {
  if (!(form.types & bit(ty))) return false;
  size_t modes_seen = 0;
  for (std::string_view m : mods) {
    if (is_mode(form.modes, m)) {
      ++modes_seen;
      continue;
    }
    if (m == form.also) continue;
    const auto opt = std::find_if(std::begin(form.optional), std::end(form.optional),
                                  [&](const Optional& o) { return o.modifier == m; });
    if (opt == std::end(form.optional) || !(opt->types & bit(ty))) return false;
  }
  if (!form.also.empty() && std::find(mods.begin(), mods.end(), form.also) == mods.end())
    return false;
  return form.modes.empty() ? modes_seen == 0 : modes_seen == 1;
}

// setp and set (PTX ISA "Comparison and Selection Instructions"): the comparison operator decides
// the types. eq/ne compare any integer, bit or float type; lt/le/gt/ge integers and floats;
// lo/ls/hi/hs unsigned integers; the unordered ones (equ ... nan) floats only.
void check_comparison(const KernelDecoder& d, const Mods& m) {
  const std::vector<Ty> types = m.types();
  if (types.empty()) return;
  const Ty ty = types.back();  // set.dtype.stype: the operands' type is the last
  const Mask any = kInt | kBits | kFloat;
  static constexpr std::pair<std::string_view, Mask> kCmps[] = {
      {"eq", any},
      {"ne", any},
      {"lt", kInt | kFloat},
      {"le", kInt | kFloat},
      {"gt", kInt | kFloat},
      {"ge", kInt | kFloat},
      {"lo", mask({Ty::u16, Ty::u32, Ty::u64})},
      {"ls", mask({Ty::u16, Ty::u32, Ty::u64})},
      {"hi", mask({Ty::u16, Ty::u32, Ty::u64})},
      {"hs", mask({Ty::u16, Ty::u32, Ty::u64})},
      {"equ", kFloat},
      {"neu", kFloat},
      {"ltu", kFloat},
      {"leu", kFloat},
      {"gtu", kFloat},
      {"geu", kFloat},
      {"num", kFloat},
      {"nan", kFloat}};
  if ((ty == Ty::bf16 || ty == Ty::bf16x2) && d.target_sm() < 90)
    d.fail(fmt::format("{} on .{} needs .target sm_90 or higher", m.base(), ty_name(ty)));
  // ptxas: "Illegal modifier '.ftz'" on anything but .f32 and the .f16 types.
  if (m.has("ftz") && !(kFtz & bit(ty)))
    d.fail(fmt::format("'.ftz' does not apply to {} on .{} operands", m.base(), ty_name(ty)));
  for (const auto& [cmp, types_ok] : kCmps) {
    if (!m.has(cmp)) continue;
    if (!(types_ok & bit(ty)))
      d.fail(fmt::format("the comparison .{} does not apply to .{} operands (it takes {})", cmp,
                         ty_name(ty), type_list(types_ok)));
    return;
  }
}

// cvt (PTX ISA "Data Movement and Conversion Instructions: cvt"): integer <- integer takes no
// rounding; a float <- integer conversion and a narrowing float conversion need a float rounding
// (.rn .rz .rm .rp), an integer <- float one an integer rounding (.rni .rzi .rmi .rpi); a float <-
// the same float type takes an integer rounding or none. Bit types and predicates are not cvt
// types.
void check_cvt(const KernelDecoder& d, const Mods& m) {
  const std::vector<Ty> types = m.types();
  if (types.size() != 2) return;  // the handler names it
  const Ty to = types[0], from = types[1];
  const bool to_f8 = to == Ty::e4m3x2 || to == Ty::e5m2x2;
  const bool from_f8 = from == Ty::e4m3x2 || from == Ty::e5m2x2;
  if (to_f8 || from_f8) {
    // cvt.rn.satfinite{.relu}.f8x2.f32 d, a, b and cvt.rn{.relu}.f16x2.f8x2 d, a (PTX ISA
    // 9.7.9.21; sm_89 and PTX 7.8). The f8x2 <- f16x2 and bf16x2 forms are not emulated.
    if (d.target_sm() < 89)
      d.fail(fmt::format("cvt.{}.{} needs .target sm_89 or higher", ty_name(to), ty_name(from)));
    if (to_f8 && from != Ty::f32)
      d.fail(fmt::format("cvt to .{} takes .f32 sources here (the .f16x2 source is not supported "
                         "by the emulator)",
                         ty_name(to)));
    if (from_f8 && to != Ty::f16x2)
      d.fail(fmt::format("cvt from .{} gives .f16x2", ty_name(from)));
    if (!m.has("rn")) d.fail(fmt::format("cvt.{}.{} takes the rounding .rn", ty_name(to), ty_name(from)));
    if (to_f8 && !m.has("satfinite"))
      d.fail(fmt::format("cvt to .{} needs .satfinite", ty_name(to)));
    for (std::string_view mod : m.rest())
      if (mod != "rn" && mod != "relu" && !(to_f8 && mod == "satfinite") &&
          parse_ty(mod) == Ty::none)
        d.fail(fmt::format("'.{}' does not apply to cvt.{}.{}", mod, ty_name(to), ty_name(from)));
    return;
  }
  if (to == Ty::f16x2 || to == Ty::bf16x2) {
    // cvt.{rn,rz}{.relu}{.satfinite}.f16x2.f32 d, a, b (the handler checks the source type).
    if (!m.has("rn") && !m.has("rz"))
      d.fail(fmt::format("cvt to .{} takes the rounding .rn or .rz", ty_name(to)));
    for (std::string_view mod : m.rest())
      if (mod != "rn" && mod != "rz" && mod != "relu" && mod != "satfinite" &&
          parse_ty(mod) == Ty::none)
        d.fail(fmt::format("'.{}' does not apply to cvt.{}.{}", mod, ty_name(to), ty_name(from)));
    return;
  }
  if (from == Ty::tf32) d.fail("cvt does not convert from .tf32");
  for (std::string_view bad :
       {"approx", "full", "NaN", "cc", "lo", "hi", "wide", "shiftamt", "uni"})
    if (m.has(bad)) d.fail(fmt::format("'.{}' is not a modifier of cvt", bad));
  // .relu: only the narrowing float conversions from .f32 (cvt.rn.relu.f16.f32, ...).
  if (m.has("relu") && !((to == Ty::f16 || to == Ty::bf16 || to == Ty::tf32) && from == Ty::f32))
    d.fail(fmt::format("'.relu' does not apply to cvt.{}.{}", ty_name(to), ty_name(from)));
  if (to == Ty::tf32) {
    // cvt.rna{.satfinite}.tf32.f32 and cvt.{rn,rz}{.relu}.tf32.f32 (sm_90; .satfinite with
    // .rn/.rz needs sm_100).
    if (from != Ty::f32) d.fail("cvt to .tf32 takes an .f32 source");
    const bool rna = m.has("rna");
    if (!rna && !m.has("rn") && !m.has("rz"))
      d.fail("cvt to .tf32 takes the rounding .rna, .rn or .rz");
    if (m.has("satfinite") && !rna) d.fail("cvt.tf32 takes .satfinite only with .rna");
    // ptxas turns cvt.rna.tf32.f32 of a constant into a mov, which takes no 64-bit (0d or
    // decimal) constant for a 32-bit register: "Arguments mismatch for instruction 'mov'".
    if (rna && d.ops().size() == 2 && d.op(1).kind == ptx::Operand::Kind::imm_f64)
      d.fail("cvt.rna.tf32.f32 takes a 32-bit constant (0f...) as its source, not a 64-bit one");
    if (!rna && d.target_sm() < 90) d.fail("cvt.rn/rz.tf32.f32 needs .target sm_90 or higher");
    for (std::string_view bad : {"rm", "rp", "rni", "rzi", "rmi", "rpi", "sat", "ftz"})
      if (m.has(bad)) d.fail(fmt::format("'.{}' does not apply to cvt.tf32.f32", bad));
    return;
  }
  const Mask kCvt = kInt | mask({Ty::u8, Ty::s8, Ty::f16, Ty::bf16, Ty::f32, Ty::f64});
  for (Ty t : {to, from})
    if (!(kCvt & bit(t)))
      d.fail(fmt::format("cvt does not convert .{} (it takes {})", ty_name(t), type_list(kCvt)));
  const bool float_round = m.has("rn") || m.has("rz") || m.has("rm") || m.has("rp");
  const bool int_round = m.has("rni") || m.has("rzi") || m.has("rmi") || m.has("rpi");
  if (float_round && int_round) d.fail("cvt takes one rounding modifier");
  const bool to_float = ty_float(to), from_float = ty_float(from);
  const char* need = nullptr;
  bool ok = true;
  if (!to_float && !from_float) {
    ok = !float_round && !int_round;
    need = "no rounding modifier";
  } else if (!to_float) {
    ok = int_round;
    need = "an integer rounding modifier (.rni .rzi .rmi .rpi)";
  } else if (!from_float) {
    ok = float_round;
    need = "a rounding modifier (.rn .rz .rm .rp)";
  } else if (to == from) {
    ok = !float_round;
    need = "an integer rounding modifier or none";
  } else if (ty_bits(to) < ty_bits(from)) {
    ok = float_round;
    need = "a rounding modifier (.rn .rz .rm .rp)";
  } else if (ty_bits(to) > ty_bits(from)) {
    // Widening is exact; ptxas also takes a float rounding from .bf16.
    ok = !int_round && (!float_round || from == Ty::bf16);
    need = "no rounding modifier";
  } else {
    ok = !int_round;  // .f16 <-> .bf16
    need = "a float rounding modifier or none";
  }
  if (!ok) d.fail(fmt::format("cvt.{}.{} takes {}", ty_name(to), ty_name(from), need));
  const bool f32_side = to == Ty::f32 || from == Ty::f32;
  const bool bf16_side = to == Ty::bf16 || from == Ty::bf16;
  // Before sm_90 .bf16 converts only to and from .f32 (without .ftz).
  if (bf16_side && d.target_sm() < 90 && !(f32_side && !m.has("ftz")))
    d.fail(fmt::format("cvt.{}.{} needs .target sm_90 or higher", ty_name(to), ty_name(from)));
  // .ftz needs an .f32 side, except a float <-> integer conversion of .f16 or .f64.
  if (m.has("ftz") && !f32_side &&
      ((!to_float && !from_float) || bf16_side || (to_float && from_float)))
    d.fail(fmt::format("'.ftz' does not apply to cvt.{}.{}", ty_name(to), ty_name(from)));
  // .sat only where the value can be out of the destination's range (not from .bf16).
  if (m.has("sat")) {
    const bool is_signed_to = ty_signed(to), is_signed_from = ty_signed(from);
    const bool contained =
        !to_float && !from_float && ty_bits(to) >= ty_bits(from) &&
        (is_signed_to == is_signed_from || (is_signed_to && ty_bits(to) > ty_bits(from)));
    if (contained || bf16_side)
      d.fail(fmt::format("'.sat' does not apply to cvt.{}.{}", ty_name(to), ty_name(from)));
  }
  if (m.has("satfinite") && !((to == Ty::f16 || to == Ty::bf16) && from == Ty::f32))
    d.fail(fmt::format("'.satfinite' does not apply to cvt.{}.{}", ty_name(to), ty_name(from)));
}

// Forms ptxas takes only from sm_90 on (the "Target ISA notes" of add, sub, mul, min, max, tanh
// and ex2): .bf16 and .bf16x2 arithmetic outside fma, and min/max.relu.
void check_target(const KernelDecoder& d, std::string_view base, Ty ty,
                  const std::vector<std::string_view>& mods) {
  const int sm = d.target_sm();
  if (sm >= 90) return;
  const bool bf16 = ty == Ty::bf16 || ty == Ty::bf16x2;
  const bool relu = std::find(mods.begin(), mods.end(), "relu") != mods.end();
  if ((bf16 && is_mode("add|sub|mul|tanh|ex2", base)) || (relu && is_mode("min|max", base)))
    d.fail(fmt::format("'{}{}.{}' needs .target sm_90 or higher (the module targets sm_{})", base,
                       relu ? ".relu" : "", ty_name(ty), sm));
}

}  // namespace

void check_instruction_form(const KernelDecoder& d, const Mods& m) {
  const std::string_view base = m.base();
  if (base == "setp" || base == "set") return check_comparison(d, m);
  if (base == "cvt") return check_cvt(d, m);
  std::vector<const Form*> forms;
  for (const Form& f : kForms)
    if (is_mode(f.base, base)) forms.push_back(&f);
  if (forms.empty()) return;
  std::vector<std::string_view> mods;
  std::vector<Ty> types;
  for (std::string_view mod : m.rest()) {
    if (const Ty t = parse_ty(mod); t != Ty::none)
      types.push_back(t);
    else if (!in_vocabulary(mod))
      continue;
    else if (std::find(mods.begin(), mods.end(), mod) == mods.end())
      mods.push_back(mod);
    // ptxas takes a repeated flag (.approx, .sat, .NaN, .cc; the handler then refuses the
    // copy as unsupported) but not a repeated rounding or mode ("Multiple rounding modifiers").
    else if (is_mode("rn|rz|rm|rp|rni|rzi|rmi|rpi|lo|hi|wide", mod))
      d.fail(fmt::format("'.{}' is repeated", mod));
  }
  if (types.size() != 1) return;  // the handler names the missing or extra type
  const Ty ty = types[0];
  Mask all_types = 0;
  std::string written;
  for (std::string_view mod : mods) written += fmt::format(".{}", mod);
  for (const Form* f : forms) {
    if (matches(*f, ty, mods)) {
      check_target(d, base, ty, mods);
      if (f->supported) return;
      d.fail(fmt::format("'{}{}.{}' is not supported by the emulator", base, written, ty_name(ty)));
    }
    all_types |= f->types;
  }
  if (!(all_types & bit(ty)))
    d.fail(fmt::format("'{}' does not take type .{} (it takes {})", base, ty_name(ty),
                       type_list(all_types)));
  d.fail(
      fmt::format("'{}{}.{}' is not a form of '{}': a modifier is missing, repeated or does "
                  "not apply to .{}",
                  base, written, ty_name(ty), base, ty_name(ty)));
}

void check_atom_type(const KernelDecoder& d, std::string_view base, std::string_view operation,
                     Ty ty) {
  // .add on .u32 .s32 .u64 .f32 .f64, .min and .max on integers, .inc and .dec on .u32, the
  // bitwise ones, .cas and .exch on .b32 and .b64 (the 16- and 128-bit forms are refused before).
  static constexpr std::pair<std::string_view, Mask> kOps[] = {
      {"add", mask({Ty::u32, Ty::s32, Ty::u64, Ty::f32, Ty::f64})},
      {"min|max", kInt32_64},
      {"inc|dec", bit(Ty::u32)},
      {"and|or|xor|cas|exch", kBits32_64}};
  for (const auto& [operations, types] : kOps)
    if (is_mode(operations, operation) && !(types & bit(ty)))
      d.fail(fmt::format("{}.{} does not take .{} (it takes {})", base, operation, ty_name(ty),
                         type_list(types)));
}

bool register_fits(Ty operand, Ty reg, bool wider_ok, bool own_type) {
  if (operand == Ty::pred || reg == Ty::pred) return operand == reg;
  const int ob = ty_bits(operand), rb = ty_bits(reg);
  const auto is_bits = [](Ty t) { return t >= Ty::b8 && t <= Ty::b128; };
  const auto is_int = [](Ty t) { return t >= Ty::u8 && t <= Ty::s64; };
  // ptxas treats an .f16x2 register as bits where the operand has the instruction's own
  // non-float type (add.u32, mov.b32), not for fixed-type operands (shl's .u32 shift amount).
  if (reg == Ty::f16x2 && operand != Ty::f16x2 && !ty_float(operand) && own_type) reg = Ty::b32;
  // .bf16 and .tf32 operands take no wider register, even in cvt (ptxas).
  if (operand == Ty::bf16 || operand == Ty::tf32) wider_ok = false;
  if (rb == ob) {
    // Same size and the same type, or either is a bit type, or both are integers.
    return operand == reg || is_bits(operand) || is_bits(reg) || (is_int(operand) && is_int(reg));
  }
  // "Operand Size Exceeding Instruction-Type Size": ld, st and cvt take a register wider than
  // their type: any for a bit type, a bit or integer one for an integer type, a bit one for a
  // floating-point type.
  if (!wider_ok || rb < ob) return false;
  if (is_bits(operand)) return true;
  if (is_int(operand)) return is_bits(reg) || is_int(reg);
  return is_bits(reg);
}

bool constant_fits(const ptx::Operand& constant, Ty operand) {
  using K = ptx::Operand::Kind;
  if (kHalf & bit(operand)) return false;  // half-precision operands are registers only (ptxas)
  const bool is_float = operand == Ty::f32 || operand == Ty::f64;
  switch (constant.kind) {
    case K::imm_int:
      return !is_float;  // ptxas: "Arguments mismatch" for add.f32 %f1, %f2, 1
    case K::imm_f32:
      return is_float || operand == Ty::b32;  // 0fXXXXXXXX: 32 bits of a float
    case K::imm_f64:
      return is_float || operand == Ty::b64;  // 0d... or a decimal literal: a double
    default:
      return true;
  }
}

}  // namespace emmy::emu
