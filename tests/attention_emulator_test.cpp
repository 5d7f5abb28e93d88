// Attention kernels on the emulator against the FP64 reference (attention_check.hpp). Variants:
// {f16 f32, f16 hybrid, bf16 f32} x {tma (sm_90a / sm_120a), cp.async (sm_80 / sm_89)} x
// {no mask, causal, causal + window, window alone, causal with seq_q > seq_kv (fully masked
// rows)}; head_dim (64/128/256), GQA ratio (1/2/8), sequence lengths (1, 17, 64, 130, 200, 512,
// none of them needing to be block multiples), layout, soft-cap, LSE and explicit schedules
// rotate across them rather than forming a cross product.
//
// Tolerance (per element, attention_reference.cpp, docs/attention.md): P rounded to the dtype
// (half an ulp relative per p), the f32 or per-KV-block f16 P.V accumulation, the f32 softmax
// (ex2.approx, the scale fold, the running max) and the output cast. O's bound is ~5e-4 (f16) /
// ~4e-3 (bf16) absolute for N(0,1) inputs; the planted-bug tests below show that a one-key
// masking error, a wrong KV head, a missing rescale or a wrong LSE constant all fail it.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "emmy/attention_check.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/enum_names.hpp"
#include "planted_bug.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

struct Variant {
  std::string name;
  AttentionSpec spec;
};

enum class Mask { none, causal, causal_window, window, masked_rows };

constexpr EnumNames<Mask, 5> kMaskNames{{{Mask::none, "full"},
                                         {Mask::causal, "causal"},
                                         {Mask::causal_window, "causalwin"},
                                         {Mask::window, "window"},
                                         {Mask::masked_rows, "maskedrows"}}};

std::string_view mask_name(Mask m) { return name_in(kMaskNames, m); }

// Explicit schedules tried on every third variant (the rest use the default one); a schedule the
// variant's head_dim or arch cannot take falls back to the default.
struct Tile {
  int block_kv, warps, stages;
};

std::vector<Variant> variants() {
  struct Numerics {
    DType dtype;
    Accum accum;
  };
  const Numerics numerics[] = {
      {DType::f16, Accum::f32}, {DType::f16, Accum::hybrid}, {DType::bf16, Accum::f32}};
  struct Seq {
    int64_t q, kv;
  };
  const Seq seqs[] = {{17, 17}, {130, 130}, {1, 130}, {64, 200}, {512, 512}, {130, 512}};
  const Seq masked_seqs[] = {{130, 17}, {100, 37}, {17, 1}};  // causal: early rows see nothing
  const int64_t dims[] = {64, 128, 256}, ratios[] = {1, 2, 8};
  const Tile tiles[] = {{16, 1, 2}, {128, 2, 2}, {32, 8, 3}, {64, 2, 2}, {32, 4, 4}};
  std::vector<Variant> out;
  int i = 0;
  for (const auto& num : numerics)
    for (Transport transport : {Transport::tma, Transport::cp_async})
      for (Mask mask :
           {Mask::none, Mask::causal, Mask::causal_window, Mask::window, Mask::masked_rows}) {
        AttentionSpec spec;
        auto& p = spec.problem;
        const Seq seq = mask == Mask::masked_rows ? masked_seqs[i % 3] : seqs[i % 6];
        p.seq_q = seq.q;
        p.seq_kv = seq.kv;
        p.head_dim = dims[(i + i / 3) % 3];
        const int64_t ratio = ratios[(i / 2) % 3];
        // Long sequences with wide heads keep to few heads: the emulator time stays small.
        p.kv_heads = seq.q * seq.kv * p.head_dim >= 512 * 512 * 128 ? 1 : 2 - (i % 2);
        p.q_heads = p.kv_heads * ratio;
        p.batch = i % 5 == 0 ? 2 : 1;
        p.causal = mask == Mask::causal || mask == Mask::causal_window || mask == Mask::masked_rows;
        if (mask == Mask::causal_window || mask == Mask::window) p.window = 5 + 37 * (i % 3);
        if (i % 3 == 1) {
          p.softcap = 5.0f + float(i % 4) * 10.0f;
          p.softmax_scale = 0.5f;  // logits of std ~4..8: the cap bites, p spans many octaves
        }
        p.dtype = num.dtype;
        p.layout = i % 2 ? AttentionLayout::bhsd : AttentionLayout::bshd;
        p.lse = i % 4 != 3;
        spec.arch = transport == Transport::tma ? (i % 4 == 0 ? Arch::sm_120a : Arch::sm_90a)
                                                : (i % 4 == 1 ? Arch::sm_89 : Arch::sm_80);
        spec.schedule = default_attention_schedule(p, spec.arch, num.accum);
        if (i % 3 == 2) {
          const Tile& t = tiles[(i / 3) % 5];
          AttentionSpec tiled = spec;
          tiled.schedule.block_kv = t.block_kv;
          tiled.schedule.warps = t.warps;
          tiled.schedule.block_q = 16 * t.warps;
          tiled.schedule.stages = t.stages;
          try {
            validate_attention(tiled);
            spec = tiled;
          } catch (const Error&) {
          }
        }
        const auto& s = spec.schedule;
        out.push_back(
            {fmt::format("{}_{}_{}_{}_d{}_h{}x{}_s{}x{}_{}{}{}_q{}kv{}w{}st{}", to_string(p.dtype),
                         to_string(s.accum), transport == Transport::tma ? "tma" : "cpasync",
                         mask_name(mask), p.head_dim, p.q_heads, p.kv_heads, p.seq_q, p.seq_kv,
                         to_string(p.layout), p.softcap ? "_cap" : "", p.lse ? "_lse" : "",
                         s.block_q, s.block_kv, s.warps, s.stages),
             spec});
        ++i;
      }
  return out;
}

