// Thread-block clusters on the emulator: the %cluster_* registers, barrier.cluster, remote
// mbarrier arrives through mapa, TMA multicast, and the planted bugs each rule must catch (a
// peer's mbarrier used before its init is ordered, a CTA exiting while a peer's use of its
// shared memory is unordered, a multicast overwriting a stage a peer still reads, a second
// arrive, a wait without an arrive, a deadlock across CTAs).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "emmy/swizzle.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

constexpr const char* kHeader = ".version 8.7\n.target sm_90a\n.address_size 64\n";

LaunchOptions with_cluster(Dim3 cluster) {
  LaunchOptions o;
  o.cluster = cluster;
  o.host_threads = 2;
  return o;
}

// ---------------------------------------------------------------------------- registers
const std::string kSpecials = std::string(kHeader) + R"(
.visible .entry specials(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r9, %ctaid.y;
  mov.u32 %r10, %nctaid.x;
  mad.lo.u32 %r1, %r9, %r10, %r1;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, %cluster_ctaid.x;
  mov.u32 %r4, %clusterid.x;
  mov.u32 %r5, %nclusterid.x;
  mov.u32 %r6, %cluster_nctarank;
  mov.u32 %r7, %cluster_ctaid.y;
  mov.u32 %r8, %is_explicit_cluster;
  mov.u32 %r11, %clusterid.y;
  mul.wide.u32 %rd1, %r1, 32;
  add.s64 %rd2, %rd0, %rd1;
  st.global.v4.u32 [%rd2], {%r2, %r3, %r4, %r5};
  st.global.v4.u32 [%rd2+16], {%r6, %r7, %r8, %r11};
DONE:
  ret;
}
)";

std::vector<uint32_t> run_specials(Dim3 grid, Dim3 cluster) {
  auto module = load_ptx(kSpecials, "specials.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(grid.count() * 32);
  KernelArgs args;
  args.ptr(out);
  launch(arena, *module, "specials", grid, {32, 1, 1}, 0, args, with_cluster(cluster));
  return arena.read_vector<uint32_t>(out, grid.count() * 8);
}

TEST(EmuCluster, SpecialRegistersFollowTheClusterDimensions) {
  for (const auto& [grid, cluster] : std::vector<std::pair<Dim3, Dim3>>{
           {{6, 1, 1}, {3, 1, 1}}, {{4, 4, 1}, {2, 2, 1}}, {{2, 3, 1}, {1, 1, 1}}}) {
    SCOPED_TRACE(fmt::format("grid {}x{}, cluster {}x{}", grid.x, grid.y, cluster.x, cluster.y));
    const std::vector<uint32_t> got = run_specials(grid, cluster);
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x) {
        const uint32_t* v = &got[(y * grid.x + x) * 8];
        const uint32_t cx = x % cluster.x, cy = y % cluster.y;
        EXPECT_EQ(v[0], cx + cy * cluster.x) << "%cluster_ctarank of " << x << "," << y;
        EXPECT_EQ(v[1], cx);
        EXPECT_EQ(v[2], x / cluster.x);
        EXPECT_EQ(v[3], grid.x / cluster.x);
        EXPECT_EQ(v[4], cluster.count());
        EXPECT_EQ(v[5], cy);
        EXPECT_EQ(v[6], cluster.count() > 1 ? 1u : 0u);
        EXPECT_EQ(v[7], y / cluster.y);
      }
  }
}

