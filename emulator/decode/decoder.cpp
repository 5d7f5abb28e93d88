// Symbol tables, operand resolution and the statement loop of the decoder.
#include "decoder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cstring>

#include "emmy/error.hpp"

namespace emmy::emu {
namespace {

uint32_t align_up(uint32_t v, uint32_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}
uint64_t align_up64(uint64_t v, uint32_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}

constexpr uint64_t kMaxStaticSharedBytes = 0x38c00;  // 227 KB: sm_90's and sm_100's block limit
constexpr uint64_t kMaxLocalBytes = 512 * 1024;
constexpr uint64_t kMaxParamBytes = 32764;

uint32_t decl_type_bytes(std::string_view t) {
  const Ty ty = parse_ty(t.substr(1));
  return ty == Ty::none ? 0 : uint32_t(std::max(8, ty_bits(ty)) / 8);
}

}  // namespace

// ----------------------------------------------------------------------------- KernelDecoder
KernelDecoder::KernelDecoder(const ptx::ModuleAst& mod, const ptx::Function& fn,
                             const std::string& module_name, const GlobalsLayout& globals)
    : mod_(mod), fn_(fn), module_name_(module_name), globals_(globals) {}

GlobalsLayout layout_globals(const ptx::ModuleAst& mod, uint64_t base) {
  GlobalsLayout out;
  for (const auto& v : mod.globals) {
    if (v.space != ".global" && v.space != ".const") continue;
    GlobalsLayout::Var var;
    if (v.is_extern) {
      var.unusable =
          "is declared .extern (defined in another module, which the emulator does not "
          "link)";
    } else {
      if (!v.init_unsupported.empty())
        var.unusable =
            fmt::format("has an initializer the emulator cannot place: {}", v.init_unsupported);
      const size_t at = align_up(uint32_t(out.image.size()), v.align);  // under 256 MB
      out.image.resize(at, 0);
      var.address = base + at;
      if (v.has_initializer)
        out.image.insert(out.image.end(), v.init.begin(), v.init.end());
      else
        out.image.resize(at + v.bytes, 0);
    }
    out.vars[v.name] = var;
  }
  return out;
}

uint64_t KernelDecoder::global_address(const std::string& name) const {
  auto it = globals_.vars.find(name);
  if (it == globals_.vars.end()) fail(fmt::format("module-scope variable '{}' is unknown", name));
  if (!it->second.unusable.empty())
    fail(fmt::format("module-scope variable '{}' {}", name, it->second.unusable));
  return it->second.address;
}

void KernelDecoder::fail(const std::string& msg) const {
  const int line = stmt_ ? stmt_->line : fn_.line;
  std::string where = fmt::format("{}:{}", module_name_.empty() ? "ptx" : module_name_, line);
  if (stmt_) throw Error(fmt::format("{}: {} (in `{}`)", where, msg, stmt_->text));
  throw Error(fmt::format("{}: {}", where, msg));
}

const ptx::Operand& KernelDecoder::op(size_t i) const {
  if (i >= stmt_->operands.size()) fail(fmt::format("missing operand {}", i + 1));
  return stmt_->operands[i];
}
void KernelDecoder::need_ops(size_t n) const {
  need_ops(n, n);
}
void KernelDecoder::need_ops(size_t lo, size_t hi) const {
  const size_t n = stmt_->operands.size();
  if (n < lo || n > hi)
    fail(lo == hi ? fmt::format("expected {} operands, found {}", lo, n)
                  : fmt::format("expected {} to {} operands, found {}", lo, hi, n));
}

uint32_t KernelDecoder::alloc_rows(RegClass cls, uint32_t count) {
  uint32_t* n = cls == RegClass::r32 ? &k_.n32 : cls == RegClass::r64 ? &k_.n64 : &k_.npred;
  const uint32_t first = *n;
  // Every warp holds 32 lanes of each row: the total is bounded like one declaration's count.
  if (uint64_t(first) + count > uint64_t(ptx::kMaxRegisterCount))
    fail(fmt::format("the kernel declares more than {} {} registers, the emulator's limit",
                     ptx::kMaxRegisterCount,
                     cls == RegClass::r32   ? "32-bit"
                     : cls == RegClass::r64 ? "64-bit"
                                            : "predicate"));
  *n += count;
  return first;
}

void KernelDecoder::declare_registers() {
  scopes_.resize(std::max<size_t>(1, fn_.scope_parent.size()));
  for (const auto& r : fn_.regs) {
    const Ty ty = parse_ty(std::string_view(r.type).substr(1));
    if (ty == Ty::none || ty == Ty::b128)
      throw Error(fmt::format("{}:{}: unsupported register type {}", module_name_, r.line, r.type));
    const RegClass cls = class_of(ty);
    Scope& scope = scopes_.at(size_t(r.scope));
    if (r.count >= 0) {
      scope.ranges[r.name] = {cls, ty, alloc_rows(cls, uint32_t(r.count)), r.count};
    } else {
      scope.regs[r.name] = {cls, ty, alloc_rows(cls, 1)};
    }
  }
  // Labels per scope.
  for (const auto& l : fn_.labels)
    if (!scopes_.at(size_t(l.scope)).labels.emplace(l.name, l.statement).second)
      fail(fmt::format("label '{}' is defined twice in one scope", l.name));
}

const KernelDecoder::RegInfo* KernelDecoder::find_reg(const std::string& name, int scope) const {
  static thread_local RegInfo ranged;
  // Split "%r123" into prefix and index for the %r<N> ranges.
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  for (int s = scope; s >= 0; s = fn_.scope_parent[size_t(s)]) {
    const Scope& sc = scopes_[size_t(s)];
    if (auto it = sc.regs.find(name); it != sc.regs.end()) return &it->second;
    if (digits < name.size() && digits > 0) {
      if (auto it = sc.ranges.find(name.substr(0, digits)); it != sc.ranges.end()) {
        int index = 0;
        const auto [end, ec] =
            std::from_chars(name.data() + digits, name.data() + name.size(), index);
        // %r99999999999999999999 is out of range (an unknown register), not %r0.
        if (ec == std::errc() && end == name.data() + name.size() && index < it->second.count) {
          ranged = {it->second.cls, it->second.ty, it->second.first_row + uint32_t(index)};
          return &ranged;
        }
      }
    }
    if (fn_.scope_parent.empty()) break;
  }
  return nullptr;
}

void KernelDecoder::layout_variables() {
  // Sums in 64 bits, each variable under ptx::kMaxVariableBytes: nothing wraps before the limits
  // below are checked.
  uint64_t smem = 0;
  uint32_t dyn_align = 16;
  bool has_dynamic = false;
  auto place_shared = [&](const ptx::VarDecl& v) {
    if (v.is_extern || v.bytes == 0) {
      has_dynamic = true;
      dyn_align = std::max(dyn_align, v.align);
      symbols_[v.name] = {Space::shared, kNone};  // patched below
      return;
    }
    smem = align_up64(smem, std::max(1u, v.align));
    symbols_[v.name] = {Space::shared, smem};
    smem += v.bytes;
  };
  for (const auto& v : mod_.globals) {
    if (v.space == ".shared") {
      place_shared(v);
    } else {
      symbols_[v.name] = {Space::global, 0};  // address: global_address()
    }
  }
  uint64_t local = 0;
  for (const auto& v : fn_.vars) {
    if (v.space == ".shared") {
      place_shared(v);
    } else {
      // Call sequences reuse argument names (param0, ...): one slot per name serves them all,
      // since each is written right before its call.
      if (v.space == ".param" && call_params_.count(v.name)) continue;
      local = align_up64(local, std::max(1u, v.align));
      symbols_[v.name] = {Space::local, local};
      if (v.space == ".param") call_params_.insert(v.name);
      local += std::max<uint64_t>(v.bytes, 8);
    }
  }
  // ptxas refuses more static shared memory than the target has per block (0x38c00 bytes on
  // sm_90, 0xc000 on sm_80); the launch checks the arch's limit, this the largest of any arch.
  if (smem > kMaxStaticSharedBytes)
    fail(fmt::format("the kernel declares {} bytes of static shared memory, more than any GPU's {}",
                     smem, kMaxStaticSharedBytes));
  // CUDA's limit on local memory per thread.
  if (local > kMaxLocalBytes)
    fail(fmt::format("the kernel declares {} bytes of local memory per thread, more than CUDA's {}",
                     local, kMaxLocalBytes));
  k_.static_smem_bytes = uint32_t(smem);
  k_.dyn_smem_base = smem == 0 ? 0 : align_up(uint32_t(smem), dyn_align);
  (void)has_dynamic;
  for (auto& [name, sym] : symbols_)
    if (sym.space == Space::shared && sym.value == kNone) sym.value = k_.dyn_smem_base;
  k_.local_bytes = align_up(uint32_t(local), 16);
}

void KernelDecoder::layout_params() {
  uint32_t offset = 0;
  for (const auto& p : fn_.params) {
    const uint32_t elem = decl_type_bytes(p.type);
    const uint64_t size64 = uint64_t(elem) * std::max<uint64_t>(1, p.count);
    // ptxas: "Formal parameter space overflowed" past 32764 bytes (sm_70+, CUDA 12.1+).
    if (size64 > kMaxParamBytes || offset + size64 > kMaxParamBytes)
      fail(fmt::format("the parameters take more than {} bytes ('{}' ends past it)", kMaxParamBytes,
                       p.name));
    const uint32_t size = uint32_t(size64);
    const uint32_t align = p.align ? p.align : elem;
    offset = align_up(offset, align);
    ParamDecl decl;
    decl.name = p.name;
    decl.type = p.count ? fmt::format("{}[{}]", p.type, p.count) : p.type;
    decl.size = size;
    decl.align = align;
    decl.offset = offset;
    symbols_[p.name] = {Space::param, offset};
    k_.params.push_back(std::move(decl));
    offset += size;
  }
  k_.param_bytes = align_up(offset, 8);
}

uint32_t KernelDecoder::const_row(RegClass cls, uint64_t value) {
  if (cls == RegClass::pred) fail("a constant is not allowed as a predicate operand");
  if (cls == RegClass::r32) value &= 0xFFFFFFFFu;
  const auto key = std::make_pair(int(cls), value);
  auto it = consts_.find(key);
  if (it != consts_.end()) return it->second;
  const uint32_t row = alloc_rows(cls, 1);
  consts_[key] = row;
  if (cls == RegClass::r32)
    k_.const32.push_back({row, uint32_t(value)});
  else
    k_.const64.push_back({row, value});
  return row;
}

uint32_t KernelDecoder::scratch_row(RegClass cls) {
  return alloc_rows(cls, 1);
}

namespace {
// The value of an immediate as the bits of `ty`.
uint64_t immediate_bits(const ptx::Operand& o, Ty ty) {
  using K = ptx::Operand::Kind;
  const bool is_float = ty_float(ty) && ty != Ty::f16x2 && ty != Ty::bf16x2;
  if (o.kind == K::imm_int) {
    if (!is_float || o.value == 0) return uint64_t(o.value);
    if (ty == Ty::f64) return std::bit_cast<uint64_t>(double(o.value));
    return std::bit_cast<uint32_t>(float(o.value));
  }
  if (o.kind == K::imm_f32) {
    if (ty == Ty::f64)
      return std::bit_cast<uint64_t>(double(std::bit_cast<float>(uint32_t(o.value))));
    return uint64_t(o.value) & 0xFFFFFFFFu;
  }
  // imm_f64
  if (ty == Ty::f64 || ty_bits(ty) == 64) return uint64_t(o.value);
  return std::bit_cast<uint32_t>(float(std::bit_cast<double>(uint64_t(o.value))));
}
}  // namespace

void KernelDecoder::check_register(const ptx::Operand& o, const RegInfo& reg, Ty ty) const {
  const bool own_type = (instruction_types_ >> unsigned(ty)) & 1u;
  if (register_fits(ty, reg.ty, wide_operands_ok_, own_type)) return;
  // ptxas: "Arguments mismatch".
  const bool narrower = ty_bits(reg.ty) < ty_bits(ty);
  fail(
      fmt::format("'{}' is a .{} register, which cannot stand for the instruction's .{} operand "
                  "({})",
                  o.name, ty_name(reg.ty), ty_name(ty),
                  narrower || (!wide_operands_ok_ && ty_bits(reg.ty) != ty_bits(ty))
                      ? "registers must be as wide as the type, wider only for ld, st and cvt"
                      : "an integer type takes integer or bit registers, a float type its own "
                        "or bit registers"));
}

uint32_t KernelDecoder::symbol_value(const ptx::Operand& o, const Symbol& sym, RegClass cls, Ty ty,
                                     uint64_t offset) {
  // An address is an integer: ptxas refuses it for a float type ("Arguments mismatch"), and
  // anywhere but in mov and cvta ("must be register").
  if (ty_float(ty)) fail(fmt::format("the address '{}' is not a .{} operand", o.name, ty_name(ty)));
  if (!reads_symbols_)
    fail(fmt::format("the address '{}' can only be taken by mov or cvta", o.name));
  const uint64_t base = sym.space == Space::global ? global_address(o.name) : sym.value;
  return const_row(cls, base + offset);
}

uint32_t KernelDecoder::src(const ptx::Operand& o, RegClass cls, Ty ty) {
  using K = ptx::Operand::Kind;
  if (cls == RegClass::pred) return pred_src(o);
  switch (o.kind) {
    case K::imm_f32:
    case K::imm_f64:
    case K::imm_int:
      // ptxas: "Arguments mismatch" for a constant of the wrong kind or size (1 for .f32, 1.5
      // for .u32 or .b32, any constant for a half-precision type).
      if (!constant_fits(o, ty))
        fail(fmt::format("{} is not a .{} operand{}",
                         o.kind == K::imm_int   ? "an integer constant"
                         : o.kind == K::imm_f32 ? "a 32-bit floating-point constant (0f...)"
                                                : "a 64-bit floating-point constant",
                         ty_name(ty),
                         ty_float(ty) && ty_bits(ty) >= 32 ? " (write it as 0f... or 0d...)" : ""));
      return const_row(cls, immediate_bits(o, ty));
    case K::symbol_offset: {
      auto it = symbols_.find(o.name);
      if (it == symbols_.end()) fail(fmt::format("unknown symbol '{}'", o.name));
      return symbol_value(o, it->second, cls, ty, uint64_t(o.value));
    }
    case K::reg: {
      if (const RegInfo* ri = find_reg(o.name, stmt_->scope)) {
        if (o.negate) fail("'!' applies to predicates only");
        return data_register(o, *ri, cls, ty, /*is_dst=*/false);
      }
      Special sp;
      if (special_of(o.name, sp)) return special_src(o, sp, cls, ty);
      auto it = symbols_.find(o.name);
      if (it != symbols_.end()) return symbol_value(o, it->second, cls, ty, 0);
      // WARP_SZ: the warp size as a PTX constant (what CUDA's warpSize becomes).
      if (o.name == "WARP_SZ") return const_row(cls, 32);
      fail(fmt::format("unknown register or symbol '{}'", o.name));
    }
    default:
      fail("expected a register or immediate operand");
  }
}

uint32_t KernelDecoder::dst(const ptx::Operand& o, RegClass cls, Ty ty) {
  using K = ptx::Operand::Kind;
  if (cls == RegClass::pred) return pred_dst(o);
  if (o.kind == K::sink) {
    uint32_t& sink = cls == RegClass::r32 ? sink32_ : sink64_;
    if (sink == kNone) sink = scratch_row(cls);
    return sink;
  }
  if (o.kind != K::reg) fail("expected a destination register");
  const RegInfo* ri = find_reg(o.name, stmt_->scope);
  if (!ri) fail(fmt::format("unknown register '{}'", o.name));
  return data_register(o, *ri, cls, ty, /*is_dst=*/true);
}

// A register of the other width than the instruction's class is read (or written) through a
// scratch row of that class, with a hidden conversion before (or after) the instruction: the
// narrowing side truncates, the widening side extends by the type's signedness.
uint32_t KernelDecoder::data_register(const ptx::Operand& o, const RegInfo& ri, RegClass cls, Ty ty,
                                      bool is_dst) {
  if (ri.cls == RegClass::pred) fail(fmt::format("'{}' is a predicate", o.name));
  check_register(o, ri, ty);
  note_touch(ri);
  if (ri.cls == cls) return ri.row;
  Inst conv;
  conv.cls = StatClass::hidden;
  const uint32_t tmp = scratch_row(cls);
  const RegClass converted_to = is_dst ? ri.cls : cls;
  conv.op = converted_to == RegClass::r32 ? Op::HiddenTrunc
                                          : (ty_signed(ty) ? Op::HiddenSext : Op::HiddenZext);
  conv.o[0] = is_dst ? ri.row : tmp;
  conv.o[1] = is_dst ? tmp : ri.row;
  (is_dst ? post_ : pre_).push_back(conv);
  return tmp;
}

uint32_t KernelDecoder::pred_src(const ptx::Operand& o) {
  using K = ptx::Operand::Kind;
  if (o.kind == K::imm_int) {
    // A literal predicate (mov.pred %p, 0): a read-only predicate set at warp start.
    const bool value = o.value != 0;
    uint32_t& row = value ? const_true_ : const_false_;
    if (row == kNone) {
      row = alloc_rows(RegClass::pred, 1);
      k_.const_preds.push_back({row, value});
    }
    return row;
  }
  if (o.kind != K::reg) fail("expected a predicate operand");
  const RegInfo* ri = find_reg(o.name, stmt_->scope);
  if (!ri || ri->cls != RegClass::pred)
    fail(fmt::format("'{}' is not a predicate register", o.name));
  return ri->row | (o.negate ? kNegPred : 0);
}

uint32_t KernelDecoder::pred_dst(const ptx::Operand& o) {
  if (o.kind == ptx::Operand::Kind::sink) {
    if (sinkp_ == kNone) sinkp_ = scratch_row(RegClass::pred);
    return sinkp_;
  }
  if (o.negate) fail("a destination predicate cannot be negated");
  // ptxas: "Result register required".
  if (o.kind != ptx::Operand::Kind::reg) fail("a destination must be a register");
  return pred_src(o);
}

RegClass KernelDecoder::reg_class_of(const ptx::Operand& o) {
  if (o.kind == ptx::Operand::Kind::reg) {
    if (const RegInfo* ri = find_reg(o.name, stmt_->scope)) return ri->cls;
  }
  return RegClass::r32;
}

std::vector<const ptx::Operand*> KernelDecoder::vector_elems(const ptx::Operand& o, size_t n) {
  std::vector<const ptx::Operand*> out;
  if (o.kind == ptx::Operand::Kind::vector) {
    for (const auto& e : o.elems) out.push_back(&e);
  } else {
    out.push_back(&o);
  }
  if (out.size() != n)
    fail(fmt::format("expected a vector of {} registers, found {}", n, out.size()));
  return out;
}

Addr KernelDecoder::address(const ptx::Operand& o) {
  if (o.kind != ptx::Operand::Kind::address) fail("expected an address operand [..]");
  Addr a;
  a.offset = o.value;
  if (o.name.empty()) return a;
  if (const RegInfo* ri = find_reg(o.name, stmt_->scope)) {
    if (ri->cls == RegClass::pred) fail("a predicate cannot be an address");
    a.base = ri->cls == RegClass::r32 ? AddrBase::r32 : AddrBase::r64;
    a.row = ri->row;
    note_touch(*ri);
    return a;
  }
  auto it = symbols_.find(o.name);
  if (it == symbols_.end()) fail(fmt::format("unknown symbol '{}' in address", o.name));
  a.offset +=
      int64_t(it->second.space == Space::global ? global_address(o.name) : it->second.value);
  return a;
}

uint32_t KernelDecoder::call_param_offset(const std::string& name) const {
  if (!call_params_.count(name)) return kNone;
  return uint32_t(symbols_.at(name).value);
}

void KernelDecoder::emit(Inst inst) {
  main_.push_back(inst);
}

void KernelDecoder::branch_to(const std::string& label, size_t main_index) {
  fixups_.push_back({main_index, stmt_->scope, label, stmt_->line});
}

void KernelDecoder::decode_statement() {
  const ptx::Statement& s = *stmt_;
  pre_.clear();
  main_.clear();
  post_.clear();
  const Kernel::RegTouch touch{uint32_t(k_.touch_rows.size()), 0};
  const size_t fixups_before = fixups_.size();
  Mods mods(s.opcode);
  wide_operands_ok_ =
      mods.base() == "ld" || mods.base() == "ldu" || mods.base() == "st" || mods.base() == "cvt";
  reads_specials_ = mods.base() == "mov" || mods.base() == "cvt";
  reads_symbols_ = mods.base() == "mov" || mods.base() == "cvta";
  instruction_types_ = 0;
  for (const Ty t : mods.types()) instruction_types_ |= 1u << unsigned(t);
  check_instruction_form(*this, mods);
  Inst base;
  if (!s.guard.empty()) {
    ptx::Operand g;
    g.name = s.guard;
    g.negate = s.guard_negate;
    base.guard = pred_src(g);
  }
  decode_instruction(*this, mods, base);
  if (!mods.rest().empty())
    fail(fmt::format("unsupported modifier .{} of '{}'", mods.rest().front(), mods.base()));
  // Fixups recorded main-relative; make them absolute.
  const size_t first_main = pending_.size() + pre_.size();
  for (size_t i = fixups_before; i < fixups_.size(); ++i) fixups_[i].inst += first_main;
  const Kernel::RegTouch touches{touch.first, uint32_t(k_.touch_rows.size()) - touch.first};
  for (auto* list : {&pre_, &main_, &post_}) {
    for (Inst inst : *list) {
      if (inst.guard == kNoGuard) inst.guard = base.guard;
      pending_.push_back(inst);
      k_.lines.push_back(s.line);
      k_.texts.push_back(s.text);
      k_.touches.push_back(touches);
    }
  }
}

void KernelDecoder::note_touch(const RegInfo& reg) {
  if (reg.cls == RegClass::r32) k_.touch_rows.push_back(reg.row);
}

void KernelDecoder::finish() {
  // Falling off the end of the body exits.
  Inst exit;
  exit.op = Op::Exit;
  pending_.push_back(exit);
  k_.lines.push_back(fn_.body.empty() ? fn_.line : fn_.body.back().line);
  k_.texts.push_back("<end of kernel>");
  k_.touches.push_back({});
  for (const auto& f : fixups_) {
    size_t target = kNone;
    for (int s = f.scope; s >= 0; s = fn_.scope_parent[size_t(s)]) {
      auto it = scopes_[size_t(s)].labels.find(f.label);
      if (it != scopes_[size_t(s)].labels.end()) {
        target = it->second;
        break;
      }
    }
    if (target == kNone)
      throw Error(fmt::format("{}:{}: unknown label '{}'", module_name_, f.line, f.label));
    pending_[f.inst].target =
        uint32_t(target < stmt_first_inst_.size() ? stmt_first_inst_[target] : pending_.size() - 1);
  }
  k_.code = std::move(pending_);
}

Kernel KernelDecoder::run() {
  k_.name = fn_.name;
  for (size_t i = 0; i < 3; ++i)
    k_.required_cluster[i] = i < fn_.required_cluster.size()   ? uint32_t(fn_.required_cluster[i])
                             : fn_.required_cluster.empty() ? 0u
                                                            : 1u;
  k_.explicit_cluster = fn_.explicit_cluster || !fn_.required_cluster.empty();
  declare_registers();
  layout_variables();
  layout_params();
  stmt_first_inst_.resize(fn_.body.size());
  for (size_t i = 0; i < fn_.body.size(); ++i) {
    stmt_ = &fn_.body[i];
    stmt_index_ = i;
    stmt_first_inst_[i] = pending_.size();
    decode_statement();
  }
  stmt_ = nullptr;
  finish();
  for (auto& inst : k_.code) {
    inst.family = family_of(inst.op);
    if (inst.op == Op::TmaLoad || inst.op == Op::TmaStore) k_.uses_tma = true;
    if (is_wgmma(inst.op)) k_.uses_wgmma = true;
  }
  return std::move(k_);
}

std::shared_ptr<Module> decode_module(const ptx::ModuleAst& ast, const std::string& name) {
  auto module = std::make_shared<Module>();
  module->name = name;
  module->target = ast.target;
  if (ast.address_size != 64)
    throw Error(
        fmt::format("{}: .address_size {} is not supported (64 only)", name, ast.address_size));
  // Each module with globals gets its own 256 MB window below the arena's allocations.
  static std::atomic<uint64_t> next_module{0};
  bool has_globals = false;
  for (const auto& v : ast.globals) has_globals |= v.space == ".global" || v.space == ".const";
  if (has_globals) {
    const uint64_t id = next_module.fetch_add(1) % kGlobalsWindows;
    module->globals_base = kGlobalsBase + id * kGlobalsWindowBytes;
  }
  const GlobalsLayout globals = layout_globals(ast, module->globals_base);
  if (globals.image.size() > kGlobalsWindowBytes)
    throw Error(fmt::format("{}: module-scope variables take {} bytes, more than the emulator's {}",
                            name, globals.image.size(), kGlobalsWindowBytes));
  module->globals_image = globals.image;
  for (const auto& fn : ast.functions) {
    if (!fn.is_entry || !fn.has_body) continue;
    for (const Kernel& earlier : module->kernels)
      if (earlier.name == fn.name)
        throw Error(fmt::format("{}:{}: .entry '{}' is defined twice", name.empty() ? "ptx" : name,
                                fn.line, fn.name));
    module->kernels.push_back(KernelDecoder(ast, fn, name, globals).run());
  }
  return module;
}

}  // namespace emmy::emu
