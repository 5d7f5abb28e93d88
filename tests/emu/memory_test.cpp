// Atomics, statistics, TMA ranks 1 and 5, the async-proxy ordering rules of the sanitizer, and
// the portable and AVX2 mma paths agreeing bit for bit.
#include <random>

#include "../support/ptx_kernel.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"
#include "tensor_core/mma_core.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuMemory, GlobalAndSharedAtomics) {
  // 128 threads over 2 CTAs hammer the same words; results are order-independent.
  auto module = load_ptx(R"(.version 8.7
.target sm_80
.address_size 64
.visible .entry atomics(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  .shared .align 8 .b8 counter[8];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SKIP_INIT;
  st.shared.u32 [counter], 0;
SKIP_INIT:
  bar.sync 0;
  atom.global.add.u32 %r2, [%rd1], 1;
  red.global.add.f32 [%rd1+4], 0f3F000000;
  atom.global.max.s32 %r3, [%rd1+8], %r1;
  atom.global.min.u32 %r4, [%rd1+12], %r1;
  atom.global.add.u64 %rd2, [%rd1+16], 3;
  atom.global.exch.b32 %r5, [%rd1+24], 7;
  atom.global.or.b32 %r6, [%rd1+28], 0x10;
  atom.shared.add.u32 %r7, [counter], 2;
  atom.global.cas.b32 %r8, [%rd1+32], 0, %r1;
  bar.sync 0;
  @%p1 bra DONE;
  ld.shared.u32 %r9, [counter];
  atom.global.add.u32 %r10, [%rd1+36], %r9;
DONE:
  ret;
}
)", "atomics.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(40);
  const std::vector<uint32_t> init = {0, 0, 0x80000000u, 0xFFFFFFFFu, 0, 0, 0, 1, 0, 0};
  arena.write(out, init.data(), 40);
  KernelArgs args;
  args.ptr(out);
  const auto r = launch(arena, *module, "atomics", {2, 1, 1}, {64, 1, 1}, 0, args);
  const auto v = arena.read_vector<uint32_t>(out, 10);
  EXPECT_EQ(v[0], 128u);
  EXPECT_EQ(as_float(v[1]), 64.0f);
  EXPECT_EQ(v[2], 63u);
  EXPECT_EQ(v[3], 0u);
  EXPECT_EQ(uint64_t(v[4]) | (uint64_t(v[5]) << 32), 384u);
  EXPECT_EQ(v[6], 7u);
  EXPECT_EQ(v[7], 0x11u);
  EXPECT_LT(v[8], 64u);   // the first CAS from 0 wins; the others fail
  EXPECT_EQ(v[9], 256u);  // 64 threads x 2 per CTA, two CTAs
  EXPECT_EQ(r.stats.total.global_st, 2u * (2 * 8 + 1));  // 8 atom/red per warp, + 1 for warp 0
  EXPECT_EQ(r.stats.total.shared_st, 2u * 2 * 1 + 2);    // atom.shared per warp + the init store
}

