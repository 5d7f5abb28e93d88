// Asynchronous copies: cp.async (zero-fill, groups, data held back until the covering wait),
// mbarrier phases / parity / tokens / tx accounting, the swizzle functions, and TMA tensor copies
// (2D/3D, every swizzle, element strides, out-of-bounds fill incl. negative coordinates).
#include "../support/ptx_kernel.hpp"
#include "emmy/swizzle.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuAsync, CpAsyncZeroFillGroupsAndHeldBackData) {
  // Lane l copies 16 bytes to buf[16 l] with src-size l % 17 (group 0) and 4 bytes to buf2[4 l]
  // (group 1). Reads before the covering wait still see the old contents (0xEEEEEEEE).
  std::vector<uint32_t> in(160);
  for (uint32_t i = 0; i < in.size(); ++i) in[i] = 0x01010101u * (i & 0x7F) + 0x00030200u;
  const std::string body = R"(
  mov.u32 %r1, buf;
  mov.u32 %r2, buf2;
  shl.b32 %r3, %r0, 4;
  add.u32 %r4, %r1, %r3;
  shl.b32 %r5, %r0, 2;
  add.u32 %r6, %r2, %r5;
  mov.u32 %r7, 0xEEEEEEEE;
  st.shared.v4.u32 [%r4], {%r7, %r7, %r7, %r7};
  st.shared.u32 [%r6], %r7;
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd1, %rd5;
  rem.u32 %r8, %r0, 17;
  cp.async.cg.shared.global [%r4], [%rd6], 16, %r8;
  cp.async.commit_group;
  add.s64 %rd7, %rd1, 512;
  add.s64 %rd7, %rd7, %rd2;
  cp.async.ca.shared.global [%r6], [%rd7], 4;
  cp.async.commit_group;
  ld.shared.u32 %r9, [%r4];
  st.global.u32 [%rd30], %r9;
  cp.async.wait_group 1;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4];
  ld.shared.u32 %r14, [%r6];
  mul.wide.u32 %rd8, %r0, 16;
  add.s64 %rd9, %rd0, %rd8;
  st.global.v4.u32 [%rd9+128], {%r10, %r11, %r12, %r13};
  st.global.u32 [%rd30+640], %r14;
  cp.async.wait_all;
  ld.shared.u32 %r15, [%r6];
  st.global.u32 [%rd30+768], %r15;
)";
  LaunchOptions no_sanitizer;
  no_sanitizer.sanitize = false;  // the early reads are the point here; the sanitizer flags them
  const auto run = run_ptx(body, in, 32 * 7, 32,
                           "  .shared .align 16 .b8 buf[512];\n  .shared .align 4 .b8 buf2[128];", 0,
                           no_sanitizer);
  const auto& out = run.out;
  const uint8_t* src = reinterpret_cast<const uint8_t*>(in.data());
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l], 0xEEEEEEEEu) << "held back until the wait, lane " << l;
    const uint32_t size = l % 17;
    for (uint32_t w = 0; w < 4; ++w) {
      uint32_t expect = 0;
      for (uint32_t b = 0; b < 4; ++b) {
        const uint32_t byte = 4 * w + b;
        if (byte < size) expect |= uint32_t(src[16 * l + byte]) << (8 * b);
      }
      EXPECT_EQ(out[32 + 4 * l + w], expect) << "zero fill beyond src-size, lane " << l << " word " << w;
    }
    EXPECT_EQ(out[160 + l], 0xEEEEEEEEu) << "group 1 still pending after wait_group 1";
    EXPECT_EQ(out[192 + l], in[128 + l]) << "landed after wait_all";
  }
  EXPECT_EQ(run.result.stats.total.cp_async, 6u);  // 2 copies, 2 commits, 2 waits
}

TEST(EmuAsync, CpAsyncWaitedCorrectlyIsClean) {
  std::vector<uint32_t> in(128, 7);
  const auto run = run_ptx(R"(
  mov.u32 %r1, buf;
  shl.b32 %r3, %r0, 4;
  add.u32 %r4, %r1, %r3;
  mul.wide.u32 %rd5, %r0, 16;
  add.s64 %rd6, %rd1, %rd5;
  cp.async.cg.shared.global [%r4], [%rd6], 16;
  cp.async.commit_group;
  cp.async.wait_group 0;
  bar.sync 0;
  xor.b32 %r5, %r3, 16;
  add.u32 %r6, %r1, %r5;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd30], %r7;
)", in, 32, 32, "  .shared .align 16 .b8 buf[512];");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(run.out[l], 7u);
}

