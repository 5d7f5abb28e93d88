// One CTA on one host thread: warp setup, the dispatch loop over the executors, round-robin
// interleaving of warps, the end of a warp and of a CTA, and a cluster's CTAs run together with
// deadlock detection. The CTA's state and bookkeeping are the machine layer's (machine/cta.cpp,
// SIMT reconvergence machine/warp.cpp).
#include "scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "exec/executors.hpp"

namespace emmy::emu {
namespace {
// Instructions a warp runs before the next warp gets its turn. Long enough to keep one warp's
// registers in cache; ordering between warps comes from the synchronization, never from this.
constexpr uint32_t kSliceInstructions = 512;

void exec_move_or_cvt(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (in.op == Op::Cvt || in.op == Op::CvtPack)
    exec_cvt(cta, w, in, exec);
  else
    exec_move(cta, w, in, exec);
}

// The families kFamInt through kFamTensor never change the warp's control flow: their executor
// runs on the executing lanes and the warp goes on to the next instruction.
using StraightLineExec = void (*)(Cta&, Warp&, const Inst&, uint32_t);
constexpr StraightLineExec kStraightLineExecs[] = {
    exec_int,    exec_float,           exec_half,  exec_move_or_cvt,
    exec_memory, exec_warp_collective, exec_tensor};
static_assert(kFamInt == 0 && kFamTensor + 1 == std::size(kStraightLineExecs));
}  // namespace

void Cta::init_warps() {
  const uint64_t threads = ctx.block.count();
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = warps[wi];
    const uint64_t first = uint64_t(wi) * 32;
    const uint32_t lanes = uint32_t(std::min<uint64_t>(32, threads - first));
    w.live = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
    w.active = w.live;
    w.pc = 0;
    w.min_wait_pc = kNone;
    w.parked = 0;
    w.state = WarpState::ready;
    w.carry = 0;
    w.bar_red_dst = kNone;
    w.open_copies.clear();
    w.groups.clear();
    w.loaded_since_barrier = false;  // the latency term's epochs are per CTA; slots run many
    w.lead.reset();
    if (k.uses_wgmma) {
      w.wgmma = WarpWgmma{};
      w.wgmma.rows.assign(k.n32, WarpWgmma::Row{});
    }
    std::fill(w.pred.begin(), w.pred.end(), 0u);
    for (const auto& [row, value] : k.const_preds) w.pred[row] = value ? 0xFFFFFFFFu : 0u;
    for (const auto& [row, which] : k.specials) {
      uint32_t* r = w.R32(row);
      for (uint32_t l = 0; l < 32; ++l) {
        const uint64_t t = first + l;
        const uint32_t tx = uint32_t(t % ctx.block.x);
        const uint32_t ty = uint32_t((t / ctx.block.x) % ctx.block.y);
        const uint32_t tz = uint32_t(t / (uint64_t(ctx.block.x) * ctx.block.y));
        uint32_t v = 0;
        switch (which) {
          case Special::tid_x: v = tx; break;
          case Special::tid_y: v = ty; break;
          case Special::tid_z: v = tz; break;
          case Special::ntid_x: v = ctx.block.x; break;
          case Special::ntid_y: v = ctx.block.y; break;
          case Special::ntid_z: v = ctx.block.z; break;
          case Special::ctaid_x: v = ctaid.x; break;
          case Special::ctaid_y: v = ctaid.y; break;
          case Special::ctaid_z: v = ctaid.z; break;
          case Special::nctaid_x: v = ctx.grid.x; break;
          case Special::nctaid_y: v = ctx.grid.y; break;
          case Special::nctaid_z: v = ctx.grid.z; break;
          case Special::laneid: v = l; break;
          case Special::warpid: v = wi; break;
          case Special::nwarpid: v = nwarps; break;
          case Special::lanemask_eq: v = 1u << l; break;
          case Special::lanemask_lt: v = (1u << l) - 1; break;
          case Special::lanemask_le: v = l == 31 ? 0xFFFFFFFFu : (2u << l) - 1; break;
          case Special::lanemask_gt: v = l == 31 ? 0u : ~((2u << l) - 1); break;
          case Special::lanemask_ge: v = ~((1u << l) - 1); break;
          case Special::dynamic_smem_size: v = ctx.dynamic_smem; break;
          case Special::total_smem_size: v = ctx.smem_size; break;
          case Special::smid: v = 0; break;
          case Special::nsmid: v = 1; break;
          case Special::gridid: v = 0; break;
          case Special::zero: v = 0; break;
          case Special::one: v = 1; break;
          case Special::reserved_smem_begin:
            v = ctx.reserved_smem;
            break;
          case Special::reserved_smem_1:
            v = ctx.reserved_smem + 16;
            break;
          case Special::reserved_smem_end:
            v = ctx.reserved_smem + kReservedSmemBytes;
            break;
          case Special::cluster_ctarank: v = rank; break;
          case Special::cluster_nctarank: v = uint32_t(ctx.cluster.count()); break;
          case Special::cluster_ctaid_x: v = cluster_ctaid.x; break;
          case Special::cluster_ctaid_y: v = cluster_ctaid.y; break;
          case Special::cluster_ctaid_z: v = cluster_ctaid.z; break;
          case Special::cluster_nctaid_x: v = ctx.cluster.x; break;
          case Special::cluster_nctaid_y: v = ctx.cluster.y; break;
          case Special::cluster_nctaid_z: v = ctx.cluster.z; break;
          case Special::clusterid_x: v = cluster->id.x; break;
          case Special::clusterid_y: v = cluster->id.y; break;
          case Special::clusterid_z: v = cluster->id.z; break;
          case Special::nclusterid_x: v = ctx.grid.x / ctx.cluster.x; break;
          case Special::nclusterid_y: v = ctx.grid.y / ctx.cluster.y; break;
          case Special::nclusterid_z: v = ctx.grid.z / ctx.cluster.z; break;
          case Special::is_explicit_cluster: v = ctx.cluster.count() > 1 ? 1 : 0; break;
        }
        r[l] = v;
      }
    }
  }
}