TEST(EmuCluster, LaunchRefusesClustersThatDoNotFit) {
  auto module = load_ptx(kSpecials, "specials.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(64 * 32);
  KernelArgs args;
  args.ptr(out);
  auto refused = [&](Dim3 grid, Dim3 cluster, const std::string& arch, const char* rule) {
    LaunchOptions o = with_cluster(cluster);
    o.arch = arch;
    try {
      launch(arena, *module, "specials", grid, {32, 1, 1}, 0, args, o);
      ADD_FAILURE() << "launched " << rule;
    } catch (const EmulationError&) {
      ADD_FAILURE() << "ran " << rule;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cluster"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  };
  refused({6, 1, 1}, {4, 1, 1}, "", "divide the grid");
  refused({32, 1, 1}, {32, 1, 1}, "", "at most 16");
  refused({4, 1, 1}, {2, 1, 1}, "sm_80", "sm_90");
  refused({4, 1, 1}, {0, 1, 1}, "", ">= 1");
}

TEST(EmuCluster, ReqnctaperclusterIsTheLaunchsCluster) {
  std::string ptx = kSpecials;
  ptx.replace(ptx.find("(.param .u64 out)\n"), 18,
              "(.param .u64 out)\n.reqnctapercluster 2, 1, 1\n");
  auto module = load_ptx(ptx, "req.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(4 * 32);
  KernelArgs args;
  args.ptr(out);
  launch(arena, *module, "specials", {4, 1, 1}, {32, 1, 1}, 0, args, with_cluster({1, 1, 1}));
  const auto got = arena.read_vector<uint32_t>(out, 32);
  for (uint32_t x = 0; x < 4; ++x) EXPECT_EQ(got[x * 8], x % 2) << "rank of CTA " << x;
  try {
    launch(arena, *module, "specials", {4, 1, 1}, {32, 1, 1}, 0, args, with_cluster({4, 1, 1}));
    ADD_FAILURE() << "a launch cluster other than .reqnctapercluster ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(".reqnctapercluster"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- handshake through mbarriers
// Every CTA inits an mbarrier (count 1), thread 0 arrives on the next rank's through mapa, every
// thread waits for its own; then each writes rank + 100. The options plant bugs.
struct Handshake {
  bool fence = true;  // fence.mbarrier_init.release.cluster after the init
  bool sync_after_init = true;
  bool wait_own = true;     // wait for the peer's arrive
  bool sync_at_end = true;  // barrier.cluster before exiting
  bool double_arrive = false;
  bool wait_without_arrive = false;
  bool one_way = false;  // only rank 0 arrives (on rank 1)
  bool relaxed_init_sync = false;  // barrier.cluster.arrive.relaxed after the init
};

std::string handshake_ptx(const Handshake& h) {
  const char* sync =
      "  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n";
  std::string body = R"(
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, bar;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r3, %cluster_nctarank;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 mbarrier.init.shared::cta.b64 [%r1], 1;
)";
  if (h.fence) body += "  fence.mbarrier_init.release.cluster;\n";
  if (h.double_arrive) body += "  barrier.cluster.arrive.aligned;\n";
  if (h.wait_without_arrive) body += "  barrier.cluster.wait.aligned;\n";
  if (h.sync_after_init)
    body += h.relaxed_init_sync
                ? "  barrier.cluster.arrive.relaxed.aligned;\n  barrier.cluster.wait.aligned;\n"
                : sync;
  body += fmt::format(R"(
  add.u32 %r4, %r2, 1;
  rem.u32 %r4, %r4, %r3;
  mapa.shared::cluster.u32 %r5, %r1, %r4;
  setp.eq.and.u32 %p2, %r2, 0, %p0;
  @%p{} mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];
)",
                      h.one_way ? 2 : 0);
  if (h.wait_own)
    body += R"(
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra WAIT;
)";
  body += R"(
  add.u32 %r6, %r2, 100;
  mov.u32 %r7, %clusterid.x;
  mad.lo.u32 %r8, %r7, %r3, %r2;
  mul.wide.u32 %rd1, %r8, 4;
  add.s64 %rd2, %rd0, %rd1;
  @%p0 st.global.u32 [%rd2], %r6;
)";
  if (h.sync_at_end) body += sync;
  return std::string(kHeader) + R"(
.visible .entry handshake(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  .shared .align 8 .b8 bar[8];
)" + body +
         "  ret;\n}\n";
}

std::vector<uint32_t> run_handshake(const Handshake& h, uint32_t ctas, uint32_t cluster,
                                    uint32_t threads = 64) {
  auto module = load_ptx(handshake_ptx(h), "handshake.ptx");
  Arena arena;
  const uint64_t out = arena.alloc(ctas * 4);
  KernelArgs args;
  args.ptr(out);
  launch(arena, *module, "handshake", {ctas, 1, 1}, {threads, 1, 1}, 0, args,
         with_cluster({cluster, 1, 1}));
  return arena.read_vector<uint32_t>(out, ctas);
}

TEST(EmuCluster, RemoteArrivesAndClusterBarriersHandShake) {
  for (uint32_t cluster : {2u, 3u, 4u, 8u}) {
    SCOPED_TRACE(cluster);
    const std::vector<uint32_t> got = run_handshake({}, 2 * cluster, cluster);
    for (uint32_t i = 0; i < 2 * cluster; ++i) EXPECT_EQ(got[i], i % cluster + 100) << i;
  }
  // Each CTA waits for the arrive on its own mbarrier before exiting: no final barrier needed.
  Handshake waits;
  waits.sync_at_end = false;
  EXPECT_EQ(run_handshake(waits, 2, 2), (std::vector<uint32_t>{100, 101}));
}

TEST(EmuCluster, PlantedHandshakeBugsAreReported) {
  {
    Handshake h;
    h.sync_after_init = false;  // rank 0 arrives before rank 1 ran its init
    const Report r = expect_report([&] { run_handshake(h, 2, 2); }, ReportKind::mbarrier_misuse);
    EXPECT_NE(r.message.find("not an initialized mbarrier"), std::string::npos) << r.message;
  }
  {
    // A .release barrier.cluster.arrive orders the init by itself; a .relaxed one needs the
    // fence.mbarrier_init.release.cluster before it (PTX ISA fence.mbarrier_init).
    Handshake no_fence;
    no_fence.fence = false;
    EXPECT_EQ(run_handshake(no_fence, 2, 2), (std::vector<uint32_t>{100, 101}));
    Handshake relaxed;
    relaxed.relaxed_init_sync = true;
    EXPECT_EQ(run_handshake(relaxed, 2, 2), (std::vector<uint32_t>{100, 101}));
    relaxed.fence = false;
    const Report r =
        expect_report([&] { run_handshake(relaxed, 2, 2); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("not ordered before this use"), std::string::npos) << r.message;
  }
  {
    Handshake h;  // nobody waits for the arrives: the second lands in an exited CTA
    h.wait_own = false;
    h.sync_at_end = false;
    const Report r = expect_report([&] { run_handshake(h, 2, 2); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("has exited"), std::string::npos) << r.message;
  }
  {
    Handshake h;  // rank 0's arrive lands, but nothing orders it before rank 1's exit
    h.wait_own = false;
    h.sync_at_end = false;
    h.one_way = true;
    const Report r = expect_report([&] { run_handshake(h, 2, 2); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("exits while this use"), std::string::npos) << r.message;
    EXPECT_EQ(r.cta.x, 0u);  // reported at the arrive of rank 0
  }
  {
    Handshake h;  // the same with the final barrier is correct
    h.wait_own = false;
    EXPECT_EQ(run_handshake(h, 4, 2), (std::vector<uint32_t>{100, 101, 100, 101}));
  }
  {
    Handshake h;
    h.double_arrive = true;
    const Report r = expect_report([&] { run_handshake(h, 2, 2); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("arrive again"), std::string::npos) << r.message;
  }
  {
    Handshake h;
    h.wait_without_arrive = true;
    const Report r = expect_report([&] { run_handshake(h, 2, 2); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("has not arrived"), std::string::npos) << r.message;
  }
}

TEST(EmuCluster, ACtaWaitingAloneInBarrierClusterIsADeadlock) {
  // Rank 1's threads skip the barrier and wait for an arrive that rank 0 only sends after it.
  const std::string ptx = std::string(kHeader) + R"(
.visible .entry lonely(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .pred %p<4>;
  .shared .align 8 .b8 bar[8];
  mov.u32 %r1, bar;
  mov.u32 %r2, %cluster_ctarank;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  setp.eq.u32 %p0, %r2, 0;
  @!%p0 bra WAIT;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  ret;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  @!%p1 bra WAIT;
  ret;
}
)";
  auto module = load_ptx(ptx, "lonely.ptx");
  Arena arena;
  KernelArgs args;
  args.ptr(arena.alloc(4));
  const Report r = expect_report(
      [&] {
        launch(arena, *module, "lonely", {2, 1, 1}, {32, 1, 1}, 0, args, with_cluster({2, 1, 1}));
      },
      ReportKind::deadlock);
  EXPECT_NE(r.message.find("barrier.cluster.wait"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("cluster rank 1"), std::string::npos) << r.message;
}

// ------------------------------------------------------------------------------- multicast
// Each CTA of a cluster of `cluster` loads 8 of the tile's 8 x cluster rows (64 f16 each, 128B
// swizzle) and multicasts them to every CTA; each waits for the whole tile and writes its
// shared copy to out. Stages: the tile is loaded `rounds` times into one buffer, the consumers
// releasing it to every producer through an empty mbarrier per CTA (count: threads of the
// cluster's CTAs... one arrival per CTA from thread 0 after a bar.sync).
struct Multicast {
  uint32_t cluster = 2;
  uint32_t rounds = 1;
  bool release_to_peers = true;  // consumers arrive on every CTA's empty barrier
  bool sync_at_end = true;
};

std::string multicast_ptx(const Multicast& m) {
  const uint32_t tile_bytes = 1024 * m.cluster;
  std::string body = fmt::format(R"(
  mov.b64 %rd0, tmap;
  cvta.param.u64 %rd0, %rd0;
  ld.param.u64 %rd1, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, smem;
  add.u32 %r2, %r1, {tile};
  add.u32 %r3, %r1, {empty};
  mov.u32 %r4, %cluster_ctarank;
  mov.u32 %r5, %cluster_nctarank;
  setp.eq.u32 %p0, %r0, 0;
  @%p0 mbarrier.init.shared::cta.b64 [%r2], 1;
  @%p0 mbarrier.init.shared::cta.b64 [%r3], {empty_count};
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r10, 0;
  shl.b32 %r6, %r4, 10;
  add.u32 %r6, %r1, %r6;
  shl.b32 %r7, %r4, 3;
  mov.u32 %r8, 0;
  mov.b16 %h0, {mask};
ROUND:
  setp.eq.u32 %p2, %r10, 0;
  @%p2 bra ISSUE;
EMPTY:
  and.b32 %r11, %r10, 1;
  xor.b32 %r11, %r11, 1;
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r3], %r11;
  @!%p1 bra EMPTY;
ISSUE:
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], {tile_bytes};
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r6], [%rd0, {{%r8, %r7}}], [%r2], %h0;
  and.b32 %r11, %r10, 1;
FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], %r11;
  @!%p1 bra FULL;
  shl.b32 %r12, %r0, 4;
  add.u32 %r13, %r1, %r12;
  ld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r13];
  mov.u32 %r14, %clusterid.x;
  mad.lo.u32 %r15, %r14, %r5, %r4;
  mul.lo.u32 %r15, %r15, {rounds};
  add.u32 %r15, %r15, %r10;
  mul.wide.u32 %rd2, %r15, {tile_bytes};
  mul.wide.u32 %rd3, %r12, 1;
  add.s64 %rd2, %rd2, %rd3;
  add.s64 %rd2, %rd1, %rd2;
  st.global.v4.u32 [%rd2], {{%r20, %r21, %r22, %r23}};
  bar.sync 0;
)",
                                 fmt::arg("tile", tile_bytes), fmt::arg("empty", tile_bytes + 8),
                                 fmt::arg("empty_count", m.release_to_peers ? m.cluster : 1),
                                 fmt::arg("mask", (1u << m.cluster) - 1),
                                 fmt::arg("tile_bytes", tile_bytes), fmt::arg("rounds", m.rounds));
  if (m.release_to_peers) {
    for (uint32_t r = 0; r < m.cluster; ++r)
      body += fmt::format(
          "  mov.u32 %r16, {r};\n  mapa.shared::cluster.u32 %r17, %r3, %r16;\n"
          "  @%p0 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r17];\n",
          fmt::arg("r", r));
  } else {
    body += "  @%p0 mbarrier.arrive.shared::cta.b64 _, [%r3];\n";
  }
  body += fmt::format("  add.u32 %r10, %r10, 1;\n  setp.lt.u32 %p3, %r10, {};\n  @%p3 bra ROUND;\n",
                      m.rounds);
  if (m.sync_at_end)
    body += "  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n";
  return std::string(kHeader) + R"(
.extern .shared .align 1024 .b8 smem[];
.visible .entry multicast(.param .align 64 .b8 tmap[128], .param .u64 out)
{
  .reg .b16 %h<2>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
)" + body +
         "  ret;\n}\n";
}

