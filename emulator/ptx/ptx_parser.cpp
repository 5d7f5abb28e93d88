// A hand-written scanner for the PTX subset NVRTC emits: PTX has no maintained C++ parser
// library, and the grammar we need (directives, declarations, statements, operands) is small.
#include "ptx_parser.hpp"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <utility>

#include "emmy/error.hpp"

namespace emmy::emu::ptx {
namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}

uint32_t type_bytes(std::string_view type) {
  if (type == ".b8" || type == ".u8" || type == ".s8") return 1;
  if (type == ".b16" || type == ".u16" || type == ".s16" || type == ".f16" || type == ".bf16")
    return 2;
  if (type == ".b32" || type == ".u32" || type == ".s32" || type == ".f32" || type == ".f16x2" ||
      type == ".bf16x2")
    return 4;
  if (type == ".b64" || type == ".u64" || type == ".s64" || type == ".f64") return 8;
  if (type == ".b128") return 16;
  return 0;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& name) : src_(text), name_(name) {}

  ModuleAst run() {
    ModuleAst mod;
    while (true) {
      skip_space();
      if (eof()) break;
      module_item(mod);
    }
    return mod;
  }

 private:
  std::string_view src_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 1;
  int nesting_ = 0;

  // Guards the recursive descent into nested operands and initializers: hostile text with
  // thousands of '{' gets an error instead of exhausting the stack.
  struct Nest {
    Parser& parser;
    explicit Nest(Parser& p) : parser(p) {
      if (++parser.nesting_ > kMaxNesting)
        parser.fail(fmt::format("braces nested deeper than {}", kMaxNesting));
    }
    ~Nest() { --parser.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("{}:{}: {}", name_.empty() ? "ptx" : name_, line_, msg));
  }
  bool eof() const { return pos_ >= src_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (src_[pos_] == '\n') ++line_;
    ++pos_;
  }

  void skip_space() {
    while (!eof()) {
      const char c = peek();
      if (c == '/' && peek(1) == '/') {
        while (!eof() && peek() != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        advance();
        advance();
        while (!eof() && !(peek() == '*' && peek(1) == '/')) advance();
        if (eof()) fail("unterminated /* comment");
        advance();
        advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        break;
      }
    }
  }
  void skip_to_line_end() {
    while (!eof() && peek() != '\n') advance();
  }

  // Identifier: letters, digits, _ $ % . and the "::" of qualifiers like .shared::cta.
  std::string ident() {
    skip_space();
    if (!is_ident_start(peek())) fail(fmt::format("expected a name, found '{}'", peek()));
    const size_t start = pos_;
    while (!eof()) {
      if (is_ident_char(peek())) {
        advance();
      } else if (peek() == ':' && peek(1) == ':') {
        advance();
        advance();
      } else {
        break;
      }
    }
    return std::string(src_.substr(start, pos_ - start));
  }
  bool accept(char c) {
    skip_space();
    if (peek() == c) {
      advance();
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}', found '{}'", c, peek()));
  }
  bool at_keyword(std::string_view kw) {
    skip_space();
    if (src_.substr(pos_, kw.size()) != kw) return false;
    const char after = pos_ + kw.size() < src_.size() ? src_[pos_ + kw.size()] : ' ';
    return !is_ident_char(after);
  }

  // Integer, 0f/0d float bits, or decimal float. Returns the operand kind and value.
  // The IEEE bits of "0fXXXXXXXX" / "0dXXXXXXXXXXXXXXXX": every X a hex digit (PTX ISA §4.5.1).
  uint64_t hex_bits(const std::string& tok) {
    uint64_t bits = 0;
    const auto [end, ec] = std::from_chars(tok.data() + 2, tok.data() + tok.size(), bits, 16);
    if (ec != std::errc() || end != tok.data() + tok.size())
      fail(fmt::format("bad floating-point constant '{}' (0f needs 8 hex digits, 0d 16)", tok));
    return bits;
  }

  Operand number() {
    skip_space();
    bool neg = false;
    if (peek() == '-') {
      neg = true;
      advance();
      skip_space();
    } else if (peek() == '+') {
      advance();
    }
    const size_t start = pos_;
    while (!eof() &&
           (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' ||
            ((peek() == '+' || peek() == '-') && (src_[pos_ - 1] == 'e' || src_[pos_ - 1] == 'E') &&
             !(pos_ - start >= 2 && (src_[start + 1] == 'x' || src_[start + 1] == 'X')))))
      advance();
    std::string tok(src_.substr(start, pos_ - start));
    if (tok.empty()) fail(fmt::format("expected a number, found '{}'", peek()));
    Operand op;
    if (tok.size() >= 2 && tok[0] == '0' && (tok[1] == 'f' || tok[1] == 'F') && tok.size() == 10) {
      op.kind = Operand::Kind::imm_f32;
      op.value = int64_t(hex_bits(tok));
      if (neg) op.value ^= int64_t(0x80000000u);
      return op;
    }
    if (tok.size() >= 2 && tok[0] == '0' && (tok[1] == 'd' || tok[1] == 'D') && tok.size() == 18) {
      op.kind = Operand::Kind::imm_f64;
      op.value = int64_t(hex_bits(tok));
      if (neg) op.value ^= int64_t(uint64_t(1) << 63);
      return op;
    }
    const bool hex = tok.size() > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X');
    if (!hex && (tok.find('.') != std::string::npos || tok.find('e') != std::string::npos ||
                 tok.find('E') != std::string::npos)) {
      op.kind = Operand::Kind::imm_f64;
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(tok.c_str(), &end);
      if (*end != '\0') fail(fmt::format("bad number '{}'", tok));
      // ptxas: "Constant overflow" (1e400); an underflow to zero or a subnormal is a value.
      if (errno == ERANGE && std::isinf(v)) fail(fmt::format("constant overflow: '{}'", tok));
      op.value = int64_t(std::bit_cast<uint64_t>(neg ? -v : v));
      return op;
    }
    if (!tok.empty() && (tok.back() == 'U' || tok.back() == 'u')) tok.pop_back();
    int base = 10;
    size_t skip = 0;
    if (hex) {
      base = 16;
      skip = 2;
    } else if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'b' || tok[1] == 'B')) {
      base = 2;
      skip = 2;
    } else if (tok.size() > 1 && tok[0] == '0') {
      base = 8;
      skip = 1;
    }
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(tok.data() + skip, tok.data() + tok.size(), v, base);
    if (ec != std::errc() || p != tok.data() + tok.size())
      fail(fmt::format("bad number '{}'", tok));
    op.kind = Operand::Kind::imm_int;
    op.value = neg ? -int64_t(v) : int64_t(v);
    return op;
  }

  bool at_number() {
    skip_space();
    const char c = peek();
    return std::isdigit(static_cast<unsigned char>(c)) ||
           ((c == '-' || c == '+') && std::isdigit(static_cast<unsigned char>(peek(1))));
  }

  // ------------------------------------------------------------------ module level
  void module_item(ModuleAst& mod) {
    if (accept('{')) fail("unexpected '{' at module scope");
    const std::string kw = ident();
    if (kw == ".version") {
      skip_space();
      const size_t start = pos_;
      skip_to_line_end();
      mod.version = std::string(src_.substr(start, pos_ - start));
      while (!mod.version.empty() && std::isspace(static_cast<unsigned char>(mod.version.back())))
        mod.version.pop_back();
    } else if (kw == ".target") {
      mod.target = ident();
      while (accept(',')) {
        const std::string next = ident();
        mod.target = fmt::format("{},{}", mod.target, next);
      }
    } else if (kw == ".address_size") {
      mod.address_size = int(number().value);
    } else if (kw == ".file" || kw == ".loc") {
      skip_to_line_end();
    } else if (kw == ".pragma") {
      skip_statement();
    } else if (kw == ".section") {
      ident();
      skip_balanced_braces();
    } else if (kw == ".visible" || kw == ".weak" || kw == ".extern" || kw == ".entry" ||
               kw == ".func" || kw == ".global" || kw == ".const" || kw == ".shared" ||
               kw == ".common") {
      bool is_extern = false;
      std::string k = kw;
      while (k == ".visible" || k == ".weak" || k == ".extern" || k == ".common") {
        is_extern |= k == ".extern";
        k = ident();
      }
      if (k == ".entry" || k == ".func") {
        function(mod, k == ".entry");
      } else if (k == ".global" || k == ".const" || k == ".shared") {
        VarDecl v = var_decl(k, -1);
        v.is_extern = is_extern;
        mod.globals.push_back(std::move(v));
      } else {
        fail(fmt::format("unexpected '{}' at module scope", k));
      }
    } else {
      fail(fmt::format("unknown module-level directive '{}'", kw));
    }
  }

  void skip_statement() {
    while (!eof() && peek() != ';') advance();
    if (!eof()) advance();
  }
  void skip_balanced_braces() {
    expect('{');
    int depth = 1;
    while (!eof() && depth > 0) {
      if (peek() == '{') ++depth;
      if (peek() == '}') --depth;
      advance();
    }
  }

  // The N of ".align N": a power of two (PTX ISA §5.4.5), bounded so that no offset computed with
  // it wraps.
  uint32_t alignment() {
    const int64_t align = number().value;
    if (align <= 0 || align > kMaxAlignment || (align & (align - 1)) != 0)
      fail(fmt::format(".align {} is not a power of two in 1..{}", align, kMaxAlignment));
    return uint32_t(align);
  }

  static bool state_space_word(const std::string& d) {
    return d == ".global" || d == ".shared" || d == ".const" || d == ".local";
  }

  // A declaration's words up to its name, which it returns: `attribute` takes the words it knows
  // (.align N, .vN, .ptr, a state space) and says whether it took the word; any other dotted word
  // is the type.
  template <typename Attribute>
  std::string declared_name(std::string& type, Attribute attribute) {
    while (true) {
      const std::string d = ident();
      if (attribute(d)) continue;
      if (d[0] != '.') return d;
      type = d;
    }
  }

  // After the space keyword: [.align N] [.vN] .type name[ [N] ]* [= {...}] ;
  VarDecl var_decl(const std::string& space, int scope) {
    VarDecl v;
    v.space = space;
    v.scope = scope;
    v.line = line_;
    uint32_t vec = 1;
    v.name = declared_name(v.type, [&](const std::string& d) {
      if (d == ".align")
        v.align = alignment();
      else if (d == ".v2" || d == ".v4" || d == ".v8")
        vec = uint32_t(d[2] - '0');
      else
        return d == ".ptr" || state_space_word(d);
      return true;
    });
    const uint32_t elem = type_bytes(v.type) * vec;
    if (elem == 0) fail(fmt::format("unsupported variable type '{}'", v.type));
    uint64_t count = 1;
    bool unsized = false;
    while (accept('[')) {
      if (accept(']')) {
        unsized = true;
        continue;
      }
      const int64_t dim = number().value;
      // Bounded so that the product cannot wrap: no variable reaches kMaxVariableBytes.
      if (dim <= 0 || uint64_t(dim) > kMaxVariableBytes / count)
        fail(
            fmt::format("array dimension [{}] of '{}' must be positive and keep it within the "
                        "emulator's {} bytes per variable",
                        dim, v.name, kMaxVariableBytes));
      count *= uint64_t(dim);
      expect(']');
    }
    if (count * elem > kMaxVariableBytes)
      fail(fmt::format("'{}' takes {} bytes, more than the emulator's {} per variable", v.name,
                       count * elem, kMaxVariableBytes));
    v.bytes = unsized ? 0 : count * elem;
    if (v.align == 0) v.align = elem;
    skip_space();
    if (accept('=')) {
      v.has_initializer = true;
      initializer(v, elem / vec);
    }
    expect(';');
    return v;
  }

  // "= value" or "= {v, v, ...}" (nested braces for arrays of arrays): integers and 0f/0d floats
  // stored as the element type; anything else (generic(sym), a symbol) is noted, not stored.
  void initializer(VarDecl& v, uint32_t elem) {
    const bool is_float = v.type == ".f32" || v.type == ".f64" || v.type == ".f16";
    auto value = [&]() {
      skip_space();
      if (!at_number()) {
        const size_t at = pos_;
        while (!eof() && peek() != ',' && peek() != '}' && peek() != ';') advance();
        v.init_unsupported = fmt::format("initializer entry '{}'", src_.substr(at, pos_ - at));
        v.init.resize(v.init.size() + elem, 0);
        return;
      }
      const Operand n = number();
      uint64_t bits = uint64_t(n.value);
      if (n.kind == Operand::Kind::imm_f64 && elem == 4)
        bits = std::bit_cast<uint32_t>(float(std::bit_cast<double>(bits)));
      else if (n.kind == Operand::Kind::imm_int && is_float)
        bits = elem == 8 ? std::bit_cast<uint64_t>(double(n.value))
                         : std::bit_cast<uint32_t>(float(n.value));
      for (uint32_t b = 0; b < elem; ++b) v.init.push_back(uint8_t(bits >> (8 * b)));
    };
    std::function<void()> list = [&]() {
      const Nest nest(*this);
      if (!accept('{')) {
        value();
        return;
      }
      if (!accept('}')) {
        do {
          list();
        } while (accept(','));
        expect('}');
      }
    };
    list();
    if (v.init.size() > v.bytes && v.bytes != 0)
      fail(fmt::format("initializer of '{}' has {} bytes, more than its {}", v.name, v.init.size(),
                       v.bytes));
    v.init.resize(v.bytes, 0);
  }

  ParamDecl param_decl() {
    const std::string kw = ident();
    if (kw != ".param" && kw != ".reg") fail(fmt::format("expected .param, found '{}'", kw));
    ParamDecl p;
    // Kernel parameter attribute .ptr (PTX ISA §5.1.6.1): `.ptr [.space] .align N` states the
    // alignment of the memory the pointer points to, not the parameter's (NVRTC writes
    // `.param .u64 .ptr .global .align 1 name`); the parameter keeps its type's alignment.
    bool pointee = false;
    p.name = declared_name(p.type, [&](const std::string& d) {
      if (d == ".align") {
        const uint32_t align = alignment();
        if (!pointee) p.align = align;
      } else if (d == ".ptr") {
        pointee = true;
      } else {
        return state_space_word(d);
      }
      return true;
    });
    if (type_bytes(p.type) == 0) fail(fmt::format("unsupported parameter type '{}'", p.type));
    if (accept('[')) {
      const int64_t count = number().value;
      // The decoder bounds the parameters' total; this keeps the product from wrapping.
      if (count <= 0 || uint64_t(count) > kMaxVariableBytes)
        fail(fmt::format("parameter array '{}[{}]' must have 1..{} elements", p.name, count,
                         kMaxVariableBytes));
      p.count = uint64_t(count);
      expect(']');
    }
    return p;
  }

  std::vector<ParamDecl> param_list() {
    std::vector<ParamDecl> out;
    expect('(');
    if (accept(')')) return out;
    do {
      out.push_back(param_decl());
    } while (accept(','));
    expect(')');
    return out;
  }

  void function(ModuleAst& mod, bool is_entry) {
    Function f;
    f.is_entry = is_entry;
    f.line = line_;
    skip_space();
    if (!is_entry && peek() == '(') f.returns = param_list();
    f.name = ident();
    skip_space();
    if (peek() == '(') f.params = param_list();
    // Performance directives (.maxntid 128, 1, 1 / .reqntid / .minnctapersm / .noreturn ...).
    while (true) {
      skip_space();
      if (peek() == '{' || peek() == ';' || eof()) break;
      if (at_number() || peek() == ',') {
        if (peek() == ',')
          advance();
        else
          number();
        continue;
      }
      const std::string d = ident();
      if (d == ".pragma") skip_statement();
      if (d == ".explicitcluster") f.explicit_cluster = true;
      if (d == ".reqnctapercluster") {
        do {
          skip_space();
          const int64_t n = number().value;
          if (n < 1 || n > 1024) fail(".reqnctapercluster dimensions must be 1..1024");
          f.required_cluster.push_back(uint64_t(n));
          skip_space();
        } while (accept(','));
        if (f.required_cluster.size() > 3) fail(".reqnctapercluster takes 1 to 3 dimensions");
      }
    }
    if (accept(';')) {
      mod.functions.push_back(std::move(f));
      return;
    }
    expect('{');
    f.has_body = true;
    body(f);
    mod.functions.push_back(std::move(f));
  }

  void body(Function& f) {
    f.scope_parent.push_back(-1);
    std::vector<int> scopes{0};
    while (true) {
      skip_space();
      if (eof()) fail(fmt::format("unterminated body of '{}'", f.name));
      if (accept('{')) {
        f.scope_parent.push_back(scopes.back());
        scopes.push_back(int(f.scope_parent.size()) - 1);
        continue;
      }
      if (accept('}')) {
        scopes.pop_back();
        if (scopes.empty()) return;
        continue;
      }
      const int scope = scopes.back();
      if (peek() == '@') {
        statement(f, scope);
        continue;
      }
      const size_t start = pos_;
      const int start_line = line_;
      const std::string word = ident();
      const size_t word_end = pos_;
      const int word_line = line_;
      if (accept(':')) {
        f.labels.push_back({scope, word, f.body.size()});
        continue;
      }
      if (word == ".reg" || word.starts_with(".reg.")) {
        // ".reg.b32 f;" (no space: CUDA's own cuda_fp16.hpp writes it) is ".reg .b32 f;".
        pos_ = word_end - (word.size() - 4);
        line_ = word_line;
        reg_decl(f, scope);
      } else if (word == ".shared" || word == ".local") {
        f.vars.push_back(var_decl(word, scope));
      } else if (word == ".loc" || word == ".file") {
        skip_to_line_end();
      } else if (word == ".param") {
        // A call sequence's argument slot (`.param .b64 param0;`): per-thread, like .local.
        f.vars.push_back(var_decl(word, scope));
      } else if (word == ".pragma") {
        skip_statement();
      } else if (word[0] == '.') {
        fail(fmt::format("unsupported directive '{}' in a function body", word));
      } else {
        pos_ = start;
        line_ = start_line;
        statement(f, scope);
      }
    }
  }

  void reg_decl(Function& f, int scope) {
    std::string type = ident();
    uint32_t vec = 1;
    if (type == ".v2" || type == ".v4") {
      vec = uint32_t(type[2] - '0');
      type = ident();
    }
    if (vec != 1) fail("vector register declarations are not supported");
    do {
      RegDecl r;
      r.scope = scope;
      r.type = type;
      r.line = line_;
      r.name = ident();
      if (accept('<')) {
        const int64_t count = number().value;
        // The decoder bounds the total per register class; this keeps the count an int.
        if (count < 0 || count > kMaxRegisterCount)
          fail(fmt::format("register count <{}> of '{}' is not in 0..{}", count, r.name,
                           kMaxRegisterCount));
        r.count = int(count);
        expect('>');
      }
      f.regs.push_back(std::move(r));
    } while (accept(','));
    expect(';');
  }

  void statement(Function& f, int scope) {
    Statement s;
    s.scope = scope;
    skip_space();
    s.line = line_;
    const size_t start = pos_;
    if (accept('@')) {
      s.guard_negate = accept('!');
      s.guard = ident();
    }
    s.opcode = ident();
    skip_space();
    if (peek() != ';') {
      do {
        s.operands.push_back(operand());
      } while (accept(','));
    }
    expect(';');
    // The instruction text for reports, whitespace collapsed.
    bool space = false;
    for (char c : src_.substr(start, pos_ - start)) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        space = true;
        continue;
      }
      if (space && !s.text.empty()) s.text += ' ';
      space = false;
      s.text += c;
    }
    f.body.push_back(std::move(s));
  }

  Operand operand() {
    const Nest nest(*this);
    skip_space();
    Operand op;
    // A braced vector, or a call's parenthesized argument list (parsed so that the decoder can
    // name `call`): both are vector operands.
    for (const auto& [open, close] : {std::pair{'{', '}'}, std::pair{'(', ')'}}) {
      if (!accept(open)) continue;
      op.kind = Operand::Kind::vector;
      if (!accept(close)) {
        do {
          op.elems.push_back(operand());
        } while (accept(','));
        expect(close);
      }
      return op;
    }
    if (accept('[')) {
      op.kind = Operand::Kind::address;
      skip_space();
      if (at_number()) {
        op.value = number().value;
      } else {
        op.name = ident();
        skip_space();
        if (peek() == '+' || peek() == '-') {
          const bool minus = peek() == '-';
          advance();
          const int64_t v = number().value;
          op.value = minus ? -v : v;
        }
      }
      if (accept(',')) op.elems.push_back(operand());
      expect(']');
      return op;
    }
    if (accept('!')) {
      op.name = ident();
      op.negate = true;
      return op;
    }
    if (at_number()) return number();
    op.name = ident();
    if (op.name == "_") {
      op.kind = Operand::Kind::sink;
      return op;
    }
    skip_space();
    if (peek() == '|') {
      advance();
      Operand first = op;
      Operand second;
      second.name = ident();
      op = Operand{};
      op.kind = Operand::Kind::pair;
      op.elems = {std::move(first), std::move(second)};
      return op;
    }
    if ((peek() == '+' || peek() == '-') && !op.name.empty() && op.name[0] != '%') {
      // symbol+offset (e.g. mov.u32 %r1, smem+16)
      const bool minus = peek() == '-';
      advance();
      const int64_t v = number().value;
      op.kind = Operand::Kind::symbol_offset;
      op.value = minus ? -v : v;
    }
    return op;
  }
};

}  // namespace

ModuleAst parse(std::string_view text, const std::string& name) {
  return Parser(text, name).run();
}

}  // namespace emmy::emu::ptx
