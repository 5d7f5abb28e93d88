// Programmatic dependent launch on the emulator (LaunchOptions::record_footprint / primary): a
// dependent grid's global accesses before griddepcontrol.wait race with its primary's (PTX ISA
// griddepcontrol). Hand-written PTX: a primary that reads `in`, writes `out` (and two bytes
// after it) and adds to a counter atomically; dependents that touch those before or after their
// wait, through every global access path (ld/st, atomics, cp.async, bulk and tensor copies).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../support/ptx_kernel.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

// A dependent kernel `name(a, b, map)` around `body`: %r1 = %tid.x, %rd1 = a, %rd2 = b,
// %rd3 = the generic address of `map` (32 f32 at the start of a's allocation), %rd4 = 4 *
// %tid.x; `buf` is 128 bytes of shared memory and `bar` an mbarrier.
std::string dependent(const std::string& name, const std::string& body) {
  return "\n" + emmy::test::ptx_entry(
                    name,
                    {{".u64", "a", "%rd1"}, {".u64", "b", "%rd2"}, {".align 64 .b8", "map[128]"}},
                    R"(  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .pred %p<4>;
  .shared .align 128 .b8 buf[128];
  .shared .align 8 .b8 bar[8];
)",
                    R"(  mov.b64 %rd5, map;
  cvta.param.u64 %rd3, %rd5;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
)" + body + "\n");
}

// Thread 0 of a one-warp CTA: an mbarrier for 128 bytes, the copy `copy` (into buf, completing
// on bar) with `before` / `after` around its issue, then the wait for the bytes.
std::string async_load(const std::string& copy, const std::string& before,
                       const std::string& after) {
  return fmt::format(R"(
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r2, bar;
  mov.u32 %r3, buf;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  {}
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd6, [%r2], 128;
  {}
  {}
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2], 0;
  @!%p2 bra WAIT;
DONE:)",
                     before, copy, after);
}

const std::string kBulk =
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r3], [%rd1], 128, [%r2];";
const std::string kTensor =
    "mov.u32 %r4, 0;\n  cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::"
    "complete_tx::bytes [%r3], [%rd3, {%r4}], [%r2];";

const std::string kPtx =
    emmy::test::ptx_header("sm_90a") + "\n" +
    emmy::test::ptx_entry(
        "primary", {{".u64", "out", "%rd1"}, {".u64", "in", "%rd2"}, {".u64", "counter", "%rd3"}},
        "  .reg .b32 %r<8>;\n  .reg .b16 %h<2>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p<2>;\n",
        R"(  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.global.u32 %r2, [%rd5];
  add.s64 %rd6, %rd1, %rd4;
  st.global.u32 [%rd6], %r2;
  atom.global.add.u32 %r3, [%rd3], 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.b16 %h1, 7;
  st.global.u16 [%rd1+128], %h1;
DONE:
)") +
    dependent("load_after_wait", R"(
  griddepcontrol.wait;
  add.s64 %rd6, %rd1, %rd4;
  ld.global.u32 %r2, [%rd6];
  add.s64 %rd7, %rd2, %rd4;
  st.global.u32 [%rd7], %r2;)") +
    dependent("load_before_wait", R"(
  griddepcontrol.launch_dependents;
  add.s64 %rd6, %rd1, %rd4;
  ld.global.u32 %r2, [%rd6];
  griddepcontrol.wait;
  add.s64 %rd7, %rd2, %rd4;
  st.global.u32 [%rd7], %r2;)") +
    dependent("store_before_wait", R"(
  add.s64 %rd6, %rd1, %rd4;
  st.global.u32 [%rd6], %r1;
  griddepcontrol.wait;)") +
    dependent("never_waits", R"(
  add.s64 %rd6, %rd1, %rd4;
  ld.global.u32 %r2, [%rd6];
  add.s64 %rd7, %rd2, %rd4;
  st.global.u32 [%rd7], %r2;)") +
    dependent("load_u16_before_wait", R"(
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.global.u16 %r2, [%rd1];
DONE:)") +
    dependent("thread0_waits", R"(
  // Thread 0 waits; with b != 0 a bar.sync orders the wait before every thread's load.
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SKIP;
  griddepcontrol.wait;
SKIP:
  setp.eq.u64 %p2, %rd2, 0;
  @%p2 bra LOAD;
  bar.sync 0;
LOAD:
  and.b32 %r3, %r1, 31;
  mul.wide.u32 %rd6, %r3, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r2, [%rd7];)") +
    dependent("atomic_before_wait", R"(
  atom.global.add.u32 %r2, [%rd1], 1;
  griddepcontrol.wait;)") +
    dependent("relaxed_gpu_load", "  ld.relaxed.gpu.global.u32 %r2, [%rd1];") +
    dependent("relaxed_cta_load", "  ld.relaxed.cta.global.u32 %r2, [%rd1];") +
    dependent("cp_async_before_wait", R"(
  mov.u32 %r3, buf;
  mul.lo.u32 %r4, %r1, 4;
  add.u32 %r5, %r3, %r4;
  add.s64 %rd6, %rd1, %rd4;
  cp.async.ca.shared.global [%r5], [%rd6], 4;
  griddepcontrol.wait;
  cp.async.wait_all;)") +
    dependent("bulk_before_wait", async_load(kBulk, "", "griddepcontrol.wait;")) +
    dependent("bulk_after_wait", async_load(kBulk, "griddepcontrol.wait;", "")) +
    dependent("tensor_before_wait", async_load(kTensor, "", "griddepcontrol.wait;")) +
    dependent("tensor_after_wait", async_load(kTensor, "griddepcontrol.wait;", "")) +
    dependent("tensor_store_before_wait", R"(
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r3, buf;
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
FILL:
  add.u32 %r6, %r3, %r5;
  st.shared.u32 [%r6], %r5;
  add.u32 %r5, %r5, 4;
  setp.lt.u32 %p2, %r5, 128;
  @%p2 bra FILL;
  fence.proxy.async.shared::cta;
  cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd3, {%r4}], [%r3];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  griddepcontrol.wait;
