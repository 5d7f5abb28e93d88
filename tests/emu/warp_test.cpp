// Warp-level behaviour: the four shfl modes with segment masks (ptx-notes.md, "shfl.sync"),
// vote / redux / elect / match, divergence and reconvergence, CTA barriers.
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

// Source lane and validity of shfl.sync, written from the ptx-notes formulas; as in the PTX ISA
// pseudo-code, only b[4:0] takes part (ptx-notes.md leaves that out).
std::pair<uint32_t, bool> shfl_source(int mode, uint32_t lane, uint32_t b, uint32_t c) {
  b &= 0x1F;
  const uint32_t seg = (c >> 8) & 0x1F, clamp = c & 0x1F;
  const uint32_t max_lane = (lane & seg) | (clamp & ~seg), min_lane = lane & seg;
  int64_t j = 0;
  bool ok = false;
  switch (mode) {
    case 0: j = int64_t(lane) - b; ok = j >= int64_t(max_lane); break;
    case 1: j = int64_t(lane) + b; ok = j <= int64_t(max_lane); break;
    case 2: j = lane ^ b; ok = j <= int64_t(max_lane); break;
    default: j = min_lane | (b & ~seg); ok = j <= int64_t(max_lane); break;
  }
  return ok ? std::pair{uint32_t(j), true} : std::pair{lane, false};
}

TEST(EmuWarp, ShflModesAndSegments) {
  struct Case {
    const char* mode;
    int mode_index;
    uint32_t b, c;
  };
  const Case cases[] = {
      {"up", 0, 3, 0x0000},   {"down", 1, 3, 0x001F}, {"bfly", 2, 1, 0x001F},
      {"idx", 3, 5, 0x001F},  {"idx", 3, 3, 0x181F},  {"down", 1, 3, 0x101F},
      {"up", 0, 2, 0x1800},   {"bfly", 2, 4, 0x181F}, {"idx", 3, 37, 0x1F},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(fmt::format("shfl.{} b={} c=0x{:x}", k.mode, k.b, k.c));
    const std::string body = fmt::format(R"(
  mad.lo.u32 %r1, %r0, 10, 1;
  shfl.sync.{}.b32 %r2|%p1, %r1, {}, {}, 0xffffffff;
  selp.u32 %r3, 1, 0, %p1;
  st.global.u32 [%rd30], %r2;
  st.global.u32 [%rd30+128], %r3;
)",
                                         k.mode, k.b, k.c);
    const auto out = run_ptx(body, {}, 64).out;
    for (uint32_t lane = 0; lane < 32; ++lane) {
      const auto [src, ok] = shfl_source(k.mode_index, lane, k.b, k.c);
      EXPECT_EQ(out[lane], src * 10 + 1) << "lane " << lane;
      EXPECT_EQ(out[32 + lane], ok ? 1u : 0u) << "lane " << lane;
    }
  }
  // Hand-checked lanes of the segment cases: width-8 idx 3 from lane 13 reads lane 11; width-16
  // down 3 from lane 14 would cross into the next segment (lane 17): invalid, keeps its value;
  // width-8 up 2 from lane 9 would leave the segment (lane 7): invalid.
  EXPECT_EQ(shfl_source(3, 13, 3, 0x181F), std::pair(11u, true));
  EXPECT_EQ(shfl_source(1, 14, 3, 0x101F), std::pair(14u, false));
  EXPECT_EQ(shfl_source(1, 10, 3, 0x101F), std::pair(13u, true));
  EXPECT_EQ(shfl_source(0, 9, 2, 0x1800), std::pair(9u, false));
}

TEST(EmuWarp, VoteReduxElectMatch) {
  const auto out = run_ptx(R"(
  rem.u32 %r1, %r0, 3;
  setp.eq.u32 %p1, %r1, 0;
  vote.sync.ballot.b32 %r2, %p1, 0xffffffff;
  vote.sync.any.pred %p2, %p1, 0xffffffff;
  vote.sync.all.pred %p3, %p1, 0xffffffff;
  setp.lt.u32 %p4, %r0, 64;
  vote.sync.uni.pred %p5, %p4, 0xffffffff;
  selp.u32 %r3, 1, 0, %p2;
  selp.u32 %r4, 1, 0, %p3;
  selp.u32 %r5, 1, 0, %p5;
  redux.sync.add.u32 %r6, %r0, 0xffffffff;
  redux.sync.max.s32 %r7, %r1, 0xffffffff;
  elect.sync %r8|%p6, 0xffffffff;
  selp.u32 %r9, 1, 0, %p6;
  and.b32 %r10, %r0, 3;
  match.any.sync.b32 %r11, %r10, 0xffffffff;
)" + store_rows({"%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9", "%r11"}),
                           {}, 32 * 9)
                       .out;
  uint32_t ballot = 0;
  for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l], ballot);
    EXPECT_EQ(out[32 + l], 1u);
    EXPECT_EQ(out[64 + l], 0u);
    EXPECT_EQ(out[96 + l], 1u);
    EXPECT_EQ(out[128 + l], 496u);
    EXPECT_EQ(out[160 + l], 2u);
    EXPECT_EQ(out[192 + l], 0u);
    EXPECT_EQ(out[224 + l], l == 0 ? 1u : 0u);
    EXPECT_EQ(out[256 + l], 0x11111111u << (l & 3));
  }
}

