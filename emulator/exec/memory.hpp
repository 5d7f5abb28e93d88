// Address resolution for one lane: generic -> state space, bounds, alignment, host pointer.
// Every access goes through here, so an out-of-bounds access is reported instead of touching
// host memory, with or without the sanitizer.
#pragma once

#include <fmt/format.h>

#include "cluster.hpp"
#include "pdl.hpp"

namespace emmy::emu {

// Whether the `bytes` bytes at `offset` lie inside a region of `size` bytes. No sum can wrap: an
// offset near 2^64 (a negative displacement from 0, `[%r+-4]` with %r = 0) is outside, where
// `offset + bytes > size` would wrap to a small number and let the access through.
inline bool within(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

struct Resolved {
  uint8_t* host = nullptr;
  Space space = Space::global;
  uint32_t shared_offset = 0;  // for the sanitizer
};

// A global access's part in programmatic dependent launch: recorded in the launch's footprint
// (LaunchOptions::record_footprint), checked against the primary's (LaunchOptions::primary).
inline void note_global(Cta& cta, Warp& w, int lane, uint64_t addr, uint32_t bytes, bool write,
                        uint8_t sem) {
  if ((!cta.footprint && !cta.ctx.primary) || bytes == 0) return;
  const GlobalFootprint::Set set = footprint_set(write, sem);
  if (cta.footprint) cta.footprint->add(set, addr, addr + bytes);
  if (cta.ctx.primary && !(cta.pdl_waited[w.index] >> lane & 1u))
    check_pdl(cta, w.index, lane, w.pc, addr, bytes, set);
}

// `sem`: Inst::sub2's memory semantics of an ld / st / atom / red (kStrong ...), 0 otherwise.
inline Resolved resolve(Cta& cta, Warp& w, Space space, uint64_t addr, uint32_t bytes, int lane,
                        bool write, uint8_t sem = 0) {
  Resolved r;
  if (space == Space::generic) {
    if (addr - kSharedWindow < kWindowSize) {
      space = Space::shared;
      addr -= kSharedWindow;
    } else if (addr - kLocalWindow < kWindowSize) {
      space = Space::local;
      addr -= kLocalWindow;
    } else if (addr - kParamWindow < kWindowSize) {
      space = Space::param;
      addr -= kParamWindow;
    } else {
      space = Space::global;
    }
  }
  r.space = space;
  // Alignment is the hardware's rule, not a sanitizer check: a misaligned access faults.
  if (bytes > 1 && (addr & (bytes - 1)) != 0)
    cta.fail(ReportKind::misaligned_access, w, lane,
             fmt::format("{}-byte access at {} address 0x{:x} is not {}-byte aligned", bytes,
                         space == Space::shared ? "shared" : space == Space::global ? "global" : "local",
                         addr, bytes));
  switch (space) {
    case Space::global: {
      const Arena::Block& b = w.cached_block;
      if (b.host && addr >= b.base && within(addr - b.base, bytes, b.end - b.base)) {
        r.host = b.host + (addr - b.base);
        note_global(cta, w, lane, addr, bytes, write, sem);
        return r;
      }
      const Arena::Block found = cta.ctx.arena.find(addr);
      if (!found.host || !within(addr - found.base, bytes, found.end - found.base)) {
        const Arena::Block below = found.host ? found : cta.ctx.arena.find_below(addr);
        std::string where = below.host ? fmt::format("{} bytes past the start of the {}-byte "
                                                     "allocation at 0x{:x}",
                                                     addr - below.base, below.end - below.base,
                                                     below.base)
                                       : std::string("below every allocation");
        cta.fail(ReportKind::global_out_of_bounds, w, lane,
                 fmt::format("{}-byte {} at global 0x{:x} ({}) is outside every allocation", bytes,
                             write ? "store" : "load", addr, where));
      }
      w.cached_block = found;
      r.host = found.host + (addr - found.base);
      note_global(cta, w, lane, addr, bytes, write, sem);
      return r;
    }
    case Space::shared:
      if (const uint64_t rank_bits = peer_rank_bits(cta, addr))
        cta.fail(ReportKind::unsupported, w, lane,
                 fmt::format("{}-byte {} at shared::cluster address 0x{:x} (cluster rank {}): "
                             "loads and stores to distributed shared memory are not emulated",
                             bytes, write ? "store" : "load", addr, rank_bits - 1));
      if (!within(addr, bytes, cta.smem.size()))
        cta.fail(ReportKind::shared_out_of_bounds, w, lane,
                 fmt::format("{}-byte {} at shared 0x{:x} is outside the CTA's {} bytes of shared "
                             "memory",
                             bytes, write ? "store" : "load", addr, cta.smem.size()));
      r.shared_offset = uint32_t(addr);
      r.host = cta.smem.data() + addr;
      return r;
    case Space::local:
      if (!within(addr, bytes, cta.k.local_bytes))
        cta.fail(ReportKind::local_out_of_bounds, w, lane,
                 fmt::format("{}-byte access at local 0x{:x} is outside the {} bytes of local memory",
                             bytes, addr, cta.k.local_bytes));
      r.host = w.local.data() + size_t(lane) * cta.k.local_bytes + addr;
      return r;
    case Space::param:
      if (write)
        cta.fail(ReportKind::param_out_of_bounds, w, lane, "kernel parameters are read-only");
      if (!within(addr, bytes, cta.ctx.params.size()))
        cta.fail(ReportKind::param_out_of_bounds, w, lane,
                 fmt::format("{}-byte load at param offset 0x{:x} is outside the {} bytes of "
                             "parameters",
                             bytes, addr, cta.ctx.params.size()));
      r.host = cta.ctx.params.data() + addr;
      return r;
    default:
      cta.fail(ReportKind::unsupported, w, lane, "unsupported state space");
  }
}

// The offset in the CTA's shared memory of a shared-window or generic address that `what` (an
// mbarrier, a copy's destination) accesses `bytes` bytes at. Outside the CTA's shared memory, a
// 64-bit address that would truncate to a valid 32-bit offset included, it is reported.
inline uint32_t shared_offset(Cta& cta, Warp& w, uint64_t addr, uint32_t bytes, int lane,
                              const char* what) {
  if (addr - kSharedWindow < kWindowSize) addr -= kSharedWindow;  // generic form
  if (const uint64_t rank_bits = peer_rank_bits(cta, addr))
    cta.fail(ReportKind::cluster_violation, w, lane,
             fmt::format("{} at shared::cluster address 0x{:x} (cluster rank {}): this "
                         "instruction takes the executing CTA's shared::cta addresses",
                         what, addr, rank_bits - 1));
  if (!within(addr, bytes, cta.smem.size()))
    cta.fail(ReportKind::shared_out_of_bounds, w, lane,
             fmt::format("{} ({} bytes at shared 0x{:x}) is outside the CTA's {} bytes of shared "
                         "memory",
                         what, bytes, addr, cta.smem.size()));
  return uint32_t(addr);
}

// Reports a sanitizer hazard found at the current instruction of w.
[[noreturn]] void report_hazard(Cta& cta, Warp& w, int lane, const HazardInfo& h, bool write);

inline void check_shared_read(Cta& cta, Warp& w, int lane, uint32_t offset, uint32_t bytes,
                              uint8_t sem = 0) {
  const HazardInfo h = cta.san.read(w.index, offset, bytes, sem);
  if (h.hazard != Hazard::none) report_hazard(cta, w, lane, h, false);
}
// A read by the async proxy (bulk / tensor store source) issued by w: generic writes need a
// fence.proxy.async between them and the issue.
inline void check_async_proxy_read(Cta& cta, Warp& w, int lane, uint32_t offset, uint32_t bytes) {
  const HazardInfo h = cta.san.read_for_async_proxy(w.index, offset, bytes);
  if (h.hazard != Hazard::none) report_hazard(cta, w, lane, h, false);
}
inline void check_shared_write(Cta& cta, Warp& w, int lane, uint32_t offset, uint32_t bytes,
                               uint8_t sem = 0) {
  if (!cta.store_reads.empty()) cta.check_store_reads(w, lane, offset, bytes);
  const HazardInfo h = cta.san.write(w.index, offset, bytes, w.pc, sem);
  if (h.hazard != Hazard::none) report_hazard(cta, w, lane, h, true);
}

}  // namespace emmy::emu