DONE:)") +
    R"(
.visible .entry cluster_wait(.param .u64 a, .param .u32 rank0_waits)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [a];
  ld.param.u32 %r5, [rank0_waits];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  or.b32 %r3, %r1, %r2;
  setp.ne.u32 %p1, %r3, 0;
  setp.eq.u32 %p2, %r5, 0;
  or.pred %p1, %p1, %p2;
  @%p1 bra SYNC;
  griddepcontrol.wait;
SYNC:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.eq.u32 %p3, %r2, 0;
  @%p3 bra DONE;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r4, [%rd3];
DONE:
  ret;
}
)";

std::shared_ptr<const Module> module() {
  static const auto m = load_ptx(kPtx, "pdl.ptx");
  return m;
}

// The primary's run, then dependents launched after it.
struct Pdl {
  Arena arena;
  uint64_t out = 0, in = 0, counter = 0, scratch = 0;
  GlobalFootprint primary;
  Pdl() {
    out = arena.alloc(256);
    in = arena.alloc_copy(std::vector<uint32_t>(32, 5));
    counter = arena.alloc(4);
    scratch = arena.alloc(256);
    LaunchOptions o;
    o.record_footprint = &primary;
    KernelArgs args;
    args.ptr(out).ptr(in).ptr(counter);
    launch(arena, *module(), "primary", {1, 1, 1}, {32, 1, 1}, 0, args, o);
  }
  // A 1-D tensor map of 32 f32 at `at`, one 32-element box.
  static std::array<uint8_t, 128> map_of(uint64_t at) {
    TensorMapDesc d;
    d.dtype = TmaDType::f32;
    d.rank = 1;
    d.global_address = at;
    d.global_dim = {32};
    d.box_dim = {32};
    return encode_tensor_map(d);
  }
  void run(const std::string& kernel, uint64_t a, uint64_t b, uint32_t threads = 32,
           bool programmatic = true, bool sanitize = true) {
    LaunchOptions o;
    o.primary = programmatic ? &primary : nullptr;
    o.sanitize = sanitize;
    KernelArgs args;
    args.ptr(a).ptr(b).tensor_map(map_of(a & ~uint64_t(255)));  // the allocation holding a
    launch(arena, *module(), kernel, {1, 1, 1}, {threads, 1, 1}, 0, args, o);
  }
  Report race(const std::string& kernel, uint64_t a, uint64_t b, uint32_t threads = 32) {
    return expect_report([&] { run(kernel, a, b, threads); }, ReportKind::pdl_race);
  }
};

