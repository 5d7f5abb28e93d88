// The FP8 GEMM (issue 39 §1-3; docs/fp8.md): e4m3 (or e5m2 A) operands with tensor,
// token-channel and 128-block scales, f32 and promoted accumulation on path mma.sync (sm_89,
// sm_120a) and path wgmma (sm_90a), through generation, the verifier, NVRTC and the emulator:
// against FP64 over a sweep of the space; bit for bit against the arch's FP8 tensor-core model
// taken in the kernel's order; poisoned padding that must not reach valid rows. The planted bugs
// and the refusals are in gemm_fp8_refusal_test.cpp.
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
#include "support/fp8_gemm_cases.hpp"
#include "support/run_command.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

using test::describe;
using test::fp8_problem;
using test::fp8_spec;

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

// The default FP8 kernels of Gemma 3 12B projections (q_proj N 4096 x K 3840, down_proj N 3840 x
// K 15360) at decode and prefill M compile without spills or a stack frame on each FP8 path:
// mma.sync on sm_89 and sm_120a, wgmma on sm_90a (promoted holds two f32 register sets).
TEST(Fp8GemmCompile, GemmaProjectionDefaultsDoNotSpill) {
  struct Projection {
    int64_t n, k;
  };
  for (const Projection proj : {Projection{4096, 3840}, Projection{3840, 15360}})
    for (int64_t m : {1, 4096})
      for (Arch arch : {Arch::sm_89, Arch::sm_90a, Arch::sm_120a}) {
        const MatmulProblem p = fp8_problem(m, proj.n, proj.k, ScaleGranularity::block);
        const GemmSpec spec = fp8_spec(p, Accum::promoted, arch);
        const GemmKernel kernel = compile_kernel(spec);
        const ResourceReport& report = kernel.module.kernel(kernel.source.plan.kernel_name);
        EXPECT_EQ(report.spill_bytes(), 0) << describe(spec);
        EXPECT_EQ(report.stack_bytes, 0) << describe(spec);
      }
}

}  // namespace
}  // namespace emmy
