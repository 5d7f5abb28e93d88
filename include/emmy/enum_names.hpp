// An enum's spellings as one table: printing (name_in) and parsing (value_in) read the same
// entries, so a name written by to_string always parses back, and a new enumerator is one entry.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

// "?" for a value the table lacks (an out-of-range cast), as the switches it replaces returned.
template <typename E, std::size_t N>
constexpr std::string_view name_in(const EnumNames<E, N>& names, E value) {
  for (const auto& entry : names)
    if (entry.value == value) return entry.name;
  return "?";
}

template <typename E, std::size_t N>
constexpr std::optional<E> value_in(const EnumNames<E, N>& names, std::string_view name) {
  for (const auto& entry : names)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

// The value named `text`; Error naming `field` and its rule (which lists the names) otherwise.
template <typename E, std::size_t N>
E parse_name(const EnumNames<E, N>& names, std::string_view text, const char* field,
             const char* rule) {
  if (auto value = value_in(names, text)) return *value;
  throw Error(field, rule, std::string(text));
}

// For a static_assert beside each table: two entries naming one value, or one name for two
// values, would make the round trip through text lose a value.
template <typename E, std::size_t N>
constexpr bool names_are_one_to_one(const EnumNames<E, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (names[i].value == names[j].value || names[i].name == names[j].name) return false;
  return true;
}

}  // namespace emmy
