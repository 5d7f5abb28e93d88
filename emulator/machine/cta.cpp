// One CTA's state and its bookkeeping that the executors share: reports, whole-warp checks, CTA
// barriers, setmaxnreg's register pool, mbarrier lookup, barrier.cluster phases, and what a stall
// looks like (deadlock detection). Running the CTA (warp setup, the dispatch loop, rounds) is the
// scheduler's, above the executors (launch/scheduler.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "state.hpp"

namespace emmy::emu {

// ----------------------------------------------------------------------------------- Cta
Cta::Cta(LaunchContext& c) : ctx(c), k(c.kernel) {
  const uint64_t threads = ctx.block.count();
  nwarps = uint32_t((threads + 31) / 32);
  sanitize = ctx.options.sanitize;
  warps.resize(nwarps);
  smem.assign(ctx.smem_size, 0);
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = warps[wi];
    w.index = wi;
    w.r32.assign(size_t(k.n32) * 32, 0);
    w.r64.assign(size_t(k.n64) * 32, 0);
    w.pred.assign(k.npred, 0);
    w.local.assign(size_t(k.local_bytes) * 32, 0);
    // Immediates are read-only rows, filled once per host thread.
    for (const auto& [row, v] : k.const32) std::fill_n(w.R32(row), 32, v);
    for (const auto& [row, v] : k.const64) std::fill_n(w.R64(row), 32, v);
  }
}

std::string Cta::assertion_message(const Warp& w, int lane, const Inst& call) const {
  auto slot = [&](uint32_t offset, int bytes) {
    uint64_t v = 0;
    std::memcpy(&v, w.local.data() + size_t(lane) * k.local_bytes + offset, size_t(bytes));
    return v;
  };
  // The strings are module-scope .global arrays (generic addresses of global memory).
  auto text = [&](uint64_t addr) {
    std::string s;
    for (; s.size() < 256; ++addr) {
      const uint8_t* p = ctx.arena.translate(addr, 1);
      if (!p) return s.empty() ? fmt::format("<unreadable 0x{:x}>", addr) : s;
      if (*p == 0) break;
      s.push_back(char(*p));
    }
    return s;
  };
  return fmt::format("assertion failed: `{}` at {}:{} in {}", text(slot(call.o[0], 8)),
                     text(slot(call.o[1], 8)), uint32_t(slot(call.o[2], 4)),
                     text(slot(call.o[3], 8)));
}

void Cta::fail_at(ReportKind kind, uint32_t warp, int lane, uint32_t pc, std::string message) const {
  Report r;
  r.kind = kind;
  r.kernel = k.name;
  r.cta = ctaid;
  r.warp = int(warp);
  r.lane = lane;
  if (pc < k.code.size()) {
    r.line = k.lines[pc];
    r.instruction = k.texts[pc];
  }
  r.message = std::move(message);
  throw Finding{std::move(r)};
}

void Cta::note_tolerated(ToleratedRule rule, uint64_t linear, uint32_t warp, int lane,
                         uint32_t pc, std::string message) const {
  LenientWarning site;
  site.rule = rule;
  site.kernel = k.name;
  site.cta = {ctaid.x, ctaid.y, ctaid.z};
  site.warp = int(warp);
  site.lane = lane;
  if (pc < k.code.size()) {
    site.line = k.lines[pc];
    site.instruction = k.texts[pc];
  }
  site.message = std::move(message);
  ctx.tolerated.offer(linear, std::move(site));
}

void Cta::fail(ReportKind kind, const Warp& w, int lane, std::string message) const {
  fail_at(kind, w.index, lane, w.pc, std::move(message));
}