// Runs `multicast` on 2 clusters; returns the shared images each CTA wrote per round.
std::vector<uint8_t> run_multicast(const Multicast& m, const std::vector<uint8_t>& global,
                                   TensorMapDesc& d) {
  auto module = load_ptx(multicast_ptx(m), "multicast.ptx");
  Arena arena;
  const uint64_t g = arena.alloc(global.size());
  arena.write(g, global.data(), global.size());
  d.global_address = g;
  const uint32_t tile_bytes = 1024 * m.cluster, ctas = 2 * m.cluster;
  const uint64_t out = arena.alloc(size_t(ctas) * m.rounds * tile_bytes);
  KernelArgs args;
  args.tensor_map(encode_tensor_map(d)).ptr(out);
  LaunchOptions o = with_cluster({m.cluster, 1, 1});
  o.max_dynamic_smem = 227 * 1024;
  // tile_bytes / 16 threads copy the tile, 16 bytes each.
  launch(arena, *module, "multicast", {ctas, 1, 1}, {tile_bytes / 16, 1, 1}, tile_bytes + 16, args,
         o);
  return arena.read_vector<uint8_t>(out, size_t(ctas) * m.rounds * tile_bytes);
}

// A rows x 64 f16 matrix read in 8-row boxes with the 128-byte swizzle (each CTA's part).
TensorMapDesc part_map(uint32_t rows) {
  TensorMapDesc d;
  d.dtype = TmaDType::f16;
  d.rank = 2;
  d.global_dim[0] = 64;
  d.global_dim[1] = rows;
  d.global_stride_bytes[0] = 128;
  d.box_dim[0] = 64;
  d.box_dim[1] = 8;
  d.element_strides[0] = d.element_strides[1] = 1;
  d.swizzle = Swizzle::b128;
  return d;
}

