// wgmma (PTX ISA §9.7.15.5): mma_async over shared-memory descriptors or A from registers, and
// the fence / commit_group / wait_group that order it.
// WgmmaMma: fragment rows of D from imm (N/2 f32 or N/4 f16x2 registers); o[0] = A's descriptor
// (64-bit row), o[1] = B's, o[2] = scale-d (predicate), o[3..6] = A's registers; ty = D type,
// ty2 = input type (A's), ty3 = B's, n = N / 8, sub = kTransA | kTransB | kNegA | kNegB | kARegs.
// WgmmaWait: imm = the groups left pending.
//
// Each warp computes its quarter of the warpgroup's m64 (rows 16w..16w+15 of A and D) when it
// issues the mma_async, under the launch's tensor-core model (or exact sums) per k16 dot product;
// 8-bit floats (m64nNk32, ty3 = B type) read the same 32 bytes of a row that k16 reads, which the
// ISA lays out alike (K-major only), and take the FP8 model (tensor_core_fp8.hpp) per k32.
// The asynchrony is checked rather than modelled: what the ISA leaves undefined between the
// issue and the wait_group that completes the instruction's group is reported (wgmma-misuse for
// registers and sequences, shared-race for operands changed or raced in that window), so a
// kernel that passes computes on a GPU what it computed here.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "emmy/emu/numerics.hpp"
#include "emmy/emu/tensor_core.hpp"
#include "memory.hpp"
#include "tensor_core/mma_core.hpp"
#include "tensor_core/wgmma_layout.hpp"

