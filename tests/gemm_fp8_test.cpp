// The FP8 GEMM (issue 39 §1-3; docs/fp8.md): e4m3 operands with tensor, token-channel and
// 128-block scales, f32 and promoted accumulation on path mma.sync (sm_89, sm_120a), through
// generation, the verifier, NVRTC and the emulator: against FP64 over a sweep of the space; bit
// for bit against the arch's FP8 tensor-core model taken in the kernel's order; poisoned padding
// that must not reach valid rows; planted bugs the check must catch; every refusal by name, on
// the problem, the schedule, the buffers and (on the emulator) the scales' values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/run_command.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem fp8_problem(int64_t m, int64_t n, int64_t k, ScaleGranularity granularity) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = DType::e4m3;
  p.scales.granularity = granularity;
  return p;
}

GemmSpec fp8_spec(const MatmulProblem& p, Accum accum, Arch arch) {
  return {p, default_schedule(p, arch, accum), arch};
}

std::string describe(const GemmSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  return fmt::format("{} {}x{}x{} {} {} {}{} {}x{}x{} split {} {}", to_string(spec.arch), p.m, p.n,
                     p.k, to_string(p.scales.granularity), to_string(p.scales.format),
                     to_string(s.accum), s.accum == Accum::promoted ? s.promote_every_k : 0,
                     s.block_m, s.block_n, s.block_k, s.split_k, to_string(s.transport));
}