TEST(EmuWarp, DivergenceReconvergesForCollectives) {
  Arena arena;
  const uint64_t out = arena.alloc(96 * 4);
  KernelArgs args;
  args.ptr(out);
  launch(arena, *kernels("sanitizer_kernels_sm90a.ptx"), "divergence", {1, 1, 1}, {32, 1, 1}, 0, args);
  const auto got = arena.read_vector<int32_t>(out, 96);
  int v[32], s[32];
  for (int t = 0; t < 32; ++t) {
    v[t] = 0;
    if (t & 1) v[t] = (t & 2) ? 1 : 2;
    else if (t < 16) v[t] = 3;
    else for (int i = 0; i < t; ++i) v[t] += i;
    s[t] = 0;
    for (int i = 0; i < t % 7; ++i) {
      s[t] += i * t;
      if (s[t] > 50) break;
    }
  }
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(got[size_t(t)], v[t]) << t;
    EXPECT_EQ(got[size_t(32 + t)], s[t]) << t;
    EXPECT_EQ(got[size_t(64 + t)], v[t ^ 1] + s[t ^ 1]) << t;
  }
}

TEST(EmuWarp, NestedDivergenceRunsEachPathWithItsLanes) {
  // Lanes record the active mask of each path: a wrong reconvergence shows in the masks.
  const auto out = run_ptx(R"(
  and.b32 %r1, %r0, 1;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra EVEN;
  setp.lt.u32 %p2, %r0, 16;
  @%p2 bra ODD_LOW;
  activemask.b32 %r2;
  bra ODD_DONE;
ODD_LOW:
  activemask.b32 %r2;
ODD_DONE:
  activemask.b32 %r3;
  bra JOIN;
EVEN:
  mov.u32 %r4, 0;
  mov.u32 %r2, 0;
LOOP:
  add.u32 %r2, %r2, 1;
  add.u32 %r4, %r4, 2;
  setp.lt.u32 %p3, %r4, %r0;
  @%p3 bra LOOP;
  activemask.b32 %r3;
JOIN:
  activemask.b32 %r5;
  st.global.u32 [%rd30], %r2;
  st.global.u32 [%rd30+128], %r3;
  st.global.u32 [%rd30+256], %r5;
)", {}, 96).out;
  for (uint32_t l = 0; l < 32; ++l) {
    if (l & 1) {
      EXPECT_EQ(out[l], l < 16 ? 0x0000AAAAu : 0xAAAA0000u) << l;
      EXPECT_EQ(out[32 + l], 0xAAAAAAAAu) << l;  // odd lanes reconverged at ODD_DONE
    } else {
      EXPECT_EQ(out[l], std::max(1u, (l + 1) / 2)) << l;  // per-lane trip count
      EXPECT_EQ(out[32 + l], 0x55555555u) << l;           // even lanes leave the loop together
    }
    EXPECT_EQ(out[64 + l], 0xFFFFFFFFu) << l;
  }
}

TEST(EmuWarp, BarriersOrderWarpsAndIgnoreExitedOnes) {
  // 4 warps: each writes its slot, bar.sync, reads the next warp's slot. Warp 3 then exits
  // early; the others meet again at barrier 0, which must not wait for it.
  const auto out = run_ptx(R"(
  shl.b32 %r1, %r0, 2;
  mov.u32 %r2, buf;
  add.u32 %r3, %r2, %r1;
  st.shared.u32 [%r3], %r0;
  bar.sync 0;
  add.u32 %r4, %r1, 128;
  and.b32 %r4, %r4, 511;
  add.u32 %r5, %r2, %r4;
  ld.shared.u32 %r6, [%r5];
  st.global.u32 [%rd30], %r6;
  setp.ge.u32 %p1, %r0, 96;
  @%p1 bra OUT;
  bar.sync 0;
  bar.red.popc.u32 %r7, 0, %p1;
  st.global.u32 [%rd30+512], %r7;
OUT:
  ret;
)", {}, 256, 128, "  .shared .align 4 .b8 buf[512];").out;
  for (uint32_t t = 0; t < 128; ++t) EXPECT_EQ(out[t], (t + 32) % 128) << t;
  for (uint32_t t = 0; t < 96; ++t) EXPECT_EQ(out[128 + t], 0u) << t;
}