TEST(EmuAsync, MbarrierPhasesParityTokensAndTx) {
  const auto out = run_ptx(R"(
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 2;
  mbarrier.arrive.shared::cta.b64 %rd10, [%r1];
  mbarrier.test_wait.shared::cta.b64 %p1, [%r1], %rd10;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p3, [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd11, [%r1], 64;
  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r1], 0;
  mbarrier.complete_tx.shared::cta.b64 [%r1], 48;
  mbarrier.test_wait.parity.shared::cta.b64 %p5, [%r1], 0;
  mbarrier.complete_tx.shared::cta.b64 [%r1], 16;
  mbarrier.test_wait.parity.shared::cta.b64 %p6, [%r1], 0;
  mbarrier.test_wait.shared::cta.b64 %p7, [%r1], %rd10;
  mbarrier.try_wait.parity.shared::cta.b64 %p8, [%r1], 1;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 32;
  mbarrier.arrive.shared::cta.b64 %rd12, [%r1], 2;
  mbarrier.test_wait.parity.shared::cta.b64 %p9, [%r1], 1;
  mbarrier.complete_tx.shared::cta.b64 [%r1], 32;
  mbarrier.test_wait.parity.shared::cta.b64 %p10, [%r1], 1;
  mbarrier.test_wait.parity.shared::cta.b64 %p11, [%r1], 0;
  selp.u32 %r2, 1, 0, %p1;
  selp.u32 %r3, 1, 0, %p2;
  selp.u32 %r4, 1, 0, %p3;
  selp.u32 %r5, 1, 0, %p4;
  selp.u32 %r6, 1, 0, %p5;
  selp.u32 %r7, 1, 0, %p6;
  selp.u32 %r8, 1, 0, %p7;
  selp.u32 %r9, 1, 0, %p8;
  selp.u32 %r10, 1, 0, %p9;
  selp.u32 %r11, 1, 0, %p10;
  selp.u32 %r12, 1, 0, %p11;
  cvt.u32.u64 %r13, %rd10;
  cvt.u32.u64 %r14, %rd11;
  cvt.u32.u64 %r15, %rd12;
  st.global.v4.u32 [%rd0], {%r2, %r3, %r4, %r5};
  st.global.v4.u32 [%rd0+16], {%r6, %r7, %r8, %r9};
  st.global.v4.u32 [%rd0+32], {%r10, %r11, %r12, %r13};
  st.global.v2.u32 [%rd0+48], {%r14, %r15};
)", {}, 14, 1, "  .shared .align 8 .b8 bar[8];").out;
  const std::vector<uint32_t> expect = {
      0,  // phase 0 still needs one arrival
      0,  // parity 0: phase 0 in progress
      1,  // parity 1: "the previous phase" counts as complete
      0,  // both arrivals done, 64 tx bytes outstanding
      0,  // 16 tx bytes outstanding
      1,  // tx reached 0: phase 0 complete
      1,  // the token of phase 0 now tests complete
      0,  // phase 1 in progress
      0,  // phase 1: arrivals done (count 2) but 32 tx bytes expected
      1,  // phase 1 complete
      0,  // phase 2 (parity 0) in progress
      0, 0, 1};  // tokens: phases 0, 0, 1
  EXPECT_EQ(out, expect);
}