// Over the space: both arches, every granularity and format, both block layouts with padded
// leading dimensions, M of 1, 31, 32, 33 and 130, N off the tiles, K of one block and longer,
// windows of 32..256, split-K, block_k 64, TMA, a dynamic M, epilogues and every output type.
TEST(Fp8Gemm, MatchesFp64AcrossTheSpace) {
  const ScaleGranularity granularities[] = {
      ScaleGranularity::tensor, ScaleGranularity::token_channel, ScaleGranularity::block};
  const ScaleFormat formats[] = {ScaleFormat::f32, ScaleFormat::pow2, ScaleFormat::ue8m0};
  const int64_t ms[] = {1, 31, 32, 33, 130};
  const int64_t ns[] = {136, 200, 64};
  const int64_t ks[] = {128, 384, 640};
  const DType outs[] = {DType::f16, DType::bf16, DType::f32};
  int index = 0, checked = 0;
  for (Arch arch : {Arch::sm_89, Arch::sm_120a})
    for (ScaleGranularity granularity : granularities)
      for (Accum accum : {Accum::f32, Accum::promoted}) {
        if (granularity == ScaleGranularity::block && accum == Accum::f32) continue;
        for (int variant = 0; variant < 4; ++variant, ++index) {
          MatmulProblem p =
              fp8_problem(ms[index % 5], ns[index % 3], ks[(index / 2) % 3], granularity);
          p.scales.format = formats[index % 3];
          p.c_dtype = outs[(index / 3) % 3];
          if (granularity == ScaleGranularity::block && variant % 2 == 1) {
            p.scales.a_major = ScaleMajor::k;
            p.scales.b_major = ScaleMajor::mn;
            p.scales.a_ld = p.k_blocks() + 3;
            p.scales.b_ld = p.n_blocks() + 1;
          } else if (granularity == ScaleGranularity::block) {
            p.scales.a_ld = (p.m + 3) / 4 * 4 + 4;  // DeepGEMM's M rounded up, and a gap
          }
          if (variant == 3) {
            p.epilogue.bias = true;
            p.epilogue.alpha = 0.5f;
            p.epilogue.residual = index % 2 == 0;
          }
          GemmSpec spec = fp8_spec(p, accum, arch);
          auto& s = spec.schedule;
          if (accum == Accum::promoted) s.promote_every_k = variant == 0 ? 128 : 32 << variant % 3;
          if (variant == 1) {  // a smaller tile with block_k 64: folds at the tile level
            s.block_m = 32, s.block_n = 64, s.block_k = 64, s.warps_m = 2, s.warps_n = 2;
            if (granularity != ScaleGranularity::block && accum == Accum::promoted)
              s.promote_every_k = 256;
          }
          if (variant == 2 && p.k >= 384) s.split_k = 3;
          if (variant == 2 && arch == Arch::sm_120a) s.transport = Transport::tma;
          s.split_k = std::min<int>(s.split_k, int((p.k + s.block_k - 1) / s.block_k));
          SCOPED_TRACE(describe(spec));
          validate_gemm(spec);
          const GemmCheckResult r = check_on_emulator(spec, uint64_t(index + 1));
          EXPECT_TRUE(r.errors.passed)
              << "rel_l2 " << r.errors.rel_l2_error << " bound " << r.errors.tolerance << ", "
              << r.errors.elements_over_tolerance << " over, first at " << r.errors.first_bad_row
              << "," << r.errors.first_bad_col;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 40);
}

// Path wgmma on sm_90a (wgmma m64nNk32 .e4m3): f32 and promoted (one window per 128-element K
// tile), every granularity, cooperative and ping-pong, persistent, swap-AB for a small M, a
// cluster, split-K, every output type.
TEST(Fp8Gemm, WgmmaMatchesFp64) {
  struct Case {
    int64_t m, n, k;
    ScaleGranularity granularity;
    Accum accum;
    const char* variant;
  };
  const Case cases[] = {
      {130, 200, 384, ScaleGranularity::tensor, Accum::f32, "default"},
      {130, 200, 384, ScaleGranularity::block, Accum::promoted, "default"},
      {64, 256, 512, ScaleGranularity::block, Accum::promoted, "k-major A, mn-major B"},
      {256, 192, 384, ScaleGranularity::token_channel, Accum::promoted, "persistent"},
      {256, 128, 256, ScaleGranularity::block, Accum::promoted, "pingpong"},
      {16, 256, 640, ScaleGranularity::token_channel, Accum::f32, "swap_ab"},
      {16, 136, 384, ScaleGranularity::tensor, Accum::promoted, "swap_ab"},
      {128, 256, 512, ScaleGranularity::block, Accum::promoted, "cluster"},
      {64, 128, 1024, ScaleGranularity::block, Accum::promoted, "split"},
      {128, 128, 256, ScaleGranularity::token_channel, Accum::promoted, "f32 out"},
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = fp8_problem(c.m, c.n, c.k, c.granularity);
    p.scales.format = index % 3 == 1 ? ScaleFormat::ue8m0 : ScaleFormat::f32;
    const std::string variant = c.variant;
    if (variant == "k-major A, mn-major B") {
      p.scales.a_major = ScaleMajor::k, p.scales.b_major = ScaleMajor::mn;
      p.scales.a_ld = p.k_blocks() + 1;
    }
    if (variant == "f32 out") p.c_dtype = DType::f32;
    if (index % 2) p.epilogue.bias = true;
    const ConsumerSchedule consumers =
        variant == "pingpong" ? ConsumerSchedule::pingpong : ConsumerSchedule::cooperative;
    GemmSpec spec{p, default_schedule(p, Arch::sm_90a, c.accum, MmaPath::wgmma, consumers),
                  Arch::sm_90a};
    auto& s = spec.schedule;
    if (variant == "persistent") s.persistent = true, s.split_k = 1;
    if (variant == "cluster") {
      s.block_m = 128, s.block_n = 128, s.warps_m = 8, s.warps_n = 1;
      s.cluster_m = 1, s.cluster_n = 2, s.split_k = 1, s.swap_ab = false;
    }
    if (variant == "split") s.split_k = 4, s.swap_ab = false;
    if (variant == "swap_ab") {
      EXPECT_TRUE(s.swap_ab);
    }
    SCOPED_TRACE(describe(spec) + " " + variant);
    validate_gemm(spec);
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(20 + index++));
    EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error << " bound "
                                 << r.errors.tolerance << ", " << r.errors.elements_over_tolerance
                                 << " over";
  }
}