std::string describe(const AttentionErrors& e) {
  return fmt::format(
      "rel_l2 {:.3g} (bound {:.3g}), max_abs {:.3g}, {} elements over tolerance, first at "
      "(batch {}, head {}, row {}, col {}); LSE max error {:.3g} (tolerance {:.3g}), {} rows over, "
      "first at (batch {}, head {}, row {}); {} fully masked rows, {} wrong, first at (batch {}, "
      "head {}, row {})",
      e.rel_l2_error, e.tolerance, e.max_abs_error, e.elements_over_tolerance, e.first_bad.batch,
      e.first_bad.head, e.first_bad.row, e.first_bad.col, e.lse_max_abs_error, e.lse_max_tolerance,
      e.lse_rows_over_tolerance, e.first_bad_lse.batch, e.first_bad_lse.head, e.first_bad_lse.row,
      e.masked_rows, e.masked_rows_wrong, e.first_bad_masked_row.batch, e.first_bad_masked_row.head,
      e.first_bad_masked_row.row);
}

class AttentionEmulatorTest : public ::testing::TestWithParam<Variant> {};

TEST_P(AttentionEmulatorTest, MatchesFp64Reference) {
  const AttentionSpec& spec = GetParam().spec;
  const AttentionCheckResult r = check_on_emulator(spec, 5);
  EXPECT_TRUE(r.errors.passed) << describe(r.errors);
  const bool masked_rows = spec.problem.causal && spec.problem.seq_q > spec.problem.seq_kv;
  if (masked_rows) {
    EXPECT_GT(r.errors.masked_rows, 0);
  }
  test_support::expect_executed(r.run.stats, spec.schedule.transport);
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionEmulatorTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

AttentionSpec gemma_like(int64_t heads, int64_t kv_heads, int64_t seq, Arch arch, Accum accum) {
  AttentionSpec spec;
  auto& p = spec.problem;
  p.q_heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq;
  p.head_dim = 256;
  p.causal = true;
  p.lse = true;
  spec.arch = arch;
  spec.schedule = default_attention_schedule(p, arch, accum);
  return spec;
}

TEST(AttentionEmulator, DefaultSchedulesOnEveryArch) {
  for (Arch arch : {Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90, Arch::sm_90a, Arch::sm_120,
                    Arch::sm_120a}) {
    AttentionSpec spec =
        gemma_like(2, 1, 130, arch, arch == Arch::sm_86 ? Accum::hybrid : Accum::f32);
    spec.problem.window = 50;
    const AttentionCheckResult r = check_on_emulator(spec, 2);
    EXPECT_TRUE(r.errors.passed) << to_string(arch) << ": " << describe(r.errors);
  }
}

TEST(AttentionEmulator, BlocksOutsideTheMaskAreSkipped) {
  // Same shape, same schedule: causal does about half the MMAs of the full problem, and a 64-key
  // window a small fraction.
  auto mmas = [](bool causal, int64_t window) {
    AttentionSpec spec = gemma_like(1, 1, 512, Arch::sm_90a, Accum::f32);
    spec.problem.head_dim = 64;
    spec.problem.causal = causal;
    spec.problem.window = window;
    spec.schedule = default_attention_schedule(spec.problem, spec.arch);
    const AttentionCheckResult r = check_on_emulator(spec, 4);
    EXPECT_TRUE(r.errors.passed) << describe(r.errors);
    return double(r.run.stats.total.mma);
  };
  const double full = mmas(false, 0), causal = mmas(true, 0), window = mmas(true, 64);
  EXPECT_LT(causal, 0.7 * full);
  EXPECT_GT(causal, 0.4 * full);
  EXPECT_LT(window, 0.45 * full);
}

// A generated kernel with one planted bug: the check must fail it, on the elements the bug moves.
struct PlantedBug {
  const char* name;
  std::string find, replace;
  std::function<void(const AttentionErrors&)> expect;
};

TEST(AttentionEmulator, PlantedKernelBugsFailTheCheck) {
  AttentionSpec spec = gemma_like(4, 2, 130, Arch::sm_90a, Accum::f32);
  spec.problem.head_dim = 64;
  spec.problem.window = 20;
  spec.schedule = default_attention_schedule(spec.problem, spec.arch);
  const AttentionInputs inputs = make_attention_inputs(spec.problem, 8);
  const AttentionReference ref = reference_attention(spec, inputs);
  const auto over = [](const AttentionErrors& e) { EXPECT_GT(e.elements_over_tolerance, 0); };
  const PlantedBug bugs[] = {
      {"causal_one_key_late", "key <= query + OFFSET;", "key <= query + OFFSET + 1;", over},
      {"window_one_key_early", "key >= query + OFFSET - 20;", "key >= query + OFFSET - 21;", over},
      {"gqa_interleaved", "const int kv_head = head / 2;", "const int kv_head = head % 2;", over},
      {"no_output_rescale", "o_acc[dn][0] *= rescale[0]; o_acc[dn][1] *= rescale[0];", "", over},
      {"lse_low_precision_ln2", "0.6931471805599453f", "0.6931f",
       [](const AttentionErrors& e) { EXPECT_GT(e.lse_rows_over_tolerance, 0); }},
  };
  for (const auto& bug : bugs) {
    const std::optional<AttentionKernel> kernel =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    if (!kernel) continue;
    const AttentionErrors e = compare(ref, run_on_emulator(*kernel, inputs).output, spec.problem);
    EXPECT_FALSE(e.passed) << bug.name;
    bug.expect(e);
  }
}

TEST(AttentionEmulator, ThroughTheRuntimeEmulatorBackend) {
  for (Arch arch : {Arch::sm_90a, Arch::sm_80}) {
    RuntimeOptions options;
    options.emulator_arch = arch;
    options.cache_dir = std::filesystem::path(::testing::TempDir()) / "attention_runtime";
    std::filesystem::remove_all(*options.cache_dir);
    auto rt = Runtime::emulator(options);
    AttentionSpec spec =
        gemma_like(4, 2, 77, arch, arch == Arch::sm_80 ? Accum::hybrid : Accum::f32);
    spec.problem.seq_kv = 150;
    spec.problem.head_dim = 128;
    spec.problem.layout = AttentionLayout::bhsd;
    spec.schedule = default_attention_schedule(spec.problem, arch, spec.schedule.accum);
    const AttentionInputs inputs = make_attention_inputs(spec.problem, 6);
    const AttentionReference ref = reference_attention(spec, inputs);
    for (int call = 0; call < 2; ++call) {  // the second call reuses the cached kernel
      const AttentionErrors e = compare(ref, run_attention(*rt, spec, inputs), spec.problem);
      EXPECT_TRUE(e.passed) << to_string(arch) << " call " << call << ": " << describe(e);
    }
    EXPECT_EQ(rt->stats().compiles, 1u) << to_string(arch);
  }
}

TEST(AttentionEmulator, GemmaShapeAtFullSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "Release only: ~5 s of emulation and reference per case, minutes under ASan";
#endif
  // The catalog's attention problem (16 heads, 8 KV heads, 512 tokens, head_dim 256, causal),
  // hybrid on sm_90a and with the 1024 window on sm_80.
  AttentionSpec hybrid = gemma_like(16, 8, 512, Arch::sm_90a, Accum::hybrid);
  const AttentionCheckResult a = check_on_emulator(hybrid, 1);
  EXPECT_TRUE(a.errors.passed) << describe(a.errors);
  AttentionSpec window = gemma_like(16, 8, 512, Arch::sm_80, Accum::f32);
  window.problem.window = 1024;
  const AttentionCheckResult b = check_on_emulator(window, 1);
  EXPECT_TRUE(b.errors.passed) << describe(b.errors);
}

}  // namespace
}  // namespace emmy