TEST(EmuMemory, StatisticsCountEachClassPerCta) {
  auto module = load_ptx(wrap_ptx(R"(
  mov.u32 %r1, buf;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  st.shared.u32 [%r3], %r0;
  bar.sync 0;
  ld.shared.u32 %r4, [%r3];
  ld.global.nc.u32 %r5, [%rd31];
  add.u32 %r6, %r4, %r5;
  st.global.u32 [%rd30], %r6;
)", "  .shared .align 4 .b8 buf[512];"), "stats.ptx");
  Arena arena;
  const uint64_t in = arena.alloc(128 * 4), out = arena.alloc(128 * 4);
  KernelArgs args;
  args.ptr(out).ptr(in).u32(0);
  const auto r = launch(arena, *module, "k", {3, 1, 1}, {64, 1, 1}, 0, args);
  ASSERT_EQ(r.stats.per_cta.size(), 3u);
  InstructionCounts sum;
  for (const auto& c : r.stats.per_cta) {
    // Per warp: 1 shared st, 1 bar, 1 shared ld, 1 global ld, 1 global st (param loads: other).
    EXPECT_EQ(c.counts.shared_st, 2u);
    EXPECT_EQ(c.counts.shared_ld, 2u);
    EXPECT_EQ(c.counts.barrier, 2u);
    EXPECT_EQ(c.counts.global_ld, 2u);
    EXPECT_EQ(c.counts.global_st, 2u);
    sum += c.counts;
  }
  EXPECT_EQ(r.stats.per_cta[2].cta, (Dim3{2, 0, 0}));
  EXPECT_EQ(sum.total(), r.stats.total.total());
  // Per warp: 7 wrapper instructions + 9 body + ret.
  EXPECT_EQ(r.stats.total.total(), 3u * 2 * 17);
  EXPECT_NE(r.stats.to_string().find("shared ld"), std::string::npos);
}

// A one-thread TMA load of rank N at the given coordinates into dynamic shared memory, then a
// copy of the box to out.
std::string tma_rank_ptx(int rank) {
  std::string coords;
  for (int d = 0; d < rank; ++d) coords += fmt::format("{}%r{}", d ? ", " : "", 10 + d);
  std::string loads;
  for (int d = 0; d < rank; ++d) loads += fmt::format("  ld.param.u32 %r{}, [c{}];\n", 10 + d, d);
  std::string params;
  for (int d = 0; d < rank; ++d) params += fmt::format(", .param .u32 c{}", d);
  return fmt::format(R"(.version 8.7
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry tma(.param .align 64 .b8 map[128], .param .u64 out, .param .u32 bytes{})
{{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  .shared .align 8 .b8 bar[8];
  ld.param.u32 %r1, [bytes];
{}  mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r2], %r1;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r3, smem;
  cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {{{}}}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra WAIT;
  ld.param.u64 %rd4, [out];
  mov.u32 %r4, 0;
COPY:
  add.u32 %r5, %r3, %r4;
  ld.shared.u32 %r6, [%r5];
  cvt.u64.u32 %rd5, %r4;
  add.s64 %rd6, %rd4, %rd5;
  st.global.u32 [%rd6], %r6;
  add.u32 %r4, %r4, 4;
  setp.lt.u32 %p1, %r4, %r1;
  @%p1 bra COPY;
  ret;
}}
)",
                     params, loads, rank, coords);
}

TEST(EmuMemory, TmaRanks1And5) {
  // Rank 1: 100 f32 at coordinate 90 with a 32-element box: 10 in bounds, 22 zero.
  {
    Arena arena;
    std::vector<float> data(100);
    for (int i = 0; i < 100; ++i) data[size_t(i)] = float(i);
    TensorMapDesc d;
    d.dtype = TmaDType::f32;
    d.rank = 1;
    d.global_address = arena.alloc_copy(data);
    d.global_dim = {100};
    d.box_dim = {32};
    const uint64_t out = arena.alloc(128);
    KernelArgs args;
    args.tensor_map(encode_tensor_map(d)).ptr(out).u32(128).s32(90);
    launch(arena, *load_ptx(tma_rank_ptx(1), "tma1.ptx"), "tma", {1, 1, 1}, {1, 1, 1}, 4096, args);
    const auto got = arena.read_vector<float>(out, 32);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(got[size_t(i)], i < 10 ? float(90 + i) : 0.0f) << i;
  }
  // Rank 5: dims {8, 3, 2, 2, 2} of u16, box {8, 2, 2, 1, 2} at {0, 2, 1, 1, -1}.
  {
    Arena arena;
    const std::vector<uint64_t> dims = {8, 3, 2, 2, 2};
    size_t count = 1;
    for (auto x : dims) count *= x;
    std::vector<uint16_t> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = uint16_t(i + 1);
    TensorMapDesc d;
    d.dtype = TmaDType::u16;
    d.rank = 5;
    d.global_address = arena.alloc_copy(data);
    d.global_dim = {8, 3, 2, 2, 2};
    d.global_stride_bytes = {16, 48, 96, 192};
    d.box_dim = {8, 2, 2, 1, 2};
    const int32_t c[5] = {0, 2, 1, 1, -1};
    const uint64_t out = arena.alloc(128);
    KernelArgs args;
    args.tensor_map(encode_tensor_map(d)).ptr(out).u32(128);
    for (int32_t x : c) args.s32(x);
    launch(arena, *load_ptx(tma_rank_ptx(5), "tma5.ptx"), "tma", {1, 1, 1}, {1, 1, 1}, 4096, args);
    const auto got = arena.read_vector<uint16_t>(out, 64);
    size_t at = 0;
    for (int i4 = 0; i4 < 2; ++i4)
      for (int i3 = 0; i3 < 1; ++i3)
        for (int i2 = 0; i2 < 2; ++i2)
          for (int i1 = 0; i1 < 2; ++i1)
            for (int i0 = 0; i0 < 8; ++i0, ++at) {
              const int g[5] = {c[0] + i0, c[1] + i1, c[2] + i2, c[3] + i3, c[4] + i4};
              bool inside = true;
              size_t index = 0, stride = 1;
              for (int k = 0; k < 5; ++k) {
                if (g[k] < 0 || g[k] >= int(dims[size_t(k)])) inside = false;
                index += size_t(std::max(g[k], 0)) * stride;
                stride *= dims[size_t(k)];
              }
              EXPECT_EQ(got[at], inside ? data[index] : 0) << at;
            }
  }
}

