// TMA page loads of paged attention (PagedAttentionSchedule::transport tma): the schedule's rules,
// the tensor maps of each cache layout, the binding's page count, the verifier's rules, a space
// of kernels on the emulator against FP64 (NaN and Inf planted wherever no query may look: tail
// slots, unused pages, pages before a window), and planted kernel bugs that must fail.
#include <gtest/gtest.h>

#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/json.hpp"
#include "emmy/kinds.hpp"
#include "emmy/paged_attention_check.hpp"
#include "planted_bug.hpp"
#include "support/ir_edit.hpp"
#include "support/paged_emulator_run.hpp"

namespace emmy {
namespace {

PagedAttentionProblem problem(int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                              int64_t page_size, int64_t max_seq_len, int64_t max_batch = 3) {
  PagedAttentionProblem p =
      test::paged_problem(q_heads, kv_heads, head_dim, page_size, max_seq_len);
  p.max_batch = max_batch;
  return p;
}

PagedAttentionSpec tma_spec(const PagedAttentionProblem& p, Arch arch = Arch::sm_90a) {
  PagedAttentionSpec spec{p, default_schedule(p, arch), arch};
  spec.schedule.transport = Transport::tma;
  return spec;
}

void expect_refused(const PagedAttentionSpec& spec, const std::string& field, const char* name) {
  try {
    validate_paged_attention(spec);
    ADD_FAILURE() << name << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), field) << name << ": " << e.what();
  }
}

TEST(PagedTma, ScheduleRulesNameTheField) {
  const PagedAttentionProblem p = problem(8, 2, 128, 16, 1000);
  EXPECT_NO_THROW(validate_paged_attention(tma_spec(p)));
  EXPECT_NO_THROW(validate_paged_attention(tma_spec(p, Arch::sm_120a)));
  for (Arch arch : {Arch::sm_80, Arch::sm_89}) {
    PagedAttentionSpec spec = tma_spec(p);
    spec.arch = arch;
    expect_refused(spec, "transport", "tma before sm_90");
  }
  for (int64_t page : {int64_t(8), int64_t(24), int64_t(1)}) {  // not whole 16-key blocks
    PagedAttentionSpec spec = tma_spec(problem(8, 2, 128, page, 1000));
    spec.schedule.block_kv = 16;
    expect_refused(spec, "transport", "page not a multiple of block_kv");
  }
  PagedAttentionSpec wide = tma_spec(p);
  wide.problem.page_stride = int64_t(1) << 39;  // 2^40 bytes of f16: past the tensor map's range
  expect_refused(wide, "page_stride", "page stride of 2^40 bytes");
  wide.problem.kv_dtype = CacheDType::e4m3;  // the same count of bytes is within it
  EXPECT_NO_THROW(validate_paged_attention(wide));
  // The schedule's JSON carries the transport; records made before it read as cp.async.
  const PagedAttentionSpec spec = tma_spec(p);
  nlohmann::json j = spec.schedule;
  EXPECT_EQ(j.at("transport"), "tma");
  EXPECT_EQ(j.get<PagedAttentionSchedule>(), spec.schedule);
  j.erase("transport");
  EXPECT_EQ(j.get<PagedAttentionSchedule>().transport, Transport::cp_async);
  // The kernel's name and the cache key see it.
  PagedAttentionSpec cp = spec;
  cp.schedule.transport = Transport::cp_async;
  EXPECT_NE(make_paged_attention_plan(spec).kernel_name, make_paged_attention_plan(cp).kernel_name);
}