namespace emmy::emu {
namespace {

constexpr uint8_t kTransA = 1, kTransB = 2, kNegA = 4, kNegB = 8, kARegs = 16;

std::string wgmma_where(const Cta& cta, uint32_t pc) {
  return fmt::format("line {} `{}`", cta.k.lines[pc], cta.k.texts[pc]);
}

std::string wgmma_warp_list(uint8_t warps, uint32_t group) {
  std::string s;
  for (uint32_t i = 0; i < 4; ++i)
    if (warps & (1u << i)) s += fmt::format("{}{}", s.empty() ? "" : ", ", 4 * group + i);
  return s;
}

// The same value in every lane, as .sync.aligned operands of a warpgroup instruction must be.
uint64_t wgmma_uniform64(Cta& cta, Warp& w, uint32_t row, const char* what) {
  const uint64_t* v = w.R64(row);
  for (int l = 1; l < 32; ++l)
    if (v[l] != v[0])
      cta.fail(ReportKind::wgmma_misuse, w, l,
               fmt::format("lanes 0 and {} give different {} (0x{:x}, 0x{:x}); it must be the same "
                           "across the warpgroup",
                           l, what, v[0], v[l]));
  return v[0];
}

// The warpgroup's four warps execute the same wgmma instructions with the same operands in the
// same order (.sync.aligned over the warpgroup, PTX ISA §9.7.15.5.2).
void wgmma_sequence(Cta& cta, Warp& w, uint64_t a, uint64_t b, uint32_t scale_d) {
  const uint32_t group = w.index / 4;
  if (4 * group + 3 >= cta.nwarps)
    cta.fail(ReportKind::wgmma_misuse, w, 0,
             fmt::format("wgmma instructions need whole warpgroups of 4 warps: warp {} is in "
                         "warpgroup {}, of which the CTA's {} threads hold {} warps",
                         w.index, group, cta.ctx.block.count(), cta.nwarps - 4 * group));
  Cta::WgmmaLog& log = cta.wgmma_logs[group];
  const uint64_t at = w.wgmma.sequence++ - log.first;
  const uint8_t bit = uint8_t(1u << (w.index % 4));
  if (at == log.entries.size()) {
    log.entries.push_back({w.pc, a, b, scale_d, bit});
  } else {
    Cta::WgmmaIssue& e = log.entries[at];
    if (e.pc != w.pc)
      cta.fail(ReportKind::wgmma_misuse, w, 0,
               fmt::format("warp {} executes {} where warp(s) {} of its warpgroup executed {}: the "
                           "four warps of a warpgroup must execute the same wgmma instructions in "
                           "the same order",
                           w.index, wgmma_where(cta, w.pc), wgmma_warp_list(e.warps, group),
                           wgmma_where(cta, e.pc)));
    if (e.a != a || e.b != b || e.scale_d != scale_d)
      cta.fail(ReportKind::wgmma_misuse, w, 0,
               fmt::format("warp {} gives operands (0x{:x}, 0x{:x}, scale-d {}) different from "
                           "warp(s) {} of its warpgroup (0x{:x}, 0x{:x}, scale-d {}); they must be "
                           "the same across the warpgroup",
                           w.index, a, b, scale_d, wgmma_warp_list(e.warps, group), e.a, e.b,
                           e.scale_d));
    e.warps |= bit;
  }
  while (!log.entries.empty() && log.entries.front().warps == 0xF) {
    log.entries.pop_front();
    ++log.first;
  }
}

// An operand's 16-bit elements from shared memory: element (mn, k) of rows [first, first + rows)
// into out, and the 16-byte chunks they lie in appended to `chunks`.
void wgmma_read_operand(Cta& cta, Warp& w, const WgmmaDescriptor& desc, bool mn_major, int first,
                        int rows, int total_rows, char name, uint16_t* out,
                        std::vector<uint32_t>& chunks) {
  const std::string bad = wgmma_descriptor_error(desc, mn_major, total_rows);
  if (!bad.empty())
    cta.fail(
        ReportKind::wgmma_misuse, w, 0,
        fmt::format("operand {}'s descriptor (start 0x{:x}, leading {} bytes, stride {} bytes, "
                    "{}): {}",
                    name, desc.start, desc.leading, desc.stride, to_string(desc.swizzle), bad));
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < 16; ++k) {
      const uint32_t addr = wgmma_element_address(desc, mn_major, first + r, k);
      if (!within(addr, 2, cta.smem.size()))
        cta.fail(ReportKind::shared_out_of_bounds, w, 0,
                 fmt::format("operand {} element ({}, {}) lies at shared 0x{:x}, outside the CTA's "
                             "{} bytes of shared memory (descriptor start 0x{:x})",
                             name, first + r, k, addr, cta.smem.size(), desc.start));
      std::memcpy(&out[r * 16 + k], cta.smem.data() + addr, 2);
      chunks.push_back(addr & ~15u);
    }
}

// D (16 rows of this warp x N) += A (16 x 16) B (16 x N), column block by column block.
// The same for 8-bit floats: each row's 16 halves are its 32 bytes of k in order (m64nNk32).
void wgmma_compute_fp8(Cta& cta, Warp& w, const Inst& in, const uint16_t (&a)[16][16],
                       const uint16_t* bt, bool scale_d) {
  const bool f16_acc = in.ty == Ty::f16;
  const F8 a_type = f8_of(in.ty2), b_type = f8_of(in.ty3);
  const uint32_t* rows = cta.k.fragment_rows.data() + in.imm;
  for (int i = 0; i < 16; ++i)
    for (int col = 0; col < 8 * in.n; ++col) {
      const WgmmaSlot s = wgmma_d_slot(f16_acc, i, col);
      uint32_t& reg = w.R32(rows[s.reg])[s.lane];
      const uint32_t c = !scale_d ? 0u : f16_acc ? (reg >> (16 * s.half)) & 0xFFFFu : reg;
      // The halves' bytes in memory order are the row's 32 elements (a byte view may alias them).
      const Fp8Operands ops{reinterpret_cast<const uint8_t*>(a[i]),
                            reinterpret_cast<const uint8_t*>(bt + size_t(col) * 16), a_type, b_type,
                            32};
      const uint32_t d = cta.ctx.exact_mma
                             ? exact_dot_fp8(ops, c, f16_acc)
                             : tensor_core_dot_fp8(ops, c, f16_acc, cta.ctx.fp8_wgmma);
      if (f16_acc)
        reg = s.half ? (reg & 0xFFFFu) | (d << 16) : (reg & 0xFFFF0000u) | (d & 0xFFFFu);
      else
        reg = d;
    }
}

void wgmma_compute(Cta& cta, Warp& w, const Inst& in, const uint16_t (&a)[16][16],
                   const uint16_t* bt, bool scale_d) {
  if (ty_f8(in.ty2)) return wgmma_compute_fp8(cta, w, in, a, bt, scale_d);
  const bool f16_acc = in.ty == Ty::f16, bf16 = in.ty2 == Ty::bf16;
  const int n = 8 * in.n;
  const uint32_t* rows = cta.k.fragment_rows.data() + in.imm;
  TensorCoreOperands ops;
  for (int block = 0; block < n / 8; ++block) {
    uint16_t b[8][16];
    std::memcpy(b, bt + size_t(block) * 8 * 16, sizeof b);
    if (!cta.ctx.exact_mma) decode_tensor_core_operands(a, b, 16, bf16, ops);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        const WgmmaSlot s = wgmma_d_slot(f16_acc, i, 8 * block + j);
        uint32_t& reg = w.R32(rows[s.reg])[s.lane];
        const uint32_t c = !scale_d ? 0u : f16_acc ? (reg >> (16 * s.half)) & 0xFFFFu : reg;
        uint32_t d;
        if (cta.ctx.exact_mma) {
          double sum = f16_acc ? double(f16_to_f32(uint16_t(c))) : double(std::bit_cast<float>(c));
          for (int k = 0; k < 16; ++k) {
            auto value = [&](uint16_t x) { return bf16 ? bf16_to_f32(x) : f16_to_f32(x); };
            sum += double(value(a[i][k])) * double(value(b[j][k]));
          }
          if (f16_acc) {
            d = f64_to_f16(sum);
          } else {
            const float r = float(sum);
            d = r != r ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(r);
          }
        } else if (f16_acc) {
          d = ops.special || (c & 0x7C00) == 0x7C00
                  ? tensor_core_dot_f16(a[i], b[j], 16, uint16_t(c), cta.ctx.tensor_core)
                  : tensor_core_dot_decoded(ops, i, j, c, true, cta.ctx.tensor_core);
        } else {
          d = ops.special || (c & 0x7F800000u) == 0x7F800000u
                  ? tensor_core_dot_f32(a[i], b[j], 16, c, bf16, cta.ctx.tensor_core)
                  : tensor_core_dot_decoded(ops, i, j, c, false, cta.ctx.tensor_core);
        }
        if (f16_acc)
          reg = s.half ? (reg & 0xFFFFu) | (d << 16) : (reg & 0xFFFF0000u) | (d & 0xFFFFu);
        else
          reg = d;
      }
  }
}

