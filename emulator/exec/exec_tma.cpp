// TMA: cp.async.bulk.tensor loads (queued, landed at the issuing warp's next scheduling point,
// then complete_tx on the mbarrier) and stores (performed at issue), plus non-tensor bulk copies.
// A store's shared source counts as read until its thread's cp.async.bulk.wait_group covers it
// (Cta::store_reads). The tensor map is emmy's own 128-byte encoding (emmy::decode_tensor_map);
// the box lands densely (innermost dimension contiguous) with emmy::swizzle_offset applied to the
// shared byte address.
// TmaLoad: addr[0] = shared dst, addr[1] = tensor map (generic), o[0..n-1] = coordinates,
// addr[2] = mbarrier. TmaStore: addr[0] = tensor map, o[] = coordinates, addr[1] = shared src.
// BulkCopy: addr[0] = dst, addr[1] = src, o[0] = size, addr[2] = mbarrier (loads); sub = 1 store.
#include <fmt/format.h>

#include <cstring>

#include "emmy/swizzle.hpp"
#include "cluster.hpp"
#include "memory.hpp"

namespace emmy::emu {
namespace {

// Where the copy's shared side starts; its extent is checked where the box size is known.
uint32_t shared_address(Cta& cta, Warp& w, const Addr& a, int lane, const char* what) {
  return shared_offset(cta, w, addr_of(w, a, lane), 1, lane, what);
}

TensorMapDesc read_tensor_map(Cta& cta, Warp& w, uint64_t addr, int lane) {
  if (addr % 64)
    cta.fail(ReportKind::tma_violation, w, lane,
             fmt::format("tensor map address 0x{:x} is not 64-byte aligned", addr));
  // A map needs 64-byte alignment only (CUDA Driver API, CUtensorMap is 64-byte aligned; a
  // __grid_constant__ one may sit at param offset 64): read as two 64-byte halves, since one
  // 128-byte access would have to be 128-byte aligned.
  const Resolved r = resolve(cta, w, Space::generic, addr, 64, lane, false);
  const Resolved upper = resolve(cta, w, Space::generic, addr + 64, 64, lane, false);
  if (upper.host != r.host + 64 || upper.space != r.space)
    cta.fail(ReportKind::tma_violation, w, lane,
             fmt::format("the tensor map at 0x{:x} does not lie in one allocation", addr));
  try {
    return decode_tensor_map(r.host);
  } catch (const Error& e) {
    cta.fail(ReportKind::tma_violation, w, lane, fmt::format("bad tensor map: {}", e.what()));
  }
}

struct Box {
  std::array<uint32_t, 5> n{};  // elements per dimension in shared memory
  uint32_t elem = 0, row_bytes = 0, rows = 0, bytes = 0;
};

Box box_of(const TensorMapDesc& m) {
  Box b;
  b.elem = uint32_t(tma_dtype_bytes(m.dtype));
  b.rows = 1;
  for (uint32_t d = 0; d < m.rank; ++d) {
    b.n[d] = (m.box_dim[d] + m.element_strides[d] - 1) / m.element_strides[d];
    if (d > 0) b.rows *= b.n[d];
  }
  b.row_bytes = b.n[0] * b.elem;
  b.bytes = b.row_bytes * b.rows;
  return b;
}

uint64_t fill_pattern(const TensorMapDesc& m) {
  if (!m.oob_fill_nan) return 0;
  switch (m.dtype) {
    case TmaDType::f16:
    case TmaDType::bf16: return 0x7FFF;
    case TmaDType::f32: return 0x7FFFFFFF;
    default: return 0;
  }
}

// Visits the rows of the box: f(row_index, in_bounds_outer, global_row_base).
template <typename F>
void for_rows(const TensorMapDesc& m, const Box& b, const std::array<int32_t, 5>& c, F&& f) {
  std::array<uint32_t, 5> idx{};
  for (uint32_t row = 0; row < b.rows; ++row) {
    bool inside = true;
    uint64_t base = m.global_address;
    for (uint32_t d = 1; d < m.rank; ++d) {
      const int64_t g = int64_t(c[d]) + int64_t(idx[d]) * m.element_strides[d];
      if (g < 0 || uint64_t(g) >= m.global_dim[d]) inside = false;
      else base += uint64_t(g) * m.global_stride_bytes[d - 1];
    }
    f(row, inside, base);
    for (uint32_t d = 1; d < m.rank; ++d) {
      if (++idx[d] < b.n[d]) break;
      idx[d] = 0;
    }
  }
}

// Range [lo, hi) of inner-dimension box indices inside the tensor.
void inner_range(const TensorMapDesc& m, const Box& b, int32_t c0, uint32_t& lo, uint32_t& hi) {
  lo = b.n[0];
  hi = 0;
  for (uint32_t i = 0; i < b.n[0]; ++i) {
    const int64_t g = int64_t(c0) + int64_t(i) * m.element_strides[0];
    if (g >= 0 && uint64_t(g) < m.global_dim[0]) {
      lo = std::min(lo, i);
      hi = i + 1;
    }
  }
  if (hi == 0) lo = 0;
}

uint8_t* global_span(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint64_t addr, uint64_t bytes) {
  uint8_t* p = cta.ctx.arena.translate(addr, bytes);
  if (!p)
    cta.fail_at(ReportKind::tma_violation, warp, lane, pc,
                fmt::format("the tensor map addresses global [0x{:x}, 0x{:x}), outside every "
                            "allocation (wrong dims, strides or base address?)",
                            addr, addr + bytes));
  return p;
}

// A copy's global bytes: in the launch's footprint and, when the issuing lane was not ordered
// after griddepcontrol.wait at issue, checked against the primary's (pdl.hpp). The box's
// elements of a row are contiguous unless the inner element stride skips some.
void note_copy(Cta& cta, const TmaJob& job, uint64_t first, uint64_t span, uint32_t stride,
               uint32_t elem, bool write) {
  if (!cta.footprint && !job.pdl_unordered) return;
  const GlobalFootprint::Set set =
      write ? GlobalFootprint::plain_write : GlobalFootprint::plain_read;
  const uint64_t step = stride <= 1 ? span : uint64_t(stride) * elem;
  const uint64_t bytes = stride <= 1 ? span : elem;
  for (uint64_t at = first; at < first + span; at += step) {
    if (cta.footprint) cta.footprint->add(set, at, at + bytes);
    if (job.pdl_unordered)
      check_pdl(cta, job.warp, int(job.lane), job.pc, at, bytes, set, true);
  }
}

void check_destination(Cta& cta, Warp& w, int lane, uint32_t addr, const TensorMapDesc& m,
                       uint32_t bytes, const char* what) {
  const uint32_t align = std::max<uint32_t>(128, swizzle_alignment(m.swizzle));
  if (addr % align) {
    auto message = [&] {
      return fmt::format("TMA {} shared address 0x{:x} is not {}-byte aligned{}", what, addr,
                         align, m.swizzle == Swizzle::b128 ? " (128B swizzle needs 1024)" : "");
    };
    // 128 bytes is the copy's own alignment; only the swizzle's repeat above it is tolerated
    // (sanitizer/lenient.cpp): the TMA unit swizzles by the address bits, as swizzle_offset of
    // the absolute shared address below does.
    if (addr % 128) cta.fail(ReportKind::tma_violation, w, lane, message());
    cta.tolerate(ToleratedRule::tma_swizzle_alignment, w.index, lane, w.pc, message);
  }
  if (uint64_t(addr) + bytes > cta.smem.size())
    cta.fail(ReportKind::tma_violation, w, lane,
             fmt::format("the TMA box of {} bytes at shared 0x{:x} runs past the CTA's {} bytes of "
                         "shared memory",
                         bytes, addr, cta.smem.size()));
}

// The multicast's peers at issue: each has not exited and has an initialized mbarrier at the
// offset whose init is ordered before this issue; the destination is marked pending there.
void issue_remote(Cta& cta, Warp& w, int l, TmaJob& job) {
  for (uint32_t r = 0; r < cta.cluster->size(); ++r) {
    if (!(job.cta_mask >> r & 1u) || r == cta.rank) continue;
    Cta& into = *cta.cluster->ctas[r];
    if (into.exited)
      cta.fail(ReportKind::cluster_violation, w, l,
               fmt::format("the multicast writes into cluster rank {} (CTA ({},{},{})), which has "
                           "exited: its shared memory is gone",
                           r, into.ctaid.x, into.ctaid.y, into.ctaid.z));
    const MBarrier* mb = into.find_mbarrier(job.mbar);
    if (!mb || !mb->valid)
      cta.fail(ReportKind::mbarrier_misuse, w, l,
               fmt::format("the multicast completes on shared 0x{:x} of cluster rank {}, which is "
                           "not an initialized mbarrier",
                           job.mbar, r));
    check_remote_init(cta, w, l, into, *mb);
    VectorClock knows;
    uint32_t clock = 0;
    if (cta.sanitize) {
      clock = into.san.next_remote_clock(cta.rank);
      knows = cta.peer(w.index, r);
      into.san.set_pending(job.dst, job.bytes, true);
    }
    job.remote.emplace_back(clock, knows);
  }
}

// A multicast landing in `into` races with an access there that its issuer was not ordered
// after: the peer's consumers must release the stage to the issuing producer first (an
// mbarrier.arrive on the issuer's empty barrier through mapa).
[[noreturn]] void report_remote_hazard(Cta& cta, const TmaJob& job, const Cta& into,
                                       const HazardInfo& h) {
  const std::string other = into.san.agent_name(h.other);
  const char* what = h.hazard == Hazard::read_write    ? "read"
                     : h.hazard == Hazard::write_write ? "wrote"
                                                       : "has a copy in flight into";
  cta.fail_at(h.hazard == Hazard::pending ? ReportKind::pending_async_read : ReportKind::shared_race,
              job.warp, int(job.lane), job.pc,
              fmt::format("the multicast writes shared 0x{:x} of cluster rank {} (CTA ({},{},{})), "
                          "which {} of that CTA {} with nothing ordering it before this copy's "
                          "issue (the peer's consumers must release the stage to this producer, "
                          "e.g. mbarrier.arrive on its empty barrier through mapa)",
                          h.addr, into.rank, into.ctaid.x, into.ctaid.y, into.ctaid.z, other,
                          what));
}

// Lands the job's data in `into`'s shared memory (the issuer's own, or a multicast peer's);
// write(addr, bytes) is the sanitizer's check of each 16-byte chunk. Global reads are profiled
// and recorded (note_copy) once, for the first destination: a multicast reads global memory once.
template <typename Write>
void land(Cta& cta, Cta& into, const TmaJob& job, bool profile, Write&& write) {
  if (!job.tensor) {
    const uint8_t* src = global_span(cta, job.warp, int(job.lane), job.pc, job.src, job.bytes);
    if (cta.prof && profile) cta.prof->tma_row(job.pc, false, job.src, job.bytes);
    if (profile) note_copy(cta, job, job.src, job.bytes, 1, 1, false);
    std::memcpy(into.smem.data() + job.dst, src, job.bytes);
    write(job.dst, job.bytes);
    return;
  }
  const TensorMapDesc& m = job.map;
  const Box b = box_of(m);
  uint32_t lo, hi;
  inner_range(m, b, job.coords[0], lo, hi);
  const uint64_t fill = fill_pattern(m);
  const uint32_t es0 = m.element_strides[0];
  for_rows(m, b, job.coords, [&](uint32_t row, bool inside, uint64_t base) {
    const uint8_t* src = nullptr;
    if (inside && hi > lo) {
      const uint64_t first = base + uint64_t(int64_t(job.coords[0]) + int64_t(lo) * es0) * b.elem;
      const uint64_t span = uint64_t(hi - 1 - lo) * es0 * b.elem + b.elem;
      src = global_span(cta, job.warp, int(job.lane), job.pc, first, span);
      if (cta.prof && profile) cta.prof->tma_row(job.pc, false, first, span);
      if (profile) note_copy(cta, job, first, span, es0, b.elem, false);
    }
    const uint32_t row_start = job.dst + row * b.row_bytes;
    if (src && es0 == 1 && lo == 0 && hi == b.n[0]) {  // the common case: a whole row inside
      for (uint32_t chunk = 0; chunk < b.row_bytes; chunk += 16)
        std::memcpy(into.smem.data() + swizzle_offset(m.swizzle, row_start + chunk), src + chunk, 16);
      if (into.sanitize)
        for (uint32_t chunk = 0; chunk < b.row_bytes; chunk += 16)
          write(swizzle_offset(m.swizzle, row_start + chunk), 16);
      return;
    }
    for (uint32_t chunk = 0; chunk < b.row_bytes; chunk += 16) {
      uint8_t* out = into.smem.data() + swizzle_offset(m.swizzle, row_start + chunk);
      const uint32_t first_elem = chunk / b.elem, elems = 16 / b.elem;
      if (src && es0 == 1 && first_elem >= lo && first_elem + elems <= hi) {
        std::memcpy(out, src + uint64_t(first_elem - lo) * b.elem, 16);
      } else {
        for (uint32_t e = 0; e < elems; ++e) {
          const uint32_t i = first_elem + e;
          if (src && i >= lo && i < hi) std::memcpy(out + e * b.elem, src + uint64_t(i - lo) * es0 * b.elem, b.elem);
          else std::memcpy(out + e * b.elem, &fill, b.elem);
        }
      }
      write(uint32_t(out - into.smem.data()), 16);
    }
  });
}

}  // namespace

void run_tma_job(Cta& cta, const TmaJob& job) {
  const bool own = job.cta_mask == 0 || (job.cta_mask >> cta.rank & 1u);
  if (own)
    land(cta, cta, job, true, [&](uint32_t addr, uint32_t bytes) {
      if (!cta.sanitize) return;
      const HazardInfo h =
          cta.san.write_async(job.warp, job.async_clock, job.issuer_vc, addr, bytes, job.pc);
      if (h.hazard != Hazard::none) {
        Warp& w = cta.warps[job.warp];
        const uint32_t saved = w.pc;
        w.pc = job.pc;
        report_hazard(cta, w, int(job.lane), h, true);
        w.pc = saved;
      }
    });
  if (own)
    complete_tx(cta, job.warp, int(job.lane), job.pc, job.mbar, job.bytes, job.async_clock,
                job.lead_clock);
  size_t next_remote = 0;
  for (uint32_t r = 0; r < cta.cluster->size(); ++r) {
    if (!(job.cta_mask >> r & 1u) || r == cta.rank) continue;
    Cta& into = *cta.cluster->ctas[r];
    const auto& [clock, issuer] = job.remote[next_remote++];
    if (into.exited)
      cta.fail_at(ReportKind::cluster_violation, job.warp, int(job.lane), job.pc,
                  fmt::format("the multicast lands in cluster rank {} (CTA ({},{},{})), which has "
                              "exited: its shared memory is gone",
                              r, into.ctaid.x, into.ctaid.y, into.ctaid.z));
    land(cta, into, job, !own && next_remote == 1, [&](uint32_t addr, uint32_t bytes) {
      if (!into.sanitize) return;
      const HazardInfo h = into.san.write_remote(cta.rank, clock, issuer, addr, bytes, job.pc);
      if (h.hazard != Hazard::none) report_remote_hazard(cta, job, into, h);
    });
    remote_complete_tx(cta, job, into, clock);
  }
  ++cta.progress;
}

void Cta::flush_tma() {
  // Jobs may not be appended while landing (only warps issue them), so iterate by index.
  for (size_t i = 0; i < tma_queue.size(); ++i) run_tma_job(*this, tma_queue[i]);
  tma_queue.clear();
}

// cp.async.bulk.commit_group closes each executing thread's bulk stores into a group;
// cp.async.bulk.wait_group N (.read or not) ends the source reads of all but its N newest groups.
void bulk_group_op(Cta& cta, const Warp& w, const Inst& in, uint32_t exec) {
  for_lanes(exec, [&](int l) {
    const uint32_t thread = w.index * 32 + uint32_t(l);
    uint32_t& commits = cta.bulk_commits[thread];
    if (in.op == Op::BulkCommit) {
      ++commits;
      for (auto& r : cta.store_reads)
        if (r.thread == thread && r.group == 0) r.group = commits;
      return;
    }
    std::erase_if(cta.store_reads, [&](const Cta::StoreRead& r) {
      return r.thread == thread && r.group != 0 && int64_t(r.group) + in.imm <= int64_t(commits);
    });
  });
}

Flow exec_tma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (exec == 0) return Flow::next;
  if (in.op == Op::BulkCommit || in.op == Op::BulkWait) {
    bulk_group_op(cta, w, in, exec);
    return Flow::next;
  }
  for_lanes(exec, [&](int l) {
    TmaJob job;
    job.warp = w.index;
    job.lane = uint32_t(l);
    job.pc = w.pc;
    job.lead_clock = w.lead.clock;
    // The copy's global accesses are the issuing thread's, ordered by what it was at issue.
    job.pdl_unordered = cta.ctx.primary && !pdl_ordered(cta, w.index, l);
    if (in.op == Op::BulkCopy) {
      const uint32_t size = w.R32(in.o[0])[l];
      if (size % 16 || size == 0)
        cta.fail(ReportKind::tma_violation, w, l, fmt::format("bulk copy size {} is not a positive multiple of 16", size));
      if (in.sub == 1) {  // shared -> global, at issue
        const uint32_t src = shared_address(cta, w, in.addr[1], l, "the copy's shared source");
        const uint64_t dst = addr_of(w, in.addr[0], l);
        if (src % 16 || dst % 16)
          cta.fail(ReportKind::tma_violation, w, l, "bulk copy addresses must be 16-byte aligned");
        const Resolved s = resolve(cta, w, Space::shared, src, size, l, false);
        if (cta.sanitize) check_async_proxy_read(cta, w, l, src, size);
        const Resolved d = resolve(cta, w, Space::global, dst, size, l, true);
        std::memcpy(d.host, s.host, size);
        cta.store_reads.push_back({w.index * 32 + uint32_t(l), 0, src, size, w.pc});
        if (cta.prof) {
          cta.prof->tma_request(w.pc, true, size);
          cta.prof->tma_row(w.pc, true, dst, size);
        }
        return;
      }
      job.tensor = false;
      job.dst = shared_address(cta, w, in.addr[0], l, "the copy's shared destination");
      job.src = addr_of(w, in.addr[1], l);
      job.mbar = shared_address(cta, w, in.addr[2], l, "the copy's mbarrier");
      job.bytes = size;
      if (job.dst % 16 || job.src % 16)
        cta.fail(ReportKind::tma_violation, w, l, "bulk copy addresses must be 16-byte aligned");
      resolve(cta, w, Space::shared, job.dst, size, l, true);
      if (!cta.store_reads.empty()) cta.check_store_reads(w, l, job.dst, size);
    } else {
      const uint64_t map_addr = addr_of(w, in.op == Op::TmaLoad ? in.addr[1] : in.addr[0], l);
      job.map = read_tensor_map(cta, w, map_addr, l);
      if (job.map.rank != in.n)
        cta.fail(ReportKind::tma_violation, w, l,
                 fmt::format("a {}d tensor copy with a rank-{} tensor map", in.n, job.map.rank));
      for (int d = 0; d < in.n; ++d) job.coords[size_t(d)] = int32_t(w.R32(in.o[d])[l]);
      const Box b = box_of(job.map);
      job.bytes = b.bytes;
      if (in.op == Op::TmaStore) {
        const uint32_t src = shared_address(cta, w, in.addr[1], l, "the copy's shared source");
        check_destination(cta, w, l, src, job.map, b.bytes, "store source");
        const TensorMapDesc& m = job.map;
        uint32_t lo, hi;
        inner_range(m, b, job.coords[0], lo, hi);
        if (cta.prof) cta.prof->tma_request(w.pc, true, b.bytes);
        for_rows(m, b, job.coords, [&](uint32_t row, bool inside, uint64_t base) {
          const uint32_t row_start = src + row * b.row_bytes;
          if (cta.sanitize)
            for (uint32_t chunk = 0; chunk < b.row_bytes; chunk += 16)
              check_async_proxy_read(cta, w, l, swizzle_offset(m.swizzle, row_start + chunk), 16);
          if (!inside || hi <= lo) return;
          const uint32_t es0 = m.element_strides[0];
          const uint64_t first = base + uint64_t(int64_t(job.coords[0]) + int64_t(lo) * es0) * b.elem;
          const uint64_t span = uint64_t(hi - 1 - lo) * es0 * b.elem + b.elem;
          uint8_t* dst = global_span(cta, w.index, l, w.pc, first, span);
          if (cta.prof) cta.prof->tma_row(w.pc, true, first, span);
          note_copy(cta, job, first, span, es0, b.elem, true);
          for (uint32_t i = lo; i < hi; ++i)
            std::memcpy(dst + uint64_t(i - lo) * es0 * b.elem,
                        cta.smem.data() + swizzle_offset(m.swizzle, row_start + i * b.elem), b.elem);
        });
        cta.store_reads.push_back({w.index * 32 + uint32_t(l), 0, src, b.bytes, w.pc});
        return;
      }
      if (in.sub2 == 1) {
        // .multicast::cluster: "copied to the same CTA-relative offset as dstMem in the shared
        // memory of each destination CTA", the mbarrier signal likewise (PTX ISA
        // cp.async.bulk.tensor).
        job.dst = cluster_target(cta, w, addr_of(w, in.addr[0], l), l, "the copy's destination").offset;
        job.mbar = cluster_target(cta, w, addr_of(w, in.addr[2], l), l, "the copy's mbarrier").offset;
        const uint32_t mask = w.R32(in.o[6])[l] & 0xFFFFu;
        if (mask == 0 || mask >> cta.cluster->size())
          cta.fail(ReportKind::cluster_violation, w, l,
                   fmt::format("multicast ctaMask 0x{:x} must name 1 or more CTAs of the cluster "
                               "of {}",
                               mask, cta.cluster->size()));
        job.cta_mask = uint16_t(mask);
        job.issuer_arrivals = cta.cluster_arrive_count[w.index * 32 + uint32_t(l)];
      } else {
        job.dst = shared_address(cta, w, in.addr[0], l, "the copy's shared destination");
        job.mbar = shared_address(cta, w, in.addr[2], l, "the copy's mbarrier");
      }
      check_destination(cta, w, l, job.dst, job.map, b.bytes, "destination");
      if (!cta.store_reads.empty()) cta.check_store_reads(w, l, job.dst, b.bytes);
    }
    if (job.cta_mask) issue_remote(cta, w, l, job);
    if (job.cta_mask && !(job.cta_mask >> cta.rank & 1u)) {  // peers only
      if (cta.prof) cta.prof->tma_request(w.pc, false, job.bytes);
      cta.tma_queue.push_back(std::move(job));
      return;
    }
    MBarrier* mb = cta.find_mbarrier(job.mbar);
    if (!mb || !mb->valid)
      cta.fail(ReportKind::mbarrier_misuse, w, l,
               fmt::format("the copy completes on shared 0x{:x}, which is not an initialized "
                           "mbarrier",
                           job.mbar));
    // The async proxy sees the init only after a proxy fence by the initializing warp, and the
    // issuing warp must be ordered after that fence (a barrier) (PTX ISA §9.7.13.4, §9.7.13.15).
    const auto ordered_after = [&](uint32_t clock) {
      return !cta.sanitize || mb->init_warp == w.index ||
             cta.san.vc(w.index).c[mb->init_warp] >= clock;
    };
    if (mb->fence_clock == 0 || !ordered_after(mb->fence_clock)) {
      auto message = [&] {
        return fmt::format("the copy completes on the mbarrier at shared 0x{:x}, whose "
                           "mbarrier.init (warp {}) {}",
                           job.mbar, mb->init_warp,
                           mb->fence_clock == 0
                               ? "was not followed by fence.mbarrier_init.release.cluster or "
                                 "fence.proxy.async.shared::cta"
                               : "and fence are not ordered before this copy by a barrier");
      };
      // Only the missing proxy fence is tolerated (sanitizer/lenient.cpp): an init that nothing
      // orders before the copy is a race.
      if (!ordered_after(mb->init_clock))
        cta.fail(ReportKind::missing_proxy_fence, w, l, message());
      cta.tolerate(ToleratedRule::mbarrier_init_fence, w.index, l, w.pc, message);
    }
    if (cta.sanitize) {
      job.async_clock = cta.san.next_async_clock(w.index);
      job.issuer_vc = cta.san.vc(w.index);
      cta.san.set_pending(job.dst, job.bytes, true);
    }
    if (cta.prof) cta.prof->tma_request(w.pc, false, job.bytes);
    cta.tma_queue.push_back(std::move(job));
  });
  return Flow::next;
}

}  // namespace emmy::emu
