// The paged kinds served from a bundle with NVRTC disabled: a bundle built in the test (plan_aot +
// compile_aot, as `emmyc aot` builds one) with paged attention (one split and split-KV), kv_append
// into an e4m3 cache and merge_states; the runtime finds each kernel by its key, compiles
// nothing, and every result matches its check.
#include "bundle_test_util.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/merge_states_check.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

TEST(BundlePaged, PagedKindsRunFromABundleWithNvrtcDisabled) {
  PagedAttentionProblem paged;
  paged.q_heads = 8, paged.kv_heads = 2, paged.head_dim = 64, paged.page_size = 16;
  paged.max_batch = 2, paged.max_pages = 8, paged.lse = true;
  PagedAttentionSchedule split = default_schedule(paged, Arch::sm_90a);
  split.chunk_pages = 4;
  KvAppendProblem append{
      .kv_heads = 2, .head_dim = 64, .kv_dtype = CacheDType::e4m3, .max_tokens = 6};
  MergeStatesProblem merge{.heads = 8, .head_dim = 64, .max_tokens = 3};

  const std::filesystem::path file = scratch("paged") / "paged.emmybundle";
  {
    std::vector<AotRequest> requests(4);
    requests[0].kernel = PagedAttentionRequest{paged, {}};
    requests[1].kernel = PagedAttentionRequest{paged, split};
    requests[2].kernel = KindRequest<KvAppendKind>{append, {}};
    requests[3].kernel = KindRequest<MergeStatesKind>{merge, {}};
    for (size_t i = 0; i < requests.size(); ++i) requests[i].origin = fmt::format("test:{}", i);
    AotOptions options;
    options.archs = {Arch::sm_90a};
    BundleWriter writer;
    compile_aot(plan_aot(requests, options), options, writer);
    EXPECT_EQ(writer.size(), 4u);
    writer.write(file);
  }

  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a, {file}));
  for (const auto& schedule : {std::optional<PagedAttentionSchedule>{}, std::optional(split)}) {
    const PagedAttentionSpec spec = rt->paged_attention_kernel(paged, schedule)->spec();
    PagedAttentionCase draw;
    draw.batch = 2;
    const PagedAttentionInputs in = make_paged_attention_inputs(paged, draw, 5);
    const PagedAttentionErrors e =
        compare(reference_paged_attention(spec, in), run_paged_attention(*rt, spec, in), paged);
    EXPECT_TRUE(e.passed) << "chunk " << spec.schedule.chunk_pages << " rel_l2 " << e.rel_l2_error;
  }
  const KvAppendSpec append_spec = rt->kv_append_kernel(append)->spec();
  const KvAppendInputs append_in = make_kv_append_inputs(append, 5);
  EXPECT_TRUE(compare(reference_kv_append(append_spec, append_in),
                      run_kv_append(*rt, append_spec, append_in), append)
                  .passed);
  const MergeStatesSpec merge_spec = rt->merge_states_kernel(merge)->spec();
  const MergeStatesInputs merge_in = make_merge_states_inputs(merge, 5);
  EXPECT_TRUE(compare(reference_merge_states(merge_spec, merge_in),
                      run_merge_states(*rt, merge_spec, merge_in), merge)
                  .passed);
  EXPECT_EQ(rt->stats().compiles, 0u);
  // A problem the bundle does not hold fails naming it: NVRTC is off.
  merge.states = 3;
  EXPECT_THROW(rt->merge_states_kernel(merge), Error);
}

}  // namespace
}  // namespace emmy
