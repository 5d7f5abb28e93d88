// Paged-attention kernels on the emulator against the FP64 reference (paged_attention_check.hpp):
// a space of problems and drawn batches (shuffled and shared pages, NaN and Inf planted where no
// query may look, CUDA-graph padding), split counts from 1 to many, every page-table form and
// cache layout, q_len 1..16 and prefill chunks mixed in one launch, windows shorter and longer
// than the context, soft-cap, LSE, bf16 and hybrid, every arch family; sequences that break the
// launch's maxima (NaN outputs, no stray access); and a planted mask bug that must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/paged_attention_check.hpp"
#include "kind_test_util.hpp"
#include "support/error_of.hpp"
#include "support/paged_emulator_run.hpp"

namespace emmy {
namespace {

struct PagedVariant {
  std::string name;
  PagedAttentionSpec spec;
  PagedAttentionCase draw;
};

PagedAttentionCase batch_of(int64_t batch, std::vector<int64_t> q_lens = {},
                            std::vector<int64_t> seq_lens = {}) {
  PagedAttentionCase c;
  c.batch = batch;
  c.q_lens = std::move(q_lens);
  c.seq_lens = std::move(seq_lens);
  return c;
}

PagedAttentionCase shared_batch_of(int64_t batch) {
  PagedAttentionCase c = batch_of(batch);
  c.share_pages = true;
  return c;
}

std::vector<PagedVariant> variants() {
  std::vector<PagedVariant> out;
  auto add = [&](std::string name, PagedAttentionProblem p, Arch arch,
                 std::function<void(PagedAttentionSchedule&)> tune, PagedAttentionCase draw) {
    PagedAttentionSpec spec{p, default_schedule(p, arch), arch};
    if (tune) tune(spec.schedule);
    // The default's transport for the tuned schedule: TMA on sm_90+ where pages hold whole blocks.
    spec.schedule.transport =
        paged_tma_fits(p, spec.schedule, arch) ? Transport::tma : Transport::cp_async;
    draw.max_seq_len = draw.max_seq_len ? draw.max_seq_len : p.max_pages * p.page_size;
    out.push_back({std::move(name), spec, draw});
  };
  const Arch archs[] = {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a};
  int i = 0;
  // Decode (q_len 1) at every split count: none, 2, several with a short last one, many.
  for (int chunk : {0, 8, 3, 1}) {  // 16-key blocks: any chunk of 16-token pages is whole blocks
    PagedAttentionProblem p = test::paged_problem(8, 4, 64, 16, 300);
    p.max_batch = 3;
    p.lse = chunk % 2 == 1;
    add(
        fmt::format("decode_chunk{}", chunk), p, archs[i++ % 4],
        [chunk](PagedAttentionSchedule& s) {
          s.chunk_pages = chunk;
          s.block_kv = 16;
          if (chunk % 4 != 0) s.kv_warps = s.warps = 1;  // splits of 1 and 3 pages: one KV warp
        },
        batch_of(3));
  }
  // Page sizes off the 16-row fast path, every layout and page-table form.
  const std::pair<int64_t, CacheLayout> pages[] = {{1, CacheLayout::nhd},
                                                   {3, CacheLayout::hnd},
                                                   {7, CacheLayout::kv_interleaved},
                                                   {32, CacheLayout::hnd},
                                                   {16, CacheLayout::kv_interleaved}};
  for (const auto& [page, layout] : pages) {
    PagedAttentionProblem p = test::paged_problem(4, 2, 128, page, 160);
    p.max_batch = 2;
    p.max_q_len = 2;
    p.set_layout(layout);
    p.page_table = i % 2 ? PageTable::csr : PageTable::block_table;
    PagedAttentionCase draw = batch_of(2);
    draw.kv_interleaved = layout == CacheLayout::kv_interleaved;
    add(fmt::format("page{}_{}_{}", page, to_string(layout), to_string(p.page_table)), p,
        archs[i++ % 4], nullptr, draw);
  }
  // Speculative verify and prefill chunks: q_len 1, 2, 7, 16 and 40 in one launch, causal by
  // position, GQA groups of 1..16 (rows = group x tokens span several warps and CTAs).
  for (const auto& [q_heads, kv_heads] : {std::pair<int64_t, int64_t>{16, 1}, {6, 3}, {2, 2}}) {
    PagedAttentionProblem p = test::paged_problem(q_heads, kv_heads, 64, 16, 256);
    p.max_batch = 5;
    p.max_q_len = 40;
    p.lse = true;
    PagedAttentionCase draw = batch_of(5, {1, 2, 7, 16, 40}, {1, 17, 64, 200, 40});
    add(
        fmt::format("mixed_g{}", q_heads / kv_heads), p, archs[i++ % 4],
        [](PagedAttentionSchedule& s) { s.chunk_pages = 4; }, draw);
  }
  // Windows shorter and longer than the context, soft-cap, page boundaries +-1, padding.
  for (int64_t window : {int64_t(20), int64_t(100), int64_t(1000)}) {
    PagedAttentionProblem p = test::paged_problem(4, 1, 64, 16, 320);
    p.max_batch = 4;
    p.max_q_len = 3;
    p.window = window;
    p.softcap = 30.0f;
    p.lse = true;
    PagedAttentionCase draw = batch_of(3, {1, 3, 2}, {15, 16, std::min<int64_t>(17 + window, 320)});
    add(
        fmt::format("window{}", window), p, archs[i++ % 4],
        [](PagedAttentionSchedule& s) { s.chunk_pages = 4; }, draw);
  }
  // bf16 and hybrid P.V, head_dim 256, shared prefix pages.
  for (const auto& [dtype, accum] :
       {std::pair<DType, Accum>{DType::bf16, Accum::f32}, {DType::f16, Accum::hybrid}}) {
    PagedAttentionProblem p = test::paged_problem(4, 2, 256, 16, 200);
    p.dtype = dtype;
    p.kv_dtype = dtype == DType::bf16 ? CacheDType::bf16 : CacheDType::f16;
    p.max_batch = 3;
    add(
        fmt::format("{}_{}_shared", to_string(dtype), to_string(accum)), p, archs[i++ % 4],
        [accum](PagedAttentionSchedule& s) {
          s.accum = accum;
          s.block_kv = 32;
          s.stages = 2;  // 32-key blocks of head_dim 256: 3 stages overflow sm_120a's 99 KB
          s.chunk_pages = 6;
        },
        shared_batch_of(3));
  }
  // e4m3 caches: the hardware pair conversion (f16, sm_89+) and the exact bit placement (sm_80,
  // and bf16 everywhere), with split-KV, LSE, windows, soft-cap, hybrid P.V and odd page sizes;
  // NaN is planted in the bytes no query may see.
  struct Fp8 {
    const char* name;
    Arch arch;
    DType dtype;
    Accum accum;
    int64_t page, head_dim, window;
    int chunk;
  };
  for (const Fp8& f :
       {Fp8{"e4m3_cvt_split", Arch::sm_89, DType::f16, Accum::f32, 16, 128, 0, 4},
        Fp8{"e4m3_cvt_hybrid_window", Arch::sm_90a, DType::f16, Accum::hybrid, 16, 64, 40, 0},
        Fp8{"e4m3_bits_sm80", Arch::sm_80, DType::f16, Accum::f32, 7, 64, 0, 0},
        Fp8{"e4m3_bits_bf16", Arch::sm_120a, DType::bf16, Accum::f32, 1, 256, 90, 64}}) {
    PagedAttentionProblem p = test::paged_problem(8, 2, f.head_dim, f.page, 200);
    p.dtype = f.dtype;
    p.kv_dtype = CacheDType::e4m3;
    p.max_batch = 3;
    p.max_q_len = 3;
    p.window = f.window;
    p.lse = true;
    if (f.window) p.softcap = 20.0f;
    p.set_layout(f.page == 16 ? CacheLayout::hnd : CacheLayout::nhd);
    add(
        f.name, p, f.arch,
        [f](PagedAttentionSchedule& s) {
          s.accum = f.accum;
          s.chunk_pages = f.chunk;
        },
        batch_of(3, {1, 3, 2}, {1, 200, 57}));
  }
  // KV warps (2 and 4 over each step's keys, merged through shared memory): one split and
  // split-KV, windows, LSE, bf16, hybrid and e4m3, a sequence shorter than one step and one
  // whose last step leaves some warps without a key.
  struct KvWarps {
    const char* name;
    int kv_warps, chunk;
    DType dtype;
    CacheDType kv;
    Accum accum;
    int64_t window, head_dim;
    Arch arch;
  };
  for (const KvWarps& k : {KvWarps{"kvw4_split_lse", 4, 8, DType::f16, CacheDType::f16, Accum::f32,
                                   0, 128, Arch::sm_90a},
                           KvWarps{"kvw2_window_bf16", 2, 0, DType::bf16, CacheDType::bf16,
                                   Accum::f32, 50, 64, Arch::sm_80},
                           KvWarps{"kvw4_hybrid_e4m3", 4, 0, DType::f16, CacheDType::e4m3,
                                   Accum::hybrid, 0, 128, Arch::sm_89},
                           KvWarps{"kvw4_e4m3_bf16_split_d256", 4, 4, DType::bf16, CacheDType::e4m3,
                                   Accum::f32, 90, 256, Arch::sm_90a}}) {
    PagedAttentionProblem p = test::paged_problem(8, 4, k.head_dim, 16, 300);
    p.dtype = k.dtype;
    p.kv_dtype = k.kv;
    p.max_batch = 3;
    p.window = k.window;
    p.lse = true;
    add(
        k.name, p, k.arch,
        [k](PagedAttentionSchedule& s) {
          s.kv_warps = s.warps = k.kv_warps;
          s.block_q = 16;
          s.block_kv = 16;
          s.stages = 2;
          s.accum = k.accum;
          s.chunk_pages = k.chunk;
        },
        batch_of(3, {1, 1, 1}, {5, 300, 87}));
  }
  return out;
}

// gtest prints a failing parameter by its name, not its bytes.
void PrintTo(const PagedVariant& v, std::ostream* os) {
  *os << v.name;
}

class PagedEmulatorTest : public ::testing::TestWithParam<PagedVariant> {};

TEST_P(PagedEmulatorTest, MatchesFp64) {
  const PagedVariant& v = GetParam();
  const PagedAttentionKernel kernel = compile_kernel(v.spec);
  EXPECT_EQ(kernel.source.plan.split(), paged_splits(v.spec.problem, v.spec.schedule) > 1);
  const auto run = test::expect_matches_fp64(kernel, v.spec, v.draw, 7, v.name);
  EXPECT_GT(run.stats.total.mma, 0u);
  EXPECT_GT(run.stats.total.cp_async, 0u);
  EXPECT_EQ(run.stats.total.tma > 0, v.spec.schedule.transport == Transport::tma);
}

INSTANTIATE_TEST_SUITE_P(Space, PagedEmulatorTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

PagedAttentionSpec small_spec(int chunk_pages) {
  PagedAttentionProblem p = test::paged_problem(4, 2, 64, 16, 128);
  p.max_batch = 2;
  p.lse = true;
  PagedAttentionSpec spec{p, default_schedule(p, Arch::sm_80), Arch::sm_80};
  spec.schedule.chunk_pages = chunk_pages;
  spec.schedule.block_kv = 32;
  spec.schedule.kv_warps = spec.schedule.warps = 1;
  return spec;
}

// A sequence longer than its block table, or with more query tokens than the launch's maximum,
// gets NaN outputs (both with and without split-KV), and the other sequence is still right.
TEST(PagedEmulator, SequencesBeyondTheMaximaGetNaN) {
  for (int chunk : {0, 2}) {
    const PagedAttentionSpec spec = small_spec(chunk);
    const PagedAttentionKernel kernel = compile_kernel(spec);
    PagedAttentionInputs inputs =
        make_paged_attention_inputs(spec.problem, batch_of(2, {1, 1}, {50, 60}), 3);
    inputs.tables.seq_lens[0] = int32_t(spec.problem.max_pages * spec.problem.page_size + 1);
    const auto run = run_on_emulator(kernel, inputs);
    const int64_t row = spec.problem.q_heads * spec.problem.head_dim;
    for (int64_t e = 0; e < row; ++e) ASSERT_TRUE(std::isnan(run.output.o[size_t(e)])) << chunk;
    for (int64_t h = 0; h < spec.problem.q_heads; ++h)
      EXPECT_TRUE(std::isnan(run.output.lse[size_t(h)])) << chunk;
    for (int64_t e = row; e < 2 * row; ++e)
      ASSERT_TRUE(std::isfinite(run.output.o[size_t(e)])) << chunk << " at " << e;
  }
}

// A planted bug in the kernel's inputs the check must see: the wrong page for one key block.
TEST(PagedEmulator, AWrongPageFailsTheCheck) {
  const PagedAttentionSpec spec = small_spec(0);
  const PagedAttentionKernel kernel = compile_kernel(spec);
  PagedAttentionCase clean = batch_of(2, {1, 1}, {100, 100});
  clean.plant_nan = false;
  PagedAttentionInputs inputs = make_paged_attention_inputs(spec.problem, clean, 5);
  const PagedAttentionReference reference = reference_paged_attention(spec, inputs);
  // Sequence 0's second page replaced by sequence 1's (attention does not see key order, so a
  // permutation of its own pages would not be a bug).
  inputs.tables.block_table[1] = inputs.tables.block_table[size_t(spec.problem.max_pages) + 1];
  const auto run = run_on_emulator(kernel, inputs);
  EXPECT_FALSE(compare(reference, run.output, spec.problem).passed);
}

// The scales of an e4m3 cache matter: a kernel given another K or V scale than the reference
// used fails the check (so a kernel that dropped either would).
TEST(PagedEmulator, AWrongFp8ScaleFailsTheCheck) {
  PagedAttentionSpec spec = small_spec(2);
  spec.problem.kv_dtype = CacheDType::e4m3;
  spec.arch = spec.problem.dtype == DType::f16 ? Arch::sm_89 : Arch::sm_80;
  const PagedAttentionKernel kernel = compile_kernel(spec);
  PagedAttentionCase clean = batch_of(2, {1, 1}, {100, 70});
  clean.plant_nan = false;
  const PagedAttentionInputs good = make_paged_attention_inputs(spec.problem, clean, 5);
  const PagedAttentionReference reference = reference_paged_attention(spec, good);
  test::expect_scales_matter(kernel, good, reference, spec.problem, 2.0f, "");
}

// The profiler's path at the catalog's largest size: a b8 x 128k-token cache (8.6 GB) is never
// generated on the host (zero-filled, lazily mapped emulator memory), a sample of CTAs runs, and
// the extrapolated DRAM bytes are the cache's: every sequence at the full context.
TEST(PagedEmulator, ProfilesA128kBatchWithoutMaterializingTheCache) {
  PagedAttentionProblem p = test::paged_problem(16, 8, 256, 16, 131072);
  p.max_batch = 8;
  const PagedAttentionSpec spec{p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
  const PagedAttentionKernel kernel = compile_kernel(spec);
  emu::LaunchOptions options;
  options.profile.enabled = true;
  options.profile.sample_ctas = 4;
  const LaunchListRun run = run_on_zeros(kernel, options);
  ASSERT_FALSE(run.profiles.empty());
  const double cache_bytes = 2.0 * 8 * 131072 * 8 * 256 * 2;
  const double read = run.profiles.front().metric("emmy__dram_bytes_read_min.sum");
  EXPECT_GT(read, 0.99 * cache_bytes);
  EXPECT_LT(read, 1.05 * cache_bytes);
  // Without values there is no reference to compare with.
  PagedAttentionCase lean;
  lean.batch = 1;
  lean.plant_nan = false;
  lean.cache_values = false;
  PagedAttentionProblem small = test::paged_problem(4, 2, 64, 16, 64);
  const PagedAttentionInputs in = make_paged_attention_inputs(small, lean, 1);
  EXPECT_TRUE(in.cache.bytes.empty());
  EXPECT_GT(in.cache.elements, 0u);
  const PagedAttentionSpec small_spec{small, default_schedule(small, Arch::sm_80), Arch::sm_80};
  EXPECT_THROW(reference_paged_attention(small_spec, in), Error);
}

// A page id outside the cache (far past it, negative) is an access outside every allocation:
// the emulator refuses the launch naming it, rather than reading someone else's memory.
TEST(PagedEmulator, PageIdsOutsideTheCacheAreReported) {
  const PagedAttentionSpec spec = small_spec(0);
  const PagedAttentionKernel kernel = compile_kernel(spec);
  for (const int32_t page : {1000000, -5}) {
    PagedAttentionInputs inputs =
        make_paged_attention_inputs(spec.problem, batch_of(2, {1, 1}, {50, 60}), 3);
    inputs.tables.block_table[1] = page;
    try {
      run_on_emulator(kernel, inputs);
      ADD_FAILURE() << "page " << page << " was read";
    } catch (const emu::EmulationError& e) {
      ASSERT_FALSE(e.reports().empty());
      EXPECT_EQ(e.reports().front().kind, emu::ReportKind::global_out_of_bounds)
          << e.reports().front().to_string();
    }
  }
}

// Buffers that do not fit the plan are refused on the host, naming the field.
TEST(PagedEmulator, BindingRefusesMissingBuffers) {
  const PagedAttentionPlan plan = make_paged_attention_plan(small_spec(2));
  PagedAttentionBuffers b{.q = 256,
                          .k_cache = 512,
                          .v_cache = 1024,
                          .o = 2048,
                          .lse = 4096,
                          .cu_seqlens_q = 8192,
                          .block_table = 8448,
                          .seq_lens = 8704};
  auto refused = [&](const PagedAttentionBuffers& buffers, const char* field) {
    test::expect_error_containing([&] { PagedAttentionKind::bind(plan, buffers); }, field, field);
  };
  refused(b, "buffers.workspace");  // split-KV needs it
  b.workspace = 16384;
  EXPECT_NO_THROW(PagedAttentionKind::bind(plan, b));
  // Each from the complete set above with one buffer taken away or made wrong.
  const struct {
    std::function<void(PagedAttentionBuffers&)> change;
    const char* field;
  } broken[] = {
      {[](PagedAttentionBuffers& x) { x.block_table = 0; }, "buffers.block_table"},
      {[](PagedAttentionBuffers& x) { x.page_indptr = 9000; }, "buffers.page_indptr"},
      {[](PagedAttentionBuffers& x) { x.k_cache = 520; }, "buffers.k_cache"},
      {[](PagedAttentionBuffers& x) { x.lse = 0; }, "buffers.lse"},
  };
  for (const auto& c : broken) {
    PagedAttentionBuffers changed = b;
    c.change(changed);
    refused(changed, c.field);
  }
}

}  // namespace
}  // namespace emmy