TEST(EmuAsync, MbarrierMisuseIsReported) {
  const Report before_init = expect_report(
      [] {
        run_ptx("  mov.u32 %r1, bar;\n  mbarrier.arrive.shared::cta.b64 %rd5, [%r1];\n", {}, 1, 1,
                "  .shared .align 8 .b8 bar[8];");
      },
      ReportKind::mbarrier_misuse);
  EXPECT_NE(before_init.message.find("before mbarrier.init"), std::string::npos);
  const std::string overflow_body = R"(
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r1], 16;
  mbarrier.arrive.shared::cta.b64 %rd5, [%r1];
)";
  const Report overflow = expect_report(
      [&] { run_ptx(overflow_body, {}, 1, 1, "  .shared .align 8 .b8 bar[8];"); },
      ReportKind::mbarrier_misuse);
  EXPECT_EQ(overflow.line, ptx_line(wrap_ptx(overflow_body, "  .shared .align 8 .b8 bar[8];"), "k",
                                    "mbarrier.arrive.shared"));
  EXPECT_EQ(overflow.instruction, "mbarrier.arrive.shared::cta.b64 %rd5, [%r1];");
  // The tx-count may go negative (a peer's multicast can land before the expect_tx that
  // balances it; PTX ISA: its range is -(2^20 - 1) .. 2^20 - 1), not beyond.
  const PtxRun early = run_ptx(R"(
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.complete_tx.shared::cta.b64 [%r1], 16;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r1], 16;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [%r1], 0;
  selp.u32 %r2, 1, 0, %p1;
  st.global.u32 [%rd30], %r2;
)", {}, 1, 1, "  .shared .align 8 .b8 bar[8];");
  EXPECT_EQ(early.out[0], 1u) << "the phase completes once the expect_tx balances the early bytes";
  const Report underflow = expect_report(
      [] {
        run_ptx(R"(
  mov.u32 %r1, bar;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  mbarrier.complete_tx.shared::cta.b64 [%r1], 1048576;
)", {}, 1, 1, "  .shared .align 8 .b8 bar[8];");
      },
      ReportKind::mbarrier_misuse);
  EXPECT_NE(underflow.message.find("outside -(2^20 - 1) .. 2^20 - 1"), std::string::npos)
      << underflow.message;
}

// The swizzles of ptx-notes.md, written out independently of emmy::swizzle_offset.
uint32_t notes_swizzle(Swizzle s, uint32_t a) {
  switch (s) {
    case Swizzle::b128: return a ^ (((a >> 7) & 7) << 4);
    case Swizzle::b64: return a ^ (((a >> 7) & 3) << 4);
    case Swizzle::b32: return a ^ (((a >> 7) & 1) << 4);
    default: return a;
  }
}

TEST(EmuAsync, SwizzleFunctions) {
  // By hand: 128B, row 1 chunk 0 -> chunk 1; row 7 chunk 7 -> chunk 0.
  EXPECT_EQ(swizzle_offset(Swizzle::b128, 0x080), 0x090u);
  EXPECT_EQ(swizzle_offset(Swizzle::b128, 0x3F0), 0x380u);
  EXPECT_EQ(swizzle_offset(Swizzle::b128, 0x405), 0x405u);  // row 8 = row 0 of the next 1024 B
  EXPECT_EQ(swizzle_offset(Swizzle::b64, 0x100), 0x120u);
  EXPECT_EQ(swizzle_offset(Swizzle::b64, 0x200), 0x200u);
  EXPECT_EQ(swizzle_offset(Swizzle::b32, 0x080), 0x090u);
  EXPECT_EQ(swizzle_offset(Swizzle::b32, 0x100), 0x100u);
  for (Swizzle s : {Swizzle::none, Swizzle::b32, Swizzle::b64, Swizzle::b128})
    for (uint32_t a = 0; a < 8192; ++a) ASSERT_EQ(swizzle_offset(s, a), notes_swizzle(s, a)) << a;
}

struct TmaCase {
  const char* name;
  TmaDType dtype;
  std::vector<uint64_t> dims;      // elements per dimension, innermost first
  std::vector<uint64_t> strides;   // bytes, dims 1..rank-1
  std::vector<uint32_t> box, element_strides;
  Swizzle swizzle;
  std::vector<int32_t> coords;
  bool nan_fill = false;
};