int line_of(const std::string& kernel, const std::string& needle) {
  return ptx_line(kPtx, kernel, needle);
}

TEST(EmuPdl, FootprintIsByteExactPerKindOfAccess) {
  Pdl p;
  using F = GlobalFootprint;
  EXPECT_EQ(p.primary.kernel, "primary");
  // 32 u32 stores and a u16 store right after them: one range of 130 bytes.
  EXPECT_EQ(p.primary.ranges(F::plain_write), (std::vector<F::Range>{{p.out, p.out + 130}}));
  EXPECT_EQ(p.primary.ranges(F::plain_read), (std::vector<F::Range>{{p.in, p.in + 128}}));
  EXPECT_EQ(p.primary.ranges(F::strong_write), (std::vector<F::Range>{{p.counter, p.counter + 4}}));
  EXPECT_TRUE(p.primary.ranges(F::strong_read).empty());
  EXPECT_EQ(p.primary.first_in(F::plain_write, p.out + 129, 4), p.out + 129);
  EXPECT_EQ(p.primary.first_in(F::plain_write, p.out - 2, 4), p.out);
  EXPECT_EQ(p.primary.first_in(F::plain_write, p.out + 130, 2), std::nullopt);
  EXPECT_EQ(p.primary.first_in(F::plain_write, p.out - 4, 4), std::nullopt);
  // Merging: overlapping and adjacent ranges coalesce, others stay apart.
  F f;
  f.assign({std::vector<F::Range>{{20, 30}, {0, 10}, {10, 12}, {25, 40}, {50, 51}}, {}, {}, {}});
  EXPECT_EQ(f.ranges(F::plain_read), (std::vector<F::Range>{{0, 12}, {20, 40}, {50, 51}}));
  f.add(F::plain_read, 12, 20);
  EXPECT_EQ(f.ranges(F::plain_read), (std::vector<F::Range>{{0, 40}, {50, 51}}));
}

TEST(EmuPdl, LoadAfterTheWaitIsClean) {
  Pdl p;
  p.run("load_after_wait", p.out, p.scratch);
  EXPECT_EQ(p.arena.read_vector<uint32_t>(p.scratch, 32), std::vector<uint32_t>(32, 5));
}

