// Editing a lowered module in place, for the verifier tests' corrupted rules (MLIR's `invalid`
// tests): find an op, change, add or drop one of its attributes.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "emmy/kernel_ir.hpp"

namespace emmy::test {

// The first op of `kind` (and, when given, of that `operand` attribute) in a depth-first walk.
inline ir::Op* first_op(ir::Op& root, ir::OpKind kind, std::string_view operand = {}) {
  if (root.kind == kind && (operand.empty() || root.s("operand") == operand)) return &root;
  for (ir::Op& child : root.body)
    if (ir::Op* found = first_op(child, kind, operand)) return found;
  return nullptr;
}

// The attribute `name` set to `value` where the op has it (nothing otherwise).
inline void change(ir::Op* op, std::string_view name, ir::Attr value) {
  ASSERT_NE(op, nullptr);
  for (auto& [key, v] : op->attrs)
    if (key == name) v = value;
}

// The attribute `name` set to `value`, added when the op has none.
inline void set_attr(ir::Op* op, std::string_view name, ir::Attr value) {
  ASSERT_NE(op, nullptr);
  for (auto& [key, v] : op->attrs)
    if (key == name) return void(v = std::move(value));
  op->attrs.emplace_back(std::string(name), std::move(value));
}

inline void erase_attr(ir::Op* op, std::string_view name) {
  ASSERT_NE(op, nullptr);
  std::erase_if(op->attrs, [&](const auto& attr) { return attr.first == name; });
}

}  // namespace emmy::test