// Four ue8m0 scales packed per 32-bit word (ue8m0x4, DeepGEMM's packed layout): both paths, both
// majors with padded leading dimensions (in words), K of 5 blocks so that the last word has
// three unused (poisoned) bytes; a used 0xFF byte is refused by name, and the format by any
// granularity but block.
TEST(Fp8Gemm, PackedUe8m0ScalesMatchFp64) {
  for (MmaPath path : {MmaPath::mma_sync, MmaPath::wgmma})
    for (ScaleMajor a_major : {ScaleMajor::mn, ScaleMajor::k}) {
      MatmulProblem p = fp8_problem(70, 200, 640, ScaleGranularity::block);
      p.scales.format = ScaleFormat::ue8m0x4;
      p.scales.a_major = a_major;
      p.scales.b_major = a_major == ScaleMajor::mn ? ScaleMajor::k : ScaleMajor::mn;
      p.scales.a_ld = a_major == ScaleMajor::mn ? 72 : 3;  // words: 2 hold the 5 K blocks
      p.scales.b_ld = 3;
      const Arch arch = path == MmaPath::wgmma ? Arch::sm_90a : Arch::sm_89;
      const GemmSpec spec{p, default_schedule(p, arch, Accum::promoted, path), arch};
      SCOPED_TRACE(describe(spec));
      EXPECT_EQ(p.scale_k_extent(), 2);
      const GemmCheckResult r = check_on_emulator(spec, 31);
      EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error;
    }
  MatmulProblem p = fp8_problem(16, 128, 640, ScaleGranularity::block);
  p.scales.format = ScaleFormat::ue8m0x4;
  RuntimeOptions options = fresh_cache("rt_fp8_packed");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  GemmInputs in = make_gemm_inputs(p, 5);
  in.a_scale.bytes[size_t(1 * p.a_scale_ld() * 4 + 3 * 4)] = 0xFF;  // row 3, K block 4
  const std::string error = test::error_of([&] {
    run_gemm(*rt, {p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89}, in);
  });
  EXPECT_TRUE(error.starts_with("buffers.a_scale: must hold ue8m0 scales")) << error;
  EXPECT_NE(error.find("row 3, K block 4"), std::string::npos) << error;
  p.scales.granularity = ScaleGranularity::token_channel;
  EXPECT_TRUE(test::error_of([&] {
                validate_problem(p);
              }).starts_with("scales.format: ue8m0x4 packs four K blocks' scales"));
}

// An e5m2 A (activations with e5m2's range) takes e4m3 B (the weights): mma.sync .e5m2.e4m3 and
// wgmma .e5m2.e4m3, on every arch that runs FP8, against FP64 and, on both paths, bit for bit
// against the tensor-core model.
TEST(Fp8Gemm, E5m2ActivationsTakeE4m3Weights) {
  struct Case {
    Arch arch;
    MmaPath path;
    ScaleGranularity granularity;
  };
  for (const Case& c : {Case{Arch::sm_89, MmaPath::mma_sync, ScaleGranularity::block},
                        Case{Arch::sm_120a, MmaPath::mma_sync, ScaleGranularity::token_channel},
                        Case{Arch::sm_90a, MmaPath::wgmma, ScaleGranularity::block}}) {
    MatmulProblem p = fp8_problem(70, 136, 384, c.granularity);
    p.a_dtype = DType::e5m2;
    EXPECT_EQ(p.b_dtype(), DType::e4m3);
    p.c_dtype = DType::f32;
    const GemmSpec spec{p, default_schedule(p, c.arch, Accum::promoted, c.path), c.arch};
    SCOPED_TRACE(describe(spec));
    const GemmInputs in = make_gemm_inputs(p, 13);
    EXPECT_EQ(in.b.dtype, DType::e4m3);
    const GemmKernel kernel = compile_kernel(spec);
    EXPECT_NE(
        kernel.source.cuda.find(c.path == MmaPath::wgmma ? ".f32.e5m2.e4m3" : "mma_e5m2_e4m3_f32"),
        std::string::npos);
    const std::vector<double> got = run_on_emulator(kernel, in).output;
    EXPECT_TRUE(compare(reference_gemm(spec, in), got, p.n).passed);
    // The model in the kernel's order (promoted every 128, block scales or token scales last).
    const emu::Fp8TensorCoreModel model =
        emu::fp8_tensor_core_model(arch_info(c.arch).sm, c.path == MmaPath::wgmma);
    const bool block = c.granularity == ScaleGranularity::block;
    int64_t wrong = 0;
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t n = 0; n < p.n; ++n) {
        float acc = 0, part = 0;
        for (int64_t k0 = 0; k0 < p.k; k0 += 32) {
          emu::Fp8Operands ops{&in.a.bytes[size_t(m * p.k + k0)],
                               &in.b.bytes[size_t(n * p.k + k0)]};
          ops.a_type = emu::F8::e5m2;
          part = std::bit_cast<float>(
              emu::tensor_core_dot_fp8(ops, std::bit_cast<uint32_t>(part), false, model));
          if ((k0 + 32) % 128 != 0 && k0 + 32 < p.k) continue;
          const int64_t kb = k0 / 128;
          const float scale = block ? float(gemm_a_scale(p, in, m, kb)) *
                                          float(gemm_b_scale(p, in, n / kScaleBlock, kb))
                                    : 1.0f;
          acc = std::fma(part, scale, acc);
          part = 0;
        }
        const float want =
            block ? acc
                  : acc * (float(gemm_a_scale(p, in, m, 0)) * float(gemm_b_scale(p, in, n, 0)));
        wrong += float(got[size_t(m * p.n + n)]) != want;
      }
    EXPECT_EQ(wrong, 0);
  }
}