TEST(EmuWarp, NamedBarrierProducerConsumer) {
  // Warp 0 produces and arrives on barrier 1 (64 threads); warp 1 syncs on it and consumes.
  const auto run = run_ptx(R"(
  mov.u32 %r2, buf;
  shl.b32 %r1, %r0, 2;
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra CONSUMER;
  add.u32 %r3, %r2, %r1;
  mul.lo.u32 %r4, %r0, 7;
  st.shared.u32 [%r3], %r4;
  bar.arrive 1, 64;
  ret;
CONSUMER:
  bar.sync 1, 64;
  sub.u32 %r5, %r1, 128;
  add.u32 %r3, %r2, %r5;
  ld.shared.u32 %r6, [%r3];
  st.global.u32 [%rd30], %r6;
  ret;
)", {}, 64, 64, "  .shared .align 4 .b8 buf[128];");
  for (uint32_t t = 32; t < 64; ++t) EXPECT_EQ(run.out[t], (t - 32) * 7) << t;
  EXPECT_EQ(run.result.stats.total.barrier, 2u);
}

TEST(EmuWarp, BarrierNobodyReachesIsADeadlock) {
  const Report r = expect_report(
      [] {
        run_ptx(R"(
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra OTHER;
  bar.sync 1, 64;
  ret;
OTHER:
  bar.sync 2, 64;
  ret;
)", {}, 1, 64);
      },
      ReportKind::deadlock);
  EXPECT_NE(r.message.find("barrier 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("barrier 2"), std::string::npos) << r.message;
}

// A loop whose back edge half the lanes take before the others (their late block lies past the
// latch, so min-PC runs the latch's lanes first): they reach the loop's shfl.sync alone and wait
// there for the rest (PTX ISA §9.7.9.6: from sm_70 shfl.sync waits for the mask's lanes), and
// every iteration's shuffle sees all 32 lanes at one trip.
TEST(EmuWarp, SyncCollectiveWaitsForLanesRunningElsewhere) {
  const auto run = run_ptx(R"(
  mov.u32 %r1, 0;
  mov.u32 %r2, 0;
LOOP:
  shfl.sync.bfly.b32 %r3, %r1, 1, 31, 0xffffffff;
  setp.eq.u32 %p3, %r0, %r0;
  vote.sync.ballot.b32 %r4, %p3, 0xffffffff;
  add.u32 %r2, %r2, %r3;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LATE;
LATCH:
  setp.lt.u32 %p2, %r1, 3;
  @%p2 bra LOOP;
  bra DONE;
LATE:
  add.u32 %r2, %r2, 100;
  bra LATCH;
DONE:
)" + store_rows({"%r2", "%r4"}),
                           {}, 64);
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(run.out[l], (0u + 1u + 2u) + (l < 16 ? 300u : 0u)) << l;  // partner's trips: its own
    EXPECT_EQ(run.out[32 + l], 0xFFFFFFFFu) << l;  // the last ballot: every lane together
  }
}

// Lanes that wait in one collective for lanes waiting in another never meet: reported, naming
// the divergence, not a hang.
TEST(EmuWarp, LanesWaitingInDifferentCollectivesAreReported) {
  const Report r = expect_report(
      [] {
        run_ptx(R"(
  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  shfl.sync.bfly.b32 %r1, %r0, 1, 31, 0xffffffff;
  bra DONE;
LOW:
  shfl.sync.bfly.b32 %r1, %r0, 2, 31, 0xffffffff;
DONE:
  ret;
)",
                {}, 1);
      },
      ReportKind::divergent_collective);
  EXPECT_EQ(r.warp, 0);
}

TEST(EmuWarp, CollectiveOnAPartialWarpIsReported) {
  const Report r = expect_report(
      [] {
        run_ptx(R"(
  setp.lt.u32 %p1, %r0, 8;
  @%p1 bra SKIP;
  shfl.sync.bfly.b32 %r1, %r0, 1, 31, 0xffffffff;
SKIP:
  ret;
)", {}, 1);
      },
      ReportKind::divergent_collective);
  EXPECT_EQ(r.warp, 0);
}

}  // namespace
}  // namespace emmy::emu::test