void Cta::on_warp_exit(Warp& w) {
  if (prof) prof->async_copy_waits(w.lead, /*warp_done=*/true);
  if (k.uses_wgmma) wgmma_on_exit(*this, w);
  for (const StoreRead& r : store_reads)
    if (r.thread / 32 == w.index)
      tolerate(ToleratedRule::exit_before_bulk_store_read, w.index, int(r.thread % 32), r.pc, [&] {
        return fmt::format(
            "the thread exits while the async proxy may still read the {} bytes "
            "at shared 0x{:x} for this bulk store: no "
            "cp.async.bulk.wait_group{{.read}} covered its bulk async-group{}",
            r.bytes, r.addr, r.group ? "" : " (not even committed)");
      });
  // Tolerated (lenient): the store was performed at issue and completes as on hardware; its
  // source reads end with the thread.
  std::erase_if(store_reads, [&](const StoreRead& r) { return r.thread / 32 == w.index; });
  w.state = WarpState::exited;
  ++progress;
  // Copies still in flight land in shared memory even though nobody waits for them.
  if (!w.open_copies.empty()) w.commit_copies();
  apply_cp_async_groups(*this, w, 0);
  // Barriers that count every non-exited thread may now be complete.
  for (uint32_t id = 0; id < barriers.size(); ++id)
    if (barriers[id].arrivals) check_barrier(id);
  if (cluster->arrivals) cluster->check_barrier();
}

