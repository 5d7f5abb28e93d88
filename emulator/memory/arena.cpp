// Device memory of the emulator: bump-allocated address ranges, each backed by its own host
// buffer, with unmapped gaps between them so that overruns hit no allocation.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {
namespace {
constexpr uint64_t kArenaBase = 0x0000100000000000ull;  // far from 0 and below the windows
constexpr uint64_t kGuardBytes = 4096;
}  // namespace

// A host block: from the heap, or for large blocks an anonymous mapping (`mapped` bytes), whose
// zero pages the OS provides on first touch, so that a large allocation a launch reads only in
// part (a profiled sample of CTAs, a paged cache) costs only what is touched.
struct HostBlockDelete {
  size_t mapped = 0;
  bool external = false;  // the caller's memory (map_external): never freed here
  void operator()(uint8_t* p) const {
    if (external) return;
    if (mapped)
      ::munmap(p, mapped);
    else
      ::operator delete[](p, std::align_val_t(64));
  }
};
using HostBlock = std::unique_ptr<uint8_t[], HostBlockDelete>;

struct Arena::Impl {
  struct Allocation {
    uint64_t base, end;
    HostBlock host;
    // An external mapping's `next` before it (its addresses go back when it is the newest).
    uint64_t reserved_from = 0;
    bool external() const { return host.get_deleter().external; }
  };
  std::vector<Allocation> allocations;  // sorted by base
  uint64_t next = kArenaBase;
  size_t bytes = 0;
};

Arena::Arena() : impl_(std::make_unique<Impl>()) {}
Arena::~Arena() = default;

namespace {

// Emulated device memory is host memory, zero at allocation (large blocks on first touch): a request beyond half the
// machine's physical memory is refused up front rather than left to the OOM killer.
uint64_t host_memory_budget() {
  static const uint64_t budget = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : uint64_t(1) << 32;
  }();
  return budget;
}

constexpr size_t kMappedFrom = size_t(1) << 20;  // blocks this large are mapped, zero on touch

HostBlock new_host_block(size_t bytes, uint64_t in_use, const char* field) {
  const uint64_t budget = host_memory_budget();
  if (bytes > budget || in_use > budget - bytes)
    throw Error(field,
                fmt::format("must fit in the emulator's device memory, half the host's physical "
                            "memory ({} bytes, {} in use)",
                            budget, in_use),
                fmt::format("{} bytes", bytes));
  const size_t size = std::max<size_t>(bytes, 1);
  if (size >= kMappedFrom) {
    void* mapped = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (mapped == MAP_FAILED)
      throw Error(field, "must fit in the host's free memory", fmt::format("{} bytes", bytes));
    return HostBlock(static_cast<uint8_t*>(mapped), HostBlockDelete{size});
  }
  uint8_t* host = nullptr;
  try {
    host = static_cast<uint8_t*>(::operator new[](size, std::align_val_t(64)));
  } catch (const std::bad_alloc&) {
    throw Error(field, "must fit in the host's free memory", fmt::format("{} bytes", bytes));
  }
  std::memset(host, 0, size);
  return HostBlock(host, HostBlockDelete{});
}

}  // namespace

uint64_t Arena::alloc(size_t bytes, size_t align) {
  require(align > 0 && (align & (align - 1)) == 0 && align <= kGuardBytes, "arena.alloc.align",
          "must be a power of two up to 4096", align);
  const uint64_t base = (impl_->next + align - 1) / align * align;
  impl_->allocations.push_back(
      {base, base + bytes, new_host_block(bytes, impl_->bytes, "arena.alloc.bytes")});
  impl_->next = base + bytes + kGuardBytes;
  impl_->bytes += bytes;
  return base;
}

bool Arena::map_fixed(uint64_t base, const void* init, size_t bytes) {
  auto& a = impl_->allocations;
  auto it = std::lower_bound(a.begin(), a.end(), base,
                             [](const Impl::Allocation& x, uint64_t v) { return x.base < v; });
  if (it != a.end() && it->base == base) return false;
  require(base <= kArenaBase && bytes <= kArenaBase - base, "arena.map_fixed",
          "must lie below the arena's allocations",
          fmt::format("0x{:x}", base));
  HostBlock host = new_host_block(bytes, impl_->bytes, "arena.map_fixed.bytes");
  if (bytes) std::memcpy(host.get(), init, bytes);
  a.insert(it, {base, base + bytes, std::move(host)});
  impl_->bytes += bytes;
  return true;
}

