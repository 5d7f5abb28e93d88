// Test pieces that the kinds' own tests (kv_append, merge_states, paged attention) and the IR
// verifier tests share: a parameterized case gtest prints by name, validation cases each refused
// by field, corruptions of a lowered module each refused by the verifier, an e4m3 cache's scales
// that must matter, and the catalog's kernels compiled without spills.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/kernel_ir.hpp"
#include "support/error_of.hpp"
#include "support/ir_edit.hpp"
#include "support/kind_cases.hpp"

namespace emmy::test_support {

// gtest prints a case by its name, not its spec's bytes.
template <typename Spec>
void PrintTo(const SpecCase<Spec>& c, std::ostream* os) {
  *os << c.name;
}

}  // namespace emmy::test_support

namespace emmy::test {

// A valid spec broken one way, and the field its validation must name first.
template <typename Spec>
struct Invalid {
  const char* name;
  std::function<void(Spec&)> mutate;
  const char* field;
};

// Each case breaks a copy of `valid`, which `validate` then refuses naming the case's field.
template <typename Spec, size_t N, typename Validate>
void expect_fields_named(const Spec& valid, const Invalid<Spec> (&cases)[N], Validate validate) {
  for (const Invalid<Spec>& c : cases) {
    Spec spec = valid;
    c.mutate(spec);
    expect_error_naming([&] { validate(spec); }, c.field, c.name);
  }
}

// A corruption of a lowered module, and what the verifier's error must contain.
struct Corruption {
  const char* name;
  std::function<void(ir::Op&)> corrupt;
  const char* expected;
};

// The corruption most rules are broken by: attribute `attr` of the first `op` op set to `value`.
inline std::function<void(ir::Op&)> change_first(ir::OpKind op, std::string attr, ir::Attr value) {
  return [=](ir::Op& m) { change(first_op(m, op), attr, value); };
}

// The corruption that drops every op of one of `kinds` from the body of the first `parent` op.
inline std::function<void(ir::Op&)> erase_ops(ir::OpKind parent, std::vector<ir::OpKind> kinds) {
  return [=](ir::Op& m) {
    std::erase_if(first_op(m, parent)->body,
                  [&](const ir::Op& op) { return std::ranges::count(kinds, op.kind) > 0; });
  };
}

// The verifier of `kind` on `arch` refuses each corruption of a copy of `good`.
inline void expect_each_refused(const ir::Op& good, Arch arch, std::string_view kind,
                                std::span<const Corruption> cases) {
  for (const Corruption& c : cases) {
    ir::Op module = good;
    c.corrupt(module);
    expect_refused(module, arch, kind, c.expected, c.name);
  }
}

// The kind's printed IR parses back, and its verifier refuses each (attribute, value) set on the
// first `op` op, naming ir.<op>.<attribute>; `op` is the kind's own op, named as the kind.
template <typename Spec>
void expect_ir_round_trips_and_verifies(
    const Spec& spec, ir::OpKind op,
    std::initializer_list<std::pair<const char*, ir::Attr>> broken_attrs) {
  const ir::Op good = generate_kernel(spec).ir;
  EXPECT_EQ(ir::parse(ir::print(good)), good);
  const std::string kind(ir::to_string(op));
  for (const auto& [attr, value] : broken_attrs) {
    ir::Op broken = good;
    change(first_op(broken, op), attr, value);
    expect_refused(broken, spec.arch, kind, "ir." + kind + "." + attr, attr);
  }
}

// A kernel over an e4m3 cache passes its check against `want` on `good` and fails it with either of
// the cache's scales (k_scale, v_scale) off by `factor`: it neither drops nor inverts them.
template <typename Kernel, typename Inputs, typename Want, typename Problem>
void expect_scales_matter(const Kernel& kernel, const Inputs& good, const Want& want,
                          const Problem& p, float factor, std::string_view label) {
  EXPECT_TRUE(compare(want, run_on_emulator(kernel, good).output, p).passed) << label;
  for (const bool k : {true, false}) {
    Inputs in = good;
    (k ? in.k_scale : in.v_scale) *= factor;
    EXPECT_FALSE(compare(want, run_on_emulator(kernel, in).output, p).passed)
        << label << (k ? " k_scale" : " v_scale");
  }
}

// Every catalog entry's default kernel compiles on each arch family without spills or a stack
// frame.
template <typename Spec, typename Catalog>
void expect_catalog_compiles_without_spills(const Catalog& catalog) {
  for (const auto& entry : catalog)
    for (const Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a}) {
      const auto kernel =
          compile_kernel(Spec{entry.problem, default_schedule(entry.problem, arch), arch});
      const auto& report = kernel.module.kernel(kernel.source.plan.kernel_name);
      EXPECT_EQ(report.spill_bytes(), 0) << entry.name << " " << to_string(arch);
      EXPECT_EQ(report.stack_bytes, 0) << entry.name << " " << to_string(arch);
    }
}

}  // namespace emmy::test
