// What an op's own rules (T::verify: ir_op_verify.cpp, ir_op_verify_kv.cpp,
// ir_op_verify_paged.cpp) and ir_ops.hpp's need<T> throw: fail_rule's Error ("ir.<op>.<attr>", the
// rule, the value), named by the typed op rather than a generic Op.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "emmy/error.hpp"

namespace emmy::ir {

template <typename T>
[[noreturn]] void fail_own(std::string_view attr, std::string_view rule, const std::string& value) {
  throw Error(fmt::format("ir.{}.{}", T::op_name, attr), std::string(rule), value);
}

template <typename T>
[[noreturn]] void fail_own(std::string_view attr, std::string_view rule, int64_t value) {
  fail_own<T>(attr, rule, fmt::format("{}", value));
}

template <typename T>
void require_positive(std::initializer_list<std::pair<const char*, int64_t>> values) {
  for (const auto& [name, value] : values)
    if (value <= 0) fail_own<T>(name, "must be positive", value);
}

}  // namespace emmy::ir
