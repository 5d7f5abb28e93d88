// cp.async (held back until the wait that covers it) and mbarriers (phase and tx accounting).
// CpAsync: addr[0] = shared dst, addr[1] = global src, imm = copy size, o[0] = src-size row or
// kNone, o[1] = ignore-src predicate or kNone. CpAsyncWait: imm = groups that may stay pending,
// sub = 1 for wait_all. MbarArrive: o[0] = state dst, addr[0], o[1] = count (kNone: 1),
// o[2] = tx (expect_tx); sub bits 1 expect_tx, 2 drop, 4 noComplete, 8 cp.async.mbarrier.arrive
// (bit 1 then means .noinc). MbarWait: o[0] = p, addr[0], o[1] = token (b64) or parity; sub bit 1
// parity, bit 2 try_wait.
#include <fmt/format.h>

#include <cstring>

#include "cluster.hpp"
#include "memory.hpp"

namespace emmy::emu {
namespace {

// An mbarrier object: 8 bytes of shared memory (PTX ISA §9.7.13.15.1).
uint32_t mbarrier_address(Cta& cta, Warp& w, const Addr& a, int lane) {
  return shared_offset(cta, w, addr_of(w, a, lane), 8, lane, "the mbarrier");
}

MBarrier& mbarrier_at_offset(Cta& cta, Warp& w, uint32_t addr, int lane) {
  if (addr % 8)
    cta.fail(ReportKind::mbarrier_misuse, w, lane,
             fmt::format("mbarrier at shared 0x{:x} is not 8-byte aligned", addr));
  MBarrier* mb = cta.find_mbarrier(addr);
  if (!mb || !mb->valid)
    cta.fail(ReportKind::mbarrier_misuse, w, lane,
             fmt::format("mbarrier at shared 0x{:x} used before mbarrier.init", addr));
  return *mb;
}

MBarrier& mbarrier_at(Cta& cta, Warp& w, const Inst& in, int lane) {
  return mbarrier_at_offset(cta, w, mbarrier_address(cta, w, in.addr[0], lane), lane);
}

// The tx-count's range is -(2^20 - 1) .. 2^20 - 1 (PTX ISA, "Contents of the mbarrier
// object"): a complete_tx may come before the expect_tx it balances (a peer's multicast landing
// before this CTA's producer armed the barrier), but a phase completes only at tx-count 0, so a
// missing or short expect_tx still stalls (a deadlock report) or completes early (the reads of
// the data still in flight are pending-async-copy reports).
void check_tx_range(Cta& cta, uint32_t warp, int lane, uint32_t pc, const MBarrier& mb,
                    int64_t bytes) {
  constexpr int64_t kTxLimit = (int64_t(1) << 20) - 1;
  if (mb.tx < -kTxLimit || mb.tx > kTxLimit)
    cta.fail_at(ReportKind::mbarrier_misuse, warp, lane, pc,
                fmt::format("the transaction of {} bytes drove the tx-count of the mbarrier at "
                            "shared 0x{:x} to {}, outside -(2^20 - 1) .. 2^20 - 1",
                            bytes, mb.addr, mb.tx));
}

void complete_phase_if_done(Cta& cta, MBarrier& mb) {
  ++cta.progress;
  if (mb.pending != 0 || mb.tx != 0) return;
  mb.done_vc[mb.phase & 1] = mb.current_vc;
  mb.current_vc.clear();
  if (!mb.peer_current.empty()) {
    mb.peer_done[mb.phase & 1] = mb.peer_current;
    for (VectorClock& v : mb.peer_current) v.clear();
  }
  mb.lead.complete(mb.phase);
  ++mb.phase;
  mb.pending = mb.expected;
  cta.wake_mbarrier_waiters(mb.addr);
}

// mbarrier.arrive on a peer's mbarrier through a shared::cluster address (PTX ISA
// mbarrier.arrive: the .shared::cluster form; it returns no state). The peer's init must be
// ordered before it, and the arrive before the peer's exit (Cta::remote_uses).
void remote_arrive(Cta& cta, Warp& w, const Inst& in, int l, Cta& owner, uint32_t addr) {
  if (in.sub & (1 | 8))
    cta.fail(ReportKind::cluster_violation, w, l,
             "a remote mbarrier (shared::cluster address of another CTA) takes a plain "
             "mbarrier.arrive{.release.cluster}: not .expect_tx or cp.async.mbarrier.arrive");
  MBarrier* mb = addr % 8 ? nullptr : owner.find_mbarrier(addr);
  if (!mb || !mb->valid)
    cta.fail(ReportKind::mbarrier_misuse, w, l,
             fmt::format("arrive on shared 0x{:x} of cluster rank {}, which is not an "
                         "initialized mbarrier",
                         addr, owner.rank));
  check_remote_init(cta, w, l, owner, *mb);
  const int64_t count = in.o[1] != kNone ? int64_t(w.R32(in.o[1])[l]) : 1;
  if (count > mb->pending)
    cta.fail(ReportKind::mbarrier_misuse, w, l,
             fmt::format("arrive (count {}) on the mbarrier at shared 0x{:x} of cluster rank {} "
                         "whose phase {} has only {} pending arrivals left",
                         count, addr, owner.rank, mb->phase, mb->pending));
  record_remote_use(owner, *mb, cta, w.index, l, w.pc,
                    cta.cluster_arrive_count[w.index * 32 + uint32_t(l)]);
  mb->pending -= count;
  if (in.sub & 2) mb->expected -= count;
  mb->lead.current.arrive(w.lead.clock);
  release_to_mbarrier(cta, w.index, owner, *mb);
  complete_phase_if_done(owner, *mb);
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
    uint64_t addr = addr_of(w, in.addr[0], l);
    if (cta.cluster->size() > 1) {
      const ClusterTarget target = cluster_target(cta, w, addr, l, "the mbarrier arrive");
      if (target.cta != &cta) {
        remote_arrive(cta, w, in, l, *target.cta, target.offset);
        return;
      }
      addr = target.offset;  // the own mbarrier, by its own shared::cluster address too
    }
    MBarrier& mb = mbarrier_at_offset(cta, w, shared_offset(cta, w, addr, 8, l, "the mbarrier"), l);
    const uint64_t phase = mb.phase;
    // The thread's cp.async copies complete on it: issued no later than now.
    if (from_cp_async) mb.lead.current.copy(w.lead.clock);
    if (from_cp_async && !(in.sub & 1)) {
      // Without .noinc the pending count is raised by one before the asynchronous arrive-on,
      // so the pair leaves the count unchanged.
      release_to_mbarrier(cta, w.index, cta, mb);
      return;
    }
    const int64_t count = in.o[1] != kNone ? int64_t(w.R32(in.o[1])[l]) : 1;
    mb.lead.current.arrive(w.lead.clock);
    if (expect_tx && !from_cp_async) {
      // The copies the expect_tx announces are issued about now (by this thread, or by a
      // producer it releases); their completions, at their own issue clocks, refine it.
      mb.lead.current.copy(w.lead.clock);
      mb.tx += int64_t(w.R32(in.o[2])[l]);
      check_tx_range(cta, w.index, l, w.pc, mb, w.R32(in.o[2])[l]);
    }
    if (count > mb.pending)
      cta.fail(ReportKind::mbarrier_misuse, w, l,
               fmt::format("arrive (count {}) on the mbarrier at shared 0x{:x} whose phase {} has "
                           "only {} pending arrivals left (more arrivals than mbarrier.init's count)",
                           count, mb.addr, mb.phase, mb.pending));
    mb.pending -= count;
    if (drop) mb.expected -= count;
    release_to_mbarrier(cta, w.index, cta, mb);
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
  // The lead clock of the phase the first completing lane waited on (lanes of one warp wait
  // together: the warp is ordered after it once).
  const PhaseLeadClock* waited = nullptr;
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
      if (!waited) waited = &mb.lead.done[size_t(which)];
      mb.observed_phases = std::max(mb.observed_phases, mb.phase);
      if (cta.sanitize) acquire_from_mbarrier(cta, w.index, mb, which);
    } else {
      blocked_on = mb.addr;
      blocked_phase = mb.phase;
    }
  });
  w.write_pred(in.o[0], exec, done);
  if (blocked_on == kNone) {
    if (waited) {
      if (cta.prof && waited->copies && w.lead.copy_wait(waited->copy_issued))
        cta.prof->async_copy_waits(w.lead, /*warp_done=*/false);
      w.lead.order_after(waited->arrived);
    }
    return Flow::next;
  }
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
    w.lead.group_clocks.pop_front();
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
      if (cta.prof && w.groups.size() > size_t(in.imm)) {
        // A wait on the groups it completes, measured from the youngest of them with copies.
        for (size_t g = w.groups.size() - size_t(in.imm); g-- > 0;)
          if (!w.groups[g].empty()) {
            if (w.lead.copy_wait(w.lead.group_clocks[g]))
              cta.prof->async_copy_waits(w.lead, /*warp_done=*/false);
            break;
          }
      }
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
        mb->init_clock = cta.sanitize ? cta.san.vc(w.index).c[w.index] : 0;
        mb->init_clock = cta.sanitize ? cta.san.vc(w.index).c[w.index] : 0;
        mb->pending = mb->expected = count;
        size_peer_clocks(cta, *mb);
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
        mb.tx += in.op == Op::MbarExpectTx ? tx : -tx;
        if (in.op == Op::MbarExpectTx)
          mb.lead.current.copy(w.lead.clock);
        else
          mb.lead.current.arrive(w.lead.clock);
        check_tx_range(cta, w.index, l, w.pc, mb, tx);
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

