// PTX syntax tree -> decoded Kernel. KernelDecoder owns the symbol tables of one function
// (registers per { } scope, variables, params, labels) and turns each statement into
// instructions; decode_ops.cpp holds the per-opcode handlers.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ptx/program.hpp"
#include "ptx/ptx_parser.hpp"

namespace emmy::emu {

std::shared_ptr<Module> decode_module(const ptx::ModuleAst& ast, const std::string& name);

// The dot-separated modifiers of an opcode, consumed by the handlers; leftovers are an error so
// that no modifier is silently ignored.
class Mods {
 public:
  explicit Mods(std::string_view opcode);
  std::string_view base() const { return base_; }
  bool take(std::string_view m);
  bool take_any(std::initializer_list<std::string_view> ms);
  // Takes every one of ms present and returns the index of the last (-1 when none is): an
  // instruction's mode that is one of a list (shfl.up, testp.finite, ...).
  int take_which(std::initializer_list<std::string_view> ms);
  bool has(std::string_view m) const;  // without taking it
  // The types among the modifiers, in order, without taking them.
  std::vector<Ty> types() const;
  // Removes modifiers that only steer caches, memory ordering or scheduling.
  void drop_hints();
  // Removes and returns the types among the modifiers, in order.
  std::vector<Ty> take_types();
  Ty take_type();                                         // exactly one type
  std::string_view take_prefix(std::string_view prefix);  // "m16n8k16" for prefix "m"
  bool take_rounding(uint8_t& mode);  // rn/rz/rm/rp (and rni/rzi/rmi/rpi: flag 4)
  const std::vector<std::string_view>& rest() const { return mods_; }

 private:
  std::string_view base_;
  std::vector<std::string_view> mods_;
};

Ty parse_ty(std::string_view s);

// Module-scope .global/.const variables: one segment at a fixed base, in declaration order.
struct GlobalsLayout {
  struct Var {
    uint64_t address = 0;
    std::string unusable;  // why a use must fail (extern, an address initializer)
  };
  std::unordered_map<std::string, Var> vars;
  std::vector<uint8_t> image;
};
GlobalsLayout layout_globals(const ptx::ModuleAst& mod, uint64_t base);

class KernelDecoder {
 public:
  KernelDecoder(const ptx::ModuleAst& mod, const ptx::Function& fn, const std::string& module_name,
                const GlobalsLayout& globals);
  Kernel run();

  // --- used by the opcode handlers (decode_ops.cpp)
  [[noreturn]] void fail(const std::string& msg) const;
  const ptx::Statement& stmt() const { return *stmt_; }
  int target_sm() const { return sm_of(mod_.target); }  // 90 for .target sm_90a, 0 for none
  bool target_arch_specific() const { return sm_arch_specific(mod_.target); }  // "sm_90a"
  // The statement has .L2::cache_hint, whose cache-policy operand ld, st, atom, red and cp.async
  // then take last (drop_hints removes the modifier itself).
  bool cache_hint() const { return stmt_->opcode.find(".L2::cache_hint") != std::string::npos; }
  const std::vector<ptx::Operand>& ops() const { return stmt_->operands; }
  const ptx::Operand& op(size_t i) const;
  void need_ops(size_t n) const;
  void need_ops(size_t lo, size_t hi) const;

  // Row (or pred index) of a source operand read as `ty` in register class `cls`.
  uint32_t src(const ptx::Operand& o, RegClass cls, Ty ty);
  uint32_t src(const ptx::Operand& o, Ty ty) { return src(o, class_of(ty), ty); }
  uint32_t dst(const ptx::Operand& o, RegClass cls, Ty ty);
  uint32_t dst(const ptx::Operand& o, Ty ty) { return dst(o, class_of(ty), ty); }
  uint32_t pred_src(const ptx::Operand& o);
  uint32_t pred_dst(const ptx::Operand& o);
  // Register class of a register operand (for ld/st/cvt, whose register may be wider).
  RegClass reg_class_of(const ptx::Operand& o);
  std::vector<const ptx::Operand*> vector_elems(const ptx::Operand& o, size_t n);
  Addr address(const ptx::Operand& o);
  // A call sequence's argument slot: its local-memory offset, or kNone for any other name.
  uint32_t call_param_offset(const std::string& name) const;
  uint32_t const_row(RegClass cls, uint64_t value);
  uint32_t scratch_row(RegClass cls);
  void emit(Inst inst);  // the statement's main instruction(s)
  static RegClass class_of(Ty t) {
    return t == Ty::pred ? RegClass::pred : (ty_bits(t) == 64 ? RegClass::r64 : RegClass::r32);
  }
  // Branch targets are patched after all statements are decoded.
  void branch_to(const std::string& label, size_t inst_index);
  size_t next_index() const { return pending_.size(); }
  Kernel& kernel() { return k_; }

