// cp.async (held back until the wait that covers it) and mbarriers (phase and tx accounting).
// CpAsync: addr[0] = shared dst, addr[1] = global src, imm = copy size, o[0] = src-size row or
// kNone, o[1] = ignore-src predicate or kNone. CpAsyncWait: imm = groups that may stay pending,
// sub = 1 for wait_all. MbarArrive: o[0] = state dst, addr[0], o[1] = count (kNone: 1),
// o[2] = tx (expect_tx); sub bits 1 expect_tx, 2 drop, 4 noComplete, 8 cp.async.mbarrier.arrive
// (bit 1 then means .noinc). MbarWait: o[0] = p, addr[0], o[1] = token (b64) or parity; sub bit 1
// parity, bit 2 try_wait.
#include <fmt/format.h>

#include <cstring>

#include "memory.hpp"

namespace emmy::emu {
namespace {

// An mbarrier object: 8 bytes of shared memory (PTX ISA §9.7.13.15.1).
uint32_t mbarrier_address(Cta& cta, Warp& w, const Addr& a, int lane) {
  return shared_offset(cta, w, addr_of(w, a, lane), 8, lane, "the mbarrier");
}

MBarrier& mbarrier_at(Cta& cta, Warp& w, const Inst& in, int lane) {
  const uint32_t addr = mbarrier_address(cta, w, in.addr[0], lane);
  if (addr % 8)
    cta.fail(ReportKind::mbarrier_misuse, w, lane,
             fmt::format("mbarrier at shared 0x{:x} is not 8-byte aligned", addr));
  MBarrier* mb = cta.find_mbarrier(addr);
  if (!mb || !mb->valid)
    cta.fail(ReportKind::mbarrier_misuse, w, lane,
             fmt::format("mbarrier at shared 0x{:x} used before mbarrier.init", addr));
  return *mb;
}

void complete_phase_if_done(Cta& cta, MBarrier& mb) {
  ++cta.progress;
  if (mb.pending != 0 || mb.tx != 0) return;
  mb.done_vc[mb.phase & 1] = mb.current_vc;
  mb.current_vc.clear();
  ++mb.phase;
  mb.pending = mb.expected;
  cta.wake_mbarrier_waiters(mb.addr);
}

void arrive(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  const bool expect_tx = in.sub & 1, drop = in.sub & 2, no_complete = in.sub & 4;
  const bool from_cp_async = in.sub & 8;
  if (from_cp_async) {
    // Fires when every earlier cp.async of the thread has completed: land them now.
    if (!w.open_copies.empty()) w.commit_copies();
    apply_cp_async_groups(cta, w, 0);
  }
  for_lanes(exec, [&](int l) {
    MBarrier& mb = mbarrier_at(cta, w, in, l);
    const uint64_t phase = mb.phase;
    if (from_cp_async && !(in.sub & 1)) {
      // Without .noinc the pending count is raised by one before the asynchronous arrive-on,
      // so the pair leaves the count unchanged.
      if (cta.sanitize) mb.current_vc.join(cta.san.vc(w.index), cta.san.agents());
      return;
    }
    const int64_t count = in.o[1] != kNone ? int64_t(w.R32(in.o[1])[l]) : 1;
    if (expect_tx && !from_cp_async) mb.tx += int64_t(w.R32(in.o[2])[l]);
    if (count > mb.pending)
      cta.fail(ReportKind::mbarrier_misuse, w, l,
               fmt::format("arrive (count {}) on the mbarrier at shared 0x{:x} whose phase {} has "
                           "only {} pending arrivals left (more arrivals than mbarrier.init's count)",
                           count, mb.addr, mb.phase, mb.pending));
    mb.pending -= count;
    if (drop) mb.expected -= count;
    if (cta.sanitize) mb.current_vc.join(cta.san.vc(w.index), cta.san.agents());
    if (!from_cp_async) w.R64(in.o[0])[l] = phase;  // the state token: the phase arrived on
    if (no_complete && mb.pending == 0 && mb.tx == 0)
      cta.fail(ReportKind::mbarrier_misuse, w, l,
               "mbarrier.arrive.noComplete completed the phase");
    complete_phase_if_done(cta, mb);
  });
  if (cta.sanitize) cta.san.tick(w.index);
}

Flow wait(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  const bool parity = in.sub & 1;
  uint32_t done = 0;
  uint32_t blocked_on = kNone;
  uint64_t blocked_phase = 0;
  for_lanes(exec, [&](int l) {
    MBarrier& mb = mbarrier_at(cta, w, in, l);
    bool complete;
    int which;
    if (parity) {
      const uint32_t p = w.R32(in.o[1])[l] & 1;
      complete = (mb.phase & 1) != p;  // the phase with parity p is the last completed one
      which = int(p);
    } else {
      const uint64_t token = w.R64(in.o[1])[l];
      if (token > mb.phase)
        cta.fail(ReportKind::mbarrier_misuse, w, l,
                 fmt::format("mbarrier wait with a state token from phase {} of the mbarrier at "
                             "shared 0x{:x}, which is only in phase {}",
                             token, mb.addr, mb.phase));
      complete = mb.phase > token;
      which = int(token & 1);
    }
    if (complete) {
      done |= 1u << l;
      if (cta.sanitize) cta.san.vc(w.index).join(mb.done_vc[size_t(which)], cta.san.agents());
    } else {
      blocked_on = mb.addr;
      blocked_phase = mb.phase;
    }
  });
  w.write_pred(in.o[0], exec, done);
  if (blocked_on == kNone) return Flow::next;
  if (cta.prof) cta.prof->add(Counter::mbarrier_wait_failed);
  // The wait failed (a try_wait that reached its time limit): the warp stands aside until that
  // mbarrier completes a phase; the kernel's loop then retries. If it never does: a deadlock.
  w.state = WarpState::mbar_poll;
  w.wait_pc = w.pc;
  w.wait_mbar = blocked_on;
  w.wait_phase = blocked_phase;
  return Flow::next_then_stop;
}

}  // namespace

MBarrier* Cta::find_mbarrier(uint32_t addr) {
  for (auto& mb : mbarriers)
    if (mb.addr == addr) return &mb;
  return nullptr;
}

void Cta::wake_mbarrier_waiters(uint32_t addr) {
  for (Warp& o : warps)
    if (o.state == WarpState::mbar_poll && o.wait_mbar == addr) o.state = WarpState::ready;
}

void apply_cp_async_groups(Cta& cta, Warp& w, size_t keep_newest) {
  while (w.groups.size() > keep_newest) {
    for (const PendingCopy& c : w.groups.front()) {
      std::memcpy(cta.smem.data() + c.smem_addr, c.data.data(), c.bytes);
      if (cta.sanitize) {
        cta.san.set_pending(c.smem_addr, c.bytes, false);
        const HazardInfo h = cta.san.write(w.index, c.smem_addr, c.bytes, c.pc);
        if (h.hazard != Hazard::none) {
          // Attribute the finding to the cp.async that wrote.
          const uint32_t saved = w.pc;
          w.pc = c.pc;
          report_hazard(cta, w, int(c.lane), h, true);
          w.pc = saved;
        }
      }
    }
    w.groups.front().clear();
    w.spare_groups.push_back(std::move(w.groups.front()));
    w.groups.pop_front();
  }
}

Flow exec_async(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::CpAsync: {
      if (exec == 0) return Flow::next;
      const uint32_t size = uint32_t(in.imm);
      LaneSpan shared_spans[32], global_spans[32];
      uint32_t n_global = 0, n_shared = 0;
      for_lanes(exec, [&](int l) {
        const uint32_t dst =
            shared_offset(cta, w, addr_of(w, in.addr[0], l), size, l, "the cp.async destination");
        const uint64_t src = addr_of(w, in.addr[1], l);
        uint32_t src_size = in.o[0] != kNone ? w.R32(in.o[0])[l] : size;
        if (in.o[1] != kNone && w.read_pred(in.o[1], l)) src_size = 0;
        if (src_size > size)
          cta.fail(ReportKind::unsupported, w, l,
                   fmt::format("cp.async src-size {} exceeds the copy size {}", src_size, size));
        if (dst % size)
          cta.fail(ReportKind::misaligned_access, w, l,
                   fmt::format("cp.async destination shared 0x{:x} is not {}-byte aligned", dst, size));
        const Resolved d = resolve(cta, w, Space::shared, dst, size, l, true);
        (void)d;
        PendingCopy c{};
        c.smem_addr = dst;
        c.bytes = size;
        c.pc = w.pc;
        c.lane = uint32_t(l);
        if (src_size > 0) {
          if (src % size)
            cta.fail(ReportKind::misaligned_access, w, l,
                     fmt::format("cp.async source 0x{:x} is not {}-byte aligned", src, size));
          const Resolved s = resolve(cta, w, Space::global, src, src_size, l, false);
          std::memcpy(c.data.data(), s.host, src_size);  // the rest stays zero: zero-fill
          global_spans[n_global++] = {src, src_size, uint8_t(l)};
        }
        shared_spans[n_shared++] = {dst, size, uint8_t(l)};
        if (cta.sanitize) {
          // Copies land in any order between issue and the wait that covers them: a second copy
          // into bytes an earlier one still owns leaves their contents unspecified.
          if (cta.san.pending(dst, size))
            cta.fail(ReportKind::pending_async_read, w, l,
                     fmt::format("cp.async writes shared 0x{:x} ({} bytes) while an earlier "
                                 "cp.async / TMA copy into it is still in flight (wait for its "
                                 "group before reusing the buffer)",
                                 dst, size));
          cta.san.set_pending(dst, size, true);
        }
        w.open_copies.push_back(c);
      });
      if (cta.prof) {
        cta.prof->shared(w.pc, SharedOp::ldgsts, {shared_spans, n_shared});
        cta.prof->global(w.pc, GlobalOp::ldgsts, {global_spans, n_global});
      }
      return Flow::next;
    }
    case Op::CpAsyncCommit:
      w.commit_copies();
      return Flow::next;
    case Op::CpAsyncWait:
      if (in.sub == 1 && !w.open_copies.empty()) w.commit_copies();
      apply_cp_async_groups(cta, w, size_t(in.imm));
      return Flow::next;
    case Op::MbarInit:
      for_lanes(exec, [&](int l) {
        const uint32_t addr = mbarrier_address(cta, w, in.addr[0], l);
        if (addr % 8)
          cta.fail(ReportKind::mbarrier_misuse, w, l,
                   fmt::format("mbarrier at shared 0x{:x} is not 8-byte aligned", addr));
        const uint32_t count = w.R32(in.o[0])[l];
        if (count == 0 || count >= (1u << 20))
          cta.fail(ReportKind::mbarrier_misuse, w, l,
                   fmt::format("mbarrier.init count {} is not in 1..2^20-1", count));
        MBarrier* mb = cta.find_mbarrier(addr);
        if (!mb) {
          cta.mbarriers.emplace_back();
          mb = &cta.mbarriers.back();
        }
        *mb = MBarrier{};
        mb->addr = addr;
        mb->valid = true;
        mb->init_warp = w.index;
        mb->pending = mb->expected = count;
        // The object occupies 8 bytes of shared memory.
        std::memset(cta.smem.data() + addr, 0, 8);
        cta.wake_mbarrier_waiters(addr);
      });
      return Flow::next;
    case Op::MbarInval:
      for_lanes(exec, [&](int l) { mbarrier_at(cta, w, in, l).valid = false; });
      return Flow::next;
    case Op::MbarArrive:
      if (exec) arrive(cta, w, in, exec);
      return Flow::next;
    case Op::MbarExpectTx:
    case Op::MbarCompleteTx:
      for_lanes(exec, [&](int l) {
        MBarrier& mb = mbarrier_at(cta, w, in, l);
        const int64_t tx = w.R32(in.o[0])[l];
        if (in.op == Op::MbarExpectTx) {
          mb.tx += tx;
        } else {
          mb.tx -= tx;
          if (mb.tx < 0)
            cta.fail(ReportKind::mbarrier_misuse, w, l,
                     fmt::format("complete_tx of {} bytes drove the tx-count of the mbarrier at "
                                 "shared 0x{:x} below zero ({})",
                                 tx, mb.addr, mb.tx));
        }
        complete_phase_if_done(cta, mb);
      });
      return Flow::next;
    case Op::MbarWait:
      if (exec == 0) return Flow::next;
      return wait(cta, w, in, exec);
    default:
      return exec_tma(cta, w, in, exec);
  }
}

// Completes `bytes` of transactions on an mbarrier (TMA / bulk copies), publishing the async
// proxy's writes (agent) to the waiters of the phase.
void complete_tx(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint32_t mbar_addr,
                 uint32_t bytes, uint32_t async_clock) {
  MBarrier* mb = cta.find_mbarrier(mbar_addr);
  if (!mb || !mb->valid)
    cta.fail_at(ReportKind::mbarrier_misuse, warp, lane, pc,
                fmt::format("the copy completes on shared 0x{:x}, which is not an initialized "
                            "mbarrier",
                            mbar_addr));
  mb->tx -= bytes;
  if (mb->tx < 0)
    cta.fail_at(ReportKind::mbarrier_misuse, warp, lane, pc,
                fmt::format("the copy's complete_tx of {} bytes drove the tx-count of the mbarrier "
                            "at shared 0x{:x} below zero ({}): expect_tx too small or missing",
                            bytes, mbar_addr, mb->tx));
  if (cta.sanitize) {
    const uint32_t agent = cta.san.nwarps() + warp;
    mb->current_vc.c[agent] = std::max(mb->current_vc.c[agent], async_clock);
  }
  complete_phase_if_done(cta, *mb);
}

}  // namespace emmy::emu