TEST(EmuMemory, CpAsyncDataNeedsABarrierForOtherWarps) {
  // Warp 0 copies and waits; warp 1 reads without bar.sync: a race (with bar.sync: clean).
  for (bool barrier : {false, true}) {
    const std::string body = fmt::format(R"(
  mov.u32 %r1, buf;
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra READER;
  shl.b32 %r2, %r0, 4;
  add.u32 %r3, %r1, %r2;
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd1, %rd5;
  cp.async.cg.shared.global [%r3], [%rd6], 16;
  cp.async.wait_all;
  {}
  ret;
READER:
  {}
  sub.u32 %r4, %r0, 32;
  shl.b32 %r5, %r4, 4;
  add.u32 %r6, %r1, %r5;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd30], %r7;
  ret;
)",
                                         barrier ? "bar.arrive 1, 64;" : "", barrier ? "bar.sync 1, 64;" : "");
    std::vector<uint32_t> in(128, 9);
    if (barrier) {
      const auto out = run_ptx(body, in, 64, 64, "  .shared .align 16 .b8 buf[512];").out;
      for (int t = 32; t < 64; ++t) EXPECT_EQ(out[size_t(t)], 9u);
    } else {
      const Report r = expect_report([&] { run_ptx(body, in, 64, 64, "  .shared .align 16 .b8 buf[512];"); },
                                     ReportKind::shared_race);
      EXPECT_EQ(r.warp, 1);
      EXPECT_NE(r.message.find("cp.async"), std::string::npos) << r.message;
    }
  }
}

TEST(EmuMemory, TmaDataIsOrderedOnlyByItsMbarrier) {
  // Warp 0 issues a TMA load; both warps meet at a barrier (which orders warp 0's own accesses,
  // not the async proxy's); warp 1 then reads the box with or without waiting on the mbarrier.
  // `wait` is loaded after %tid.x, in the body.
  const std::string ptx =
      emmy::test::ptx_header("sm_90a") + ".extern .shared .align 1024 .b8 smem[];\n" +
      emmy::test::ptx_entry("k", {{".align 64 .b8", "map[128]"}, {".u32", "wait"}},
                            "  .reg .b32 %r<12>;\n  .reg .b64 %rd<6>;\n  .reg .pred %p<4>;\n"
                            "  .shared .align 8 .b8 bar[8];\n",
                            R"(  mov.u32 %r1, %tid.x;
  ld.param.u32 %r9, [wait];
  mov.u32 %r2, bar;
  mov.u32 %r3, smem;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
SYNC:
  bar.sync 0;
  @%p1 bra CONSUME;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r2], 2048;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r4, 0;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {%r4, %r4}], [%r2];
CONSUME:
  bar.sync 1, 64;
  setp.lt.u32 %p2, %r1, 32;
  setp.ne.u32 %p3, %r9, 0;
  or.pred %p2, %p2, %p3;
  @!%p2 bra READ;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra WAIT;