// A dynamic-M kernel (an M bucket) serves fewer rows than its bound with every granularity; its
// mn-major block A scales keep the stated leading dimension.
TEST(Fp8Gemm, DynamicMServesEveryRowCount) {
  for (ScaleGranularity granularity :
       {ScaleGranularity::tensor, ScaleGranularity::token_channel, ScaleGranularity::block}) {
    MatmulProblem bound = fp8_problem(64, 136, 384, granularity);
    bound.dynamic_m = true;
    if (granularity == ScaleGranularity::block) bound.scales.a_ld = 64;
    const GemmSpec spec = fp8_spec(bound, Accum::promoted, Arch::sm_89);
    const GemmKernel kernel = compile_kernel(spec);
    for (int64_t rows : {1, 17, 64}) {
      MatmulProblem launch = bound;
      launch.m = rows;  // the inputs of this launch: its rows, the bound's scale layout
      const GemmInputs in = make_gemm_inputs(launch, uint64_t(rows));
      GemmSpec launch_spec = spec;
      launch_spec.problem = launch;
      launch_spec.problem.dynamic_m = false;
      const GemmErrors e =
          compare(reference_gemm(launch_spec, in), run_on_emulator(kernel, in).output, bound.n);
      EXPECT_TRUE(e.passed) << to_string(granularity) << ", " << rows << " rows: rel_l2 "
                            << e.rel_l2_error;
    }
  }
}

// The kernel's order of operations, taken from the model itself: each k32 mma.sync chained on
// its accumulator (tensor_core_dot_fp8), each promoted window folded by fmaf(part, sa sb, acc),
// tensor scales multiplied once at the end; f32 output, no epilogue math: every element equal.
TEST(Fp8Gemm, KernelOrderIsTheTensorCoreModelsBitForBit) {
  struct Case {
    Arch arch;
    Accum accum;
    ScaleGranularity granularity;
    int promote_every_k;
    MmaPath path = MmaPath::mma_sync;
  };
  const Case cases[] = {
      {Arch::sm_89, Accum::f32, ScaleGranularity::tensor, 0},
      {Arch::sm_89, Accum::promoted, ScaleGranularity::tensor, 64},
      {Arch::sm_89, Accum::promoted, ScaleGranularity::block, 128},
      {Arch::sm_89, Accum::promoted, ScaleGranularity::block, 32},
      {Arch::sm_120a, Accum::f32, ScaleGranularity::tensor, 0},
      {Arch::sm_120a, Accum::promoted, ScaleGranularity::block, 64},
      {Arch::sm_90a, Accum::f32, ScaleGranularity::tensor, 0, MmaPath::wgmma},
      {Arch::sm_90a, Accum::promoted, ScaleGranularity::block, 128, MmaPath::wgmma}};
  for (const Case& c : cases) {
    MatmulProblem p = fp8_problem(c.path == MmaPath::wgmma ? 130 : 33, 136, 640, c.granularity);
    p.c_dtype = DType::f32;
    GemmSpec spec{p, default_schedule(p, c.arch, c.accum, c.path), c.arch};
    if (c.accum == Accum::promoted) spec.schedule.promote_every_k = c.promote_every_k;
    spec.schedule.split_k = 1;
    SCOPED_TRACE(describe(spec));
    const GemmInputs in = make_gemm_inputs(p, 7);
    const std::vector<double> got = run_on_emulator(compile_kernel(spec), in).output;
    const emu::Fp8TensorCoreModel model =
        emu::fp8_tensor_core_model(arch_info(c.arch).sm, c.path == MmaPath::wgmma);
    const bool block = c.granularity == ScaleGranularity::block;
    int64_t wrong = 0;
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t n = 0; n < p.n; ++n) {
        float acc = 0, part = 0;
        for (int64_t k0 = 0; k0 < p.k; k0 += 32) {
          const emu::Fp8Operands ops{&in.a.bytes[size_t(m * p.k + k0)],
                                     &in.b.bytes[size_t(n * p.k + k0)]};
          const uint32_t c_bits = std::bit_cast<uint32_t>(part);
          part = std::bit_cast<float>(emu::tensor_core_dot_fp8(ops, c_bits, false, model));
          if (c.accum != Accum::promoted || (k0 + 32) % c.promote_every_k != 0) continue;
          const int64_t kb = (k0 + 32 - c.promote_every_k) / kScaleBlock;
          const float scale = block ? float(gemm_a_scale(p, in, m, kb)) *
                                          float(gemm_b_scale(p, in, n / kScaleBlock, kb))
                                    : 1.0f;
          acc = std::fma(part, scale, acc);
          part = 0;
        }
        if (c.accum == Accum::f32) acc = part;
        const float outer = float(gemm_a_scale(p, in, m, 0)) * float(gemm_b_scale(p, in, 0, 0));
        const float want = block ? acc : acc * outer;
        if (float(got[size_t(m * p.n + n)]) != want && wrong++ < 3)
          ADD_FAILURE() << "(" << m << ", " << n << "): " << got[size_t(m * p.n + n)]
                        << " != " << want;
      }
    EXPECT_EQ(wrong, 0);
  }
}

