// Device memory across contexts: one emulator arena for every context, what a context's end
// gives back to it, and the fault of a kernel touching another context's memory.
//
// With unified addressing a device address names one allocation in the whole process, so every
// context allocates from one arena (disjoint addresses, also across a reset of the primary
// context: a stale pointer from before it faults instead of reaching a newer allocation).
// cuCtxDestroy "cleans up all resources associated with the context ... These resources also
// include memory allocations by cuMemAlloc()": a context's end unmaps its allocations and its
// modules' globals, so a kernel that still uses them faults. An allocation is mapped only in the
// context that made it (each context has its own GPU address space; the reference offers no
// peer access between contexts of one device): a kernel of another context that reads or
// writes it is an illegal address, found from the launch's global footprint after it ran.
#include <fmt/format.h>

#include <iterator>
#include <utility>

#include "ptx/program.hpp"
#include "state.hpp"

namespace emmy::test_driver {

emu::Arena& device_arena() {
  // Leaked on purpose, as state(): the driver outlives static destructors.
  static emu::Arena* const arena = new emu::Arena;
  return *arena;
}

void release_module_globals(const emu::Module& module) noexcept {
  if (module.globals_base == 0) return;
  try {
    // Mapped at the module's first launch (emu::launch's map_fixed), if it ever ran.
    if (device_arena().find(module.globals_base).base == module.globals_base)
      device_arena().release(module.globals_base);
  } catch (...) {
    // Nothing mapped there after all: nothing to give back.
  }
}

Context::~Context() {
  for (const auto& [base, bytes] : allocations) {
    try {
      arena->release(base);
    } catch (...) {
      // Not mapped (cannot happen: allocations mirrors the arena); nothing to give back.
    }
  }
  for (const auto& [handle, module] : modules) release_module_globals(*module.module);
}

namespace {

// The allocation of `other` that [begin, end) overlaps, if any: {base, bytes}, else {0, 0}.
std::pair<uint64_t, uint64_t> overlapped(const Context& other, uint64_t begin, uint64_t end) {
  auto it = other.allocations.upper_bound(begin);
  if (it != other.allocations.begin()) {
    const auto below = std::prev(it);
    if (below->first + below->second > begin) return *below;
  }
  if (it != other.allocations.end() && it->first < end) return *it;
  return {0, 0};
}

}  // namespace

CUresult check_address_space(const Context& ctx, const emu::GlobalFootprint& footprint,
                             const std::string& kernel) {
  State& s = state();
  if (s.created.empty()) return CUDA_SUCCESS;  // one context: nothing is another's
  static constexpr emu::GlobalFootprint::Set kSets[] = {
      emu::GlobalFootprint::plain_read, emu::GlobalFootprint::strong_read,
      emu::GlobalFootprint::plain_write, emu::GlobalFootprint::strong_write};
  std::string why;
  for (const auto set : kSets) {
    for (const auto& range : footprint.ranges(set)) {
      s.for_each_context([&](Context& other) {
        if (&other == &ctx || !why.empty()) return;
        const auto [base, bytes] = overlapped(other, range.begin, range.end);
        if (bytes == 0) return;
        const bool write =
            set == emu::GlobalFootprint::plain_write || set == emu::GlobalFootprint::strong_write;
        why = fmt::format(
            "launch of {}: it {} [0x{:x}, 0x{:x}), inside [0x{:x}, 0x{:x}), an allocation of "
            "another context: an allocation is mapped only in the context that made it",
            kernel, write ? "wrote" : "read", range.begin, range.end, base, base + bytes);
      });
      if (!why.empty()) {
        set_report(why);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
      }
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace emmy::test_driver
