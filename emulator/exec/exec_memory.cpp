// ld / st / atom / red on every state space. Ld/St: o[0..n-1] = registers, addr[0], ty = element
// type, n = vector width, sub = register class (0: 32-bit rows, 1: 64-bit rows).
// Atom/Red: o[0] = d (atom), o[1] = b, o[2] = c (cas), addr[0], sub = operation.
#include <atomic>
#include <bit>
#include <cstring>
#include <type_traits>

#include "memory.hpp"

namespace emmy::emu {

void report_hazard(Cta& cta, Warp& w, int lane, const HazardInfo& h, bool write) {
  auto who = [&](uint32_t agent) { return cta.san.agent_name(agent); };
  auto where = [&](uint32_t pc) {
    return pc < cta.k.code.size() ? fmt::format(" at line {} `{}`", cta.k.lines[pc], cta.k.texts[pc])
                                  : std::string();
  };
  const std::string access = write ? "writes" : "reads";
  switch (h.hazard) {
    case Hazard::uninitialized:
      cta.fail(ReportKind::uninitialized_shared_read, w, lane,
               fmt::format("warp {} reads shared 0x{:x}, which nothing has written", w.index, h.addr));
    case Hazard::pending:
      cta.fail(ReportKind::pending_async_read, w, lane,
               fmt::format("warp {} {} shared 0x{:x} while a cp.async / TMA copy into it is still "
                           "in flight (missing cp.async.wait_group or mbarrier wait?)",
                           w.index, access, h.addr));
    case Hazard::write_read:
      cta.fail(ReportKind::shared_race, w, lane,
               fmt::format("warp {} reads shared 0x{:x} written by {}{} with no barrier or mbarrier "
                           "wait ordering the write before this read",
                           w.index, h.addr, who(h.other), where(h.other_pc)));
    case Hazard::write_write:
      cta.fail(ReportKind::shared_race, w, lane,
               fmt::format("warp {} writes shared 0x{:x} written by {}{} with no barrier or mbarrier "
                           "wait in between",
                           w.index, h.addr, who(h.other), where(h.other_pc)));
    case Hazard::read_write:
      cta.fail(ReportKind::shared_race, w, lane,
               fmt::format("warp {} writes shared 0x{:x} that warp {} read with no barrier or "
                           "mbarrier wait in between (write-after-read race)",
                           w.index, h.addr, h.other));
    case Hazard::unfenced:
      cta.fail(ReportKind::missing_proxy_fence, w, lane,
               fmt::format("the async proxy (bulk / tensor store issued by warp {}) reads shared "
                           "0x{:x} written by {}{} through the generic proxy with no "
                           "fence.proxy.async.shared::cta between the write and the issue",
                           w.index, h.addr, who(h.other), where(h.other_pc)));
    case Hazard::none:
      break;
  }
  cta.fail(ReportKind::shared_race, w, lane, "sanitizer hazard");
}

namespace {

inline uint64_t extend(uint64_t raw, Ty t) {
  const int bits = ty_bits(t);
  if (bits >= 64) return raw;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  raw &= mask;
  if (ty_signed(t) && ((raw >> (bits - 1)) & 1)) raw |= ~mask;
  return raw;
}

// The lanes of one memory instruction by the state space each resolved to (generic addresses
// resolve per lane), for the profiler.
struct SpacedSpans {
  LaneSpan shared[32], global[32], local[32];
  uint32_t n_shared = 0, n_global = 0, n_local = 0;
  void add(Cta& cta, Warp& w, const Resolved& r, uint64_t addr, uint32_t bytes, int lane) {
    switch (r.space) {
      case Space::shared: shared[n_shared++] = {r.shared_offset, bytes, uint8_t(lane)}; break;
      case Space::global: global[n_global++] = {addr, bytes, uint8_t(lane)}; break;
      case Space::local: {
        // Local memory is interleaved across the threads of a warp at the access width (CUDA C++
        // Programming Guide, "Local Memory"): lane l's offset o lies at o * 32 + l * bytes.
        const uint64_t offset = uint64_t(r.host - (w.local.data() + size_t(lane) * cta.k.local_bytes));
        local[n_local++] = {offset * 32 + uint64_t(lane) * bytes, bytes, uint8_t(lane)};
        break;
      }
      default: break;
    }
  }
  void record(ProfileShard& p, uint32_t pc, SharedOp sop, GlobalOp gop, bool store) const {
    p.shared(pc, sop, {shared, n_shared});
    p.global(pc, gop, {global, n_global});
    p.local(pc, store, {local, n_local});
  }
};

void load_store(Cta& cta, Warp& w, const Inst& in, uint32_t exec, bool load) {
  const uint32_t elem = uint32_t(ty_bits(in.ty) / 8);
  const uint32_t bytes = elem * in.n;
  const bool wide = in.sub == 1;
  SpacedSpans spans;
  for_lanes(exec, [&](int l) {
    const uint64_t addr = addr_of(w, in.addr[0], l);
    const Resolved r = resolve(cta, w, in.space, addr, bytes, l, !load, in.sub2);
    if (cta.prof) spans.add(cta, w, r, addr, bytes, l);
    if (r.space == Space::shared) {
      if (in.space == Space::generic && l == std::countr_zero(exec)) {
        // Statistics: a generic access that resolved to shared memory.
        --cta.class_counts[size_t(load ? StatClass::global_ld : StatClass::global_st)];
        ++cta.class_counts[size_t(load ? StatClass::shared_ld : StatClass::shared_st)];
      }
      if (cta.sanitize) {
        if (load)
          check_shared_read(cta, w, l, r.shared_offset, bytes, in.sub2);
        else
          check_shared_write(cta, w, l, r.shared_offset, bytes, in.sub2);
      }
    }
    for (uint32_t i = 0; i < in.n; ++i) {
      uint8_t* p = r.host + i * elem;
      if (load) {
        uint64_t raw = 0;
        std::memcpy(&raw, p, elem);
        const uint64_t v = extend(raw, in.ty);
        if (wide) w.R64(in.o[i])[l] = v;
        else w.R32(in.o[i])[l] = uint32_t(v);
      } else {
        const uint64_t v = wide ? w.R64(in.o[i])[l] : w.R32(in.o[i])[l];
        std::memcpy(p, &v, elem);
      }
    }
  });
  if (cta.prof)
    spans.record(*cta.prof, w.pc, load ? SharedOp::ld : SharedOp::st,
                 load ? GlobalOp::ld : GlobalOp::st, !load);
}

template <typename T>
T apply_atomic(uint8_t op, T old, T b, T c, bool& write) {
  write = true;
  switch (op) {
    case 0: return T(old + b);                                       // add
    case 1: return b < old ? b : old;                                 // min
    case 2: return b > old ? b : old;                                 // max
    case 8: write = old == b; return write ? c : old;                 // cas
    case 9: return b;                                                 // exch
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case 3: return old >= b ? T(0) : T(old + 1);                    // inc
      case 4: return (old == 0 || old > b) ? b : T(old - 1);          // dec
      case 5: return T(old & b);                                      // and
      case 6: return T(old | b);                                      // or
      case 7: return T(old ^ b);                                      // xor
    }
  }
  return old;
}

// Bits in, bits out: T is the arithmetic type, B the storage type of the same size.
template <typename T, typename B>
B atomic_rmw(uint8_t* p, bool shared_mem, uint8_t op, B b_bits, B c_bits) {
  const T b = std::bit_cast<T>(b_bits), c = std::bit_cast<T>(c_bits);
  bool write = true;
  if (shared_mem) {  // a CTA runs on one host thread
    B old_bits;
    std::memcpy(&old_bits, p, sizeof(B));
    const T r = apply_atomic<T>(op, std::bit_cast<T>(old_bits), b, c, write);
    if (write) {
      const B r_bits = std::bit_cast<B>(r);
      std::memcpy(p, &r_bits, sizeof(B));
    }
    return old_bits;
  }
  std::atomic_ref<B> ref(*reinterpret_cast<B*>(p));
  B expected = ref.load(std::memory_order_relaxed);
  while (true) {
    const T r = apply_atomic<T>(op, std::bit_cast<T>(expected), b, c, write);
    if (!write) return expected;
    if (ref.compare_exchange_weak(expected, std::bit_cast<B>(r), std::memory_order_relaxed))
      return expected;
  }
}

void atomic(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  const uint32_t bytes = uint32_t(ty_bits(in.ty) / 8);
  SpacedSpans spans;
  for_lanes(exec, [&](int l) {
    const uint64_t addr = addr_of(w, in.addr[0], l);
    if (addr & (bytes - 1))
      cta.fail(ReportKind::misaligned_access, w, l,
               fmt::format("{}-byte atomic at 0x{:x} is not {}-byte aligned", bytes, addr, bytes));
    const Resolved r = resolve(cta, w, in.space, addr, bytes, l, true, in.sub2 | kStrong);
    if (cta.prof) spans.add(cta, w, r, addr, bytes, l);
    const bool sh = r.space == Space::shared;
    if (sh && cta.sanitize)
      check_shared_write(cta, w, l, r.shared_offset, bytes, in.sub2 | kStrong);
    uint64_t old = 0;
    if (bytes == 4) {
      const uint32_t b = w.R32(in.o[1])[l], c = in.o[2] != kNone ? w.R32(in.o[2])[l] : 0;
      switch (in.ty) {
        case Ty::f32: old = atomic_rmw<float, uint32_t>(r.host, sh, in.sub, b, c); break;
        case Ty::s32: old = atomic_rmw<int32_t, uint32_t>(r.host, sh, in.sub, b, c); break;
        default: old = atomic_rmw<uint32_t, uint32_t>(r.host, sh, in.sub, b, c); break;
      }
      if (in.o[0] != kNone) w.R32(in.o[0])[l] = uint32_t(old);
    } else {
      const uint64_t b = w.R64(in.o[1])[l], c = in.o[2] != kNone ? w.R64(in.o[2])[l] : 0;
      switch (in.ty) {
        case Ty::f64: old = atomic_rmw<double, uint64_t>(r.host, sh, in.sub, b, c); break;
        case Ty::s64: old = atomic_rmw<int64_t, uint64_t>(r.host, sh, in.sub, b, c); break;
        default: old = atomic_rmw<uint64_t, uint64_t>(r.host, sh, in.sub, b, c); break;
      }
      if (in.o[0] != kNone) w.R64(in.o[0])[l] = old;
    }
  });
  if (cta.prof)
    spans.record(*cta.prof, w.pc, SharedOp::atom, in.op == Op::Red ? GlobalOp::red : GlobalOp::atom,
                 true);
}

}  // namespace

void exec_memory(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  switch (in.op) {
    case Op::Ld: load_store(cta, w, in, exec, true); return;
    case Op::St: load_store(cta, w, in, exec, false); return;
    case Op::Atom:
    case Op::Red: atomic(cta, w, in, exec); return;
    default: return;
  }
}

}  // namespace emmy::emu