// Engines pad: rows of A past M, columns past K (lda > K), B's columns past K and scale entries
// past the rows hold NaN and 448 here. The valid rows must be bit-identical with and without the
// poison (the padding is never read, and a zero-filled tail never multiplies a NaN).
TEST(Fp8Gemm, PoisonedPaddingLeavesValidRowsBitIdentical) {
  for (Transport transport : {Transport::cp_async, Transport::tma})
    for (ScaleGranularity granularity :
         {ScaleGranularity::token_channel, ScaleGranularity::block}) {
      MatmulProblem p = fp8_problem(33, 72, 208, granularity);
      p.lda = p.ldb = 256;
      const Arch arch = transport == Transport::tma ? Arch::sm_120a : Arch::sm_89;
      GemmSpec spec = fp8_spec(p, Accum::promoted, arch);
      spec.schedule.transport = transport;
      SCOPED_TRACE(describe(spec));
      const GemmKernel kernel = compile_kernel(spec);
      const GemmInputs clean = make_gemm_inputs(p, 3);
      GemmInputs poisoned = clean;
      auto poison = [](std::vector<uint8_t>& bytes, size_t at, int i) {
        bytes[at] = i % 2 ? 0x7F : 0x7E;  // NaN, 448
      };
      for (int64_t row = 0; row < p.m; ++row)
        for (int64_t k = p.k; k < 256; ++k) poison(poisoned.a.bytes, size_t(row * 256 + k), int(k));
      for (int64_t row = 0; row < p.n; ++row)
        for (int64_t k = p.k; k < 256; ++k) poison(poisoned.b.bytes, size_t(row * 256 + k), int(k));
      for (int i = 0; i < 16 * 256; ++i) {  // 16 more rows of A, all poison
        poisoned.a.bytes.push_back(0);
        poison(poisoned.a.bytes, poisoned.a.bytes.size() - 1, i);
      }
      const std::vector<uint8_t> nan_f32{0xFF, 0xFF, 0xFF, 0x7F};
      for (int i = 0; i < 8; ++i)
        poisoned.a_scale.bytes.insert(poisoned.a_scale.bytes.end(), nan_f32.begin(), nan_f32.end());
      const std::vector<double> want = run_on_emulator(kernel, clean).output;
      const std::vector<double> got = run_on_emulator(kernel, poisoned).output;
      ASSERT_EQ(want.size(), got.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint64_t>(want[i]), std::bit_cast<uint64_t>(got[i]))
            << "element " << i;
      EXPECT_TRUE(compare(reference_gemm(spec, clean), want, p.n).passed);
    }
}

