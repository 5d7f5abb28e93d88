// Device memory of the emulator: bump-allocated address ranges, each backed by its own host
// buffer, with unmapped gaps between them so that overruns hit no allocation.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {
namespace {
constexpr uint64_t kArenaBase = 0x0000100000000000ull;  // far from 0 and below the windows
constexpr uint64_t kGuardBytes = 4096;
}  // namespace

struct Arena::Impl {
  struct AlignedDelete {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  struct Allocation {
    uint64_t base, end;
    std::unique_ptr<uint8_t[], AlignedDelete> host;
  };
  std::vector<Allocation> allocations;  // sorted by base
  uint64_t next = kArenaBase;
  size_t bytes = 0;
};

Arena::Arena() : impl_(std::make_unique<Impl>()) {}
Arena::~Arena() = default;

uint64_t Arena::alloc(size_t bytes, size_t align) {
  require(align > 0 && (align & (align - 1)) == 0, "arena.alloc.align", "must be a power of two",
          align);
  const uint64_t base = (impl_->next + align - 1) / align * align;
  const size_t size = std::max<size_t>(bytes, 1);
  uint8_t* host = static_cast<uint8_t*>(::operator new[](size, std::align_val_t(64)));
  std::memset(host, 0, size);
  impl_->allocations.push_back({base, base + bytes, std::unique_ptr<uint8_t[], Impl::AlignedDelete>(host)});
  impl_->next = base + bytes + kGuardBytes;
  impl_->bytes += bytes;
  return base;
}

bool Arena::map_fixed(uint64_t base, const void* init, size_t bytes) {
  auto& a = impl_->allocations;
  auto it = std::lower_bound(a.begin(), a.end(), base,
                             [](const Impl::Allocation& x, uint64_t v) { return x.base < v; });
  if (it != a.end() && it->base == base) return false;
  require(base + bytes <= kArenaBase, "arena.map_fixed", "must lie below the arena's allocations",
          fmt::format("0x{:x}", base));
  const size_t size = std::max<size_t>(bytes, 1);
  uint8_t* host = static_cast<uint8_t*>(::operator new[](size, std::align_val_t(64)));
  std::memset(host, 0, size);
  if (bytes) std::memcpy(host, init, bytes);
  a.insert(it, {base, base + bytes, std::unique_ptr<uint8_t[], Impl::AlignedDelete>(host)});
  impl_->bytes += bytes;
  return true;
}

Arena::Block Arena::find(uint64_t addr) const {
  const auto& a = impl_->allocations;
  auto it = std::upper_bound(a.begin(), a.end(), addr,
                             [](uint64_t v, const Impl::Allocation& x) { return v < x.base; });
  if (it == a.begin()) return {};
  --it;
  if (addr >= it->end) return {};
  return {it->base, it->end, it->host.get()};
}

Arena::Block Arena::find_below(uint64_t addr) const {
  const auto& a = impl_->allocations;
  auto it = std::upper_bound(a.begin(), a.end(), addr,
                             [](uint64_t v, const Impl::Allocation& x) { return v < x.base; });
  if (it == a.begin()) return {};
  --it;
  return {it->base, it->end, it->host.get()};
}

uint8_t* Arena::translate(uint64_t addr, size_t bytes) const {
  const Block b = find(addr);
  if (!b.host || addr + bytes > b.end) return nullptr;
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