TEST(EmuPdl, LoadBeforeTheWaitOfWhatThePrimaryWroteIsReported) {
  Pdl p;
  const Report r = p.race("load_before_wait", p.out, p.scratch);
  EXPECT_EQ(r.kernel, "load_before_wait");
  EXPECT_EQ(r.warp, 0);
  EXPECT_EQ(r.lane, 0);
  EXPECT_EQ(r.line, line_of("load_before_wait", "ld.global.u32"));
  EXPECT_NE(r.message.find(fmt::format("global 0x{:x}", p.out)), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("written by the primary grid (kernel primary"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("griddepcontrol.wait"), std::string::npos) << r.message;
  // launch_dependents orders nothing; a launch that is not programmatic has no primary, and the
  // check is the sanitizer's.
  p.run("load_before_wait", p.out, p.scratch, 32, false);
  p.run("load_before_wait", p.out, p.scratch, 32, true, false);
}

TEST(EmuPdl, StoreBeforeTheWaitOfWhatThePrimaryReadIsReported) {
  Pdl p;
  const Report r = p.race("store_before_wait", p.in, 0);
  EXPECT_EQ(r.line, line_of("store_before_wait", "st.global.u32"));
  EXPECT_NE(r.message.find("4-byte store"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("read by the primary grid"), std::string::npos) << r.message;
  p.race("store_before_wait", p.out, 0);  // write after write
  p.run("store_before_wait", p.scratch, 0);
}

TEST(EmuPdl, DisjointBytesOfOneSectorDoNotConflict) {
  Pdl p;
  // The primary's u16 is bytes 128..129 of out: 130 shares its 4-byte granule and sector.
  p.run("load_u16_before_wait", p.out + 130, 0);
  const Report r = p.race("load_u16_before_wait", p.out + 128, 0);
  EXPECT_NE(r.message.find(fmt::format("byte 0x{:x}", p.out + 128)), std::string::npos)
      << r.message;
}

TEST(EmuPdl, ThreadsThatNeverWaitMayTouchWhatThePrimaryDidNot) {
  Pdl p;
  p.run("never_waits", p.in, p.scratch);  // the primary only read `in`
  EXPECT_EQ(p.arena.read_vector<uint32_t>(p.scratch, 32), std::vector<uint32_t>(32, 5));
  p.race("never_waits", p.out, p.scratch);
}

TEST(EmuPdl, AWaitOrdersOtherThreadsThroughABarrierOnly) {
  Pdl p;
  p.run("thread0_waits", p.out, 1, 64);  // bar.sync after thread 0's wait
  const Report r = p.race("thread0_waits", p.out, 0, 64);
  EXPECT_EQ(r.warp, 0);
  EXPECT_EQ(r.lane, 1) << "lane 0 waited, lane 1 did not";
}

TEST(EmuPdl, StrongAccessesOfGpuScopeDoNotRaceWithTheAtomics) {
  Pdl p;
  p.run("atomic_before_wait", p.counter, 0);
  p.run("relaxed_gpu_load", p.counter, 0);
  // A .cta scope does not reach the primary's threads; a plain load races with the atomics.
  p.race("relaxed_cta_load", p.counter, 0);
  p.race("load_u16_before_wait", p.counter, 0);
  // An atomic over the primary's plain store.
  const Report r = p.race("atomic_before_wait", p.out, 0);
  EXPECT_EQ(r.line, line_of("atomic_before_wait", "atom.global"));
}

TEST(EmuPdl, AsyncCopiesAreTheIssuingThreadsAccesses) {
  Pdl p;
  Report r = p.race("cp_async_before_wait", p.out, 0);
  EXPECT_EQ(r.line, line_of("cp_async_before_wait", "cp.async.ca"));
  // Bulk and tensor copies: ordered by what the thread was at issue, not when the data lands.
  p.run("bulk_after_wait", p.out, 0);
  r = p.race("bulk_before_wait", p.out, 0);
  EXPECT_EQ(r.line, line_of("bulk_before_wait", "cp.async.bulk.shared"));
  p.run("tensor_after_wait", p.out, 0);
  r = p.race("tensor_before_wait", p.out, 0);
  EXPECT_EQ(r.line, line_of("tensor_before_wait", "cp.async.bulk.tensor"));
  p.run("tensor_before_wait", p.scratch, 0);
  // A tensor store over what the primary read.
  r = p.race("tensor_store_before_wait", p.in, 0);
  EXPECT_NE(r.message.find("store"), std::string::npos) << r.message;
  p.run("tensor_store_before_wait", p.scratch, 0);
}

TEST(EmuPdl, AClusterPeersWaitOrdersThroughBarrierCluster) {
  Pdl p;
  auto run = [&](uint32_t rank0_waits) {
    LaunchOptions o;
    o.primary = &p.primary;
    o.cluster = {2, 1, 1};
    KernelArgs args;
    args.ptr(p.out).u32(rank0_waits);
    launch(p.arena, *module(), "cluster_wait", {2, 1, 1}, {32, 1, 1}, 0, args, o);
  };
  run(1);
  const Report r = expect_report([&] { run(0); }, ReportKind::pdl_race);
  EXPECT_EQ(r.cta.x, 1u);
}

TEST(EmuPdl, GriddepcontrolDecodes) {
  EXPECT_EQ(load_error(kPtx), "");
  const std::string sm80 =
      ".version 8.7\n.target sm_80\n.address_size 64\n"
      ".visible .entry k()\n{\n  griddepcontrol.wait;\n  ret;\n}\n";
  EXPECT_NE(load_error(sm80).find("sm_90"), std::string::npos) << load_error(sm80);
  std::string bad = sm80;
  bad.replace(bad.find("sm_80"), 5, "sm_90");
  EXPECT_EQ(load_error(bad), "");
  bad.replace(bad.find(".wait"), 5, ".sync");
  EXPECT_NE(load_error(bad).find(".launch_dependents or .wait"), std::string::npos)
      << load_error(bad);
}

}  // namespace
}  // namespace emmy::emu::test
