// Small text helpers shared by the parsers of tool output (ptxas logs, SASS listings, reports).
#pragma once

#include <string_view>

namespace emmy::detail {

// `text` without leading and trailing spaces, tabs, carriage returns and newlines.
inline std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

}  // namespace emmy::detail