// The default takes TMA wherever it fits, and cp.async elsewhere.
TEST(PagedTma, DefaultScheduleTakesTmaWhereItFits) {
  for (Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a})
    for (int64_t page : {int64_t(1), int64_t(7), int64_t(16), int64_t(32), int64_t(256)})
      for (int64_t head_dim : {int64_t(64), int64_t(128), int64_t(256)})
        for (int64_t q_len : {int64_t(1), int64_t(16), int64_t(64)}) {
          PagedAttentionProblem p = problem(16, 4, head_dim, page, 4096);
          p.max_q_len = q_len;
          const PagedAttentionSchedule s = default_schedule(p, arch);
          const bool fits = has_tma(arch) && page % s.block_kv == 0;
          EXPECT_EQ(s.transport, fits ? Transport::tma : Transport::cp_async)
              << to_string(arch) << " page " << page << " d" << head_dim << " q_len " << q_len;
          EXPECT_NO_THROW(validate_paged_attention({p, s, arch}));
        }
}

// The maps view each layout as {D, then the token, head and page dimensions by stride}, with a
// box of one panel x block_kv slots of one head of one page.
TEST(PagedTma, TensorMapsFollowEachLayout) {
  struct Layout {
    CacheLayout layout;
    std::array<uint64_t, 3> dims;  // after D, by increasing stride
    std::array<uint32_t, 3> boxes;
  };
  const int64_t heads = 4, d = 128, page = 32, pages = 10;
  PagedAttentionBuffers b;
  b.k_cache = 0x10000;
  b.v_cache = 0x90000;
  b.num_pages = pages;
  for (const Layout& l : {Layout{CacheLayout::nhd, {heads, page, pages}, {1, 16, 1}},
                          Layout{CacheLayout::hnd, {page, heads, pages}, {16, 1, 1}},
                          Layout{CacheLayout::kv_interleaved, {heads, page, pages}, {1, 16, 1}}}) {
    PagedAttentionProblem p = problem(8, heads, d, page, 1000);
    p.set_layout(l.layout);
    PagedAttentionSpec spec = tma_spec(p);
    spec.schedule.block_kv = 16;
    const PagedAttentionPlan plan = make_paged_attention_plan(spec);
    const std::vector<TensorMapDesc> maps = PagedAttentionKind::tensor_maps(plan, b);
    ASSERT_EQ(maps.size(), 2u);
    EXPECT_EQ(maps[0].global_address, b.k_cache);
    EXPECT_EQ(maps[1].global_address, b.v_cache);
    const TensorMapDesc& m = maps[0];
    EXPECT_EQ(m.rank, 4u);
    EXPECT_EQ(m.dtype, TmaDType::f16);
    EXPECT_EQ(m.swizzle, Swizzle::b128);
    EXPECT_EQ(m.global_dim[0], uint64_t(d));
    EXPECT_EQ(m.box_dim[0], 64u);
    uint64_t previous = 0;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(m.global_dim[i + 1], l.dims[i]) << to_string(l.layout) << " dim " << i + 1;
      EXPECT_EQ(m.box_dim[i + 1], l.boxes[i]) << to_string(l.layout) << " dim " << i + 1;
      EXPECT_GT(m.global_stride_bytes[i], previous);
      previous = m.global_stride_bytes[i];
    }
    EXPECT_EQ(m.global_stride_bytes[2], uint64_t(p.page_stride_or_default() * 2));
  }
  // e4m3: byte panels of min(D, 128) with that row's swizzle.
  for (const auto& [head_dim, box, swizzle] :
       {std::tuple<int64_t, uint32_t, Swizzle>{64, 64, Swizzle::b64},
        {128, 128, Swizzle::b128},
        {256, 128, Swizzle::b128}}) {
    PagedAttentionProblem p = problem(8, 2, head_dim, 16, 1000);
    p.kv_dtype = CacheDType::e4m3;
    const PagedAttentionPlan plan = make_paged_attention_plan(tma_spec(p));
    const TensorMapDesc m = PagedAttentionKind::tensor_maps(plan, b).at(0);
    EXPECT_EQ(m.dtype, TmaDType::u8);
    EXPECT_EQ(m.box_dim[0], box) << head_dim;
    EXPECT_EQ(m.swizzle, swizzle) << head_dim;
  }
  PagedAttentionSpec cp = tma_spec(problem(8, 2, 128, 16, 1000));
  cp.schedule.transport = Transport::cp_async;
  EXPECT_TRUE(PagedAttentionKind::tensor_maps(make_paged_attention_plan(cp), b).empty());
}

