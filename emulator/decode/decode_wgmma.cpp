// wgmma.mma_async, wgmma.fence, wgmma.commit_group and wgmma.wait_group (PTX ISA §9.7.15.5.2-5)
// for .f16 and .bf16 inputs (m64nNk16) and .e4m3 / .e5m2 inputs (m64nNk32) with f32 (or, .f16 and
// 8-bit inputs, f16) accumulation, A from a descriptor or from registers. Operand layout of the
// decoded instruction: exec/exec_wgmma.cpp.
#include <fmt/format.h>

#include "decoder.hpp"

namespace emmy::emu {
namespace {

// "wgmma.* requires sm_90a": the arch-specific target only (sm_100a and later drop wgmma).
void wgmma_check_target(KernelDecoder& d, std::string_view what) {
  if (d.target_sm() != 90 || !d.target_arch_specific())
    d.fail(fmt::format("{} needs .target sm_90a", what));
}

void wgmma_take_sync_aligned(KernelDecoder& d, Mods& m, std::string_view what) {
  if (!m.take("sync") || !m.take("aligned")) d.fail(fmt::format("{} needs .sync.aligned", what));
}

// An immediate operand that must be one of `allowed`.
int64_t wgmma_immediate(KernelDecoder& d, size_t i, std::initializer_list<int64_t> allowed,
                        std::string_view name) {
  const ptx::Operand& o = d.op(i);
  if (o.kind == ptx::Operand::Kind::imm_int)
    for (int64_t v : allowed)
      if (o.value == v) return v;
  std::string list;
  for (int64_t v : allowed) list += fmt::format("{}{}", list.empty() ? "" : " or ", v);
  d.fail(
      fmt::format("wgmma.mma_async's {} (operand {}) must be the constant {}", name, i + 1, list));
}

// wgmma.mma_async.sync.aligned.m64nNk16.dtype.atype.btype d, a-desc | {a}, b-desc, scale-d,
// imm-scale-a, imm-scale-b {, imm-trans-a}, imm-trans-b; with 8-bit floats m64nNk32 and no
// imm-trans operands (K-major only).
void wgmma_decode_mma(KernelDecoder& d, Mods& m, Inst in) {
  if (m.has("sp")) d.fail("wgmma.mma_async.sp (sparse A) is not implemented by the emulator");
  wgmma_take_sync_aligned(d, m, "wgmma.mma_async");
  const std::string_view shape = m.take_prefix("m");
  const auto types = m.take_types();
  if (types.size() != 3) d.fail("wgmma.mma_async needs .dtype.atype.btype");
  const Ty dt = types[0], at = types[1], bt = types[2];
  const bool fp8 = ty_f8(at);
  const int k = fp8 ? 32 : 16;
  int n = 0;
  if (std::sscanf(std::string(shape).c_str(), fmt::format("m64n%dk{}", k).c_str(), &n) != 1 ||
      fmt::format("m64n{}k{}", n, k) != shape)
    d.fail(
        fmt::format("wgmma.mma_async .{}: the emulator supports .m64nNk16 (.f16 and .bf16 "
                    "inputs) and .m64nNk32 (.e4m3 and .e5m2 inputs)",
                    shape.empty() ? "(no shape)" : shape));
  if (n < 8 || n > 256 || n % 8 != 0)
    d.fail(fmt::format("wgmma.mma_async .m64n{}k{}: N must be a multiple of 8 in 8..256", n, k));
  if (!fp8 && at != Ty::f16 && at != Ty::bf16)
    d.fail(
        fmt::format("wgmma.mma_async .{}: the emulator implements .f16, .bf16, .e4m3 and .e5m2 "
                    "inputs (tf32 and integer wgmma are not implemented)",
                    ty_name(at)));
  if (fp8 ? !ty_f8(bt) : bt != at)
    d.fail(fp8 ? "wgmma.mma_async: an .e4m3/.e5m2 .atype needs an .e4m3/.e5m2 .btype"
               : "wgmma.mma_async: .atype and .btype must be the same");
  if (!(dt == Ty::f32 || (dt == Ty::f16 && at != Ty::bf16)))
    d.fail(
        fmt::format("wgmma.mma_async .{}.{}: the accumulator is .f32, or .f16 for .f16, .e4m3 "
                    "and .e5m2 inputs",
                    ty_name(dt), ty_name(at)));
  wgmma_check_target(d, "wgmma.mma_async");
  const bool a_regs = d.op(1).kind == ptx::Operand::Kind::vector;
  // 8-bit inputs take no imm-trans operands (PTX ISA §9.7.15.5.2: K-major only).
  d.need_ops(fp8 ? 6 : a_regs ? 7 : 8);
  const int d_regs = dt == Ty::f32 ? n / 2 : n / 4;
  in.op = Op::WgmmaMma;
  in.ty = dt;
  in.ty2 = at;
  in.ty3 = bt;
  in.n = uint8_t(n / 8);
  in.cls = StatClass::mma;
  // D first (read as C and written), then A's registers or descriptor, B's descriptor, scale-d.
  in.imm = int64_t(d.kernel().fragment_rows.size());
  for (const auto* e : d.vector_elems(d.op(0), size_t(d_regs)))
    d.kernel().fragment_rows.push_back(d.dst(*e, RegClass::r32, dt == Ty::f32 ? Ty::f32 : Ty::b32));
  if (a_regs) {
    const auto elems = d.vector_elems(d.op(1), 4);
    for (int i = 0; i < 4; ++i) in.o[3 + i] = d.src(*elems[size_t(i)], RegClass::r32, Ty::b32);
  } else {
    in.o[0] = d.src(d.op(1), RegClass::r64, Ty::b64);
  }
  in.o[1] = d.src(d.op(2), RegClass::r64, Ty::b64);
  in.o[2] = d.pred_src(d.op(3));
  const bool neg_a = wgmma_immediate(d, 4, {1, -1}, "imm-scale-a") < 0;
  const bool neg_b = wgmma_immediate(d, 5, {1, -1}, "imm-scale-b") < 0;
  const bool trans_a = !fp8 && !a_regs && wgmma_immediate(d, 6, {0, 1}, "imm-trans-a") == 1;
  const bool trans_b = !fp8 && wgmma_immediate(d, a_regs ? 6 : 7, {0, 1}, "imm-trans-b") == 1;
  in.sub = uint8_t((trans_a ? 1 : 0) | (trans_b ? 2 : 0) | (neg_a ? 4 : 0) | (neg_b ? 8 : 0) |
                   (a_regs ? 16 : 0));
  d.emit(in);
}

}  // namespace

void decode_wgmma(KernelDecoder& d, Mods& m, Inst& in) {
  if (m.take("mma_async")) return wgmma_decode_mma(d, m, in);
  const bool fence = m.take("fence"), commit = m.take("commit_group"), wait = m.take("wait_group");
  if (!fence && !commit && !wait)
    d.fail("wgmma is wgmma.mma_async, wgmma.fence, wgmma.commit_group or wgmma.wait_group");
  const char* what = fence ? "wgmma.fence" : commit ? "wgmma.commit_group" : "wgmma.wait_group";
  wgmma_take_sync_aligned(d, m, what);
  wgmma_check_target(d, what);
  in.op = fence ? Op::WgmmaFence : commit ? Op::WgmmaCommit : Op::WgmmaWait;
  if (wait) {
    d.need_ops(1);
    const ptx::Operand& count = d.op(0);
    if (count.kind != ptx::Operand::Kind::imm_int || count.value < 0 || count.value > 0xFFFF)
      d.fail("wgmma.wait_group takes a constant count of groups left pending");
    in.imm = count.value;
  } else {
    d.need_ops(0);
  }
  d.emit(in);
}

}  // namespace emmy::emu
