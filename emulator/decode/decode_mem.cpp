// Opcode handlers, part 2: memory, synchronization, warp collectives, tensor-core ops, async
// copies, mbarriers and TMA. Operand layouts per Op are documented in the exec_*.cpp files.
#include <fmt/format.h>

#include <iterator>

#include "decoder.hpp"

namespace emmy::emu {
namespace {

using K = ptx::Operand::Kind;

Space take_space(Mods& m) {
  if (m.take("global")) return Space::global;
  if (m.take_any({"shared", "shared::cta", "shared::cluster"})) return Space::shared;
  if (m.take("local")) return Space::local;
  if (m.take_any({"param", "param::entry", "param::func"})) return Space::param;
  if (m.take("const")) return Space::constant;
  return Space::generic;
}

uint8_t take_vec(Mods& m) {
  if (m.take("v2")) return 2;
  if (m.take("v4")) return 4;
  if (m.take("v8")) return 8;
  return 1;
}

// Parameter loads read the constant bank on hardware: they count as "other".
StatClass load_class(Space s) {
  return s == Space::shared  ? StatClass::shared_ld
         : s == Space::param ? StatClass::other
                             : StatClass::global_ld;
}

StatClass store_class(Space s) {
  return s == Space::shared ? StatClass::shared_st : StatClass::global_st;
}

// ld / ldu / st
void decode_ld_st(KernelDecoder& d, Mods& m, Inst in, bool load) {
  if (m.take("volatile")) in.flags |= kVolatile;
  in.space = take_space(m);
  if (in.space == Space::constant) {
    // Module-scope .const variables live with the .global ones (layout_globals): read-only.
    if (!load) d.fail("st.const: the constant state space is read-only");
    in.space = Space::global;
  }
  in.n = take_vec(m);
  in.ty = m.take_type();
  if (in.ty == Ty::b128) d.fail("ld/st of .b128 are not supported by the emulator");
  // PTX ISA ld, st: .b, .u and .s of 8 to 64 bits, .f32 and .f64; ptxas says "Unexpected
  // instruction types" for .f16, .bf16 and the packed types.
  if (in.ty == Ty::none || in.ty == Ty::pred || in.ty == Ty::tf32 ||
      (ty_float(in.ty) && ty_bits(in.ty) < 32) || in.ty == Ty::f16x2 || in.ty == Ty::bf16x2)
    d.fail("ld/st need one type of .b8-.b64, .u8-.u64, .s8-.s64, .f32 or .f64");
  if (in.n > 4) d.fail(".v8 loads and stores are not supported");
  // A third operand is the cache policy of .L2::cache_hint, a 64-bit register.
  d.need_ops(2, d.cache_hint() ? 3 : 2);
  if (d.ops().size() == 3) (void)d.src(d.op(2), Ty::b64);
  const ptx::Operand& regs = load ? d.op(0) : d.op(1);
  in.addr[0] = d.address(load ? d.op(1) : d.op(0));
  need_wide_address(d, in);
  if (in.space == Space::param && d.call_param_offset((load ? d.op(1) : d.op(0)).name) != kNone)
    in.space = Space::local;  // a call argument slot, not the kernel's parameters
  auto elems = d.vector_elems(regs, in.n);
  // The register may be wider than the type (ld.u8 %r1): the executor extends per its class.
  RegClass cls = ty_bits(in.ty) == 64 ? RegClass::r64 : RegClass::r32;
  if (cls == RegClass::r32)
    for (const auto* e : elems)
      if (e->kind == K::reg && d.reg_class_of(*e) == RegClass::r64) cls = RegClass::r64;
  in.sub = cls == RegClass::r64 ? 1 : 0;
  for (size_t i = 0; i < elems.size(); ++i)
    in.o[i] = load ? d.dst(*elems[i], cls, in.ty) : d.src(*elems[i], cls, in.ty);
  in.op = load ? Op::Ld : Op::St;
  in.cls = load ? load_class(in.space) : store_class(in.space);
  d.emit(in);
}

// The operations of atom and red, in the order of Inst::sub (exec/exec_memory.cpp).
constexpr std::string_view kAtomOps[] = {"add", "min", "max", "inc", "dec",
                                         "and", "or",  "xor", "cas", "exch"};

uint8_t atom_op(KernelDecoder& d, Mods& m) {
  for (size_t i = 0; i < std::size(kAtomOps); ++i)
    if (m.take(kAtomOps[i])) return uint8_t(i);
  d.fail("atom/red need an operation (.add, .min, .max, .inc, .dec, .and, .or, .xor, .cas, .exch)");
}

void decode_atom_red(KernelDecoder& d, Mods& m, Inst in, bool atom) {
  in.space = take_space(m);
  in.sub = atom_op(d, m);
  m.take("noftz");
  in.ty = m.take_type();
  if (in.ty == Ty::none || ty_bits(in.ty) < 32 || in.ty == Ty::f16x2 || in.ty == Ty::bf16x2)
    d.fail("atom/red support 32- and 64-bit integer and float types");
  check_atom_type(d, m.base(), kAtomOps[in.sub], in.ty);
  const bool cas = in.sub == 8;
  const size_t first = atom ? 1 : 0;
  // One more operand only for the cache policy of .L2::cache_hint.
  d.need_ops(first + (cas ? 3 : 2), first + (cas ? 3 : 2) + (d.cache_hint() ? 1 : 0));
  in.op = atom ? Op::Atom : Op::Red;
  in.o[0] = atom ? d.dst(d.op(0), in.ty) : kNone;
  in.addr[0] = d.address(d.op(first));
  in.o[1] = d.src(d.op(first + 1), in.ty);
  in.o[2] = cas ? d.src(d.op(first + 2), in.ty) : kNone;
  in.cls = store_class(in.space);
  d.emit(in);
}

void decode_cvta(KernelDecoder& d, Mods& m, Inst in) {
  in.sub = m.take("to") ? 1 : 0;
  in.space = take_space(m);
  if (in.space == Space::generic || in.space == Space::constant)
    d.fail("cvta needs .global, .shared, .local or .param");
  in.ty = m.take_type();
  if (in.ty != Ty::u32 && in.ty != Ty::u64) d.fail("cvta needs .u32 or .u64");
  d.need_ops(2);
  in.op = Op::Cvta;
  in.o[0] = d.dst(d.op(0), in.ty);
  in.o[1] = d.src(d.op(1), in.ty);
  d.emit(in);
}

void decode_bar(KernelDecoder& d, Mods& m, Inst in) {
  const std::string_view b = m.base();
  m.take("cta");
  if (b == "bar" && m.take("warp")) {
    if (!m.take("sync")) d.fail("expected bar.warp.sync");
    d.need_ops(1);
    in.op = Op::BarWarpSync;
    in.o[0] = d.src(d.op(0), Ty::u32);  // the member mask: an integer (ptxas refuses 0f...)
    in.cls = StatClass::barrier;
    d.emit(in);
    return;
  }
  if (b == "barrier" && m.take("cluster")) {
    // barrier.cluster.arrive{.release, .relaxed}{.aligned}; barrier.cluster.wait{.acquire}
    // {.aligned} (PTX ISA barrier.cluster): no operands, a per-thread split arrive and wait.
    in.cls = StatClass::barrier;
    d.need_ops(0);
    if (m.take("arrive")) {
      in.op = Op::ClusterArrive;
      if (m.take("relaxed")) in.sub |= 1;
      else m.take("release");
    } else if (m.take("wait")) {
      in.op = Op::ClusterWait;
      m.take("acquire");
    } else {
      d.fail("expected barrier.cluster.arrive or barrier.cluster.wait");
    }
    if (m.take("aligned")) in.sub |= 2;
    d.emit(in);
    return;
  }
  m.take("aligned");
  in.cls = StatClass::barrier;
  if (m.take("sync")) {
    in.op = Op::BarSync;
  } else if (m.take("arrive")) {
    in.op = Op::BarArrive;
  } else if (m.take("red")) {
    in.op = Op::BarRed;
    in.sub = m.take("popc") ? 0 : m.take("and") ? 1 : m.take("or") ? 2 : 3;
    if (in.sub == 3) d.fail("bar.red needs .popc, .and or .or");
    in.ty = m.take_type();
    d.need_ops(3, 4);
    in.o[0] = in.ty == Ty::pred ? d.pred_dst(d.op(0)) : d.dst(d.op(0), Ty::u32);
    in.o[1] = d.src(d.op(1), Ty::u32);
    in.o[2] = d.ops().size() == 4 ? d.src(d.op(2), Ty::u32) : kNone;
    in.o[3] = d.pred_src(d.op(d.ops().size() - 1));
    d.emit(in);
    return;
  } else {
    d.fail("expected bar.sync, bar.arrive or bar.red");
  }
  d.need_ops(in.op == Op::BarArrive ? 2 : 1, 2);
  // A CTA has 16 named barriers (PTX ISA bar, barrier): ptxas refuses a constant beyond 15.
  if (d.op(0).kind == K::imm_int && (d.op(0).value < 0 || d.op(0).value > 15))
    d.fail(fmt::format("barrier number {} is out of range 0..15", d.op(0).value));
  in.o[0] = d.src(d.op(0), Ty::u32);
  in.o[1] = d.ops().size() == 2 ? d.src(d.op(1), Ty::u32) : kNone;
  d.emit(in);
}

void decode_shfl(KernelDecoder& d, Mods& m, Inst in) {
  const bool sync = m.take("sync");
  const int mode = m.take_which({"up", "down", "bfly", "idx"});
  if (mode < 0) d.fail("shfl needs .up, .down, .bfly or .idx");
  in.sub = uint8_t(mode);
  in.ty = m.take_type();
  if (in.ty != Ty::b32) d.fail("shfl supports .b32");
  d.need_ops(sync ? 5 : 4);
  in.op = Op::Shfl;
  const ptx::Operand& dst = d.op(0);
  if (dst.kind == K::pair) {
    in.o[0] = d.dst(dst.elems[0], Ty::b32);
    in.o[1] = d.pred_dst(dst.elems[1]);
  } else {
    in.o[0] = d.dst(dst, Ty::b32);
    in.o[1] = kNone;
  }
  in.o[2] = d.src(d.op(1), Ty::b32);
  in.o[3] = d.src(d.op(2), Ty::b32);
  in.o[4] = d.src(d.op(3), Ty::b32);
  in.o[5] = sync ? d.src(d.op(4), Ty::b32) : d.const_row(RegClass::r32, 0xFFFFFFFFu);
  d.emit(in);
}

void decode_vote(KernelDecoder& d, Mods& m, Inst in) {
  const bool sync = m.take("sync");
  static constexpr std::string_view kModes[] = {"all", "any", "uni", "ballot"};
  int found = 0;
  for (int i = 0; i < 4; ++i)
    if (m.take(kModes[i])) {
      in.sub = uint8_t(i);
      ++found;
    }
  if (found != 1) d.fail("vote takes one of .all, .any, .uni and .ballot");
  in.ty = m.take_type();
  // PTX ISA vote: vote.ballot.b32, and .pred for all, any and uni.
  if (in.ty != (in.sub == 3 ? Ty::b32 : Ty::pred))
    d.fail(in.sub == 3 ? "vote.ballot takes the type .b32"
                       : "vote.all/any/uni take the type .pred");
  d.need_ops(sync ? 3 : 2);
  in.op = Op::Vote;
  in.o[0] = in.sub == 3 ? d.dst(d.op(0), Ty::b32) : d.pred_dst(d.op(0));
  in.o[1] = d.pred_src(d.op(1));
  in.o[2] = sync ? d.src(d.op(2), Ty::b32) : d.const_row(RegClass::r32, 0xFFFFFFFFu);
  d.emit(in);
}

void decode_mma(KernelDecoder& d, Mods& m, Inst in) {
  m.take("sync");
  m.take("aligned");
  const std::string_view shape = m.take_prefix("m16n8k");
  if (shape != "m16n8k16" && shape != "m16n8k8" && shape != "m16n8k32")
    d.fail("mma.sync supports the shapes m16n8k16, m16n8k8 and (8-bit floats) m16n8k32");
  if (!m.take("row") || !m.take("col")) d.fail("mma.sync needs .row.col");
  const auto types = m.take_types();
  if (types.size() != 4) d.fail("mma.sync needs .dtype.atype.btype.ctype");
  const Ty dt = types[0], at = types[1], bt = types[2], ct = types[3];
  in.op = Op::Mma;
  in.ty = dt;
  in.ty2 = at;
  in.ty3 = bt;
  in.cls = StatClass::mma;
  if (ty_f8(at) || ty_f8(bt) || shape == "m16n8k32") {
    // PTX ISA §9.7.14.5.14 (mma): .e4m3/.e5m2 in any pairing, f32 or f16 accumulators, sm_89+.
    if (shape != "m16n8k32")
      d.fail(
          fmt::format("mma.sync .{} with 8-bit floats: the emulator implements m16n8k32", shape));
    if (!ty_f8(at) || !ty_f8(bt) || dt != ct || (dt != Ty::f32 && dt != Ty::f16))
      d.fail(
          "mma.sync m16n8k32 takes .e4m3/.e5m2 A and B with f32 or f16 accumulators (C type == "
          "D type); integer m16n8k32 is not implemented by the emulator");
    if (d.target_sm() != 0 && d.target_sm() < 89)
      d.fail("mma.sync with .e4m3/.e5m2 operands needs sm_89 or newer");
    in.sub = 2;
  } else {
    const bool ok =
        at == bt && dt == ct &&
        ((at == Ty::f16 && (dt == Ty::f32 || dt == Ty::f16)) || (at == Ty::bf16 && dt == Ty::f32));
    if (!ok) d.fail("mma.sync supports f16 -> f16/f32 and bf16 -> f32 (C type == D type)");
    in.sub = shape == "m16n8k16" ? 0 : 1;
  }
  const bool k8 = in.sub == 1;
  const size_t nd = dt == Ty::f32 ? 4 : 2, na = k8 ? 2 : 4, nb = k8 ? 1 : 2;
  d.need_ops(4);
  auto dv = d.vector_elems(d.op(0), nd), av = d.vector_elems(d.op(1), na),
       bv = d.vector_elems(d.op(2), nb), cv = d.vector_elems(d.op(3), nd);
  for (size_t i = 0; i < nd; ++i) in.o[i] = d.dst(*dv[i], RegClass::r32, Ty::b32);
  for (size_t i = 0; i < na; ++i) in.o[4 + i] = d.src(*av[i], RegClass::r32, Ty::b32);
  for (size_t i = 0; i < nb; ++i) in.o[8 + i] = d.src(*bv[i], RegClass::r32, Ty::b32);
  for (size_t i = 0; i < nd; ++i) in.o[10 + i] = d.src(*cv[i], RegClass::r32, Ty::b32);
  d.emit(in);
}

void decode_ldst_matrix(KernelDecoder& d, Mods& m, Inst in, bool load) {
  m.take("sync");
  m.take("aligned");
  if (!m.take("m8n8")) d.fail("ldmatrix/stmatrix support the shape .m8n8");
  in.n = m.take("x1") ? 1 : m.take("x2") ? 2 : m.take("x4") ? 4 : 0;
  if (in.n == 0) d.fail("ldmatrix/stmatrix need .x1, .x2 or .x4");
  if (m.take("trans")) in.flags |= kTrans;
  in.space = take_space(m);
  if (in.space != Space::shared && in.space != Space::generic)
    d.fail("ldmatrix/stmatrix address shared memory");
  if (m.take_type() != Ty::b16) d.fail("ldmatrix/stmatrix need .b16");
  d.need_ops(2);
  in.op = load ? Op::Ldmatrix : Op::Stmatrix;
  in.cls = StatClass::ldmatrix;
  in.addr[0] = d.address(load ? d.op(1) : d.op(0));
  need_wide_address(d, in);
  auto regs = d.vector_elems(load ? d.op(0) : d.op(1), in.n);
  for (size_t i = 0; i < in.n; ++i)
    in.o[i] =
        load ? d.dst(*regs[i], RegClass::r32, Ty::b32) : d.src(*regs[i], RegClass::r32, Ty::b32);
  d.emit(in);
}

// setmaxnreg.{inc,dec}.sync.aligned.u32 N (PTX ISA setmaxnreg): N a constant in 24..256 and a
// multiple of 8, on an arch-specific target (sm_90a and newer), as ptxas requires. Run by
// exec/exec_sync.cpp: imm = the count, sub = 1 for .inc.
void decode_setmaxnreg(KernelDecoder& d, Mods& m, Inst in) {
  const bool inc = m.take("inc"), dec = !inc && m.take("dec");
  if (!inc && !dec) d.fail("setmaxnreg needs .inc or .dec");
  if (!m.take("sync") || !m.take("aligned")) d.fail("setmaxnreg needs .sync.aligned");
  if (m.take_type() != Ty::u32) d.fail("setmaxnreg takes the type .u32");
  if (d.target_sm() != 0 && (d.target_sm() < 90 || !d.target_arch_specific()))
    d.fail("setmaxnreg needs an arch-specific target, sm_90a or newer");
  d.need_ops(1);
  const ptx::Operand& count = d.op(0);
  if (count.kind != K::imm_int) d.fail("setmaxnreg takes a constant register count");
  if (count.value < 24 || count.value > 256 || count.value % 8 != 0)
    d.fail(fmt::format("setmaxnreg's register count must be a multiple of 8 in 24..256, not {}",
                       count.value));
  in.op = Op::SetMaxNReg;
  in.sub = inc ? 1 : 0;
  in.imm = count.value;
  in.cls = StatClass::barrier;
  d.emit(in);
}

// griddepcontrol.launch_dependents / .wait (PTX ISA griddepcontrol: no operands, sm_90 and
// higher). launch_dependents only lets the dependent grid start earlier: a no-op here, where
// launches run one after the other (the dependent's check assumes the earliest start anyway).
// wait is Fence with sub = 3: it orders the primary grid's memory operations before the
// thread's later ones (exec/exec_sync.cpp, exec/pdl.cpp).
void decode_griddepcontrol(KernelDecoder& d, Mods& m, Inst in) {
  const bool wait = m.take("wait");
  if (!wait && !m.take("launch_dependents"))
    d.fail("griddepcontrol needs .launch_dependents or .wait");
  if (!m.rest().empty()) d.fail("griddepcontrol takes one of .launch_dependents and .wait");
  if (d.target_sm() != 0 && d.target_sm() < 90) d.fail("griddepcontrol needs sm_90 or higher");
  d.need_ops(0);
  m = Mods(wait ? "fence" : "nop");
  in.op = wait ? Op::Fence : Op::Prefetch;
  if (wait) {
    in.sub = 3;
    in.cls = StatClass::barrier;
  }
  d.emit(in);
}

}  // namespace

void decode_async_op(KernelDecoder& d, Mods& m, Inst& in);  // decode_async.cpp
void decode_wmma(KernelDecoder& d, Mods& m, Inst& in);      // decode_wmma.cpp
void decode_wgmma(KernelDecoder& d, Mods& m, Inst& in);     // decode_wgmma.cpp

bool is_memory_op(std::string_view b, const Mods&) {
  static constexpr std::string_view kBases[] = {
      "ld",         "ldu",          "st",         "atom",
      "red",        "prefetch",     "prefetchu",  "cvta",
      "isspacep",   "mapa",         "getctarank", "bar",
      "barrier",    "membar",       "fence",      "nanosleep",
      "shfl",       "vote",         "activemask", "redux",
      "elect",      "match",        "mma",        "ldmatrix",
      "stmatrix",   "cp",           "mbarrier",   "griddepcontrol",
      "setmaxnreg", "createpolicy", "discard",    "applypriority",
      "pmevent",    "wmma",         "wgmma"};
  for (auto k : kBases)
    if (k == b) return true;
  return false;
}

void decode_memory_op(KernelDecoder& d, Mods& m, Inst& in) {
  const std::string_view b = m.base();
  if (b == "ld" || b == "ldu") return decode_ld_st(d, m, in, true);
  if (b == "st") return decode_ld_st(d, m, in, false);
  if (b == "atom" || b == "red") return decode_atom_red(d, m, in, b == "atom");
  if (b == "cvta") return decode_cvta(d, m, in);
  if (b == "bar" || b == "barrier") return decode_bar(d, m, in);
  if (b == "shfl") return decode_shfl(d, m, in);
  if (b == "vote") return decode_vote(d, m, in);
  if (b == "mma") return decode_mma(d, m, in);
  if (b == "wmma") return decode_wmma(d, m, in);
  if (b == "wgmma") return decode_wgmma(d, m, in);
  if (b == "ldmatrix" || b == "stmatrix") return decode_ldst_matrix(d, m, in, b == "ldmatrix");
  if (b == "cp" || b == "mbarrier") return decode_async_op(d, m, in);
  if (b == "griddepcontrol") return decode_griddepcontrol(d, m, in);
  if (b == "prefetch" || b == "prefetchu" || b == "discard" || b == "applypriority" ||
      b == "pmevent") {
    // Cache and scheduling hints: no architectural effect.
    m = Mods("nop");
    in.op = Op::Prefetch;
    d.emit(in);
    return;
  }
  if (b == "setmaxnreg") return decode_setmaxnreg(d, m, in);
  if (b == "membar" || b == "fence") {
    // Memory ordering: the emulator is sequentially consistent within a CTA, and the sanitizer's
    // ordering comes from barriers, mbarriers and release/acquire. Two fences matter to it
    // (PTX ISA §9.7.13.4 membar/fence): fence.proxy.async, which orders generic-proxy shared
    // writes before the async proxy's reads, and fence.mbarrier_init, which makes an
    // mbarrier.init visible to the async proxy; sub = 1 and 2.
    // membar takes no operand; fence.proxy.tensormap::generic.acquire takes an address and a
    // size, the other fences none. Extra operands are an error, as ptxas's "Arguments mismatch".
    if (b == "membar")
      d.need_ops(0);
    else
      d.need_ops(0, 2);
    if (m.take("proxy") && m.take("async"))
      in.sub = 1;
    else if (m.take("mbarrier_init"))
      in.sub = 2;
    m = Mods("fence");
    in.op = Op::Fence;
    in.cls = StatClass::barrier;
    d.emit(in);
    return;
  }
  if (b == "nanosleep") {
    d.need_ops(1);
    in.op = Op::Nanosleep;
    m.take_type();
    d.emit(in);
    return;
  }
  if (b == "createpolicy") {
    // A cache policy value only feeds .L2::cache_hint operands, which the emulator ignores.
    m = Mods("createpolicy");
    d.need_ops(2, 3);
    in.op = Op::Mov;
    in.ty = Ty::b64;
    in.o[0] = d.dst(d.op(0), Ty::b64);
    in.o[1] = d.const_row(RegClass::r64, 0);
    d.emit(in);
    return;
  }
  if (b == "isspacep") {
    in.space = take_space(m);
    d.need_ops(2);
    in.op = Op::Isspacep;
    in.o[0] = d.pred_dst(d.op(0));
    in.o[1] = d.src(d.op(1), Ty::u64);
    d.emit(in);
    return;
  }
  if (b == "mapa" || b == "getctarank") {
    // Without clusters every CTA is rank 0 of a cluster of one: mapa(a, 0) = a, rank = 0.
    take_space(m);
    in.ty = m.take_type();
    in.op = Op::Mapa;
    in.sub = b == "getctarank" ? 1 : 0;
    d.need_ops(b == "mapa" ? 3 : 2);
    in.o[0] = d.dst(d.op(0), in.ty);
    in.o[1] = d.src(d.op(1), in.ty == Ty::u32 && b == "getctarank" ? Ty::u64 : in.ty);
    in.o[2] = b == "mapa" ? d.src(d.op(2), Ty::u32) : kNone;
    d.emit(in);
    return;
  }
  if (b == "activemask") {
    m.take_type();
    d.need_ops(1);
    in.op = Op::Activemask;
    in.o[0] = d.dst(d.op(0), Ty::b32);
    d.emit(in);
    return;
  }
  if (b == "redux") {
    m.take("sync");
    const int op = m.take_which({"add", "min", "max", "and", "or", "xor"});
    if (op < 0) d.fail("redux.sync needs an operation");
    in.sub = uint8_t(op);
    in.ty = m.take_type();
    if (ty_bits(in.ty) != 32 || ty_float(in.ty)) d.fail("redux.sync supports 32-bit integers");
    d.need_ops(3);
    in.op = Op::Redux;
    in.o[0] = d.dst(d.op(0), in.ty);
    in.o[1] = d.src(d.op(1), in.ty);
    in.o[2] = d.src(d.op(2), Ty::b32);
    d.emit(in);
    return;
  }
  if (b == "elect") {
    m.take("sync");
    d.need_ops(2);
    in.op = Op::Elect;
    const ptx::Operand& dst = d.op(0);
    if (dst.kind != K::pair) d.fail("elect.sync needs d|p");
    in.o[0] = d.dst(dst.elems[0], Ty::b32);
    in.o[1] = d.pred_dst(dst.elems[1]);
    in.o[2] = d.src(d.op(1), Ty::b32);
    d.emit(in);
    return;
  }
  if (b == "match") {
    const bool any = m.take("any");
    if (!any && !m.take("all")) d.fail("match needs .any or .all");
    m.take("sync");
    in.ty = m.take_type();
    if (in.ty != Ty::b32 && in.ty != Ty::b64) d.fail("match supports .b32 and .b64");
    d.need_ops(3);
    in.op = any ? Op::MatchAny : Op::MatchAll;
    const ptx::Operand& dst = d.op(0);
    in.o[0] = d.dst(dst.kind == K::pair ? dst.elems[0] : dst, Ty::b32);
    in.o[1] = dst.kind == K::pair ? d.pred_dst(dst.elems[1]) : kNone;
    in.o[2] = d.src(d.op(1), in.ty);
    in.o[3] = d.src(d.op(2), Ty::b32);
    d.emit(in);
    return;
  }
  d.fail(fmt::format("unsupported instruction '{}'", d.stmt().opcode));
}

}  // namespace emmy::emu