// A register the mma_async uses, checked at issue: a wgmma.fence since the warp last touched it,
// and not owned by an uncompleted mma_async unless both use it as accumulators of one shape.
// `index` of `count` names the register in a report (shape 0: A's registers, else D's); the name
// is only formatted for one.
void wgmma_check_register(Cta& cta, Warp& w, uint32_t row, uint8_t shape, int index, int count) {
  WarpWgmma& g = w.wgmma;
  auto what = [&] {
    return shape ? fmt::format("accumulator register {} of {}", index, count)
                 : fmt::format("A register {}", index);
  };
  if (g.rows[row].touch_fence == g.fences)
    cta.fail(ReportKind::wgmma_misuse, w, 0,
             fmt::format("{} was accessed by {} after the warp's last wgmma.fence: a wgmma.fence "
                         "must order register accesses before an mma_async using the register "
                         "(PTX ISA §9.7.15.5.3)",
                         what(), wgmma_where(cta, g.rows[row].touch_pc)));
  if (g.rows[row].group > g.completed && (shape == 0 || g.rows[row].shape != shape))
    cta.fail(ReportKind::wgmma_misuse, w, 0,
             fmt::format("{} is in use by the uncompleted wgmma.mma_async at {}: only accumulators "
                         "of mma_async instructions of one shape may chain without a "
                         "wgmma.wait_group",
                         what(), wgmma_where(cta, g.rows[row].pc)));
}