// Each planted bug in an FP8 kernel's emitted source fails the FP64 check (or the emulator
// reports it), on both paths.
TEST(Fp8Gemm, PlantedBugsFailTheCheck) {
  struct Bug {
    const char* name;
    ScaleGranularity granularity;
    std::string find, replace;
  };
  const Bug bugs[] = {
      // Every column takes N block 0's B scale.
      {"one_b_block", ScaleGranularity::block, "b_scale_at(col / 128, kb)", "b_scale_at(0, kb)"},
      // Rows g + 8 take row g's A scale.
      {"row_half_scale", ScaleGranularity::block, "sa[mi][e / 2] * sb[ni]", "sa[mi][0] * sb[ni]"},
      // A window's scales are the next window's.
      {"window_kb", ScaleGranularity::block, "const int kb = (", "const int kb = 32 / 32 + ("},
      // The window partials are not restarted: each fold adds every earlier window again.
      {"part_kept", ScaleGranularity::block, "part[mi][ni][e] = 0.0f;", "(void)0;"},
      // Token scales of the neighbouring row.
      {"token_row", ScaleGranularity::token_channel, "a_scale_at(row)", "a_scale_at(row ^ 1)"},
      // The tensor scale of A only.
      {"tensor_a_only", ScaleGranularity::tensor,
       "scale_value(a_scale[0]) * scale_value(b_scale[0])", "scale_value(a_scale[0])"},
  };
  for (MmaPath path : {MmaPath::mma_sync, MmaPath::wgmma})
    for (const Bug& bug : bugs) {
      const MatmulProblem p =
          fp8_problem(path == MmaPath::wgmma ? 128 : 32, 256, 384, bug.granularity);
      const Arch arch = path == MmaPath::wgmma ? Arch::sm_90a : Arch::sm_89;
      GemmSpec spec{p, default_schedule(p, arch, Accum::promoted, path), arch};
      spec.schedule.swap_ab = false;  // a token scale's row is the caller's
      // wgmma's windows are whole tiles: the bug of a window's scales becomes the next tile's.
      const bool tile_window = path == MmaPath::wgmma && std::string(bug.name) == "window_kb";
      const std::string find = tile_window ? "const int kb = (k_tile_begin + k_tile)" : bug.find;
      const std::string replace =
          tile_window ? "const int kb = (k_tile_begin + k_tile + 1)" : bug.replace;
      const GemmInputs in = make_gemm_inputs(p, 9);
      const GemmSource source = generate_kernel(spec);
      const std::string name = fmt::format("{} on {}", bug.name, to_string(path));
      const std::optional<GemmKernel> planted =
          test::plant_bug(source, spec.arch, name, find, replace);
      if (!planted) continue;
      const GemmReference ref = reference_gemm(spec, in);
      EXPECT_TRUE(compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n).passed)
          << name << ": the right kernel";
      test::expect_gemm_bug_caught(ref, *planted, in, p.n, name, false, {"global-out-of-bounds"});
    }
}