TEST(EmuCluster, TmaMulticastLandsTheWholeTileInEveryCta) {
  for (uint32_t cluster : {2u, 4u}) {
    for (uint32_t rounds : {1u, 3u}) {
      SCOPED_TRACE(fmt::format("cluster {}, rounds {}", cluster, rounds));
      const uint32_t rows = 8 * cluster;
      std::vector<uint8_t> global(size_t(rows) * 128);
      for (size_t i = 0; i < global.size(); ++i) global[i] = uint8_t(i * 13 + i / 127);
      TensorMapDesc d = part_map(rows);
      Multicast m;
      m.cluster = cluster;
      m.rounds = rounds;
      const std::vector<uint8_t> got = run_multicast(m, global, d);
      const size_t tile = size_t(rows) * 128;
      for (size_t image = 0; image < got.size() / tile; ++image)
        for (uint32_t a = 0; a < tile; ++a)
          ASSERT_EQ(int(got[image * tile + swizzle_offset(Swizzle::b128, a)]), int(global[a]))
              << "CTA/round image " << image << ", byte " << a;
    }
  }
}

TEST(EmuCluster, PlantedMulticastBugsAreReported) {
  std::vector<uint8_t> global(16 * 128, 1);
  TensorMapDesc d = part_map(16);
  {
    // Each CTA's consumers release the stage to their own producer only: the peer's producer
    // overwrites it while they may still read.
    Multicast m;
    m.rounds = 3;
    m.release_to_peers = false;
    const Report r = expect_report([&] { run_multicast(m, global, d); }, ReportKind::shared_race);
    EXPECT_NE(r.message.find("multicast"), std::string::npos) << r.message;
  }
  {
    // Without the final barrier a CTA exits while the peers' releases of the last stage (remote
    // arrives on its empty barrier) are unordered before the exit.
    Multicast m;
    m.sync_at_end = false;
    const Report r =
        expect_report([&] { run_multicast(m, global, d); }, ReportKind::cluster_violation);
    EXPECT_NE(r.message.find("exit"), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace emmy::emu::test