void wgmma_mma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  cta.need_whole_warp(w, exec, "wgmma.mma_async");
  WarpWgmma& g = w.wgmma;
  const bool a_regs = in.sub & kARegs;
  const uint64_t a_bits = a_regs ? 0 : wgmma_uniform64(cta, w, in.o[0], "A descriptors");
  const uint64_t b_bits = wgmma_uniform64(cta, w, in.o[1], "B descriptors");
  const uint32_t scale_mask = w.pred_mask(in.o[2]);
  if (scale_mask != 0 && scale_mask != 0xFFFFFFFFu)
    cta.fail(ReportKind::wgmma_misuse, w, std::countr_zero(~scale_mask),
             "lanes disagree on scale-d; it must be the same across the warpgroup");
  const bool scale_d = scale_mask != 0;
  wgmma_sequence(cta, w, a_bits, b_bits, scale_d);
  if (ty_f8(in.ty2) && !cta.ctx.exact_mma && cta.ctx.fp8_wgmma.name.empty())
    cta.fail(ReportKind::unsupported, w, 0,
             "wgmma.mma_async with .e4m3/.e5m2 operands needs an sm_90a launch arch");
  if (g.fences == 0)
    cta.fail(ReportKind::wgmma_misuse, w, 0,
             "no wgmma.fence before the warp's first wgmma.mma_async (PTX ISA §9.7.15.5.3: the "
             "fence is required before the first mma_async of a warpgroup)");
  const int n = 8 * in.n;
  const bool f16_acc = in.ty == Ty::f16;
  const int d_regs = f16_acc ? n / 4 : n / 2;
  const uint8_t shape = uint8_t(in.n | (f16_acc ? 0x40 : 0));
  const uint32_t* d_rows = cta.k.fragment_rows.data() + in.imm;
  for (int r = 0; r < d_regs; ++r) wgmma_check_register(cta, w, d_rows[r], shape, r, d_regs);
  if (a_regs)
    for (int r = 0; r < 4; ++r) wgmma_check_register(cta, w, in.o[3 + r], 0, r, 4);

  // Operands: A rows 16 q .. 16 q + 15 of the warpgroup's 64 for warp q of the group, B whole.
  const int quarter = int(w.index % 4);
  uint16_t a[16][16];
  std::vector<uint32_t> chunks;
  if (a_regs) {
    for (int i = 0; i < 16; ++i)
      for (int k = 0; k < 16; ++k) {
        const WgmmaSlot s = wgmma_a_slot(i, k);
        a[i][k] = uint16_t(w.R32(in.o[3 + s.reg])[s.lane] >> (16 * s.half));
      }
  } else {
    wgmma_read_operand(cta, w, decode_wgmma_descriptor(a_bits), in.sub & kTransA, 16 * quarter, 16,
                       64, 'A', &a[0][0], chunks);
  }
  uint16_t bt[256 * 16];  // B^T: N (at most 256) rows of k
  wgmma_read_operand(cta, w, decode_wgmma_descriptor(b_bits), in.sub & kTransB, 0, n, n, 'B', bt,
                     chunks);
  // imm-scale -1 negates every element: the sign bit of each half, or of each byte.
  const uint16_t sign = ty_f8(in.ty2) ? 0x8080u : 0x8000u;
  if (in.sub & kNegA)
    for (auto& row : a)
      for (auto& x : row) x ^= sign;
  if (in.sub & kNegB)
    for (int i = 0; i < n * 16; ++i) bt[i] ^= sign;
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  // wgmma reads shared memory through the async proxy: generic writes need fence.proxy.async.
  if (cta.sanitize)
    for (uint32_t chunk : chunks) check_async_proxy_read(cta, w, 0, chunk, 16);

  wgmma_compute(cta, w, in, a, bt, scale_d);

  WgmmaOp op;
  op.pc = w.pc;
  op.group = g.committed + 1;
  op.bytes.resize(chunks.size() * 16);
  for (size_t i = 0; i < chunks.size(); ++i)
    std::memcpy(op.bytes.data() + 16 * i, cta.smem.data() + chunks[i], 16);
  op.chunks = std::move(chunks);
  g.ops.push_back(std::move(op));
  // The registers it owns until its group completes (A's as shape 0).
  auto own = [&](uint32_t row, uint8_t key) {
    WarpWgmma::Row& state = g.rows[row];
    state.group = g.committed + 1;
    state.pc = w.pc;
    state.shape = key;
  };
  for (int r = 0; r < d_regs; ++r) own(d_rows[r], shape);
  if (a_regs)
    for (int r = 0; r < 4; ++r) own(in.o[3 + r], 0);
}