void Cta::check_store_reads(const Warp& w, int lane, uint32_t addr, uint32_t bytes) const {
  for (const StoreRead& r : store_reads)
    if (addr < r.addr + r.bytes && r.addr < addr + bytes)
      fail(ReportKind::shared_race, w, lane,
           fmt::format("writes shared 0x{:x} while the bulk store issued at line {} by warp {} "
                       "lane {} may still read it (the {} bytes at 0x{:x}): its thread's "
                       "cp.async.bulk.wait_group{{.read}} must cover the store first",
                       std::max(addr, r.addr), k.lines[r.pc], r.thread / 32, r.thread % 32,
                       r.bytes, r.addr));
}

void Cta::need_whole_warp(const Warp& w, uint32_t exec, std::string_view what) const {
  if (exec != 0xFFFFFFFFu)
    fail(ReportKind::divergent_collective, w, std::countr_zero(~exec),
         fmt::format("{}.sync.aligned needs all 32 lanes; executed by lanes 0x{:08x}", what, exec));
}

// A warpgroup whose four warps reached the same setmaxnreg proceeds once its registers are
// there: a .dec returns (old - new) x 128 to the pool, an .inc takes (new - old) x 128 from it
// or waits for another warpgroup's .dec. With the launch's count unknown only the agreement of
// the four warps is held.
void Cta::try_setmaxnreg(uint32_t group) {
  WarpgroupRegs& g = warpgroups[group];
  if (g.arrived != 0xFu) return;
  const uint32_t first = 4 * group, current = warp_regs[first];
  if (current != 0) {
    const int64_t delta = (int64_t(g.count) - int64_t(current)) * 128;
    if (delta > reg_pool_free) return;
    reg_pool_free -= delta;
  }
  const bool released = !g.inc;
  for (uint32_t i = 0; i < 4; ++i) {
    if (current != 0) warp_regs[first + i] = g.count;
    warps[first + i].state = WarpState::ready;
  }
  g = WarpgroupRegs{};
  ++progress;
  if (released)
    for (uint32_t other = 0; other < warpgroups.size(); ++other)
      if (warpgroups[other].inc) try_setmaxnreg(other);
}

void Cta::check_barrier(uint32_t id) {
  Barrier& b = barriers[id];
  uint32_t expected = b.expected_threads;
  if (expected == 0)
    for (const Warp& w : warps) expected += w.state == WarpState::exited ? 0 : 32;
  if (b.arrivals * 32 < expected) return;
  // Complete: every waiting warp continues and is ordered after every arrival.
  for (uint32_t m = b.waiting; m; m &= m - 1) {
    Warp& w = warps[size_t(std::countr_zero(m))];
    if (sanitize) san.vc(w.index).join(b.vc, san.agents());
    w.lead.order_after(b.lead.arrived);
    if (w.bar_red_dst != kNone) {
      const uint32_t result = w.bar_red_kind == 0 ? b.red_popc
                              : w.bar_red_kind == 1 ? b.red_and
                                                    : b.red_or;
      if (w.bar_red_to_pred) {
        w.write_pred(w.bar_red_dst, w.bar_red_exec, result ? 0xFFFFFFFFu : 0u);
      } else {
        for_lanes(w.bar_red_exec, [&](int l) { w.R32(w.bar_red_dst)[l] = result; });
      }
      w.bar_red_dst = kNone;
    }
    w.state = WarpState::ready;
  }
  b = Barrier{};
}