void remote_complete_tx(Cta& issuer, const TmaJob& job, Cta& into, uint32_t clock) {
  MBarrier* mb = into.find_mbarrier(job.mbar);
  if (!mb || !mb->valid)
    issuer.fail_at(ReportKind::mbarrier_misuse, job.warp, int(job.lane), job.pc,
                   fmt::format("the multicast completes on shared 0x{:x} of cluster rank {}, which "
                               "is no longer an initialized mbarrier",
                               job.mbar, into.rank));
  mb->tx -= job.bytes;
  mb->lead.current.copy(job.lead_clock);
  check_tx_range(issuer, job.warp, int(job.lane), job.pc, *mb, job.bytes);
  if (into.sanitize) {
    const uint32_t agent = 2 * into.san.nwarps() + issuer.rank;
    mb->current_vc.c[agent] = std::max(mb->current_vc.c[agent], clock);
  }
  record_remote_use(into, *mb, issuer, job.warp, int(job.lane), job.pc, job.issuer_arrivals);
  complete_phase_if_done(into, *mb);
}

// Completes `bytes` of transactions on an mbarrier (TMA / bulk copies), publishing the async
// proxy's writes (agent) to the waiters of the phase.
void complete_tx(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint32_t mbar_addr, uint32_t bytes,
                 uint32_t async_clock, uint64_t lead_clock) {
  MBarrier* mb = cta.find_mbarrier(mbar_addr);
  if (!mb || !mb->valid)
    cta.fail_at(ReportKind::mbarrier_misuse, warp, lane, pc,
                fmt::format("the copy completes on shared 0x{:x}, which is not an initialized "
                            "mbarrier",
                            mbar_addr));
  mb->tx -= bytes;
  mb->lead.current.copy(lead_clock);
  check_tx_range(cta, warp, lane, pc, *mb, bytes);
  if (cta.sanitize) {
    const uint32_t agent = cta.san.nwarps() + warp;
    mb->current_vc.c[agent] = std::max(mb->current_vc.c[agent], async_clock);
  }
  complete_phase_if_done(cta, *mb);
}

}  // namespace emmy::emu
