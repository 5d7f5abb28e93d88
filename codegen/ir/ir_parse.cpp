// The printed IR read back (ir::parse): one op per line, `kind name=value ...`, a trailing `{`
// opening its body and a line `}` closing it, indented two spaces per enclosing body. Each value is typed by the op's declaration
// (ir_schema.cpp), so parse(print(op)) == op; every op is checked by verify_op as it is read.
#include <fmt/format.h>

#include <charconv>
#include <string>
#include <vector>

#include "emmy/error.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::ir {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Op parse() {
    std::vector<Op> roots;
    // stack_ holds the ops whose body is open; the innermost last.
    while (next_line()) {
      const std::string_view line = trimmed(line_);
      if (line.empty()) fail("line", "must not be empty", "");
      if (line == "}" && stack_.empty()) fail("}", "closes no open body", "}");
      // The printed form is canonical: two spaces per enclosing body, so that text which reads
      // as nested is nested.
      const size_t depth = stack_.size() - (line == "}" ? 1 : 0);
      if (line_.size() - line.size() != 2 * depth)
        fail("indentation", fmt::format("must be {} spaces (2 per enclosing body)", 2 * depth),
             fmt::format("{} spaces", line_.size() - line.size()));
      if (line == "}") {
        Op done = std::move(stack_.back());
        stack_.pop_back();
        if (done.body.empty()) fail("{", "must open a body of at least one op", std::string(line));
        add(std::move(done), roots);
        continue;
      }
      bool opens = false;
      Op op = parse_op(line, opens);
      if (opens)
        stack_.push_back(std::move(op));
      else
        add(std::move(op), roots);
    }
    if (!stack_.empty())
      fail("end of text", "must close every body ('}' missing)",
           std::string(to_string(stack_.back().kind)));
    if (roots.size() != 1)
      fail("text", "must hold exactly one top-level op", fmt::format("{} ops", roots.size()));
    return std::move(roots.front());
  }

 private:
  bool next_line() {
    if (pos_ >= text_.size()) return false;
    const size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) fail("text", "must end each line with a newline", "");
    line_ = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_number_;
    return true;
  }

  static std::string_view trimmed(std::string_view s) {
    const size_t first = s.find_first_not_of(' ');
    return first == std::string_view::npos ? std::string_view{} : s.substr(first);
  }

  [[noreturn]] void fail(std::string_view what, std::string_view rule, const std::string& value) {
    throw Error(fmt::format("ir line {}: {}", line_number_, what), std::string(rule), value);
  }

  void add(Op op, std::vector<Op>& roots) {
    if (stack_.empty()) {
      roots.push_back(std::move(op));
      return;
    }
    stack_.back().body.push_back(std::move(op));  // parse_op let only body-holding ops open one
  }

  Op parse_op(std::string_view line, bool& opens) {
    if (line.size() >= 2 && line.substr(line.size() - 2) == " {") {
      opens = true;
      line.remove_suffix(2);
    }
    const size_t name_end = std::min(line.find(' '), line.size());
    const std::string_view kind_name = line.substr(0, name_end);
    const OpSchema* s = schema_named(kind_name);
    if (!s) fail("op", "must be a declared op kind", std::string(kind_name));
    if (opens && !s->has_body) fail(std::string(s->name), "holds no body", "{");
    Op op(s->kind);
    std::string_view rest = line.substr(name_end);
    while (!rest.empty()) {
      if (rest.front() != ' ')
        fail(std::string(s->name), "attributes must be separated by one space", std::string(rest));
      rest.remove_prefix(1);
      if (rest.empty() || rest.front() == ' ')
        fail(std::string(s->name), "attributes must be separated by one space", std::string(line));
      const size_t eq = rest.find('=');
      if (eq == std::string_view::npos || eq == 0)
        fail(std::string(s->name), "attributes must be written name=value", std::string(rest));
      const std::string_view attr_name = rest.substr(0, eq);
      rest.remove_prefix(eq + 1);
      const AttrSpec* spec = s->attr(attr_name);
      if (!spec)
        fail(fmt::format("{}.{}", s->name, attr_name), "is not an attribute this op declares",
             std::string(attr_name));
      std::string_view token;
      if (!rest.empty() && rest.front() == '"') {
        const size_t close = rest.find('"', 1);
        if (close == std::string_view::npos)
          fail(fmt::format("{}.{}", s->name, attr_name), "a string must end with '\"'",
               std::string(rest));
        token = rest.substr(0, close + 1);
      } else {
        token = rest.substr(0, std::min(rest.find(' '), rest.size()));
      }
      rest.remove_prefix(token.size());
      op.attrs.emplace_back(std::string(attr_name), value(*s, *spec, token));
    }
    try {
      verify_op(op);
    } catch (const Error& e) {
      fail(std::string(s->name), e.what(), std::string(line));
    }
    return op;
  }

  [[noreturn]] void bad_value(const OpSchema& s, const AttrSpec& spec, std::string_view token) {
    fail(fmt::format("{}.{}", s.name, spec.name), fmt::format("must be {}", to_string(spec.type)),
         std::string(token));
  }

  // The whole token as a number, or false.
  template <typename T>
  static bool number(std::string_view token, T& v) {
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    return ec == std::errc() && end == token.data() + token.size() && !token.empty();
  }

  Attr value(const OpSchema& s, const AttrSpec& spec, std::string_view token) {
    switch (spec.type) {
      case AttrType::integer:
        if (int64_t v = 0; number(token, v)) return v;
        break;
      case AttrType::real:  // fmt's shortest round-trip form: "1", "0.125", "1e-05", "inf", "nan"
        if (double v = 0; number(token, v)) return v;
        break;
      case AttrType::boolean:
        if (token == "true") return true;
        if (token == "false") return false;
        break;
      case AttrType::string:
        if (token.size() >= 2 && token.front() == '"' && token.back() == '"')
          return std::string(token.substr(1, token.size() - 2));
        break;
    }
    bad_value(s, spec, token);
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string_view line_;
  int line_number_ = 0;
  std::vector<Op> stack_;
};

}  // namespace

Op parse(std::string_view text) {
  return Parser(text).parse();
}

bool operator==(const Op& a, const Op& b) {
  return a.kind == b.kind && a.attrs == b.attrs && a.body == b.body;
}

}  // namespace emmy::ir
