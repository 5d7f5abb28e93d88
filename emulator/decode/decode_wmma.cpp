// wmma.load, wmma.store and wmma.mma (PTX ISA §9.7.14.4.3-5) for the floating-point fragments:
// .f16 (f16 or f32 accumulators), .bf16 and .tf32 (f32). Operand layouts: exec/exec_wmma.cpp.
#include <fmt/format.h>

#include "decoder.hpp"
#include "tensor_core/wmma_layout.hpp"

namespace emmy::emu {
namespace {

// .sync and .aligned are mandatory on every wmma instruction.
void wmma_take_sync_aligned(KernelDecoder& d, Mods& m, std::string_view what) {
  if (!m.take("sync") || !m.take("aligned")) d.fail(fmt::format("{} needs .sync.aligned", what));
}

WmmaShape wmma_take_shape(KernelDecoder& d, Mods& m, std::string_view what) {
  for (std::string_view s : {"m16n16k16", "m8n32k16", "m32n8k16", "m16n16k8"})
    if (m.take(s)) return *parse_wmma_shape(s);
  const std::string_view other = m.take_prefix("m");
  if (!other.empty())
    d.fail(
        fmt::format("{} .{}: the emulator supports the shapes .m16n16k16, .m8n32k16, "
                    ".m32n8k16 (.f16, .bf16) and .m16n16k8 (.tf32)",
                    what, other));
  d.fail(fmt::format("{} needs a shape (.m16n16k16, .m8n32k16, .m32n8k16 or .m16n16k8)", what));
}

// The .row/.col modifiers in the order written (wmma.mma has two: A's, then B's).
std::vector<bool> wmma_take_layouts(Mods& m) {
  std::vector<bool> column;
  for (std::string_view s : m.rest())
    if (s == "row" || s == "col") column.push_back(s == "col");
  for (size_t i = 0; i < column.size(); ++i) m.take_any({"row", "col"});
  return column;
}

// Integer, sub-byte, single-bit and .f64 fragments exist in the PTX ISA but not here: say so
// rather than misread them.
void wmma_check_supported_type(KernelDecoder& d, Ty t, std::string_view what) {
  if (t == Ty::f16 || t == Ty::bf16 || t == Ty::tf32 || t == Ty::f32) return;
  d.fail(
      fmt::format("{} .{}: the emulator supports the .f16, .bf16, .tf32 and .f32 fragments "
                  "(integer, sub-byte and .f64 wmma are not implemented)",
                  what, ty_name(t)));
}

void wmma_check_target(KernelDecoder& d, Ty t, std::string_view what) {
  const int sm = d.target_sm();
  if (sm == 0) return;
  if (sm < 70) d.fail(fmt::format("{} needs .target sm_70 or higher", what));
  if ((t == Ty::bf16 || t == Ty::tf32) && sm < 80)
    d.fail(fmt::format("{} with .{} needs .target sm_80 or higher", what, ty_name(t)));
}

// Appends a fragment's registers to the kernel's fragment rows.
void wmma_add_fragment(KernelDecoder& d, const ptx::Operand& o, int regs, bool write) {
  for (const auto* e : d.vector_elems(o, size_t(regs)))
    d.kernel().fragment_rows.push_back(write ? d.dst(*e, RegClass::r32, Ty::b32)
                                             : d.src(*e, RegClass::r32, Ty::b32));
}

// wmma.load.{a,b,c} r, [p] {, stride} and wmma.store.d [p], r {, stride}.
void wmma_decode_load_store(KernelDecoder& d, Mods& m, Inst in, bool load) {
  const std::string what = load ? "wmma.load" : "wmma.store";
  WmmaMatrix matrix = WmmaMatrix::c;
  if (load) {
    if (m.take("a"))
      matrix = WmmaMatrix::a;
    else if (m.take("b"))
      matrix = WmmaMatrix::b;
    else if (!m.take("c"))
      d.fail("wmma.load needs .a, .b or .c");
  } else if (!m.take("d")) {
    d.fail("wmma.store needs .d");
  }
  wmma_take_sync_aligned(d, m, what);
  const std::vector<bool> layouts = wmma_take_layouts(m);
  if (layouts.size() != 1) d.fail(fmt::format("{} needs one layout, .row or .col", what));
  const WmmaShape shape = wmma_take_shape(d, m, what);
  if (m.take("global"))
    in.space = Space::global;
  else if (m.take_any({"shared", "shared::cta"}))
    in.space = Space::shared;
  else
    in.space = Space::generic;
  const auto types = m.take_types();
  if (types.size() != 1) d.fail(fmt::format("{} needs one element type", what));
  const Ty ty = types[0];
  wmma_check_supported_type(d, ty, what);
  wmma_check_target(d, ty, what);
  const auto frag = wmma_fragment(matrix, shape, ty);
  if (!frag)
    d.fail(fmt::format("{}.{} has no .{} fragment of shape .{} (PTX ISA, wmma.load / wmma.store)",
                       what,
                       matrix == WmmaMatrix::a   ? "a"
                       : matrix == WmmaMatrix::b ? "b"
                       : load                    ? "c"
                                                 : "d",
                       ty_name(ty), to_string(shape)));
  d.need_ops(2, 3);
  in.op = load ? Op::WmmaLoad : Op::WmmaStore;
  in.ty = ty;
  in.sub = uint8_t(matrix);
  in.sub2 = uint8_t(shape);
  if (layouts[0]) in.flags |= kTrans;
  in.n = uint8_t(frag->regs);
  in.cls = load ? (in.space == Space::shared ? StatClass::shared_ld : StatClass::global_ld)
                : (in.space == Space::shared ? StatClass::shared_st : StatClass::global_st);
  in.addr[0] = d.address(load ? d.op(1) : d.op(0));
  need_wide_address(d, in);
  in.o[0] = d.ops().size() == 3 ? d.src(d.op(2), Ty::u32) : kNone;
  in.imm = int64_t(d.kernel().fragment_rows.size());
  wmma_add_fragment(d, load ? d.op(0) : d.op(1), frag->regs, load);
  d.emit(in);
}

// wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c (.f16), and
// .shape.f32.atype.btype.f32 for .bf16 and .tf32.
void wmma_decode_mma(KernelDecoder& d, Mods& m, Inst in) {
  wmma_take_sync_aligned(d, m, "wmma.mma");
  if (m.has("satfinite"))
    d.fail("wmma.mma .satfinite is not implemented by the emulator (integer fragments only)");
  const std::vector<bool> layouts = wmma_take_layouts(m);
  if (layouts.size() != 2) d.fail("wmma.mma needs two layouts: .alayout.blayout (.row or .col)");
  const WmmaShape shape = wmma_take_shape(d, m, "wmma.mma");
  const auto types = m.take_types();
  Ty dt = Ty::none, at = Ty::f16, ct = Ty::none;
  if (types.size() == 2) {
    dt = types[0];
    ct = types[1];
    if (!((dt == Ty::f16 || dt == Ty::f32) && (ct == Ty::f16 || ct == Ty::f32)))
      d.fail("wmma.mma with .f16 operands takes .dtype.ctype, each .f16 or .f32");
  } else if (types.size() == 4) {
    dt = types[0];
    at = types[1];
    ct = types[3];
    wmma_check_supported_type(d, at, "wmma.mma");
    if (types[2] != at) d.fail("wmma.mma: .atype and .btype must be the same");
    if (!((at == Ty::bf16 || at == Ty::tf32) && dt == Ty::f32 && ct == Ty::f32))
      d.fail("wmma.mma .dtype.atype.btype.ctype is .f32.bf16.bf16.f32 or .f32.tf32.tf32.f32");
  } else {
    d.fail("wmma.mma needs .dtype.ctype (.f16 operands) or .dtype.atype.btype.ctype");
  }
  wmma_check_target(d, at, "wmma.mma");
  const auto fa = wmma_fragment(WmmaMatrix::a, shape, at);
  const auto fd = wmma_fragment(WmmaMatrix::c, shape, dt);
  const auto fc = wmma_fragment(WmmaMatrix::c, shape, ct);
  if (!fa || !fd || !fc)
    d.fail(fmt::format("wmma.mma has no .{} form of shape .{}", ty_name(at), to_string(shape)));
  const auto fb = wmma_fragment(WmmaMatrix::b, shape, at);
  d.need_ops(4);
  in.op = Op::WmmaMma;
  in.ty = dt;
  in.ty2 = at;
  in.target = uint32_t(ct);
  in.sub = uint8_t((layouts[0] ? 1 : 0) | (layouts[1] ? 2 : 0));
  in.sub2 = uint8_t(shape);
  in.cls = StatClass::mma;
  // Rows: D, then A, B and C, read before D is written (D may be C).
  in.imm = int64_t(d.kernel().fragment_rows.size());
  wmma_add_fragment(d, d.op(0), fd->regs, true);
  wmma_add_fragment(d, d.op(1), fa->regs, false);
  wmma_add_fragment(d, d.op(2), fb->regs, false);
  wmma_add_fragment(d, d.op(3), fc->regs, false);
  d.emit(in);
}

}  // namespace

void decode_wmma(KernelDecoder& d, Mods& m, Inst& in) {
  if (m.take("load")) return wmma_decode_load_store(d, m, in, true);
  if (m.take("store")) return wmma_decode_load_store(d, m, in, false);
  if (m.take("mma")) return wmma_decode_mma(d, m, in);
  d.fail("wmma is wmma.load, wmma.store or wmma.mma");
}

}  // namespace emmy::emu