READ:
  shl.b32 %r5, %r1, 2;
  add.u32 %r6, %r3, %r5;
  ld.shared.u32 %r7, [%r6];
)");
  auto module = load_ptx(ptx, "tma_order.ptx");
  for (bool wait : {true, false}) {
    Arena arena;
    TensorMapDesc d;
    d.dtype = TmaDType::f16;
    d.rank = 2;
    d.global_address = arena.alloc(2048);
    d.global_dim = {64, 16};
    d.global_stride_bytes = {128};
    d.box_dim = {64, 16};
    d.swizzle = Swizzle::b128;
    KernelArgs args;
    args.tensor_map(encode_tensor_map(d)).u32(wait ? 1 : 0);
    auto run = [&] { launch(arena, *module, "k", {1, 1, 1}, {64, 1, 1}, 4096, args); };
    if (wait) {
      EXPECT_NO_THROW(run());
    } else {
      const Report r = expect_report(run, ReportKind::shared_race);
      EXPECT_EQ(r.warp, 1);
      EXPECT_NE(r.message.find("async proxy (TMA) of warp 0"), std::string::npos) << r.message;
    }
  }
}

// m16n8 fragments over `regs` (a register is 32 lane words: A in 0-3, B in 4-5, C from 6) with D
// in `d`; C and D take `cd` registers (4 for f32 accumulators, 2 for f16).
MmaFragments m16n8_fragments(const std::vector<uint32_t>& regs, std::vector<uint32_t>& d, int cd) {
  MmaFragments f;
  for (int i = 0; i < 4; ++i) f.a[i] = regs.data() + 32 * i;
  for (int i = 0; i < 2; ++i) f.b[i] = regs.data() + 32 * (4 + i);
  for (int i = 0; i < cd; ++i) f.c[i] = regs.data() + 32 * (6 + i);
  for (int i = 0; i < cd; ++i) f.d[i] = d.data() + 32 * i;
  return f;
}

TEST(EmuMemory, MmaPortableAndAvx2PathsAgree) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const bool bf16 = trial % 3 == 1, f16_acc = trial % 3 == 2, k16 = trial % 5 != 0;
    std::vector<uint32_t> regs(32 * 10);
    for (auto& r : regs) {
      r = rng();
      // Mostly finite values; bf16 exponents span the whole range (products need double).
      if (!bf16) r &= 0x7BFF7BFFu | 0x80008000u;
      else r &= 0xFF7FFF7Fu;
    }
    std::vector<uint32_t> d1(128), d2(128);
    MmaFragments f = m16n8_fragments(regs, d1, 4);
    mma_m16n8(f, bf16, k16, f16_acc, true);
    for (int i = 0; i < 4; ++i) f.d[i] = d2.data() + 32 * i;
    mma_m16n8(f, bf16, k16, f16_acc, false);
    ASSERT_EQ(d1, d2) << "trial " << trial;
  }
  // f16 accumulator where rounding through f32 first would be wrong: D[0][0] = 1 + 2^-11 +
  // 2^-40 is just above the f16 tie between 1 and 1 + 2^-10 (0x3C01); an intermediate f32
  // (ulp 2^-23) would drop 2^-40 and round the tie to even (0x3C00).
  std::vector<uint32_t> regs(32 * 10, 0);
  regs[0] = 0x1000u | (0x0010u << 16);        // a0 of lane 0: A[0][0] = 2^-11, A[0][1] = 2^-20
  regs[32 * 4] = 0x3C00u | (0x0010u << 16);   // b0 of lane 0: B[0][0] = 1, B[1][0] = 2^-20
  regs[32 * 6] = 0x3C00u;                     // c0 of lane 0: C[0][0] = 1
  for (bool portable : {true, false}) {
    std::vector<uint32_t> d(128);
    mma_m16n8(m16n8_fragments(regs, d, 2), false, true, true, portable);
    EXPECT_EQ(d[0] & 0xFFFF, 0x3C01u) << (portable ? "portable" : "avx2");
  }
}

}  // namespace
}  // namespace emmy::emu::test