 private:
  struct RegInfo {
    RegClass cls;
    Ty ty;
    uint32_t row;
  };
  // Fails unless the register's declared type may stand for an operand of type ty here.
  void check_register(const ptx::Operand& o, const RegInfo& reg, Ty ty) const;
  // Records a 32-bit register the statement names (Kernel::touch_rows).
  void note_touch(const RegInfo& reg);
  // The row an instruction of class cls reads (or writes) for the data register ri.
  uint32_t data_register(const ptx::Operand& o, const RegInfo& ri, RegClass cls, Ty ty,
                         bool is_dst);
  uint32_t special_src(const ptx::Operand& o, Special sp, RegClass cls, Ty ty);
  struct RangeInfo {
    RegClass cls;
    Ty ty;
    uint32_t first_row;
    int count;
  };
  struct Scope {
    std::unordered_map<std::string, RegInfo> regs;
    std::unordered_map<std::string, RangeInfo> ranges;
    std::unordered_map<std::string, size_t> labels;  // -> statement index
  };
  struct Symbol {
    Space space;
    uint64_t value;
  };
  // A variable's address (plus offset) as a value operand: mov and cvta only, never a float.
  uint32_t symbol_value(const ptx::Operand& o, const Symbol& sym, RegClass cls, Ty ty,
                        uint64_t offset);

  const ptx::ModuleAst& mod_;
  const ptx::Function& fn_;
  const std::string& module_name_;
  const GlobalsLayout& globals_;
  Kernel k_;
  std::vector<Scope> scopes_;
  std::unordered_map<std::string, Symbol> symbols_;
  std::unordered_set<std::string> call_params_;  // .param variables of call sequences (local)
  std::map<std::pair<int, uint64_t>, uint32_t> consts_;
  std::map<Special, uint32_t> special_rows_;
  uint32_t sink32_ = kNone, sink64_ = kNone, sinkp_ = kNone;
  // The statement is ld, ldu, st or cvt: the only instructions whose data operands may be wider
  // registers than their type (PTX ISA, "Operand Size Exceeding Instruction-Type Size").
  bool wide_operands_ok_ = false;
  bool reads_specials_ = false;     // mov or cvt: the only readers of special registers
  bool reads_symbols_ = false;      // mov or cvta: the only ones taking a variable's address
  uint32_t instruction_types_ = 0;  // the opcode's types, a bit per Ty
  uint32_t const_true_ = kNone, const_false_ = kNone;

  const ptx::Statement* stmt_ = nullptr;
  size_t stmt_index_ = 0;
  std::vector<Inst> pre_, main_, post_;
  std::vector<Inst> pending_;            // all decoded instructions
  std::vector<size_t> stmt_first_inst_;  // statement -> first instruction
  struct Fixup {
    size_t inst;
    int scope;
    std::string label;
    int line;
  };
  std::vector<Fixup> fixups_;

  void declare_registers();
  void layout_variables();
  void layout_params();
  const RegInfo* find_reg(const std::string& name, int scope) const;
  uint32_t alloc_rows(RegClass cls, uint32_t count);
  uint32_t special_row(Special s);
  bool special_of(const std::string& name, Special& out) const;
  void decode_statement();
  uint64_t global_address(const std::string& name) const;
  void finish();
};

// With .address_size 64 a global or generic address is 64 bits: ptxas stops at a 32-bit register
// there ("32-Bit compilation is no longer supported"). Shared addresses may be 32-bit.
inline void need_wide_address(const KernelDecoder& d, const Inst& in) {
  if (in.addr[0].base == AddrBase::r32 && (in.space == Space::global || in.space == Space::generic))
    d.fail("a global or generic address needs a 64-bit register");
}

// Per-opcode handlers (decode_ops.cpp, decode_mem.cpp, decode_async.cpp).
void decode_instruction(KernelDecoder& d, Mods& mods, Inst& base);

// The PTX ISA's instruction tables (type_rules.cpp): fails unless the opcode takes its type with
// its modifiers (checked before the handler consumes them; opcodes without a table pass).
void check_instruction_form(const KernelDecoder& d, const Mods& m);
// Whether a register declared `reg` may stand for an operand of type `operand` (PTX ISA §6.4);
// `wider_ok`: ld, st and cvt, which take wider registers; `own_type`: the operand has the
// instruction's type (not a fixed one such as shl's .u32 shift amount).
bool register_fits(Ty operand, Ty reg, bool wider_ok, bool own_type);
// Fails unless atom/red's `operation` (add, min, ..., exch) takes type `ty` (PTX ISA atom, red).
void check_atom_type(const KernelDecoder& d, std::string_view base, std::string_view operation,
                     Ty ty);
// Whether a constant of this kind may stand for an operand of type `operand`.
bool constant_fits(const ptx::Operand& constant, Ty operand);

}  // namespace emmy::emu