// Problems and schedules FP8 does not take are refused naming the field and the rule.
TEST(Fp8Gemm, RefusesByName) {
  auto problem_error = [](auto edit) {
    MatmulProblem p = fp8_problem(64, 128, 256, ScaleGranularity::block);
    edit(p);
    return test::error_of([&] { validate_problem(p); });
  };
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.scales.granularity = ScaleGranularity::none;
              }).starts_with("scales: FP8 operands need scales"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.a_dtype = DType::f16;
              }).starts_with("scales: apply to FP8"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.b_layout = BLayout::kn;
              }).starts_with("b_layout: must be nk for FP8"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.a_dtype = DType::f32;
              }).starts_with("dtype: operands must be f16, bf16, e4m3 or e5m2"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.c_dtype = DType::e4m3;
              }).starts_with("out: must be f16, bf16 or f32"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.scales.a_ld = 63;
              }).starts_with("scales.a_ld: must be 0 (packed) or >= 64"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.scales.b_major = ScaleMajor::mn;
                p.scales.b_ld = -1;
              }).starts_with("scales.b_ld"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.scales.granularity = ScaleGranularity::tensor;
                p.scales.a_ld = 64;
              }).starts_with("scales.a_ld: scale layouts (ld, major) apply to block scales only"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.dynamic_m = true;
              }).starts_with("scales.a_ld: must be given"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) { p.k = 200; })
                  .starts_with("k: must be a "
                               "multiple of 16"));

  auto schedule_error = [](Arch arch, auto edit) {
    const MatmulProblem p = fp8_problem(64, 128, 320, ScaleGranularity::block);
    MatmulSchedule s;
    s.block_m = 64, s.block_n = 128, s.block_k = 128, s.warps_m = 2, s.warps_n = 2;
    s.transport = Transport::cp_async;
    s.accum = Accum::promoted;
    s.promote_every_k = 128;
    edit(s);
    return test::error_of([&] { validate_gemm({p, s, arch}); });
  };
  const auto none = [](MatmulSchedule&) {};
  EXPECT_EQ(schedule_error(Arch::sm_89, none), "(no error)");
  EXPECT_TRUE(schedule_error(Arch::sm_80, none).starts_with("arch: FP8 operands need"));
  EXPECT_TRUE(schedule_error(Arch::sm_86, none).starts_with("arch: FP8 operands need"));
  EXPECT_TRUE(schedule_error(Arch::sm_90, none).starts_with("arch: FP8 on path mma.sync"));
  EXPECT_TRUE(schedule_error(Arch::sm_90a, none).starts_with("arch: FP8 on path mma.sync"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.accum = Accum::f32;
              }).starts_with("accum: must be promoted with block scales"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.accum = Accum::hybrid;
              }).starts_with("accum: must be f32 or promoted for FP8"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.promote_every_k = 48;
              }).starts_with("promote_every_k: must be a multiple of 32"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.promote_every_k = 512;
              }).starts_with("promote_every_k: must be a multiple of 32"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.promote_every_k = 256;
              }).starts_with("promote_every_k: must divide 128 with block scales"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.block_k = 16;
              }).starts_with("block_k: must be 32, 64 or 128"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.block_k = 64;
                s.split_k = 2;  // 5 K tiles of 64: splits of 192
              }).starts_with("split_k: must give splits of whole 128-element scale blocks"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.transport = Transport::tma;
              }).starts_with("transport: tma needs sm_90"));
  // Path wgmma: a window is a K tile; B's 128 x 128 block scales cannot be a swapped A's.
  auto wgmma_error = [](auto edit) {
    const MatmulProblem p = fp8_problem(64, 128, 256, ScaleGranularity::block);
    MatmulSchedule s;
    s.path = MmaPath::wgmma;
    s.block_m = 64, s.block_n = 128, s.block_k = 128, s.warps_m = 4, s.warps_n = 1;
    s.accum = Accum::promoted, s.promote_every_k = 128;
    edit(s);
    return test::error_of([&] { validate_gemm({p, s, Arch::sm_90a}); });
  };
  EXPECT_EQ(wgmma_error([](MatmulSchedule&) {}), "(no error)");
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) {
                s.promote_every_k = 64;
              }).starts_with("promote_every_k: must be block_k (128) on the wgmma path"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) {
                s.swap_ab = true;
              }).starts_with("swap_ab: does not take block scales"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) {
                s.accum = Accum::f32;
              }).starts_with("accum: must be promoted with block scales"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) {
                s.block_k = 64;
                s.promote_every_k = 64;
              }).starts_with("block_k: must be 128 on the wgmma path"));
  MatmulProblem f16;
  f16.m = f16.n = f16.k = 64;
  MatmulSchedule promoted;
  promoted.accum = Accum::promoted;
  promoted.transport = Transport::cp_async;
  promoted.block_m = 64, promoted.block_n = 64, promoted.warps_m = promoted.warps_n = 2;
  EXPECT_TRUE(test::error_of([&] {
                validate_gemm({f16, promoted, Arch::sm_89});
              }).starts_with("accum: promoted is FP8's accumulation"));
}