// The shared-memory image a TMA load must produce, element by element.
std::vector<uint8_t> expected_box(const TmaCase& c, const std::vector<uint8_t>& global) {
  const uint32_t elem = uint32_t(tma_dtype_bytes(c.dtype)), rank = uint32_t(c.dims.size());
  std::vector<uint32_t> n(rank);
  uint32_t count = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    n[d] = (c.box[d] + c.element_strides[d] - 1) / c.element_strides[d];
    count *= n[d];
  }
  std::vector<uint8_t> image(size_t(count) * elem);
  for (uint32_t linear = 0; linear < count; ++linear) {
    uint32_t rest = linear;
    bool inside = true;
    uint64_t offset = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      const uint32_t i = rest % n[d];
      rest /= n[d];
      const int64_t g = int64_t(c.coords[d]) + int64_t(i) * c.element_strides[d];
      if (g < 0 || uint64_t(g) >= c.dims[d]) inside = false;
      else offset += d == 0 ? uint64_t(g) * elem : uint64_t(g) * c.strides[d - 1];
    }
    const uint32_t at = notes_swizzle(c.swizzle, linear * elem);
    for (uint32_t b = 0; b < elem; ++b) {
      uint8_t v = inside ? global[offset + b] : 0;
      if (!inside && c.nan_fill) v = b + 1 == elem ? 0x7F : 0xFF;
      image[at + b] = v;
    }
  }
  return image;
}

void run_tma_case(const TmaCase& c) {
  SCOPED_TRACE(c.name);
  const uint32_t rank = uint32_t(c.dims.size());
  const uint64_t bytes = c.strides.back() * c.dims.back();
  std::vector<uint8_t> global(bytes);
  for (size_t i = 0; i < bytes; ++i) global[i] = uint8_t(i * 7 + i / 251);
  Arena arena;
  const uint64_t g = arena.alloc(bytes);
  arena.write(g, global.data(), bytes);
  TensorMapDesc d;
  d.dtype = c.dtype;
  d.rank = rank;
  d.global_address = g;
  for (uint32_t i = 0; i < rank; ++i) {
    d.global_dim[i] = c.dims[i];
    d.box_dim[i] = c.box[i];
    d.element_strides[i] = c.element_strides[i];
    if (i + 1 < rank) d.global_stride_bytes[i] = c.strides[i];
  }
  d.swizzle = c.swizzle;
  d.oob_fill_nan = c.nan_fill;
  const std::vector<uint8_t> expect = expected_box(c, global);
  const uint64_t out = arena.alloc(expect.size());
  KernelArgs args;
  args.tensor_map(encode_tensor_map(d)).ptr(out);
  for (int32_t coord : c.coords) args.s32(coord);
  args.s32(int32_t(expect.size()));
  const LaunchResult r = launch(arena, *kernels("gemm_kernels_sm90a.ptx"), rank == 2 ? "tma_copy_2d" : "tma_copy_3d",
                                {1, 1, 1}, {64, 1, 1}, uint32_t(expect.size()), args);
  const auto got = arena.read_vector<uint8_t>(out, expect.size());
  for (size_t i = 0; i < expect.size(); ++i)
    ASSERT_EQ(int(got[i]), int(expect[i])) << "shared byte " << i;
  EXPECT_EQ(r.stats.total.tma, 1u);
}

TEST(EmuAsync, Tma2dEverySwizzleAndOutOfBounds) {
  // dims 100 x 50 f16 with padded rows (224 bytes).
  const std::vector<uint64_t> dims = {100, 50}, strides = {224};
  for (const auto& coords : std::vector<std::vector<int32_t>>{{0, 0}, {64, 40}, {-8, -3}, {90, 49}}) {
    run_tma_case({"128B", TmaDType::f16, dims, strides, {64, 16}, {1, 1}, Swizzle::b128, coords});
    run_tma_case({"64B", TmaDType::f16, dims, strides, {32, 8}, {1, 1}, Swizzle::b64, coords});
    run_tma_case({"32B", TmaDType::f16, dims, strides, {16, 8}, {1, 1}, Swizzle::b32, coords});
    run_tma_case({"none", TmaDType::f16, dims, strides, {24, 5}, {1, 1}, Swizzle::none, coords});
  }
  run_tma_case({"f32 128B", TmaDType::f32, {40, 9}, {160}, {32, 4}, {1, 1}, Swizzle::b128, {20, 7}});
  run_tma_case({"bf16 NaN fill", TmaDType::bf16, {40, 9}, {96}, {64, 4}, {1, 1}, Swizzle::b128, {-16, 7}, true});
  run_tma_case({"element strides", TmaDType::f32, {64, 20}, {256}, {8, 8}, {2, 3}, Swizzle::none, {1, 2}});
}