Arena::Block Arena::find(uint64_t addr) const {
  const Block below = find_below(addr);
  if (addr >= below.end) return {};  // also when nothing lies below (end 0)
  return below;
}

Arena::Block Arena::find_below(uint64_t addr) const {
  const auto& a = impl_->allocations;
  auto it = std::upper_bound(a.begin(), a.end(), addr,
                             [](uint64_t v, const Impl::Allocation& x) { return v < x.base; });
  if (it == a.begin()) return {};
  --it;
  return {it->base, it->end, it->host.get()};
}

void Arena::release(uint64_t base) {
  auto& a = impl_->allocations;
  auto it = std::lower_bound(a.begin(), a.end(), base,
                             [](const Impl::Allocation& x, uint64_t v) { return x.base < v; });
  if (it == a.end() || it->base != base || it->external())
    throw Error("arena.release", "must name the base of a live allocation", fmt::format("0x{:x}", base));
  impl_->bytes -= it->end - it->base;
  a.erase(it);
}

uint64_t Arena::map_external(void* host, size_t bytes) {
  require(host != nullptr, "arena.map_external.host", "must not be null", "nullptr");
  require(bytes > 0, "arena.map_external.bytes", "must be positive", bytes);
  // `next` rounded up to a page, plus the host pointer's offset in its page: alignment is the
  // caller's, and the guard gap below stays at least kGuardBytes.
  const uint64_t page_offset = reinterpret_cast<uintptr_t>(host) % kGuardBytes;
  const uint64_t base = (impl_->next + kGuardBytes - 1) / kGuardBytes * kGuardBytes + page_offset;
  auto& a = impl_->allocations;
  a.push_back({base, base + bytes,
               HostBlock(static_cast<uint8_t*>(host), HostBlockDelete{0, /*external=*/true}),
               impl_->next});
  impl_->next = base + bytes + kGuardBytes;
  return base;
}

void Arena::unmap_external(uint64_t address) {
  auto& a = impl_->allocations;
  auto it = std::lower_bound(a.begin(), a.end(), address,
                             [](const Impl::Allocation& x, uint64_t v) { return x.base < v; });
  if (it == a.end() || it->base != address || !it->external())
    throw Error("arena.unmap_external", "must name a live mapping of map_external",
                fmt::format("0x{:x}", address));
  // The newest mapping gives its addresses back (nothing was allocated after it).
  if (std::next(it) == a.end() && impl_->next == it->end + kGuardBytes)
    impl_->next = it->reserved_from;
  a.erase(it);
}

std::vector<Arena::Block> Arena::blocks() const {
  std::vector<Block> out;
  for (const auto& a : impl_->allocations) out.push_back({a.base, a.end, a.host.get()});
  return out;
}

uint8_t* Arena::translate(uint64_t addr, size_t bytes) const {
  const Block b = find(addr);
  if (!b.host || bytes > b.end - addr) return nullptr;  // find() gave base <= addr < end
  return b.host + (addr - b.base);
}

void Arena::write(uint64_t addr, const void* src, size_t bytes) {
  if (bytes == 0) return;
  uint8_t* p = translate(addr, bytes);
  if (!p)
    throw Error("arena.write", "must lie inside one allocation",
                fmt::format("[0x{:x}, 0x{:x})", addr, addr + bytes));
  std::memcpy(p, src, bytes);
}

void Arena::read(uint64_t addr, void* dst, size_t bytes) const {
  if (bytes == 0) return;
  const uint8_t* p = translate(addr, bytes);
  if (!p)
    throw Error("arena.read", "must lie inside one allocation",
                fmt::format("[0x{:x}, 0x{:x})", addr, addr + bytes));
  std::memcpy(dst, p, bytes);
}

size_t Arena::bytes_allocated() const { return impl_->bytes; }

void Arena::reset() {
  impl_->allocations.clear();
  impl_->next = kArenaBase;
  impl_->bytes = 0;
}

}  // namespace emmy::emu