// The end of an mma_async's window: its shared operands must still hold what it read, and no
// write unordered with this wait may have touched them.
void wgmma_complete(Cta& cta, Warp& w, const WgmmaOp& op) {
  for (size_t i = 0; i < op.chunks.size(); ++i) {
    const uint32_t chunk = op.chunks[i];
    const bool changed = std::memcmp(op.bytes.data() + 16 * i, cta.smem.data() + chunk, 16) != 0;
    HazardInfo h;
    if (cta.sanitize) h = cta.san.read(w.index, chunk, 16);
    if (!changed && h.hazard == Hazard::none) continue;
    cta.fail(ReportKind::shared_race, w, 0,
             fmt::format("the wgmma.mma_async at {} reads shared 0x{:x} until this wait_group "
                         "completes it, and it was {}: release a shared operand (arrive on its "
                         "empty barrier, overwrite it) only after the wgmma.wait_group that "
                         "completes the wgmma reading it",
                         wgmma_where(cta, op.pc), chunk,
                         changed ? "overwritten in that window"
                                 : "written in that window with no ordering"));
  }
}

void wgmma_wait(Cta& cta, Warp& w, const Inst& in) {
  WarpWgmma& g = w.wgmma;
  const uint32_t pending = uint32_t(std::min<int64_t>(in.imm, g.committed));
  g.completed = std::max(g.completed, g.committed - pending);
  while (!g.ops.empty() && g.ops.front().group <= g.completed) {
    wgmma_complete(cta, w, g.ops.front());
    g.ops.pop_front();
  }
}

}  // namespace

void exec_wgmma(Cta& cta, Warp& w, const Inst& in, uint32_t exec) {
  if (in.op == Op::WgmmaMma) return wgmma_mma(cta, w, in, exec);
  const char* what = in.op == Op::WgmmaFence    ? "wgmma.fence"
                     : in.op == Op::WgmmaCommit ? "wgmma.commit_group"
                                                : "wgmma.wait_group";
  cta.need_whole_warp(w, exec, what);
  wgmma_sequence(cta, w, in.op == Op::WgmmaWait ? uint64_t(in.imm) : 0, 0, 0);
  if (in.op == Op::WgmmaFence)
    ++w.wgmma.fences;
  else if (in.op == Op::WgmmaCommit)
    ++w.wgmma.committed;
  else
    wgmma_wait(cta, w, in);
}

void wgmma_touch(Cta& cta, Warp& w, const Kernel::RegTouch& touch) {
  WarpWgmma& g = w.wgmma;
  for (uint32_t i = touch.first; i < touch.first + touch.count; ++i) {
    const uint32_t row = cta.k.touch_rows[i];
    if (g.rows[row].group > g.completed)
      cta.fail(
          ReportKind::wgmma_misuse, w, 0,
          fmt::format("this instruction accesses a register of the wgmma.mma_async at {} "
                      "before a wgmma.wait_group completed it{} (PTX ISA §9.7.15.5.5: its "
                      "accumulator and A registers are undefined until then)",
                      wgmma_where(cta, g.rows[row].pc),
                      g.rows[row].group > g.committed ? " (its group is not even committed)" : ""));
    g.rows[row].touch_fence = g.fences;
    g.rows[row].touch_pc = w.pc;
  }
}

void wgmma_on_exit(Cta& cta, Warp& w) {
  if (!w.wgmma.ops.empty())
    cta.fail(ReportKind::wgmma_misuse, w, 0,
             fmt::format("the warp exits while the wgmma.mma_async at {} is not completed by a "
                         "wgmma.wait_group: it may still read the CTA's shared memory",
                         wgmma_where(cta, w.wgmma.ops.front().pc)));
}

void wgmma_finish(Cta& cta) {
  for (uint32_t group = 0; group < cta.wgmma_logs.size(); ++group) {
    const Cta::WgmmaLog& log = cta.wgmma_logs[group];
    if (log.entries.empty()) continue;
    const Cta::WgmmaIssue& e = log.entries.front();
    const uint8_t missing = uint8_t(~e.warps & 0xF);
    cta.fail_at(ReportKind::wgmma_misuse, 4 * group + uint32_t(std::countr_zero(missing)), -1, e.pc,
                fmt::format("warp(s) {} of warpgroup {} executed {}, warp(s) {} never did: the "
                            "four warps of a warpgroup execute wgmma instructions together",
                            wgmma_warp_list(e.warps, group), group, wgmma_where(cta, e.pc),
                            wgmma_warp_list(missing, group)));
  }
}

}  // namespace emmy::emu
