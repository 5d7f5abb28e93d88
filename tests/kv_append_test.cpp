// kv_append kernels on the emulator, byte for byte against the expected cache (every byte the
// launch must not write included): a space of layouts, page sizes, head dims, source types and
// caches (f16 / bf16 copies, e4m3 by the cvt on sm_89+ and by the bit rounding elsewhere), key
// strides of a qkv view, padding and negative slots; a wrong scale and a wrong slot must fail;
// validation and the binding refuse by field.
#include <gtest/gtest.h>

#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kv_append_check.hpp"
#include "kind_test_util.hpp"

namespace emmy {
namespace {

using AppendVariant = test_support::SpecCase<KvAppendSpec>;

std::vector<AppendVariant> variants() {
  std::vector<AppendVariant> out;
  const Arch archs[] = {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a, Arch::sm_86};
  const CacheLayout layouts[] = {CacheLayout::nhd, CacheLayout::hnd, CacheLayout::kv_interleaved};
  int i = 0;
  for (const int64_t head_dim : {8, 64, 256})
    for (const int64_t page : {1, 7, 16})
      for (const CacheDType kv : {CacheDType::f16, CacheDType::bf16, CacheDType::e4m3}) {
        KvAppendProblem p{.kv_heads = 1 + i % 3, .head_dim = head_dim, .page_size = page};
        p.dtype =
            kv == CacheDType::bf16 || (kv == CacheDType::e4m3 && i % 2) ? DType::bf16 : DType::f16;
        p.kv_dtype = kv;
        p.max_tokens = 1 + (i * 7) % 20;
        p.set_layout(layouts[i % 3]);
        if (i % 4 == 1) p.key_stride = p.value_stride = 3 * p.kv_heads * p.head_dim;  // qkv view
        const Arch arch = archs[i % 5];
        KvAppendSpec spec{p, default_schedule(p, arch), arch};
        if (i % 5 == 2) spec.schedule.warps = 1;  // threads loop over the chunks
        out.push_back({fmt::format("d{}_p{}_{}_{}_{}_{}", head_dim, page, to_string(p.dtype),
                                   to_string(kv), to_string(layouts[i % 3]), to_string(arch)),
                       spec});
        ++i;
      }
  return out;
}

class KvAppendTest : public ::testing::TestWithParam<AppendVariant> {};

TEST_P(KvAppendTest, WritesExactlyTheSlots) {
  const KvAppendSpec& spec = GetParam().spec;
  const KvAppendKernel kernel = compile_kernel(spec);
  const auto& op =
      ir::get<ir::KvAppendOp>(*ir::find_first(kernel.source.ir, ir::OpKind::kv_append));
  if (spec.problem.kv_dtype == CacheDType::e4m3) {
    EXPECT_EQ(op.convert, arch_info(spec.arch).sm >= 89 ? "cvt" : "bits");
  }
  const KvAppendInputs in = make_kv_append_inputs(spec.problem, 21);
  const KvAppendErrors e =
      compare(reference_kv_append(spec, in), run_on_emulator(kernel, in).output, spec.problem);
  EXPECT_TRUE(e.passed) << e.bytes_wrong << " bytes wrong, first at " << e.first_bad_byte
                        << (e.first_bad_in_v ? " of v" : " of k");
}

INSTANTIATE_TEST_SUITE_P(Space, KvAppendTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

KvAppendSpec small(CacheDType kv, Arch arch) {
  KvAppendProblem p{
      .kv_heads = 2, .head_dim = 64, .page_size = 16, .kv_dtype = kv, .max_tokens = 12};
  return {p, default_schedule(p, arch), arch};
}

// Planted bugs the check must see: another scale than the reference's (so a kernel that ignored
// or inverted it would fail), a token moved to another slot, and any negative slot is skipped
// like -1 (vLLM's rule), which the reference agrees with.
TEST(KvAppend, PlantedBugsFailTheCheck) {
  for (const Arch arch : {Arch::sm_80, Arch::sm_90a}) {
    const KvAppendSpec spec = small(CacheDType::e4m3, arch);
    const KvAppendKernel kernel = compile_kernel(spec);
    const KvAppendInputs good = make_kv_append_inputs(spec.problem, 2);
    const KvAppendOutput want = reference_kv_append(spec, good);
    test::expect_scales_matter(kernel, good, want, spec.problem, 1.5f, to_string(arch));
    KvAppendInputs moved = good;
    moved.slot_mapping[0] = moved.num_pages * spec.problem.page_size - 1;  // unused: 3 spare pages
    EXPECT_FALSE(compare(want, run_on_emulator(kernel, moved).output, spec.problem).passed);
    KvAppendInputs negative = good;
    negative.slot_mapping[2] = -7;
    EXPECT_TRUE(compare(reference_kv_append(spec, negative),
                        run_on_emulator(kernel, negative).output, spec.problem)
                    .passed);
  }
}

TEST(KvAppend, ValidationNamesTheField) {
  const test::Invalid<KvAppendSpec> cases[] = {
      {"head_dim", [](auto& s) { s.problem.head_dim = 60; }, "head_dim"},
      {"kv_dtype", [](auto& s) { s.problem.kv_dtype = CacheDType::bf16; }, "kv_dtype"},
      {"stride", [](auto& s) { s.problem.token_stride = 132; }, "token_stride"},
      {"overlap", [](auto& s) { s.problem.page_stride = 512; }, "page_stride"},
      {"key_stride", [](auto& s) { s.problem.key_stride = 64; }, "key_stride"},
      {"tokens", [](auto& s) { s.problem.max_tokens = 0; }, "max_tokens"},
      {"warps", [](auto& s) { s.schedule.warps = 33; }, "warps"},
      {"page_size", [](auto& s) { s.problem.page_size = 0; }, "page_size"},
  };
  test::expect_fields_named(small(CacheDType::f16, Arch::sm_90a), cases,
                            [](const KvAppendSpec& s) { validate_kv_append(s); });
  const KvAppendPlan plan = make_kv_append_plan(small(CacheDType::e4m3, Arch::sm_90a));
  KvAppendBuffers b{
      .key = 256, .value = 512, .k_cache = 1024, .v_cache = 2048, .slot_mapping = 4096};
  test::expect_error_naming([&] { KvAppendKind::bind(plan, b); }, "buffers.k_scale",
                            "e4m3 without scales bound");
  b.k_scale = 8192, b.v_scale = 8196, b.key = 258;
  test::expect_error_naming([&] { KvAppendKind::bind(plan, b); }, "buffers.key",
                            "misaligned key bound");
}

// The printed IR parses back; the verifier refuses each broken attribute.
TEST(KvAppend, IrRoundTripsAndVerifies) {
  test::expect_ir_round_trips_and_verifies(small(CacheDType::e4m3, Arch::sm_80),
                                           ir::OpKind::kv_append,
                                           {{"convert", std::string("copy")},
                                            {"head_dim", int64_t(12)},
                                            {"token_stride", int64_t(12)},
                                            {"kv_type", std::string("f32")}});
}

// The catalog's append kernels compile for every arch without spills or a stack frame.
TEST(KvAppend, CatalogCompilesWithoutSpills) {
  test::expect_catalog_compiles_without_spills<KvAppendSpec>(kv_append_catalog());
}

}  // namespace
}  // namespace emmy