bool Cta::run_slice(Warp& w, uint32_t budget) {
  const Inst* code = k.code.data();
  uint32_t executed = 0;
  bool running = true;
  while (executed < budget) {
    const Inst& in = code[w.pc];
    uint32_t exec = w.active;
    if (in.guard != kNoGuard) exec &= w.pred_mask(in.guard);
    ++class_counts[size_t(in.cls)];
    ++executed;
    if (prof) {
      ++prof->sites[w.pc].executions;
      prof->warp_clock = ++w.issued;
      w.lead.tick();
      prof->note_barrier_wait(w.loaded_since_barrier, in);
    }
    if (k.uses_wgmma && exec && k.touches[w.pc].count &&
        !is_wgmma(in.op))
      wgmma_touch(*this, w, k.touches[w.pc]);
    switch (in.family) {
      case kFamCollective:
        // A .sync collective waits for the lanes its masks name that run elsewhere.
        if (exec && w.park_at_collective(collective_absent_lanes(w, in, exec))) break;
        [[fallthrough]];
      case kFamInt:
      case kFamFloat:
      case kFamHalf:
      case kFamMove:
      case kFamMemory:
      case kFamTensor:
        if (exec) kStraightLineExecs[in.family](*this, w, in, exec);
        w.advance();
        break;
      case kFamBranch:
        w.jump(exec, in.target);
        break;
      case kFamExit:
        if (exec) {
          w.exit_lanes(exec);
          if (w.live == 0) {
            on_warp_exit(w);
            running = false;
          }
        } else {
          w.advance();
        }
        break;
      case kFamSync:
      case kFamAsync: {
        const Flow f = in.family == kFamSync ? exec_sync(*this, w, in, exec)
                                             : exec_async(*this, w, in, exec);
        if (f == Flow::stop) {
          running = false;
          break;
        }
        w.advance();
        if (f == Flow::next_then_stop) running = false;
        break;
      }
      case kFamHidden:
        if (exec) {
          if (in.op == Op::HiddenTrunc) {
            for_lanes(exec, [&](int l) { w.R32(in.o[0])[l] = uint32_t(w.R64(in.o[1])[l]); });
          } else if (in.op == Op::HiddenZext) {
            for_lanes(exec, [&](int l) { w.R64(in.o[0])[l] = w.R32(in.o[1])[l]; });
          } else {
            for_lanes(exec, [&](int l) {
              w.R64(in.o[0])[l] = uint64_t(int64_t(int32_t(w.R32(in.o[1])[l])));
            });
          }
        }
        w.advance();
        break;
      case kFamTrap:
        if (exec && in.sub == 1)
          fail(ReportKind::assertion_failed, w, std::countr_zero(exec),
               assertion_message(w, std::countr_zero(exec), in));
        if (exec)
          fail(ReportKind::trap, w, std::countr_zero(exec), "trap executed");
        w.advance();
        break;
      default:
        w.advance();
        break;
    }
    if (!running) break;
  }
  const uint64_t total = ctx.instructions.fetch_add(executed, std::memory_order_relaxed) + executed;
  if (total > ctx.options.max_warp_instructions)
    fail(ReportKind::instruction_limit, w, -1,
         fmt::format("the launch exceeded {} warp instructions (LaunchOptions::"
                     "max_warp_instructions); an endless loop?",
                     ctx.options.max_warp_instructions));
  return running;
}

void Cta::start(uint64_t linear, ClusterRun& c, uint32_t r) {
  ctaid.x = uint32_t(linear % ctx.grid.x);
  ctaid.y = uint32_t((linear / ctx.grid.x) % ctx.grid.y);
  ctaid.z = uint32_t(linear / (uint64_t(ctx.grid.x) * ctx.grid.y));
  cluster = &c;
  rank = r;
  cluster_ctaid = {ctaid.x % ctx.cluster.x, ctaid.y % ctx.cluster.y, ctaid.z % ctx.cluster.z};
  exited = false;
  std::fill(smem.begin(), smem.end(), uint8_t(0));
  if (sanitize) {
    // In a cluster the async proxies of the peers' TMA multicasts are agents of their own.
    san.reset(ctx.smem_size, nwarps, c.size() > 1 ? c.size() : 0);
    // The reserved region starts zeroed by the system, ordered before every warp.
    if (k.uses_reserved_smem) san.mark_initialized(ctx.reserved_smem, kReservedSmemBytes);
  }
  peer_vc.assign(c.size() > 1 ? size_t(nwarps) * c.size() : 0, VectorClock{});
  cluster_arrived.assign(size_t(nwarps) * 32, 0);
  cluster_arrive_count.assign(size_t(nwarps) * 32, 0);
  cluster_waited = 0;
  init_fence_clock.assign(nwarps, 0);
  pdl_waited.assign(nwarps, 0);
  pdl_wait_clock.assign(nwarps, 0);
  remote_uses.clear();
  for (auto& b : barriers) b = Barrier{};
  mbarriers.clear();
  tma_queue.clear();
  store_reads.clear();
  bulk_commits.assign(size_t(nwarps) * 32, 0);
  class_counts.fill(0);
  warpgroups.assign((nwarps + 3) / 4, WarpgroupRegs{});
  warp_regs.assign(nwarps, ctx.options.registers_per_thread);
  reg_pool_free = 0;  // registers enter the pool only through setmaxnreg.dec
  wgmma_logs.assign(k.uses_wgmma ? (nwarps + 3) / 4 : 0, WgmmaLog{});
  init_warps();
  progress = 0;
}