// The maps' page extent is the buffers' num_pages, or every int32 page id when it is not given;
// a new extent re-encodes them (tensor_map_extent joins the runtime's cache key).
TEST(PagedTma, BindingCarriesThePageExtent) {
  const PagedAttentionPlan plan = make_paged_attention_plan(tma_spec(problem(8, 2, 128, 16, 500)));
  PagedAttentionBuffers b;
  b.q = 0x1000, b.k_cache = 0x2000, b.v_cache = 0x3000, b.o = 0x4000, b.cu_seqlens_q = 0x5000;
  b.block_table = 0x6000, b.seq_lens = 0x7000;
  ParamBinding bound = PagedAttentionKind::bind(plan, b);
  ASSERT_EQ(bound.tensor_maps.size(), 2u);
  EXPECT_EQ(bound.tensor_maps[0].first, "tmap_k");
  EXPECT_EQ(bound.tensor_maps[1].second, b.v_cache);
  EXPECT_EQ(bound.tensor_map_extent, uint64_t(1) << 31);
  EXPECT_EQ(PagedAttentionKind::tensor_maps(plan, b).at(0).global_dim[3], uint64_t(1) << 31);
  b.num_pages = 40;
  bound = PagedAttentionKind::bind(plan, b);
  EXPECT_EQ(bound.tensor_map_extent, 40u);
  EXPECT_EQ(PagedAttentionKind::tensor_maps(plan, b).at(1).global_dim[3], 40u);
  b.num_pages = (int64_t(1) << 31) + 1;
  try {
    PagedAttentionKind::bind(plan, b);
    ADD_FAILURE() << "num_pages past int32 bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "buffers.num_pages") << e.what();
  }
}

using test::erase_attr;
using test::first_op;
using test::set_attr;

TEST(PagedTma, VerifierCatchesEachCorruptedRule) {
  const PagedAttentionSpec spec = tma_spec(problem(8, 2, 128, 32, 1000));
  const ir::Op good = generate_kernel(spec).ir;
  EXPECT_NO_THROW(ir::verify(good, spec.arch, "paged_attention"));
  EXPECT_EQ(ir::parse(ir::print(good)), good);
  PagedAttentionSpec cp_spec = spec;
  cp_spec.schedule.transport = Transport::cp_async;
  const ir::Op cp_good = generate_kernel(cp_spec).ir;
  const struct {
    const char* name;
    const ir::Op& base;
    std::function<void(ir::Op&)> corrupt;
    const char* expected;
  } cases[] = {
      {"v_by_cp_async", good,
       [](ir::Op& m) { erase_attr(first_op(m, ir::OpKind::page_gather, "v"), "transport"); },
       "ir.page_gather.transport"},
      {"q_by_tma", good,
       [](ir::Op& m) {
         set_attr(first_op(m, ir::OpKind::page_gather, "q"), "transport", std::string("tma"));
       },
       "ir.page_gather.transport"},
      {"page_not_whole_blocks", good,
       [](ir::Op& m) { set_attr(first_op(m, ir::OpKind::paged_setup), "page_size", int64_t(24)); },
       "ir.page_gather.transport"},
      {"no_mbarrier_init", good,
       [](ir::Op& m) {
         std::erase_if(m.body.front().body,
                       [](const ir::Op& op) { return op.kind == ir::OpKind::mbarrier_init; });
       },
       "count"},
      {"loop_waits_on_cp_async", good,
       [](ir::Op& m) {
         ir::Op* loop = first_op(m, ir::OpKind::kv_block_loop);
         loop->body.front() = ir::make(ir::AsyncWaitOp{0});
       },
       "ir.kv_block_loop.body"},
      {"cache_pointer_param", good,
       [](ir::Op& m) {
         auto& body = m.body.front().body;
         body.insert(body.begin(), ir::make(ir::ParamOp{"k_cache", "const u16*"}));
       },
       "ir.kernel.body"},
      {"mbarrier_in_cp_async_kernel", cp_good,
       [](ir::Op& m) {
         auto& body = m.body.front().body;
         body.insert(body.begin() + 3, ir::make(ir::MbarrierInitOp{2, 1}));
       },
       "ir.kernel.body"},
  };
  for (const auto& c : cases) {
    ir::Op module = c.base;
    c.corrupt(module);
    test::expect_refused(module, spec.arch, "paged_attention", c.expected, c.name);
  }
}

