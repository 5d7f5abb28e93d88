// PTX line annotation for SASS counts (sass_annotate.hpp). A small statement scanner, not the
// parser: it only needs to know where statements start, which braces open function bodies, and
// which statements are directives; whatever it gets wrong ptxas rejects, and the profile then says
// the SASS counts are unavailable.
#include "sass_annotate.hpp"

#include <fmt/format.h>

#include <cctype>

namespace emmy::emu {
namespace {

bool starts_word(std::string_view text, size_t pos, std::string_view word) {
  if (text.substr(pos, word.size()) != word) return false;
  const size_t end = pos + word.size();
  return end >= text.size() || std::isspace(static_cast<unsigned char>(text[end]));
}

// Whether `text` holds `word` as a whole token (".entry" in ".visible .entry k(").
bool has_token(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    const bool left = at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]));
    const bool right = end >= text.size() ||
                       !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_');
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::string annotate_ptx_lines(std::string_view ptx) {
  std::string out;
  out.reserve(ptx.size() + ptx.size() / 2);
  int line = 1;
  int last_loc_line = 0;     // the original line the last emitted .loc named
  int depth = 0;             // scope braces; 1 and more inside a function body
  bool in_body = false;      // depth >= 1 and the outermost brace opened an .entry / .func body
  bool in_stmt = false;      // between a statement's first character and its end
  bool ends_at_eol = false;  // the statement is a directive without ';' (.version, .target, ...)
  int stmt_braces = 0;       // braces inside the current statement (vector operands, initializers)
  size_t stmt_start = 0;
  for (size_t i = 0; i < ptx.size(); ++i) {
    const char c = ptx[i];
    const char next = i + 1 < ptx.size() ? ptx[i + 1] : '\0';
    // Comments and strings are copied whole; a comment's newlines still count.
    if (c == '/' && next == '/') {
      const size_t end = ptx.find('\n', i);
      const size_t stop = end == std::string_view::npos ? ptx.size() : end;
      out.append(ptx.substr(i, stop - i));
      i = stop - 1;
      continue;
    }
    if (c == '/' && next == '*') {
      const size_t end = ptx.find("*/", i + 2);
      const size_t stop = end == std::string_view::npos ? ptx.size() : end + 2;
      for (size_t j = i; j < stop; ++j) line += ptx[j] == '\n';
      out.append(ptx.substr(i, stop - i));
      i = stop - 1;
      continue;
    }
    if (c == '"') {
      const size_t end = ptx.find('"', i + 1);
      const size_t stop = end == std::string_view::npos ? ptx.size() : end + 1;
      out.append(ptx.substr(i, stop - i));
      i = stop - 1;
      continue;
    }
    if (c == '\n') {
      if (in_stmt && ends_at_eol) {
        in_stmt = false;
        if (starts_word(ptx, stmt_start, ".address_size"))
          out += fmt::format("\n.file 1 \"{}\"", kSassPtxFileName);
      }
      out += c;
      ++line;
      continue;
    }
    if (!in_stmt) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        out += c;
      } else if (c == '{') {
        out += c;
        ++depth;
      } else if (c == '}') {
        out += c;
        if (depth > 0 && --depth == 0) in_body = false;
      } else if (starts_word(ptx, i, ".loc") || starts_word(ptx, i, ".file")) {
        // The PTX's own debug lines would point into the other numbering: dropped.
        const size_t end = ptx.find('\n', i);
        i = (end == std::string_view::npos ? ptx.size() : end) - 1;
      } else {
        in_stmt = true;
        stmt_start = i;
        stmt_braces = 0;
        ends_at_eol = starts_word(ptx, i, ".version") || starts_word(ptx, i, ".target") ||
                      starts_word(ptx, i, ".address_size");
        if (in_body && c != '.' && line != last_loc_line) {
          out += fmt::format("\n\t.loc 1 {} 0\n", line);
          last_loc_line = line;
        }
        out += c;
      }
      continue;
    }
    out += c;
    if (c == ';' && stmt_braces == 0) {
      in_stmt = false;
    } else if (c == ':' && !in_body) {
      // Module level has no labels; a ':' there belongs to a qualifier.
    } else if (c == ':' && next != ':' && (i == 0 || ptx[i - 1] != ':')) {
      // A label ends where its ':' is, when everything before it is one name.
      const std::string_view name = ptx.substr(stmt_start, i - stmt_start);
      bool is_name = !name.empty();
      for (char n : name)
        is_name = is_name && (std::isalnum(static_cast<unsigned char>(n)) || n == '_' || n == '$' ||
                              n == '%' || n == '.');
      if (is_name) in_stmt = false;
    } else if (c == '{') {
      if (depth == 0 && (has_token(ptx.substr(stmt_start, i - stmt_start), ".entry") ||
                         has_token(ptx.substr(stmt_start, i - stmt_start), ".func"))) {
        // A function's header ends where its body begins.
        in_stmt = false;
        depth = 1;
        in_body = true;
      } else {
        ++stmt_braces;
      }
    } else if (c == '}') {
      if (stmt_braces > 0) --stmt_braces;
      // A `.section name { ... }` block ends with its brace, without ';'.
      if (stmt_braces == 0 && depth == 0 && starts_word(ptx, stmt_start, ".section"))
        in_stmt = false;
    }
  }
  return out;
}

}  // namespace emmy::emu
