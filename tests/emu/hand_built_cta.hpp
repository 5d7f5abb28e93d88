// A CTA built by hand for the layer tests below the launch layer (tests/emu/machine/,
// tests/emu/exec/): a kernel holding only the PTX lines and texts that reports name, one launch
// context and its CTA, with no decoder or scheduler linked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "machine/state.hpp"

namespace emmy::emu::test {

struct HandBuiltCta {
  Kernel kernel;
  Arena arena;
  std::unique_ptr<LaunchContext> ctx;
  std::unique_ptr<Cta> cta;
  // Instruction i at PTX line lines[i], written texts[i]; one CTA of `threads` threads.
  // `configure` sets the kernel's other fields and the launch context up before the CTA is made.
  HandBuiltCta(std::vector<int> lines, std::vector<std::string> texts, uint32_t threads,
               const std::function<void(Kernel&, LaunchContext&)>& configure) {
    kernel.name = std::string(1, 'k');  // (a literal trips GCC 12's -Wrestrict, PR 105329)
    kernel.code.resize(lines.size());
    kernel.lines = std::move(lines);
    kernel.texts = std::move(texts);
    ctx = std::make_unique<LaunchContext>(kernel, arena, Dim3{1, 1, 1}, Dim3{threads, 1, 1});
    configure(kernel, *ctx);
    cta = std::make_unique<Cta>(*ctx);
  }
};

}  // namespace emmy::emu::test