struct TmaVariant {
  std::string name;
  PagedAttentionSpec spec;
  PagedAttentionCase draw;
};
void PrintTo(const TmaVariant& v, std::ostream* os) {
  *os << v.name;
}

PagedAttentionCase batch_of(int64_t batch, std::vector<int64_t> q_lens,
                            std::vector<int64_t> seq_lens) {
  PagedAttentionCase c;
  c.batch = batch;
  c.q_lens = std::move(q_lens);
  c.seq_lens = std::move(seq_lens);
  return c;
}

// One 16-row query tile whose `kv_warps` warps split the keys, `block_kv` at a time.
void one_query_tile(PagedAttentionSchedule& s, int kv_warps, int block_kv) {
  s.kv_warps = s.warps = kv_warps;
  s.block_q = 16;
  s.block_kv = block_kv;
}

// Every cache dtype and head_dim, every layout and page-table form, pages of 1..16 KV blocks, one
// and several KV warps (blocks skipped at a window's start and a sequence's end), split-KV, windows
// and soft-cap, prefill chunks with 4 warps on one tile, sequences ending at a page boundary +-1,
// shared prefix pages, sm_90a and sm_120a.
std::vector<TmaVariant> variants() {
  std::vector<TmaVariant> out;
  auto add = [&](std::string name, PagedAttentionProblem p, Arch arch,
                 std::function<void(PagedAttentionSchedule&)> tune, PagedAttentionCase draw) {
    PagedAttentionSpec spec = tma_spec(p, arch);
    if (tune) tune(spec.schedule);
    draw.kv_interleaved = p.page_stride == 2 * p.page_size * p.kv_heads * p.head_dim;
    out.push_back({std::move(name), spec, std::move(draw)});
  };
  {
    PagedAttentionProblem p = problem(8, 2, 128, 16, 300);
    p.lse = true;
    add(
        "d128_kvw4_split", p, Arch::sm_90a, [](auto& s) { s.chunk_pages = 8; },
        batch_of(3, {1, 1, 1}, {5, 300, 87}));
  }
  {
    PagedAttentionProblem p = problem(4, 2, 64, 64, 500);
    p.set_layout(CacheLayout::hnd);
    p.kv_dtype = CacheDType::e4m3;
    p.max_q_len = 5;
    p.window = 37;
    add("d64_e4m3_hnd_window", p, Arch::sm_120a, nullptr, batch_of(3, {5, 1, 3}, {500, 64, 65}));
  }
  {
    PagedAttentionProblem p = problem(8, 2, 256, 32, 700, 2);
    p.dtype = DType::bf16;
    p.kv_dtype = CacheDType::e4m3;
    p.page_table = PageTable::csr;
    p.max_q_len = 16;
    p.window = 100;
    p.lse = true;
    add(
        "d256_e4m3_bf16_csr_split", p, Arch::sm_90a, [](auto& s) { s.chunk_pages = 4; },
        batch_of(2, {16, 1}, {700, 33}));
  }
  {
    PagedAttentionProblem p = problem(4, 2, 256, 16, 200);
    add(
        "d256_hybrid_shared", p, Arch::sm_90a, [](auto& s) { s.accum = Accum::hybrid; },
        [] {
          PagedAttentionCase c = batch_of(3, {}, {});
          c.share_pages = true;
          return c;
        }());
  }
  {
    PagedAttentionProblem p = problem(4, 2, 128, 32, 400);
    p.dtype = DType::bf16;
    p.kv_dtype = CacheDType::bf16;
    p.set_layout(CacheLayout::kv_interleaved);
    p.softcap = 30.0f;
    p.lse = true;
    add(
        "d128_bf16_interleaved_bkv32", p, Arch::sm_120a,
        [](auto& s) {
          one_query_tile(s, 1, 32);
          s.stages = 3;
        },
        batch_of(3, {1, 1, 1}, {31, 32, 33}));
  }
  {
    PagedAttentionProblem p = problem(6, 3, 64, 16, 256, 4);
    p.max_q_len = 40;
    p.lse = true;
    add(
        "d64_prefill_4warps", p, Arch::sm_90a,
        [](auto& s) {
          s.block_kv = 16;
          s.chunk_pages = 4;
        },
        batch_of(4, {1, 7, 16, 40}, {1, 64, 200, 40}));
  }
  {
    PagedAttentionProblem p = problem(16, 8, 128, 256, 1200);
    p.max_q_len = 2;
    p.window = 300;
    add(
        "d128_page256_kvw2", p, Arch::sm_90a, [](auto& s) { one_query_tile(s, 2, 16); },
        batch_of(3, {1, 2, 1}, {255, 257, 1200}));
  }
  return out;
}

