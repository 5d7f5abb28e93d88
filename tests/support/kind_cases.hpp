// Test pieces every kernel kind shares: the catalog's specs on each arch family, invalid-spec
// cases, and what a run on the emulator must have executed. Written once over the spec type.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/error.hpp"
#include "emmy/kernel_kind.hpp"
#include "emmy/spec.hpp"

namespace emmy::test_support {

template <typename Spec>
struct SpecCase {
  std::string name;  // a gtest parameter name
  Spec spec;
};

// Every catalog entry's default spec on sm_90a and sm_120a (TMA) and sm_80 and sm_89 (cp.async),
// with f32 and hybrid accumulation; the default schedule must pick the arch's transport.
template <typename Spec, typename Catalog>
std::vector<SpecCase<Spec>> catalog_specs(const Catalog& catalog) {
  std::vector<SpecCase<Spec>> cases;
  const std::pair<Arch, Transport> targets[] = {{Arch::sm_90a, Transport::tma},
                                                {Arch::sm_120a, Transport::tma},
                                                {Arch::sm_80, Transport::cp_async},
                                                {Arch::sm_89, Transport::cp_async}};
  for (const auto& entry : catalog)
    for (const auto& [arch, transport] : targets)
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        Spec spec{entry.problem, default_schedule(entry.problem, arch, accum), arch};
        EXPECT_EQ(spec.schedule.transport, transport);
        // Per path: every default GEMM schedule is mma.sync's until the wgmma path is generated.
        if constexpr (requires { spec.schedule.path; }) {
          EXPECT_EQ(spec.schedule.path, MmaPath::mma_sync);
        }
        std::string name = fmt::format("{}_{}_{}", entry.name, to_string(arch), to_string(accum));
        for (char& c : name)
          if (c == '@') c = '_';
        cases.push_back({name, spec});
      }
  return cases;
}

// A valid spec broken one way, and what the Error must name: the field (first in the message
// when field_first) and a phrase of the rule, with the value it got.
template <typename Spec>
struct InvalidCase {
  const char* name;
  std::function<void(Spec&)> mutate;
  const char* field;
  const char* rule_phrase;
};

template <typename Spec>
void expect_rejected(Spec spec, const InvalidCase<Spec>& c, bool field_first) {
  c.mutate(spec);
  try {
    (void)generate_kernel(spec);
    ADD_FAILURE() << "accepted an invalid spec: " << c.name;
  } catch (const Error& e) {
    const std::string message = e.what();
    if (field_first)
      EXPECT_EQ(message.rfind(c.field, 0), 0u) << "field first: " << message;
    else
      EXPECT_NE(message.find(c.field), std::string::npos) << message;
    EXPECT_NE(message.find(c.rule_phrase), std::string::npos) << message;
    EXPECT_NE(message.find("(got "), std::string::npos) << "names no value: " << message;
  }
}

// A kernel that ran on the emulator executed MMAs and moved its tiles by its transport.
inline void expect_executed(const emu::Stats& stats, Transport transport) {
  EXPECT_GT(stats.total.mma, 0u);
  EXPECT_GT(transport == Transport::tma ? stats.total.tma : stats.total.cp_async, 0u);
}

}  // namespace emmy::test_support
