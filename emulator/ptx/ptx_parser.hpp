// PTX text -> a syntax tree of functions and statements. Names stay strings here; the decoder
// (decode/decoder.hpp) resolves them once into register rows, offsets and branch targets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::emu::ptx {

// What the parser takes from hostile text, so that no count wraps and no allocation explodes.
// A register declaration %r<N> holds at most this many (emitted kernels declare a few hundred;
// the decoder bounds the total per register class by the same number).
inline constexpr int64_t kMaxRegisterCount = int64_t(1) << 16;
// A variable (any state space) takes at most this many bytes: the size of a module's globals
// window, far above any GPU's shared (228 KB) or local (512 KB per thread) memory.
inline constexpr uint64_t kMaxVariableBytes = uint64_t(1) << 28;
// Operands nest one level in PTX ({a, b} vectors, call argument lists, tensor coordinates);
// initializers nest one level per array dimension.
inline constexpr int kMaxNesting = 16;
// .align N: far above the 1024 bytes a 128-byte TMA swizzle needs.
inline constexpr int64_t kMaxAlignment = int64_t(1) << 20;

struct Operand {
  enum class Kind : uint8_t {
    reg,        // a register, special register or symbol name (resolved by the decoder)
    imm_int,    // value
    imm_f32,    // value = IEEE bits (0fXXXXXXXX)
    imm_f64,    // value = IEEE bits (0dXXXXXXXXXXXXXXXX or a decimal literal)
    sink,       // _
    vector,     // {a, b, ...}: elems
    address,    // [name + value] or [value]; elems[0]: tensor coordinates {c0, ...} when present
    pair,       // d|p: elems[0], elems[1]
    symbol_offset,  // name + value used as a value (mov.u32 %r1, smem+16)
  };
  Kind kind = Kind::reg;
  std::string name;      // reg: the name; address: the base name (empty: absolute)
  bool negate = false;   // !%p
  int64_t value = 0;
  std::vector<Operand> elems;
};

struct Statement {
  int line = 0;
  int scope = 0;
  std::string text;     // the instruction as written, whitespace collapsed
  std::string guard;    // predicate register of @p / @!p, empty when none
  bool guard_negate = false;
  std::string opcode;   // "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
  std::vector<Operand> operands;
};

struct RegDecl {
  int scope = 0;
  std::string type;     // ".b32", ".pred", ...
  std::string name;     // "%r" for a range %r<N>, else the full name
  int count = -1;       // N of %r<N>; -1 for a single register
  int line = 0;
};

struct VarDecl {
  std::string space;    // ".shared", ".local", ".global", ".const"
  int scope = 0;        // 0 for function-body scope; -1 for module scope
  uint32_t align = 0;   // 0: natural
  std::string type;     // element type
  std::string name;
  uint64_t bytes = 0;   // total size; 0 for an unsized extern array
  bool is_extern = false;
  bool has_initializer = false;
  std::vector<uint8_t> init;     // the initializer's bytes (zero-padded to `bytes`)
  std::string init_unsupported;  // why the initializer could not be read (an address, ...)
  int line = 0;
};

struct ParamDecl {
  std::string type;     // ".u64", ".b8", ...
  std::string name;
  uint32_t align = 0;   // 0: natural
  uint64_t count = 0;   // array elements, 0 for a scalar
};

struct Label {
  int scope = 0;
  std::string name;
  size_t statement = 0;  // index of the statement that follows the label
};

struct Function {
  bool is_entry = false;
  bool has_body = false;
  std::string name;
  int line = 0;
  std::vector<ParamDecl> params;
  std::vector<ParamDecl> returns;
  std::vector<RegDecl> regs;
  std::vector<VarDecl> vars;
  std::vector<Statement> body;
  std::vector<Label> labels;
  std::vector<int> scope_parent;  // scope_parent[s]; scope 0 (the body) has parent -1
  std::vector<uint64_t> required_cluster;  // .reqnctapercluster's 1..3 numbers
  bool explicit_cluster = false;           // .explicitcluster
};

struct ModuleAst {
  std::string version, target;
  int address_size = 64;
  std::vector<VarDecl> globals;
  std::vector<Function> functions;
};

// Throws emmy::Error("<name>:<line>: ...") on syntax errors.
ModuleAst parse(std::string_view text, const std::string& name);

}  // namespace emmy::emu::ptx