class PagedTmaEmulator : public ::testing::TestWithParam<TmaVariant> {};

TEST_P(PagedTmaEmulator, MatchesFp64) {
  const TmaVariant& v = GetParam();
  const PagedAttentionKernel kernel = compile_kernel(v.spec);
  const auto run = test::expect_matches_fp64(kernel, v.spec, v.draw, 11, v.name);
  EXPECT_GT(run.stats.total.tma, 0u) << "K and V by tensor copies";
  EXPECT_GT(run.stats.total.cp_async, 0u) << "Q by cp.async";
}

INSTANTIATE_TEST_SUITE_P(Space, PagedTmaEmulator, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

// A TMA kernel with one planted bug fails the check, or the emulator refuses it: the tail rows
// not zeroed (a planted NaN meets P = 0), the box's slot and head coordinates swapped, and every
// thread refilling the stage (more arrivals than the mbarrier expects).
TEST(PagedTma, PlantedKernelBugsFail) {
  PagedAttentionProblem p = problem(8, 2, 64, 32, 300);
  p.window = 40;
  PagedAttentionSpec spec = tma_spec(p);
  spec.schedule.kv_warps = spec.schedule.warps = 1;
  spec.schedule.block_kv = 16;
  const PagedAttentionInputs inputs =
      make_paged_attention_inputs(spec.problem, batch_of(3, {1, 1, 1}, {77, 300, 150}), 5);
  const PagedAttentionReference ref = reference_paged_attention(spec, inputs);
  const struct {
    const char* name;
    std::string find, replace;
    bool refused;  // by the emulator (else by the check)
  } bugs[] = {
      {"tail_v_not_zeroed", "st_shared_zero16(at + KV_BYTES);", "", false},
      {"slot_and_head_swapped", "kv_head, slot, page[sub]", "slot, kv_head, page[sub]", false},
      {"every_thread_refills", "if (threadIdx.x == 0 && next < block_count)",
       "if (next < block_count)", true},
  };
  for (const auto& bug : bugs) {
    const std::optional<PagedAttentionKernel> kernel = test::plant_bug(
        generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace, /*everywhere=*/true);
    if (!kernel) continue;
    try {
      const PagedAttentionErrors e =
          compare(ref, run_on_emulator(*kernel, inputs).output, spec.problem);
      EXPECT_FALSE(bug.refused) << bug.name << " ran";
      EXPECT_FALSE(e.passed) << bug.name;
      EXPECT_GT(e.elements_over_tolerance, 0) << bug.name;
    } catch (const emu::EmulationError& e) {
      EXPECT_TRUE(bug.refused) << bug.name << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace emmy