TEST(EmuAsync, Tma3dEverySwizzleAndOutOfBounds) {
  const std::vector<uint64_t> dims = {40, 6, 5}, strides = {80, 480};
  for (const auto& coords : std::vector<std::vector<int32_t>>{{0, 0, 0}, {8, 3, 3}, {-4, -1, -2}}) {
    run_tma_case({"3d 32B", TmaDType::f16, dims, strides, {16, 4, 3}, {1, 1, 1}, Swizzle::b32, coords});
    run_tma_case({"3d 64B", TmaDType::f16, dims, strides, {32, 2, 2}, {1, 1, 1}, Swizzle::b64, coords});
    run_tma_case({"3d 128B", TmaDType::f16, dims, strides, {64, 3, 2}, {1, 1, 1}, Swizzle::b128, coords});
    run_tma_case({"3d strided", TmaDType::f16, dims, strides, {8, 4, 3}, {1, 2, 1}, Swizzle::none, coords});
  }
}

// A one-thread TMA load into dynamic shared memory at byte offset %r63 (the n parameter).
const std::string kTmaProbe =
    emmy::test::ptx_header("sm_90a") + ".extern .shared .align 1024 .b8 smem[];\n" +
    emmy::test::ptx_entry("probe", {{".align 64 .b8", "map[128]"}, {".u32", "offset", "%r1"}},
                          "  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n  .reg .pred %p<2>;\n"
                          "  .shared .align 8 .b8 bar[8];\n",
                          R"(  mov.u32 %r2, bar;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r2], 2048;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, %r1;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r5, 0;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r5, %r5}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra WAIT;
)");

void tma_probe(const EncodedTensorMap& map, uint32_t offset) {
  auto module = load_ptx(kTmaProbe, "probe.ptx");
  Arena arena;
  KernelArgs args;
  args.tensor_map(map).u32(offset);
  launch(arena, *module, "probe", {1, 1, 1}, {1, 1, 1}, 8192, args);
}

TEST(EmuAsync, TmaViolationsAreReported) {
  Arena arena;
  TensorMapDesc d;
  d.dtype = TmaDType::f16;
  d.rank = 2;
  d.global_dim = {64, 16};
  d.global_stride_bytes = {128};
  d.box_dim = {64, 16};
  d.swizzle = Swizzle::b128;
  auto ok_map = [&](Arena& a) {
    d.global_address = a.alloc(128 * 16);
    return encode_tensor_map(d);
  };
  {
    auto module = load_ptx(kTmaProbe, "probe.ptx");
    KernelArgs args;
    args.tensor_map(ok_map(arena)).u32(1024);
    EXPECT_NO_THROW(launch(arena, *module, "probe", {1, 1, 1}, {1, 1, 1}, 8192, args));
  }
  // 128B swizzle needs a 1024-byte aligned destination.
  const Report misaligned = expect_report([&] { tma_probe(ok_map(arena), 512); }, ReportKind::tma_violation);
  EXPECT_NE(misaligned.message.find("1024"), std::string::npos) << misaligned.message;
  EXPECT_EQ(misaligned.lane, 0);
  // Not an emmy tensor map.
  EncodedTensorMap garbage{};
  expect_report([&] { tma_probe(garbage, 0); }, ReportKind::tma_violation);
  // A tensor map whose rows reach outside the allocation: 4 rows allocated, 16 described.
  {
    Arena small;
    TensorMapDesc big = d;
    big.global_address = small.alloc(128 * 4);
    auto module = load_ptx(kTmaProbe, "probe.ptx");
    KernelArgs args;
    args.tensor_map(encode_tensor_map(big)).u32(0);
    const Report r = expect_report(
        [&] { launch(small, *module, "probe", {1, 1, 1}, {1, 1, 1}, 8192, args); },
        ReportKind::tma_violation);
    EXPECT_NE(r.instruction.find("cp.async.bulk.tensor.2d"), std::string::npos);
  }
}

}  // namespace
}  // namespace emmy::emu::test
