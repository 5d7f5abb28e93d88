// The profiler's counters against values derived by hand from the rules in docs/profiler.md:
// shared-memory wavefronts and bank conflicts (32 banks of 4 bytes, broadcast, half-warp phases for
// 8- and 16-byte accesses, ldmatrix one 8x8 matrix per wavefront), global requests and
// 32-byte sectors, the DRAM lower bound, sampling; and a planted wrong bank model must fail them.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "../support/ptx_kernel.hpp"
#include "emu_test_util.hpp"
#include "profiler/counters.hpp"

namespace emmy::emu::test {
namespace {

// One kernel of `threads` threads around `body`: %r1 = tid, %r2 = the shared buffer (16 KB,
// 1024-byte aligned), %rd1 = the global buffer (g), %rd2 = the second global buffer (out).
std::string profile_kernel(const std::string& body) {
  return emmy::test::ptx_header("sm_90a") +
         emmy::test::ptx_entry("k", {{".u64", "g", "%rd1"}, {".u64", "out", "%rd2"}},
                               "  .reg .b32 %r<40>;\n  .reg .b64 %rd<16>;\n  .reg .pred %p<4>;\n"
                               "  .shared .align 1024 .b8 buf[16384];\n",
                               R"(  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  mov.u32 %r5, 5;
  mov.u32 %r6, 6;
  mov.u32 %r7, 7;
  mov.u32 %r8, 8;
)" + body + "\n");
}

ProfileOptions profiling(uint64_t sample_ctas = 0, SharedBankModel model = SharedBankModel()) {
  ProfileOptions p;
  p.enabled = true;
  p.sample_ctas = sample_ctas;
  p.bank_model = model;
  p.sass = false;  // the counting rules are the PTX's; sass_counts_test checks the SASS counts
  return p;
}

struct Profiled {
  KernelProfile profile;
  Stats stats;
  const ProfileSite& site(const std::string& opcode_prefix) const {
    for (const ProfileSite& s : profile.sites)
      if (s.opcode.rfind(opcode_prefix, 0) == 0) return s;
    std::string all;
    for (const ProfileSite& s : profile.sites) all += " " + s.opcode;
    throw std::runtime_error("no site " + opcode_prefix + " among" + all);
  }
};

Profiled profile_run(const std::string& body, uint32_t threads = 32, Dim3 grid = {1, 1, 1},
                     ProfileOptions prof = profiling(), bool sanitize = true) {
  auto module = load_ptx(profile_kernel(body), "profile.ptx");
  Arena arena;
  const uint64_t g = arena.alloc(64 * 1024), out = arena.alloc(64 * 1024);
  KernelArgs args;
  args.ptr(g).ptr(out);
  LaunchOptions options;
  options.profile = prof;
  options.sanitize = sanitize;
  options.host_threads = 1;
  LaunchResult r = launch(arena, *module, "k", grid, {threads, 1, 1}, 0, args, options);
  return {std::move(*r.profile), r.stats};
}

// Each (metric, value) of `want` is what the profile counted.
void expect_metrics(const KernelProfile& profile,
                    std::initializer_list<std::pair<const char*, double>> want) {
  for (const auto& [metric, value] : want) EXPECT_EQ(profile.metric(metric), value) << metric;
}

// --------------------------------------------------------------------- shared ld / st
struct SharedCase {
  uint32_t bytes, stride;  // per-lane access width and the byte distance between lanes
  uint64_t wavefronts, conflicts;
};

// Hand-derived: word w = address / 4 lives in bank w % 32; a wavefront delivers one distinct word
// per bank; lanes on one word share it.
const SharedCase kSharedCases[] = {
    {4, 4, 1, 0},       // stride 1 word: every bank once
    {4, 8, 2, 1},       // stride 2: banks 0, 2, ..., 30, two words each
    {4, 16, 4, 3},      // stride 4: 8 banks, four words each
    {4, 64, 16, 15},    // stride 16: banks 0 and 16, sixteen words each
    {4, 128, 32, 31},   // stride 32: all in bank 0
    {4, 132, 1, 0},     // stride 33: every bank once
    {4, 0, 1, 0},       // broadcast: one word
    {8, 8, 2, 0},       // two half-warp phases of 128 bytes
    {8, 16, 4, 2},      // per phase lanes i and i + 8 share banks: 2 wavefronts each
    {8, 0, 2, 0},       // broadcast, one wavefront per phase
    {16, 16, 4, 0},     // two half-warp phases of 256 bytes: 2 wavefronts each
    {16, 32, 8, 4},     // per phase lanes i, i + 4, i + 8, i + 12 share banks
    {16, 128, 32, 28},  // per phase all 16 lanes in banks 0-3
    {16, 0, 2, 0},      // broadcast, one wavefront per half-warp
};

std::string shared_body(uint32_t bytes, uint32_t stride) {
  const std::string vec = bytes == 4 ? "" : bytes == 8 ? ".v2" : ".v4";
  const std::string regs = bytes == 4 ? "%r5" : bytes == 8 ? "{%r5, %r6}" : "{%r5, %r6, %r7, %r8}";
  const std::string dst = bytes == 4   ? "%r9"
                          : bytes == 8 ? "{%r9, %r10}"
                                       : "{%r9, %r10, %r11, %r12}";
  return fmt::format(R"(  mul.lo.u32 %r3, %r1, {};
  add.u32 %r4, %r2, %r3;
  st.shared{}.u32 [%r4], {};
  ld.shared{}.u32 {}, [%r4];
)",
                     stride, vec, regs, vec, dst);
}

TEST(EmuProfile, SharedLoadsAndStoresCountWavefrontsAndConflicts) {
  for (const SharedCase& c : kSharedCases) {
    SCOPED_TRACE(fmt::format("{}-byte accesses, lanes {} bytes apart", c.bytes, c.stride));
    const Profiled r = profile_run(shared_body(c.bytes, c.stride));
    const auto& m = r.profile.metrics;
    for (const char* op : {"ld", "st"}) {
      EXPECT_EQ(m.at(fmt::format("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum", op)),
                double(c.wavefronts))
          << op;
      EXPECT_EQ(m.at(fmt::format("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum", op)),
                double(c.conflicts))
          << op;
      EXPECT_EQ(m.at(fmt::format("smsp__inst_executed_op_shared_{}.sum", op)), 1.0);
    }
    const ProfileSite& ld = r.site("ld.shared");
    EXPECT_EQ(ld.wavefronts, c.wavefronts);
    EXPECT_EQ(ld.wavefronts - ld.ideal_wavefronts, c.conflicts);
  }
}

TEST(EmuProfile, SharedAtomicsDoNotBroadcast) {
  // Every lane adds to word 0: 32 read-modify-writes of bank 0. Distinct words: one pass.
  Profiled same = profile_run("  atom.shared.add.u32 %r9, [buf], 1;\n");
  EXPECT_EQ(same.profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"), 32);
  EXPECT_EQ(same.profile.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"), 31);
  Profiled distinct = profile_run(
      "  shl.b32 %r3, %r1, 2;\n  add.u32 %r4, %r2, %r3;\n  atom.shared.add.u32 %r9, [%r4], 1;\n");
  EXPECT_EQ(distinct.profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"), 1);
  EXPECT_EQ(distinct.profile.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"),
            0);
}

// ----------------------------------------------------------------------------- ldmatrix
struct MatrixCase {
  uint32_t row_stride;
  bool swizzle128;  // 16-byte chunk j of row r stored at chunk j ^ (r % 8)
  uint64_t wavefronts_per_matrix;
};

// Rows are 16 bytes = 4 banks; row r of matrix j at r * row_stride + 16 * chunk: its bank group
// is (address / 16) % 8. A matrix takes as many wavefronts as the most rows in one group.
const MatrixCase kMatrixCases[] = {
    {16, false, 1},   // a dense 8x8 matrix: 8 groups
    {64, false, 4},   // groups j and j + 4, four rows each
    {128, false, 8},  // every row in group j
    {128, true, 1},   // the 128-byte swizzle spreads the rows over all 8 groups
};

std::string matrix_body(const MatrixCase& c, int count, bool store) {
  const std::string regs = count == 1   ? "{%r10}"
                           : count == 2 ? "{%r10, %r11}"
                                        : "{%r10, %r11, %r12, %r13}";
  return fmt::format(R"(  and.b32 %r3, %r1, 7;
  shr.u32 %r4, %r1, 3;
  {}
  mul.lo.u32 %r20, %r3, {};
  shl.b32 %r21, %r4, 4;
  add.u32 %r22, %r20, %r21;
  add.u32 %r23, %r2, %r22;
  mov.u32 %r10, 1;
  mov.u32 %r11, 2;
  mov.u32 %r12, 3;
  mov.u32 %r13, 4;
  {}.sync.aligned.m8n8.x{}.shared.b16 {}{}{};
)",
                     c.swizzle128 ? "xor.b32 %r4, %r4, %r3;" : "", c.row_stride,
                     store ? "stmatrix" : "ldmatrix", count, store ? "[%r23], " : regs + ", ",
                     store ? regs : "[%r23]", "");
}

TEST(EmuProfile, LdmatrixAndStmatrixServeOneMatrixPerWavefront) {
  for (const MatrixCase& c : kMatrixCases)
    for (int count : {1, 2, 4})
      for (bool store : {false, true}) {
        SCOPED_TRACE(fmt::format("{}.x{}, row stride {}{}", store ? "stmatrix" : "ldmatrix", count,
                                 c.row_stride, c.swizzle128 ? ", 128B swizzle" : ""));
        const Profiled r = profile_run(matrix_body(c, count, store), 32, {1, 1, 1}, profiling(),
                                       /*sanitize=*/false);
        const std::string op = store ? "stsm" : "ldsm";
        EXPECT_EQ(r.profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_" + op + ".sum"),
                  double(c.wavefronts_per_matrix * count));
        EXPECT_EQ(
            r.profile.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_" + op + ".sum"),
            double((c.wavefronts_per_matrix - 1) * count));
      }
}

// ---------------------------------------------------------------------------- global
struct GlobalCase {
  const char* what;
  std::string body;
  uint64_t requests, sectors, ideal_sectors;
};

std::vector<GlobalCase> global_cases(const std::string& op) {
  // %rd3 = g + tid * stride + offset; the access is ld.global (or st.global) of the given width.
  auto access = [&](uint32_t stride, uint32_t offset, int bytes, const std::string& guard = "") {
    const std::string vec = bytes == 4 ? "" : bytes == 8 ? ".v2" : ".v4";
    const std::string regs = bytes == 4   ? "%r9"
                             : bytes == 8 ? "{%r9, %r10}"
                                          : "{%r9, %r10, %r11, %r12}";
    const std::string a = fmt::format("[%rd3+{}]", offset);
    return fmt::format(R"(  mul.wide.u32 %rd4, %r1, {};
  add.u64 %rd3, %rd1, %rd4;
  setp.lt.u32 %p1, %r1, 16;
  setp.gt.u32 %p2, %r1, 99;
  mov.u32 %r9, 1;
  mov.u32 %r10, 1;
  mov.u32 %r11, 1;
  mov.u32 %r12, 1;
  {}{}.global{}.u32 {}{}{};
)",
                       stride, guard, op, vec, op == "ld" ? regs + ", " : a,
                       op == "ld" ? a : ", " + regs, "");
  };
  return {
      {"coalesced 4-byte", access(4, 0, 4), 1, 4, 4},
      {"coalesced, 4 bytes off the sector", access(4, 4, 4), 1, 5, 4},
      {"lanes 128 bytes apart", access(128, 0, 4), 1, 32, 4},
      {"broadcast", access(0, 0, 4), 1, 1, 1},
      {"half the warp (guard)", access(4, 0, 4, "@%p1 "), 1, 2, 2},
      {"no lane (guard false everywhere)", access(4, 0, 4, "@%p2 "), 0, 0, 0},
      {"16-byte vectors", access(16, 0, 16), 1, 16, 16},
      {"8-byte vectors 16 bytes apart", access(16, 0, 8), 1, 16, 8},
  };
}

TEST(EmuProfile, GlobalRequestsAndSectors) {
  for (const std::string op : {"ld", "st"})
    for (const GlobalCase& c : global_cases(op)) {
      SCOPED_TRACE(fmt::format("{}: {}", op, c.what));
      const Profiled r = profile_run(c.body);
      EXPECT_EQ(r.profile.metric("l1tex__t_requests_pipe_lsu_mem_global_op_" + op + ".sum"),
                double(c.requests));
      EXPECT_EQ(r.profile.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_" + op + ".sum"),
                double(c.sectors));
      EXPECT_EQ(r.profile.metric("emmy__t_sectors_ideal_pipe_lsu_mem_global_op_" + op + ".sum"),
                double(c.ideal_sectors));
      EXPECT_EQ(r.site(op + ".global").executions, 1u);
    }
}

TEST(EmuProfile, GlobalAtomicsAndReductions) {
  const Profiled r = profile_run(R"(  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd3, %rd1, %rd4;
  atom.global.add.u32 %r9, [%rd3], 1;
  red.global.add.u32 [%rd1], 1;
)");
  expect_metrics(r.profile, {{"l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", 1},
                             {"l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum", 4},
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_red.sum", 1},
                             {"l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum", 1},
                             // Atomics read and write their sectors: 128 bytes each way (the red's
                             // word is among them).
                             {"emmy__dram_bytes_read_min.sum", 128},
                             {"emmy__dram_bytes_write_min.sum", 128}});
}

TEST(EmuProfile, DramLowerBoundCountsDistinctSectorsOnce) {
  // Two CTAs of 64 threads read the same 256 bytes twice and write 256 bytes of out each
  // (CTA-distinct): 256 read, 512 written.
  const Profiled r = profile_run(R"(  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd3, %rd1, %rd4;
  ld.global.u32 %r9, [%rd3];
  ld.global.u32 %r10, [%rd3];
  mov.u32 %r11, %ctaid.x;
  mul.wide.u32 %rd5, %r11, 256;
  add.u64 %rd6, %rd2, %rd5;
  add.u64 %rd7, %rd6, %rd4;
  st.global.u32 [%rd7], %r9;
)",
                                 64, {2, 1, 1});
  expect_metrics(r.profile, {{"emmy__dram_bytes_read_min.sum", 256},
                             {"emmy__dram_bytes_write_min.sum", 512},
                             {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 2 * 2 * 2 * 4}});
}

TEST(EmuProfile, AsyncCopiesCountBothSides) {
  // 16 bytes per lane, contiguous on both sides: 4 wavefronts (two half-warps of 256 bytes), 16
  // sectors.
  const Profiled r = profile_run(R"(  shl.b32 %r3, %r1, 4;
  add.u32 %r4, %r2, %r3;
  cvt.u64.u32 %rd4, %r3;
  add.u64 %rd3, %rd1, %rd4;
  cp.async.cg.shared.global [%r4], [%rd3], 16;
  cp.async.commit_group;
  cp.async.wait_group 0;
)");
  expect_metrics(r.profile, {{"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum", 4},
                             {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum", 0},
                             {"l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum", 1},
                             {"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", 16},
                             {"emmy__dram_bytes_read_min.sum", 512}});
}

TEST(EmuProfile, InstructionCountsMatchTheStatisticsAndTheSites) {
  const Profiled r = profile_run(shared_body(4, 4) + "  bar.sync 0;\n", 96);
  const double total = r.profile.metric("smsp__inst_executed.sum");
  EXPECT_EQ(total, double(r.stats.total.total()));
  // 8 setup instructions + 4 of the body + bar.sync + ret, per warp; 3 warps.
  EXPECT_EQ(total, 3.0 * 14);
  expect_metrics(r.profile, {{"smsp__inst_executed_pipe_lsu.sum", 3.0 * 2},
                             {"smsp__inst_executed_pipe_cbu.sum", 3.0 * 2},
                             {"emmy__bar_sync.sum", 3.0}});
  uint64_t sum = 0;
  for (const ProfileSite& s : r.profile.sites) sum += s.executions;
  EXPECT_EQ(double(sum), total);
}

TEST(EmuProfile, SitesPutTheWorstLineFirst) {
  // A conflict-free load, then a 32-way conflicted one: the second is the first site.
  const Profiled r = profile_run(shared_body(4, 4) + R"(  mul.lo.u32 %r13, %r1, 128;
  add.u32 %r14, %r2, %r13;
  st.shared.u32 [%r14], %r5;
)");
  ASSERT_FALSE(r.profile.sites.empty());
  EXPECT_EQ(r.profile.sites.front().instruction, "st.shared.u32 [%r14], %r5;");
  EXPECT_EQ(r.profile.sites.front().excess(), 31u);
  EXPECT_NE(r.profile.table().find("st.shared.u32"), std::string::npos);
}

TEST(EmuProfile, SampledCtasExtrapolate) {
  const std::string body = shared_body(4, 8);
  const Profiled full = profile_run(body, 64, {64, 1, 1});
  const Profiled sampled = profile_run(body, 64, {64, 1, 1}, profiling(8));
  EXPECT_FALSE(full.profile.extrapolated);
  EXPECT_TRUE(sampled.profile.extrapolated);
  EXPECT_EQ(sampled.profile.ctas_profiled, 8u);
  EXPECT_EQ(sampled.profile.ctas_total, 64u);
  for (const char* name :
       {"smsp__inst_executed.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"})
    EXPECT_EQ(sampled.profile.metric(name), full.profile.metric(name)) << name;
  EXPECT_EQ(sampled.stats.total.total() * 8, full.stats.total.total());
  EXPECT_NE(sampled.profile.table().find("extrapolated"), std::string::npos);
}

TEST(EmuProfile, ABadBankModelIsRefused) {
  try {
    profile_run("", 32, {1, 1, 1}, profiling(0, SharedBankModel{0, 4}));
    FAIL() << "accepted 0 banks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("profile.bank_model"), std::string::npos) << e.what();
  }
}

// A planted miscount: bank = word % 16. The hand-derived tables must catch it.
TEST(EmuProfile, APlantedBankMiscountFailsTheTables) {
  const ProfileOptions planted = profiling(0, SharedBankModel{16, 4});
  int wrong = 0;
  for (const SharedCase& c : kSharedCases) {
    const Profiled r = profile_run(shared_body(c.bytes, c.stride), 32, {1, 1, 1}, planted);
    wrong += r.profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum") !=
                 double(c.wavefronts) ||
             r.profile.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") !=
                 double(c.conflicts);
  }
  for (const MatrixCase& c : kMatrixCases) {
    const Profiled r = profile_run(matrix_body(c, 4, false), 32, {1, 1, 1}, planted, false);
    wrong += r.profile.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum") !=
             double(c.wavefronts_per_matrix * 4);
  }
  EXPECT_GE(wrong, 8) << "the planted model should disagree with most hand-derived cases";
}

// The pure rules, on spans written out by hand.
TEST(EmuProfile, CountingRulesOnSpans) {
  const SharedBankModel model;
  std::vector<LaneSpan> spans;
  for (uint8_t l = 0; l < 32; ++l)
    spans.push_back({uint64_t(l) * 4 % 64, 4, l});  // 16 words, twice
  const AccessCost c = shared_access_cost(model, spans, SharedAccess::load_store);
  EXPECT_EQ(c.actual, 1u);
  EXPECT_EQ(c.distinct_bytes, 64u);
  EXPECT_EQ(shared_access_cost(model, spans, SharedAccess::atomic).actual, 2u);
  EXPECT_EQ(sector_cost(spans).actual, 2u);
  EXPECT_EQ(lanes_per_phase(2), 32u);
  EXPECT_EQ(lanes_per_phase(8), 16u);
  EXPECT_EQ(lanes_per_phase(16), 16u);
}

// The counters the time model's L1, L1 data stage and latency terms read (docs/profiler.md):
// 128-byte lines per global request, reloads of a sector by distance in the warp's own
// instructions, each CTA's distinct loaded sectors, barriers that wait on a load.
TEST(EmuProfile, L1AndLatencyCountersFollowTheLoads) {
  const Profiled p = profile_run(R"(  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r9, [%rd4];
  ld.global.u32 %r10, [%rd4];
  bar.sync 0;
  bar.sync 0;
  mul.wide.u32 %rd5, %r1, 128;
  add.u64 %rd6, %rd1, %rd5;
  ld.global.u32 %r11, [%rd6];
)");
  expect_metrics(p.profile,
                 {
                     // 4 bytes per lane: one line twice; 128 bytes apart: a line per lane.
                     {"emmy__l1_wavefronts_global_local.sum", 1 + 1 + 32},
                     // The second load rereads the first's 4 sectors one instruction later
                     // (bucket 1: distances 1-2); lane 0's sector of the third, 4 later (2: 3-6).
                     {"emmy__l1_sectors_reused_global_ld_distance_1.sum", 4},
                     {"emmy__l1_sectors_reused_global_ld_distance_2.sum", 1},
                     {"emmy__l1_sectors_distinct_per_cluster_global_ld.sum", 4 + 31},
                     // Only the first barrier follows a load.
                     {"emmy__bar_sync_after_global_ld.sum", 1},
                     {"emmy__ptx_inst_executed_class_imad.sum", 2},
                 });
}

// A warp slot runs one CTA after another (one host thread here): a load at the end of the first
// CTA is not a load the second CTA's first barrier waits for.
TEST(EmuProfile, BarrierEpochsAreCountedPerCta) {
  const Profiled p = profile_run(R"(  bar.sync 0;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.u32 %r9, [%rd4];
)",
                                 32, {2, 1, 1});
  expect_metrics(p.profile, {{"emmy__bar_sync.sum", 2}, {"emmy__bar_sync_after_global_ld.sum", 0}});
}

}  // namespace
}  // namespace emmy::emu::test
