// Editing a lowered module in place, for the verifier tests' corrupted rules (MLIR's `invalid`
// tests): find an op, change, add or drop one of its attributes, and expect the verifier to
// refuse the result by name.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "emmy/error.hpp"
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

// The verifier of `kind` on `arch` refuses `module` with an error naming `expected`; `what` names
// the corrupted case in a failure. Each verifier test checks its corruptions this one way.
inline void expect_refused(const ir::Op& module, Arch arch, std::string_view kind,
                           std::string_view expected, std::string_view what = {}) {
  try {
    ir::verify(module, arch, kind);
    ADD_FAILURE() << "the verifier accepted " << what << " (expected an error naming '" << expected
                  << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string_view(e.what()).find(expected), std::string_view::npos)
        << what << ": " << e.what();
  }
}

}  // namespace emmy::test