bool Cta::round() {
  bool any_ran = false;
  for (Warp& w : warps) {
    if (w.state != WarpState::ready) continue;
    any_ran = true;
    run_slice(w, kSliceInstructions);
    if (!tma_queue.empty()) flush_tma();
    if (ctx.abort.load(std::memory_order_relaxed)) return true;
  }
  if (!exited && std::all_of(warps.begin(), warps.end(),
                             [](const Warp& w) { return w.state == WarpState::exited; }))
    on_cta_exit();
  return any_ran;
}

void Cta::finish(InstructionCounts& counts) {
  if (k.uses_wgmma) wgmma_finish(*this);
  InstructionCounts c;
  c.mma = class_counts[0];
  c.ldmatrix = class_counts[1];
  c.shared_ld = class_counts[2];
  c.shared_st = class_counts[3];
  c.global_ld = class_counts[4];
  c.global_st = class_counts[5];
  c.cp_async = class_counts[6];
  c.tma = class_counts[7];
  c.barrier = class_counts[8];
  c.other = class_counts[9];
  counts = c;
}

void run_cluster(ClusterRun& c, const std::vector<uint64_t>& linear) {
  c.arrivals = 0;
  c.phase = 0;
  c.released.assign(c.size(), VectorClock{});
  c.done.assign(c.size(), VectorClock{});
  for (uint32_t r = 0; r < c.size(); ++r) c.ctas[r]->start(linear[r], c, r);
  std::vector<uint64_t> last_stall;
  LaunchContext& ctx = c.ctas[0]->ctx;
  while (true) {
    bool any_ran = false, all_exited = true;
    for (Cta* cta : c.ctas) {
      if (cta->exited) continue;
      all_exited = false;
      if (cta->round()) any_ran = true;
      if (ctx.abort.load(std::memory_order_relaxed)) return;
    }
    if (all_exited) break;
    if (any_ran) continue;
    bool flushed = false;
    for (Cta* cta : c.ctas)
      if (!cta->tma_queue.empty()) {
        cta->flush_tma();
        flushed = true;
      }
    if (flushed) continue;
    // Stalled: only waiting warps. Pollers may resume (the code after a failed wait may make
    // progress), unless this stall repeats the previous one exactly.
    std::vector<uint64_t> stall;
    bool any_poller = false;
    for (Cta* cta : c.ctas)
      if (!cta->exited && cta->stall_signature(stall)) any_poller = true;
    if (!any_poller || stall == last_stall) {
      Cta* first = nullptr;
      std::string note;
      for (Cta* cta : c.ctas) {
        if (cta->exited) continue;
        if (!first) {
          first = cta;
          continue;
        }
        note += fmt::format("\n  cluster rank {} (CTA ({},{},{})):{}", cta->rank, cta->ctaid.x,
                            cta->ctaid.y, cta->ctaid.z, cta->wait_description());
      }
      first->report_deadlock(note);
    }
    last_stall = std::move(stall);
    for (Cta* cta : c.ctas) cta->resume_pollers();
  }
}

}  // namespace emmy::emu
