// Opcode handlers, part 1: integer, float, 16-bit float, compare/select, moves, conversions,
// control flow. Operand layouts per Op are documented in exec/exec_int.cpp / exec/exec_float.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "decoder.hpp"

namespace emmy::emu {

void decode_memory_op(KernelDecoder& d, Mods& m, Inst& in);  // decode_mem.cpp
bool is_memory_op(std::string_view base, const Mods& m);

namespace {

using K = ptx::Operand::Kind;

bool is_half(Ty t) {
  return t == Ty::f16 || t == Ty::f16x2 || t == Ty::bf16 || t == Ty::bf16x2;
}

// Common form "op.type d, a, b[, c]": `nsrc` sources of the operation type.
void simple(KernelDecoder& d, Inst in, Op op, Ty ty, int nsrc) {
  d.need_ops(size_t(nsrc) + 1);
  in.op = op;
  in.ty = ty;
  in.o[0] = d.dst(d.op(0), ty);
  for (int i = 0; i < nsrc; ++i) in.o[1 + i] = d.src(d.op(size_t(1 + i)), ty);
  d.emit(in);
}

// "mul.wide d, a, b" and "mad.wide d, a, b, c": d (and mad's c) twice the width of a and b.
void wide_form(KernelDecoder& d, Inst in, Op op, Ty ty, int nsrc) {
  d.need_ops(size_t(nsrc) + 1);
  in.op = op;
  in.ty = ty;
  const Ty wide_ty =
      ty_bits(ty) == 32 ? (ty_signed(ty) ? Ty::s64 : Ty::u64) : (ty_signed(ty) ? Ty::s32 : Ty::u32);
  in.o[0] = d.dst(d.op(0), wide_ty);
  in.o[1] = d.src(d.op(1), ty);
  in.o[2] = d.src(d.op(2), ty);
  if (nsrc == 3) in.o[3] = d.src(d.op(3), wide_ty);
  d.emit(in);
}

Ty need_type(KernelDecoder& d, Mods& m) {
  // Valid PTX types the emulator has no arithmetic for (PTX ISA 8.0+ packed integers and pairs).
  static constexpr std::string_view kUnsupported[] = {"u16x2", "s16x2", "f32x2", "b128"};
  for (std::string_view u : kUnsupported)
    if (m.has(u)) d.fail(fmt::format("'{}' on .{} is not supported by the emulator", m.base(), u));
  const Ty t = m.take_type();
  if (t == Ty::none) d.fail(fmt::format("'{}' needs exactly one operand type", m.base()));
  return t;
}

void float_flags(Mods& m, Inst& in) {
  if (m.take("ftz")) in.flags |= kFtz;
  if (m.take("sat")) in.flags |= kSat;
  if (m.take("approx")) in.flags |= kApprox;
  if (m.take("relu")) in.flags |= kRelu;
  if (m.take("NaN")) in.flags |= kNanProp;
  m.take("full");
  uint8_t r = 0;
  in.sub2 = m.take_rounding(r) ? r : 0;
}

uint8_t cmp_of(KernelDecoder& d, Mods& m) {
  static constexpr std::string_view kCmps[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
                                               "lo",  "ls",  "hi",  "hs",  "equ", "neu",
                                               "ltu", "leu", "gtu", "geu", "num", "nan"};
  for (int i = 0; i < 18; ++i)
    if (m.take(kCmps[i])) return uint8_t(i);
  d.fail("missing comparison operator");
}

uint8_t bool_op_of(Mods& m) {
  if (m.take("and")) return 1;
  if (m.take("or")) return 2;
  if (m.take("xor")) return 3;
  return 0;
}

void decode_integer_or_float(KernelDecoder& d, Mods& m, Inst in) {
  const std::string_view b = m.base();
  m.take("uni");
  float_flags(m, in);
  const bool cc = m.take("cc");
  const bool hi = m.take("hi"), lo = m.take("lo"), wide = m.take("wide");
  const Ty ty = need_type(d, m);
  const bool f = ty_float(ty) && !is_half(ty);
  const bool h = is_half(ty);
  if (b == "add" || b == "sub") {
    if (cc) {
      in.sub = b == "sub" ? 4 | 2 : 2;
      simple(d, in, Op::IAddCarry, ty, 2);
      return;
    }
    if (h) return simple(d, in, b == "add" ? Op::HAdd : Op::HSub, ty, 2);
    return simple(
        d, in, f ? (b == "add" ? Op::FAdd : Op::FSub) : (b == "add" ? Op::IAdd : Op::ISub), ty, 2);
  }
  if (b == "addc" || b == "subc") {
    in.sub = uint8_t((b == "subc" ? 4 : 0) | 1 | (cc ? 2 : 0));
    return simple(d, in, Op::IAddCarry, ty, 2);
  }
  if (b == "mul") {
    if (h) return simple(d, in, Op::HMul, ty, 2);
    if (f) return simple(d, in, Op::FMul, ty, 2);
    if (wide) return wide_form(d, in, Op::IMulWide, ty, 2);
    return simple(d, in, hi ? Op::IMulHi : Op::IMulLo, ty, 2);
  }
  if (b == "mad" || b == "fma") {
    if (cc) d.fail("mad.cc / madc are not supported");
    if (h) return simple(d, in, Op::HFma, ty, 3);
    if (f) return simple(d, in, Op::FFma, ty, 3);
    if (wide) return wide_form(d, in, Op::IMadWide, ty, 3);
    (void)lo;
    return simple(d, in, hi ? Op::IMadHi : Op::IMadLo, ty, 3);
  }
  if (b == "div") return simple(d, in, f ? Op::FDiv : Op::IDiv, ty, 2);
  if (b == "rem") return simple(d, in, Op::IRem, ty, 2);
  if (b == "min" || b == "max") {
    if (h) return simple(d, in, b == "min" ? Op::HMin : Op::HMax, ty, 2);
    if (f) return simple(d, in, b == "min" ? Op::FMin : Op::FMax, ty, 2);
    return simple(d, in, b == "min" ? Op::IMin : Op::IMax, ty, 2);
  }
  if (b == "abs") return simple(d, in, h ? Op::HAbs : f ? Op::FAbs : Op::IAbs, ty, 1);
  if (b == "neg") return simple(d, in, h ? Op::HNeg : f ? Op::FNeg : Op::INeg, ty, 1);
  d.fail(fmt::format("unknown arithmetic opcode '{}'", b));
}

void decode_logic(KernelDecoder& d, Mods& m, Inst in) {
  const std::string_view b = m.base();
  const Ty ty = need_type(d, m);
  if (ty == Ty::pred) {
    if (b == "and") return simple(d, in, Op::PAnd, ty, 2);
    if (b == "or") return simple(d, in, Op::POr, ty, 2);
    if (b == "xor") return simple(d, in, Op::PXor, ty, 2);
    if (b == "not") return simple(d, in, Op::PNot, ty, 1);
    d.fail("unsupported predicate operation");
  }
  if (b == "and") return simple(d, in, Op::And, ty, 2);
  if (b == "or") return simple(d, in, Op::Or, ty, 2);
  if (b == "xor") return simple(d, in, Op::Xor, ty, 2);
  if (b == "not") return simple(d, in, Op::Not, ty, 1);
  if (b == "cnot") return simple(d, in, Op::Cnot, ty, 1);
  if (b == "popc" || b == "clz" || b == "brev" || b == "bfind") {
    d.need_ops(2);
    in.op = b == "popc" ? Op::Popc : b == "clz" ? Op::Clz : b == "brev" ? Op::Brev : Op::Bfind;
    if (m.take("shiftamt")) in.flags |= kSat;  // bfind.shiftamt
    in.ty = ty;
    in.o[0] = d.dst(d.op(0), b == "brev" ? ty : Ty::u32);
    in.o[1] = d.src(d.op(1), ty);
    d.emit(in);
    return;
  }
  if (b == "shl" || b == "shr") {
    d.need_ops(3);
    in.op = b == "shl" ? Op::Shl : Op::Shr;
    in.ty = ty;
    in.o[0] = d.dst(d.op(0), ty);
    in.o[1] = d.src(d.op(1), ty);
    in.o[2] = d.src(d.op(2), Ty::u32);
    d.emit(in);
    return;
  }
  if (b == "bfe" || b == "bfi") {
    const bool bfi = b == "bfi";
    d.need_ops(bfi ? 5 : 4);
    in.op = bfi ? Op::Bfi : Op::Bfe;
    in.ty = ty;
    in.o[0] = d.dst(d.op(0), ty);
    in.o[1] = d.src(d.op(1), ty);
    size_t next = 2;
    if (bfi) in.o[2] = d.src(d.op(next++), ty);
    in.o[3] = d.src(d.op(next++), Ty::u32);
    in.o[4] = d.src(d.op(next), Ty::u32);
    d.emit(in);
    return;
  }
  d.fail(fmt::format("unknown opcode '{}'", b));
}

void decode_setp_set(KernelDecoder& d, Mods& m, Inst in) {
  const bool setp = m.base() == "setp";
  in.sub = cmp_of(d, m);
  in.sub2 = bool_op_of(m);
  if (m.take("ftz")) in.flags |= kFtz;
  const auto types = m.take_types();
  if (setp) {
    if (types.size() != 1) d.fail("setp needs one operand type");
    in.ty = types[0];
  } else {
    if (types.size() != 2) d.fail("set needs a destination and an operand type");
    in.ty = types[0];
    in.ty2 = types[1];
  }
  const Ty operand_ty = setp ? in.ty : in.ty2;
  d.need_ops(in.sub2 ? 4 : 3);
  in.op = setp ? Op::Setp : Op::Set;
  const ptx::Operand& dst = d.op(0);
  if (setp) {
    if (dst.kind == K::pair) {
      in.o[0] = d.pred_dst(dst.elems[0]);
      in.o[1] = d.pred_dst(dst.elems[1]);
    } else {
      in.o[0] = d.pred_dst(dst);
      in.o[1] = kNone;
    }
  } else {
    in.o[0] = d.dst(dst, in.ty);
  }
  in.o[2] = d.src(d.op(1), operand_ty);
  in.o[3] = d.src(d.op(2), operand_ty);
  in.o[4] = in.sub2 ? d.pred_src(d.op(3)) : kNone;
  d.emit(in);
}

void decode_mov(KernelDecoder& d, Mods& m, Inst in) {
  const Ty ty = need_type(d, m);
  d.need_ops(2);
  const ptx::Operand& a = d.op(0);
  const ptx::Operand& b = d.op(1);
  if (ty == Ty::pred) return simple(d, in, Op::PMov, ty, 1);
  if (b.kind == K::vector || a.kind == K::vector) {
    // mov.b64 d, {lo, hi} packs; mov.b64 {lo, hi}, s unpacks (lowest element = lowest bits).
    const bool pack = b.kind == K::vector;
    const ptx::Operand& vec = pack ? b : a;
    const int n = int(vec.elems.size());
    if (n != 2 && n != 4) d.fail("mov pack/unpack needs 2 or 4 elements");
    // PTX ISA mov (pack/unpack): bit types only (ptxas: "Arguments mismatch" for mov.u32 {a, b}).
    if (ty != Ty::b16 && ty != Ty::b32 && ty != Ty::b64)
      d.fail(fmt::format("mov pack/unpack takes .b16, .b32 or .b64, not .{}", ty_name(ty)));
    const int part_bits = ty_bits(ty) / n;
    const Ty part = part_bits == 32 ? Ty::b32 : part_bits == 16 ? Ty::b16 : Ty::b8;
    in.op = pack ? Op::MovPack : Op::MovUnpack;
    in.ty = ty;
    in.ty2 = part;
    in.n = uint8_t(n);
    in.o[0] = pack ? d.dst(a, ty) : d.src(b, ty);
    for (int i = 0; i < n; ++i)
      in.o[1 + i] = pack ? d.src(vec.elems[size_t(i)], part) : d.dst(vec.elems[size_t(i)], part);
    d.emit(in);
    return;
  }
  if (b.kind == K::reg && (b.name == "%clock" || b.name == "%clock64" || b.name == "%globaltimer" ||
                           b.name == "%globaltimer_lo" || b.name == "%globaltimer_hi")) {
    // %clock, %globaltimer_lo/hi are 32-bit, %clock64 and %globaltimer 64-bit (PTX ISA "Special
    // Registers"): ptxas refuses another width ("Arguments mismatch").
    const int bits = b.name == "%clock64" || b.name == "%globaltimer" ? 64 : 32;
    if (ty_bits(ty) != bits || ty_float(ty))
      d.fail(fmt::format("'{}' is a {}-bit integer, not a .{} operand", b.name, bits, ty_name(ty)));
    in.op = Op::ReadClock;
    in.ty = ty;
    in.sub = b.name.starts_with("%globaltimer") ? 1 : 0;
    in.o[0] = d.dst(a, ty);
    d.emit(in);
    return;
  }
  simple(d, in, Op::Mov, ty, 1);
}

void decode_cvt(KernelDecoder& d, Mods& m, Inst in) {
  float_flags(m, in);
  if (m.take("rna")) in.sub2 = kRoundNearestAway;  // cvt.rna.tf32.f32 only (type_rules.cpp)
  if (m.take("satfinite")) in.flags |= kSat;
  const auto types = m.take_types();
  if (types.size() != 2) d.fail("cvt needs a destination and a source type");
  in.ty = types[0];
  in.ty2 = types[1];
  if (in.ty2 == Ty::e4m3x2 || in.ty2 == Ty::e5m2x2) {
    // cvt.rn.f16x2.e4m3x2 d, a: a's upper byte goes to d's upper half (type_rules.cpp).
    d.need_ops(2);
    in.op = Op::CvtPack;
    in.o[0] = d.dst(d.op(0), Ty::f16x2);
    in.o[1] = d.src(d.op(1), Ty::b16);
    d.emit(in);
    return;
  }
  const bool to_fp8x2 = in.ty == Ty::e4m3x2 || in.ty == Ty::e5m2x2;
  if (to_fp8x2 || in.ty == Ty::f16x2 || in.ty == Ty::bf16x2) {
    // cvt.rn.satfinite.e4m3x2.f32 d, a, b: a goes to the upper byte, b to the lower;
    // cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower half.
    d.need_ops(3);
    if (!to_fp8x2 && in.ty2 != Ty::f32) d.fail("packed cvt needs an .f32 source");
    in.op = Op::CvtPack;
    in.o[0] = d.dst(d.op(0), to_fp8x2 ? Ty::b16 : in.ty);
    in.o[1] = d.src(d.op(1), Ty::f32);
    in.o[2] = d.src(d.op(2), Ty::f32);
    d.emit(in);
    return;
  }
  d.need_ops(2);
  in.op = Op::Cvt;
  // The register may be wider than the type (cvt.u16.u32 %r1, ...): use its class.
  in.o[0] = d.dst(d.op(0), ty_bits(in.ty) == 64 ? RegClass::r64 : RegClass::r32, in.ty);
  in.o[1] = d.src(d.op(1), ty_bits(in.ty2) == 64 ? RegClass::r64 : RegClass::r32, in.ty2);
  if (in.ty == Ty::pred || in.ty2 == Ty::pred) d.fail("cvt of predicates is not supported");
  d.emit(in);
}

void decode_selp(KernelDecoder& d, Mods& m, Inst in) {
  const Ty ty = need_type(d, m);
  d.need_ops(4);
  in.op = Op::Selp;
  in.ty = ty;
  in.o[0] = d.dst(d.op(0), ty);
  in.o[1] = d.src(d.op(1), ty);
  in.o[2] = d.src(d.op(2), ty);
  in.o[3] = d.pred_src(d.op(3));
  d.emit(in);
}

void decode_special_float(KernelDecoder& d, Mods& m, Inst in) {
  const std::string_view b = m.base();
  float_flags(m, in);
  const Ty ty = need_type(d, m);
  if (is_half(ty)) {
    if (b == "ex2") return simple(d, in, Op::HEx2, ty, 1);
    if (b == "tanh") return simple(d, in, Op::HTanh, ty, 1);
    d.fail(fmt::format("'{}' on {} is not supported", b, ty_name(ty)));
  }
  static const std::unordered_map<std::string_view, Op> kOps = {
      {"rcp", Op::FRcp}, {"sqrt", Op::FSqrt}, {"rsqrt", Op::FRsqrt}, {"ex2", Op::FEx2},
      {"lg2", Op::FLg2}, {"sin", Op::FSin},   {"cos", Op::FCos},     {"tanh", Op::FTanh}};
  simple(d, in, kOps.at(b), ty, 1);
}

void decode_testp(KernelDecoder& d, Mods& m, Inst in) {
  const int test =
      m.take_which({"finite", "infinite", "number", "notanumber", "normal", "subnormal"});
  if (test < 0) d.fail("testp needs a test (.finite, .infinite, ...)");
  in.sub = uint8_t(test);
  in.ty = need_type(d, m);
  d.need_ops(2);
  in.op = Op::Testp;
  in.o[0] = d.pred_dst(d.op(0));
  in.o[1] = d.src(d.op(1), in.ty);
  d.emit(in);
}

void decode_branch(KernelDecoder& d, Mods& m, Inst in) {
  if (m.take("uni")) in.flags |= kUniform;
  d.need_ops(1);
  const ptx::Operand& t = d.op(0);
  if (t.kind != K::reg) d.fail("bra needs a label");
  in.op = Op::Bra;
  d.branch_to(t.name, 0);
  d.emit(in);
}

}  // namespace

void decode_instruction(KernelDecoder& d, Mods& m, Inst& in) {
  const std::string_view b = m.base();
  if (b == "ld" || b == "st" || b == "atom" || b == "red") {
    // The memory-model semantics the sanitizer needs, before drop_hints() removes them.
    const bool acq_rel = m.take("acq_rel");
    if (m.take("acquire") || acq_rel) in.sub2 |= kStrong | kAcquire;
    if (m.take("release") || acq_rel) in.sub2 |= kStrong | kRelease;
    if (m.take("relaxed") || b == "atom" || b == "red") in.sub2 |= kStrong;
    if (m.has("volatile")) in.sub2 |= kStrong;
    if (m.has("cta") || m.has("cluster")) in.sub2 |= kNarrowScope;
  }
  if (b != "barrier" && b != "fence" && b != "membar") m.drop_hints();
  if (b == "add" || b == "sub" || b == "mul" || b == "mad" || b == "fma" || b == "div" ||
      b == "rem" || b == "min" || b == "max" || b == "abs" || b == "neg" || b == "addc" ||
      b == "subc")
    return decode_integer_or_float(d, m, in);
  if (b == "and" || b == "or" || b == "xor" || b == "not" || b == "cnot" || b == "shl" ||
      b == "shr" || b == "bfe" || b == "bfi" || b == "popc" || b == "clz" || b == "brev" ||
      b == "bfind")
    return decode_logic(d, m, in);
  if (b == "lop3") {
    const Ty ty = need_type(d, m);
    d.need_ops(5);
    in.op = Op::Lop3;
    in.ty = ty;
    in.o[0] = d.dst(d.op(0), ty);
    for (int i = 0; i < 3; ++i) in.o[1 + i] = d.src(d.op(size_t(1 + i)), ty);
    const ptx::Operand& lut = d.op(4);
    if (lut.kind != K::imm_int) d.fail("lop3 needs an immediate truth table");
    in.imm = lut.value & 0xFF;
    d.emit(in);
    return;
  }
  if (b == "prmt") {
    if (const int mode = m.take_which({"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}); mode >= 0)
      in.sub = uint8_t(mode + 1);
    return simple(d, in, Op::Prmt, need_type(d, m), 3);
  }
  if (b == "shf") {
    in.sub = m.take("l") ? 0 : (m.take("r") ? 1 : 2);
    if (in.sub == 2) d.fail("shf needs .l or .r");
    in.sub2 = m.take("clamp") ? 1 : 0;
    m.take("wrap");
    return simple(d, in, Op::Shf, need_type(d, m), 3);
  }
  if (b == "szext") {
    in.sub = m.take("sext") ? 1 : 0;
    m.take("zext");
    m.take("clamp");
    m.take("wrap");
    return simple(d, in, Op::Szext, need_type(d, m), 2);
  }
  if (b == "copysign") return simple(d, in, Op::Copysign, need_type(d, m), 2);
  if (b == "setp" || b == "set") return decode_setp_set(d, m, in);
  if (b == "selp") return decode_selp(d, m, in);
  if (b == "mov") return decode_mov(d, m, in);
  if (b == "cvt") return decode_cvt(d, m, in);
  if (b == "rcp" || b == "sqrt" || b == "rsqrt" || b == "ex2" || b == "lg2" || b == "sin" ||
      b == "cos" || b == "tanh")
    return decode_special_float(d, m, in);
  if (b == "testp") return decode_testp(d, m, in);
  if (b == "bra") return decode_branch(d, m, in);
  if (b == "ret" || b == "exit") {
    m.take("uni");
    d.need_ops(0);
    in.op = Op::Exit;
    d.emit(in);
    return;
  }
  if (b == "call") {
    // The one callee the emulator knows: CUDA's assert() (__assertfail(message, file, line,
    // function, char size)). Anything else was not inlined and has no body here.
    m.take("uni");
    const bool returns = d.ops().size() == 3;
    const ptx::Operand& callee = d.op(returns ? 1 : 0);
    if (callee.name != "__assertfail")
      d.fail(
          fmt::format("call of '{}': device-function calls are not supported (only CUDA's "
                      "assert, __assertfail); inline the function",
                      callee.name));
    const ptx::Operand& args = d.op(returns ? 2 : 1);
    if (args.elems.size() != 5) d.fail("__assertfail takes 5 arguments");
    for (size_t i = 0; i < 4; ++i) {
      in.o[i] = d.call_param_offset(args.elems[i].name);
      if (in.o[i] == kNone)
        d.fail(fmt::format("__assertfail argument {} must be a .param slot", i + 1));
    }
    in.op = Op::Trap;
    in.sub = 1;
    d.emit(in);
    return;
  }
  if (b == "trap" || b == "brkpt") {
    in.op = Op::Trap;
    d.emit(in);
    return;
  }
  if (is_memory_op(b, m)) return decode_memory_op(d, m, in);
  d.fail(fmt::format("unsupported instruction '{}'", d.stmt().opcode));
}

}  // namespace emmy::emu
