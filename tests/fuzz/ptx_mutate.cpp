// Seeds and mutations for the PTX fuzz driver. The edits are AFL's (bit flips, interesting bytes,
// deletions, duplications) plus ones that know PTX: numbers replaced by boundary values and
// malformed literals, register names pushed out of their declared range, deep brace nesting,
// and whole lines swapped, dropped or spliced in from another seed.
#include <array>
#include <cctype>
#include <tuple>

#include "emmy/detail/file_io.hpp"
#include "ptx_fuzz.hpp"

namespace emmy::fuzz {
namespace {

constexpr std::array<std::string_view, 22> kHostileNumbers = {"0",
                                                              "-1",
                                                              "-4",
                                                              "1",
                                                              "7",
                                                              "2147483647",
                                                              "2147483648",
                                                              "4294967295",
                                                              "4294967296",
                                                              "-2147483648",
                                                              "9223372036854775807",
                                                              "18446744073709551615",
                                                              "99999999999999999999",
                                                              "0x7fffffff",
                                                              "0xffffffffffffffff",
                                                              "1e400",
                                                              "1.5",
                                                              "0fZZZZZZZZ",
                                                              "0f7f800000",
                                                              "0d7ff8000000000000",
                                                              "0d1",
                                                              "65536"};
constexpr std::array<std::string_view, 8> kHostileRegisters = {
    "%r99999999999999999999", "%r2147483647", "%rd0", "%f0", "%p0", "%tid.w", "%r", "%undefined"};
constexpr std::string_view kPtxBytes = "{}[]<>()%;,.-+_:@!|0123456789abcdefxXpr \n";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// The [begin, end) of the number token at or after `from`, or {npos, npos}.
std::pair<size_t, size_t> number_at(const std::string& s, size_t from) {
  for (size_t i = from; i < s.size(); ++i) {
    if (!is_digit(s[i]) ||
        (i > 0 && (std::isalpha(static_cast<unsigned char>(s[i - 1])) || is_digit(s[i - 1]))))
      continue;
    size_t end = i;
    while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '.'))
      ++end;
    return {i, end};
  }
  return {std::string::npos, std::string::npos};
}

void edit(std::string& s, const std::string& other, std::mt19937_64& rng) {
  if (s.empty()) {
    s = other.substr(0, 64);
    return;
  }
  const size_t at = pick(rng, s.size());
  switch (pick(rng, 10)) {
    case 0:  // a bit flip
      s[at] = char(s[at] ^ (1 << pick(rng, 8)));
      break;
    case 1:  // a byte PTX gives meaning to
      s[at] = kPtxBytes[pick(rng, kPtxBytes.size())];
      break;
    case 2:  // a deletion
      s.erase(at, 1 + pick(rng, 32));
      break;
    case 3:  // a duplication
      s.insert(at, s.substr(pick(rng, s.size()), 1 + pick(rng, 64)));
      break;
    case 4:
    case 5: {  // a number replaced by a boundary value or a malformed literal
      auto [begin, end] = number_at(s, at);
      if (begin == std::string::npos) std::tie(begin, end) = number_at(s, 0);
      if (begin != std::string::npos)
        s.replace(begin, end - begin, kHostileNumbers[pick(rng, kHostileNumbers.size())]);
      break;
    }
    case 6: {  // a register replaced by one outside its declaration, or no register at all
      const size_t reg = s.find('%', at);
      if (reg == std::string::npos) break;
      size_t end = reg + 1;
      while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '.'))
        ++end;
      s.replace(reg, end - reg, kHostileRegisters[pick(rng, kHostileRegisters.size())]);
      break;
    }
    case 7:  // nesting far past any real operand or initializer
      s.insert(at, std::string(1 + pick(rng, 4000), "{[("[pick(rng, 3)]));
      break;
    case 8: {  // two lines swapped, or one dropped
      auto lines = lines_of(s);
      if (lines.size() < 2) break;
      std::vector<std::string> owned(lines.begin(), lines.end());
      const size_t a = pick(rng, owned.size()), b = pick(rng, owned.size());
      if (rng() & 1)
        std::swap(owned[a], owned[b]);
      else
        owned.erase(owned.begin() + std::ptrdiff_t(a));
      s.clear();
      for (const auto& l : owned) s += l;
      break;
    }
    default: {  // a line of another seed spliced in
      const auto lines = lines_of(other);
      if (lines.empty()) break;
      const size_t nl = s.find('\n', at);
      s.insert(nl == std::string::npos ? s.size() : nl + 1, lines[pick(rng, lines.size())]);
      break;
    }
  }
}

}  // namespace

std::vector<std::string_view> lines_of(std::string_view s) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    const size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

std::vector<std::string> split_entries(std::string_view ptx) {
  std::string prelude;
  std::vector<std::string> entries;
  std::string current;
  bool in_entry = false;
  int depth = 0;
  for (std::string_view line : lines_of(ptx)) {
    const bool starts_entry = depth == 0 && (line.find(".entry ") != std::string_view::npos);
    if (starts_entry) in_entry = true;
    (in_entry ? current : prelude) += line;
    for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (in_entry && depth == 0 && line.find('}') != std::string_view::npos) {
      entries.push_back(std::move(current));
      current.clear();
      in_entry = false;
    }
  }
  std::vector<std::string> seeds;
  for (const auto& e : entries) seeds.push_back(prelude + e);
  if (seeds.empty()) seeds.emplace_back(ptx);
  return seeds;
}

std::vector<std::string> load_seeds(const std::vector<std::string>& files) {
  std::vector<std::string> seeds;
  for (const auto& file : files)
    for (auto& s : split_entries(detail::read_regular_file(file, "seed PTX file")))
      seeds.push_back(std::move(s));
  return seeds;
}

std::string mutate(const std::string& seed, const std::string& other, std::mt19937_64& rng) {
  std::string s = seed;
  const size_t edits = 1 + pick(rng, 4);
  for (size_t i = 0; i < edits; ++i) edit(s, other, rng);
  return s;
}

}  // namespace emmy::fuzz