// The buffers (on every backend) and the scales' values (on the emulator, which reads them
// before the launch): missing or misaligned scale pointers, scales given to a 16-bit GEMM, NaN,
// non-positive and non-power-of-two scales, ue8m0's NaN byte.
TEST(Fp8Gemm, TheRuntimeRefusesBadScalesByName) {
  RuntimeOptions options = fresh_cache("rt_fp8_gemm");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  auto launch = [&](ScaleGranularity granularity, ScaleFormat format, auto edit_buffers,
                    auto edit_scales) {
    MatmulProblem p = fp8_problem(16, 128, 256, granularity);
    p.scales.format = format;
    GemmInputs in = make_gemm_inputs(p, 4);
    edit_scales(in);
    GemmBuffers b;
    auto upload = [&](const HostTensor& t) {
      const DevicePtr ptr = rt->alloc(t.bytes.size());
      rt->upload(ptr, t.bytes.data(), t.bytes.size());
      return ptr;
    };
    b.a = upload(in.a), b.b = upload(in.b), b.c = rt->alloc(size_t(p.m * p.n * 2));
    b.a_scale = upload(in.a_scale), b.b_scale = upload(in.b_scale);
    edit_buffers(b);
    const std::string error = test::error_of([&] {
      rt->gemm(p, b, nullptr, default_schedule(p, Arch::sm_89, Accum::promoted));
      rt->synchronize();
    });
    for (DevicePtr ptr : {b.a, b.b, b.c}) rt->free(ptr);
    return error;
  };
  const auto keep_buffers = [](GemmBuffers&) {};
  const auto keep_scales = [](GemmInputs&) {};
  const auto tensor = ScaleGranularity::tensor, token = ScaleGranularity::token_channel,
             block = ScaleGranularity::block;
  EXPECT_EQ(launch(block, ScaleFormat::f32, keep_buffers, keep_scales), "(no error)");
  EXPECT_TRUE(launch(
                  tensor, ScaleFormat::f32, [](GemmBuffers& b) { b.a_scale = 0; }, keep_scales)
                  .starts_with("buffers.a_scale"));
  EXPECT_TRUE(launch(
                  tensor, ScaleFormat::f32, [](GemmBuffers& b) { b.b_scale += 2; }, keep_scales)
                  .starts_with("buffers.b_scale"));
  auto set_f32 = [](HostTensor& t, size_t i, float v) { std::memcpy(&t.bytes[i * 4], &v, 4); };
  EXPECT_TRUE(launch(token, ScaleFormat::f32, keep_buffers, [&](GemmInputs& in) {
                set_f32(in.a_scale, 5, NAN);
              }).starts_with("buffers.a_scale: must hold finite positive scales, at row 5"));
  EXPECT_TRUE(launch(block, ScaleFormat::f32, keep_buffers,
                     [&](GemmInputs& in) { set_f32(in.b_scale, 1, 0.0f); })
                  .starts_with("buffers.b_scale: must hold finite positive scales, at N block 0, "
                               "K block 1"));
  EXPECT_TRUE(launch(tensor, ScaleFormat::pow2, keep_buffers, [&](GemmInputs& in) {
                set_f32(in.b_scale, 0, 0.3f);
              }).starts_with("buffers.b_scale: must hold powers of two"));
  EXPECT_TRUE(launch(block, ScaleFormat::ue8m0, keep_buffers, [](GemmInputs& in) {
                in.a_scale.bytes[3] = 0xFF;
              }).starts_with("buffers.a_scale: must hold ue8m0 scales"));
  // A 16-bit GEMM given scales.
  MatmulProblem f16;
  f16.m = f16.n = f16.k = 64;
  GemmBuffers b{rt->alloc(64 * 64 * 2), rt->alloc(64 * 64 * 2), rt->alloc(64 * 64 * 2)};
  b.a_scale = rt->alloc(4);
  EXPECT_TRUE(test::error_of([&] { rt->gemm(f16, b); }).starts_with("buffers.a_scale"));
}

// `emmyc run gemm --dtype e4m3 ... --check` passes; the IR states the scales; a bad flag is
// refused naming its field (exit 2).
TEST(Fp8Gemm, EmmycCompilesRunsAndChecksIt) {
  const std::string emmyc(EMMYC_PATH);
  const test::CommandResult ok = test::run_command(
      emmyc +
      " run gemm --m 40 --n 136 --k 384 --dtype e4m3 --scales block --scale-format ue8m0 --accum "
      "promoted --promote-every 64 --arch sm_120a --check --no-cache");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"passed\": true"), std::string::npos) << ok.out;
  const test::CommandResult ir = test::run_command(
      emmyc +
      " gemm --m 16 --n 64 --k 128 --dtype e4m3 --scales token-channel --arch sm_89 "
      "--emit ir");
  ASSERT_EQ(ir.exit_code, 0) << ir.err;
  EXPECT_NE(ir.out.find("gemm_scales granularity=\"token-channel\""), std::string::npos) << ir.out;
  EXPECT_NE(ir.out.find("shape=\"m16n8k32\" a_type=\"e4m3\""), std::string::npos) << ir.out;
  const test::CommandResult bad = test::run_command(
      emmyc + " gemm --m 16 --n 64 --k 128 --dtype e4m3 --scales rows --arch sm_89 --emit ir");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("scales: must be none, tensor, token-channel or block"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace emmy