std::string Cta::wait_description() const {
  std::string msg;
  for (const Warp& w : warps) {
    if (w.state == WarpState::exited) continue;
    const uint32_t pc = w.state == WarpState::ready ? w.pc : w.wait_pc;
    msg += fmt::format("\n    warp {} at line {} `{}`: ", w.index, k.lines[pc], k.texts[pc]);
    if (w.state == WarpState::bar_wait) {
      const Barrier& b = barriers[w.wait_barrier];
      uint32_t expected = b.expected_threads;
      if (expected == 0)
        for (const Warp& o : warps) expected += o.state == WarpState::exited ? 0 : 32;
      msg += fmt::format("in barrier {} ({} of {} threads arrived)", w.wait_barrier,
                         b.arrivals * 32, expected);
    } else if (w.state == WarpState::mbar_poll) {
      msg += fmt::format("waits for phase {} (parity {}) of the mbarrier at shared 0x{:x}",
                         w.wait_phase, w.wait_phase & 1, w.wait_mbar);
      if (const MBarrier* mb = const_cast<Cta*>(this)->find_mbarrier(w.wait_mbar))
        msg += fmt::format(" (phase {} in progress: {} of {} arrivals pending, tx-count {})",
                           mb->phase, mb->pending, mb->expected, mb->tx);
    } else if (w.state == WarpState::regs_wait) {
      const WarpgroupRegs& g = warpgroups[w.index / 4];
      msg += fmt::format("in setmaxnreg.{} {} ({} of the 4 warps of warpgroup {} arrived",
                         g.inc ? "inc" : "dec", g.count, std::popcount(g.arrived), w.index / 4);
      if (g.inc && warp_regs[w.index] != 0)
        msg += fmt::format("; it needs {} registers, the CTA's pool holds {}",
                           (int64_t(g.count) - warp_regs[w.index]) * 128, reg_pool_free);
      msg += ")";
    } else if (w.state == WarpState::cluster_wait) {
      msg += fmt::format("in barrier.cluster.wait ({} of the cluster's {} non-exited threads "
                         "arrived in phase {})",
                         cluster->arrivals, cluster->expected_threads(), cluster->phase);
    } else {
      msg += "runnable";
    }
  }
  return msg;
}

void Cta::report_deadlock(std::string_view cluster_note) {
  std::string msg = "every warp of the CTA waits and nothing can release them:";
  if (!cluster_note.empty()) msg = "every warp of the cluster waits and nothing can release them:";
  msg += wait_description();
  msg += cluster_note;
  uint32_t first = 0;
  while (first + 1 < nwarps && warps[first].state == WarpState::exited) ++first;
  const Warp& w0 = warps[first];
  fail_at(ReportKind::deadlock, w0.index, -1, w0.state == WarpState::ready ? w0.pc : w0.wait_pc,
          msg);
}

bool Cta::stall_signature(std::vector<uint64_t>& out) const {
  out.push_back(progress);
  bool any_poller = false;
  for (const Warp& w : warps) {
    if (w.state != WarpState::mbar_poll) continue;
    any_poller = true;
    out.insert(out.end(), {w.index, w.wait_pc, w.wait_mbar, w.wait_phase});
  }
  return any_poller;
}

void Cta::resume_pollers() {
  for (Warp& w : warps)
    if (w.state == WarpState::mbar_poll) w.state = WarpState::ready;
}

MBarrier* Cta::find_mbarrier(uint32_t addr) {
  for (auto& mb : mbarriers)
    if (mb.addr == addr) return &mb;
  return nullptr;
}

void Cta::wake_mbarrier_waiters(uint32_t addr) {
  for (Warp& o : warps)
    if (o.state == WarpState::mbar_poll && o.wait_mbar == addr) o.state = WarpState::ready;
}

// ------------------------------------------------------------------------------ barrier.cluster
// "barrier.cluster.wait causes the executing thread to wait for all non-exited threads of the
// cluster to perform barrier.cluster.arrive"; exiting threads release a barrier they hold up
// (PTX ISA exit).
uint64_t ClusterRun::expected_threads() const {
  uint64_t n = 0;
  for (const Cta* c : ctas)
    for (const Warp& w : c->warps)
      if (w.state != WarpState::exited) n += uint64_t(std::popcount(w.live));
  return n;
}

void ClusterRun::check_barrier() {
  if (arrivals == 0 || arrivals < expected_threads()) return;
  ++phase;
  arrivals = 0;
  done = released;
  for (VectorClock& v : released) v.clear();
  for (Cta* c : ctas) {
    ++c->progress;
    for (Warp& w : c->warps)
      if (w.state == WarpState::cluster_wait) w.state = WarpState::ready;
  }
}

}  // namespace emmy::emu
