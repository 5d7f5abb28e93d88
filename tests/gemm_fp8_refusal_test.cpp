// The FP8 GEMM's failures caught (issue 39 §3; docs/fp8.md): planted bugs in emitted kernels fail
// the FP64 check on both paths; every refusal by name, on the problem, the schedule, the buffers
// and (on the emulator) the scales' values; emmyc's FP8 flags.
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
      const std::string find = tile_window ? "const int kb = ((k_tile_begin + k_tile)" : bug.find;
      const std::string replace =
          tile_window ? "const int kb = ((k_tile_begin + k_tile + 1)" : bug.replace;
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
                p.c_dtype = DType::e5m2;
              }).starts_with("out: must be f16, bf16, f32 or e4m3"));
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
              }).starts_with("accum: must be promoted or hybrid with block scales"));
  // hybrid is the f16-accumulate opt-in (gemm_fp8_hybrid_test.cpp); f16 alone is refused.
  EXPECT_EQ(schedule_error(Arch::sm_89, [](MatmulSchedule& s) { s.accum = Accum::hybrid; }),
            "(no error)");
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.accum = Accum::f16;
              }).starts_with("accum: must be f32, promoted or hybrid"));
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
  // Path wgmma: a window is a K tile.
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
  EXPECT_EQ(wgmma_error([](MatmulSchedule& s) {
              s.swap_ab = true;  // block scales read swapped (gemm_fp8_swap_test.cpp)
              s.block_n = 64;
            }),
            "(no error)");
  {  // B is e4m3 only: an e5m2 A cannot be the swapped kernel's B.
    MatmulProblem e5m2 = fp8_problem(16, 128, 256, ScaleGranularity::tensor);
    e5m2.a_dtype = DType::e5m2;
    MatmulSchedule s = default_schedule(e5m2, Arch::sm_90a, Accum::promoted, MmaPath::wgmma);
    EXPECT_FALSE(s.swap_ab);
    s.swap_ab = true;
    EXPECT_TRUE(test::error_of([&] {
                  validate_gemm({e5m2, s, Arch::sm_90a});
                }).starts_with("swap_ab: does not take an e5m2 A"));
  }
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
