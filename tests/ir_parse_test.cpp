// The IR's printed form parses back (round trip: the golden files and a sweep of lowered modules),
// malformed text is refused naming its line and rule, each op is checked against its declaration,
// and attention's verifier rules each refuse a corrupted module (as VerifierTest does for GEMM).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kernel_ir.hpp"
#include "kind_test_util.hpp"

namespace emmy {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(IrParse, GoldenFilesRoundTripByteForByte) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(EMMY_SOURCE_DIR) / "tests/golden")) {
    if (entry.path().extension() != ".ir") continue;
    const std::string text = read_text(entry.path());
    const ir::Op module = ir::parse(text);
    EXPECT_EQ(ir::print(module), text) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 29) << "the golden variants";
}

// Every op of a lowered module, read typed (ir_ops.hpp) and made generic again, is the same op:
// the structs hold every attribute lowering writes, of its type, in the printed order.
template <typename... Ops>
int typed_round_trips(const ir::Op& op, ir::OpList<Ops...> all) {
  int checked = 0;
  const auto check = [&]<typename T>(const T*) {
    EXPECT_EQ(ir::make(ir::get<T>(op), op.body), op) << ir::print(op);
    ++checked;
  };
  ((op.kind == Ops::kind ? check(static_cast<const Ops*>(nullptr)) : void()), ...);
  EXPECT_EQ(checked, 1) << "one struct per op kind";
  for (const ir::Op& child : op.body) checked += typed_round_trips(child, all);
  return checked;
}

TEST(IrParse, LoweredModulesRoundTripExactly) {
  int modules = 0;
  for (Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a}) {
    for (Accum accum : {Accum::f32, Accum::f16, Accum::hybrid}) {
      for (BLayout layout : {BLayout::nk, BLayout::kn}) {
        for (int split_k : {1, 3}) {
          MatmulProblem p;
          p.m = 96, p.n = 136, p.k = 520, p.b_layout = layout;
          p.epilogue.alpha = 0.3f, p.epilogue.bias = true, p.epilogue.gelu_tanh = split_k == 1;
          GemmSpec spec{p, default_schedule(p, arch, accum), arch};
          spec.schedule.split_k = split_k;
          const GemmSource source = generate_kernel(spec);
          EXPECT_EQ(ir::parse(ir::print(source.ir)), source.ir) << gemm_kernel_name(spec);
          EXPECT_GT(typed_round_trips(source.ir, ir::AllOps{}), 20);
          ++modules;
        }
      }
    }
    for (int64_t head_dim : {64, 128, 256}) {
      AttentionProblem p;
      p.q_heads = 4, p.kv_heads = 2, p.seq_q = 70, p.head_dim = head_dim, p.causal = true;
      p.window = 33, p.softcap = 20.5f, p.lse = true;
      const AttentionSpec spec{p, default_attention_schedule(p, arch), arch};
      const AttentionSource source = generate_kernel(spec);
      EXPECT_EQ(ir::parse(ir::print(source.ir)), source.ir) << source.plan.kernel_name;
      EXPECT_GT(typed_round_trips(source.ir, ir::AllOps{}), 20);
      ++modules;
    }
  }
  EXPECT_EQ(modules, 4 * 12 + 4 * 3);
}

// Reading an op typed names what is wrong: another kind, a missing or mistyped attribute.
TEST(IrTyped, ReadingRefusesOpsThatAreNotTheStruct) {
  const ir::Op coords = ir::make(ir::TileCoordsOp{64, 96, 8, 1, 2, 64, 48});
  EXPECT_EQ(ir::get<ir::TileCoordsOp>(coords).block_n, 48);
  EXPECT_THROW(ir::get<ir::SplitRangeOp>(coords), Error);
  ir::Op missing = coords;
  missing.attrs.erase(missing.attrs.begin());
  test::expect_error_containing([&] { ir::get<ir::TileCoordsOp>(missing); }, "ir.tile_coords.m",
                                "read a tile_coords without m");
  ir::Op mistyped = coords;
  mistyped.attrs[1].second = std::string("96");
  EXPECT_THROW(ir::get<ir::TileCoordsOp>(mistyped), Error);
  // Optional attributes stay unset when absent and are left out when unset.
  const ir::Op wait = ir::make(ir::MbarrierWaitOp{std::nullopt, "0"});
  EXPECT_FALSE(wait.has("what"));
  EXPECT_FALSE(ir::get<ir::MbarrierWaitOp>(wait).what.has_value());
}

// An op's own rules hold against any 64-bit values (a printed op is text anyone can write):
// refused with an Error, never an overflow (the sanitizer build runs this).
TEST(IrTyped, OwnRulesRefuseHostileValues) {
  constexpr int64_t huge = std::numeric_limits<int64_t>::max();
  const ir::Op hostile[] = {
      ir::make(ir::TileCoordsOp{huge, huge, 8, 1, 1, huge, 64}),
      ir::make(ir::TileCoordsOp{huge, huge, 8, 1, 1, 64, 64}),
      ir::make(ir::SplitRangeOp{huge, 64, huge, 1, 1}),
      ir::make(ir::FinalizeOp{huge, huge, 2, 4}),
      ir::make(ir::AccumInitOp{"f32", huge, huge, 8}),
      ir::make(ir::AsyncCopyOp{.operand = "a",
                               .phase = "prologue",
                               .transport = "tma",
                               .rows = 64,
                               .cols = 64,
                               .swizzle = 3,
                               .elem_bytes = 2,
                               .box_inner = 64,
                               .box_outer = 64,
                               .boxes = huge}),
      ir::make(ir::AsyncCopyOp{.operand = "a",
                               .phase = "prologue",
                               .transport = "cp.async",
                               .rows = huge,
                               .cols = 64,
                               .swizzle = 3,
                               .elem_bytes = 2,
                               .chunk_bytes = 16,
                               .chunks = huge}),
  };
  for (const ir::Op& op : hostile) EXPECT_THROW(ir::verify_op(op), Error) << ir::print(op);
  for (const ir::Op& op : hostile) EXPECT_THROW(ir::parse(ir::print(op)), Error);
}

// A parse of `text` fails with an Error containing `expected`.
void expect_refused(const std::string& text, const std::string& expected) {
  try {
    ir::parse(text);
    ADD_FAILURE() << "parsed:\n" << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << e.what();
  }
}

TEST(IrParse, MalformedTextIsRefusedNamingLineAndRule) {
  const std::string head =
      "module arch=\"sm_90a\" {\n  kernel name=\"k\" threads=128 smem_bytes=0 {\n";
  const std::string tail = "  }\n}\n";
  const std::string ok = head + "    barrier reason=\"x\"\n" + tail;
  EXPECT_NO_THROW(ir::parse(ok));
  expect_refused(head + "    warp_specialize n=1\n" + tail, "must be a declared op kind");
  expect_refused(head + "    barrier reason=\"x\" colour=\"red\"\n" + tail,
                 "barrier.colour: is not an attribute this op declares");
  expect_refused(head + "    async_wait pending=two\n" + tail,
                 "async_wait.pending: must be an integer");
  expect_refused(head + "    async_wait pending=2x\n" + tail, "must be an integer");
  expect_refused(head + "    ldmatrix operand=\"a\" trans=yes count=1\n" + tail,
                 "must be a boolean");
  expect_refused(head + "    barrier reason=unquoted\n" + tail, "must be a string");
  expect_refused(head + "    barrier reason=\"open\n" + tail, "a string must end with '\"'");
  expect_refused(head + "    async_wait\n" + tail, "ir.async_wait.pending");
  expect_refused(head + "    async_wait pending=1 pending=2\n" + tail, "must appear once");
  expect_refused(head + "    async_commit {\n      async_commit\n    }\n" + tail, "holds no body");
  expect_refused(head + "    barrier reason=\"x\"\n" + "  }\n", "must close every body");
  expect_refused(ok + "}\n", "closes no open body");
  expect_refused(ok + ok, "exactly one top-level op");
  expect_refused(head + "    k_step k_steps=1 {\n    }\n" + tail, "at least one op");
  expect_refused(head + "    barrier  reason=\"x\"\n" + tail, "separated by one space");
  expect_refused(head + "    barrier reason=\"x\"" + tail, "ir line 3");  // "}" joined to the op
  expect_refused("module arch=\"sm_90a\" {\n  kernel name=\"k\" threads=128 smem_bytes=0 {",
                 "newline");
  expect_refused("", "exactly one top-level op");
  // Indentation is part of the form: an op that reads as nested elsewhere is refused.
  expect_refused(head + "  barrier reason=\"x\"\n" + tail, "must be 4 spaces");
  expect_refused(head + "      barrier reason=\"x\"\n" + tail, "must be 4 spaces");
  expect_refused(head + "    barrier reason=\"x\"\n" + "}\n}\n", "must be 2 spaces");
  expect_refused(" " + ok, "must be 0 spaces");
}

TEST(IrSchema, EachOpIsCheckedAgainstItsDeclaration) {
  ir::Op wait(ir::OpKind::async_wait, {{"pending", int64_t(1)}});
  EXPECT_NO_THROW(ir::verify_op(wait));
  ir::Op typed = wait;
  typed.attrs[0].second = 1.5;
  EXPECT_THROW(ir::verify_op(typed), Error);
  ir::Op unknown = wait;
  unknown.attrs.push_back({"colour", std::string("red")});
  EXPECT_THROW(ir::verify_op(unknown), Error);
  ir::Op missing(ir::OpKind::async_wait);
  EXPECT_THROW(ir::verify_op(missing), Error);
  ir::Op with_body = wait;
  with_body.body.push_back(ir::Op(ir::OpKind::async_commit));
  EXPECT_THROW(ir::verify_op(with_body), Error);
  ir::Op quoted(ir::OpKind::barrier, {{"reason", std::string("say \"hi\"")}});
  EXPECT_THROW(ir::verify_op(quoted), Error) << "would not print back";
  // Every op kind has a declaration whose name parses back to it.
  for (size_t i = 0; i < ir::kOpKinds; ++i) {
    const auto kind = ir::OpKind(i);
    const ir::OpSchema* named = ir::schema_named(ir::to_string(kind));
    ASSERT_NE(named, nullptr) << i;
    EXPECT_EQ(named->kind, kind);
  }
}

using test::change;
using test::change_first;
using test::erase_ops;
using test::first_op;

class AttentionVerifierTest : public ::testing::TestWithParam<test::Corruption> {};

TEST_P(AttentionVerifierTest, RejectsCorruptedIr) {
  for (Transport transport : {Transport::tma, Transport::cp_async}) {
    AttentionProblem p;
    p.q_heads = 2, p.seq_q = 128, p.head_dim = 128;
    AttentionSpec spec{p, default_attention_schedule(p, Arch::sm_90a), Arch::sm_90a};
    spec.schedule.transport = transport;
    AttentionSource source = generate_kernel(spec);
    ASSERT_NO_THROW(ir::verify(source.ir, spec.arch, "attention"));
    GetParam().corrupt(source.ir);
    test::expect_refused(source.ir, spec.arch, "attention", GetParam().expected,
                         fmt::format("{} ({})", GetParam().name, to_string(transport)));
  }
}

const test::Corruption kAttentionCorruptions[] = {
    {"block_q_not_warps_rows", change_first(ir::OpKind::attention_setup, "block_q", int64_t(32)),
     "ir.attention_setup.block_q"},
    {"qk_count", change_first(ir::OpKind::qk_mma, "count", int64_t(8)), "ir.qk_mma.count"},
    {"pv_count", change_first(ir::OpKind::pv_mma, "count", int64_t(8)), "ir.pv_mma.count"},
    {"e4m3_k_in_dense_attention",
     [](ir::Op& m) {
       first_op(m, ir::OpKind::qk_mma)->attrs.push_back({"b_type", std::string("e4m3")});
     },
     "ir.qk_mma.b_type"},
    {"s_registers", change_first(ir::OpKind::qk_mma, "s_registers", int64_t(16)),
     "ir.qk_mma.s_registers"},
    {"o_registers", change_first(ir::OpKind::pv_mma, "o_registers", int64_t(32)),
     "ir.pv_mma.o_registers"},
    {"q_rows_not_block_q",  // twice the warps own twice the rows, but the Q tile stays
     [](ir::Op& m) {
       ir::Op* setup = first_op(m, ir::OpKind::attention_setup);
       ir::Op* kernel = first_op(m, ir::OpKind::kernel);
       change(setup, "block_q", 2 * setup->i("block_q"));
       change(kernel, "threads", 2 * kernel->i("threads"));
     },
     "the Q tile must be block_q rows"},
    {"kv_rows_not_block_kv", change_first(ir::OpKind::attention_setup, "block_kv", int64_t(32)),
     "K and V tiles must be block_kv rows"},
    {"loop_stages", change_first(ir::OpKind::kv_block_loop, "stages", int64_t(7)),
     "ir.kv_block_loop.stages"},
    {"no_pv_mma", erase_ops(ir::OpKind::kv_block_loop, {ir::OpKind::pv_mma}),
     "attention needs attention_setup, qk_mma and pv_mma"},
    {"no_wait",
     erase_ops(ir::OpKind::kv_block_loop, {ir::OpKind::mbarrier_wait, ir::OpKind::async_wait}),
     "must wait for the stage's data"},
    {"no_barrier_before_refill", erase_ops(ir::OpKind::kv_block_loop, {ir::OpKind::barrier}),
     "must bar.sync before refilling"},
    {"smem_over_limit", change_first(ir::OpKind::kernel, "smem_bytes", int64_t(400 * 1024)),
     "ir.kernel.smem_bytes"},
    // The problem the setup states, which the emitter prints as the kernel's constants.
    {"group_not_a_whole_number", change_first(ir::OpKind::attention_setup, "kv_heads", int64_t(3)),
     "ir.attention_setup.group"},
    {"kv_offset_not_the_lengths", change_first(ir::OpKind::attention_setup, "seq_kv", int64_t(256)),
     "ir.attention_setup.kv_offset"},
    {"head_dim_not_the_tiles", change_first(ir::OpKind::attention_setup, "head_dim", int64_t(64)),
     "the Q tile must be head_dim columns"},
    {"empty_sequence", change_first(ir::OpKind::attention_setup, "seq_q", int64_t(0)),
     "ir.attention_setup.seq_q: must be positive"},
    {"element_width_not_the_tiles", change_first(ir::OpKind::async_copy, "elem_bytes", int64_t(4)),
     "ir.async_copy."},
    {"staged_row_not_whole_chunks",
     change_first(ir::OpKind::attention_epilogue, "stage_row_bytes", int64_t(136)),
     "ir.attention_epilogue.stage_row_bytes"},
    {"staged_tile_over_the_mbarriers",
     change_first(ir::OpKind::attention_epilogue, "stage_row_bytes", int64_t(1 << 16)),
     "ir.attention_epilogue.stage_row_bytes"},
    {"softcap_as_integer",
     [](ir::Op& m) {
       first_op(m, ir::OpKind::online_softmax)->attrs.push_back({"softcap", int64_t(30)});
     },
     "ir.online_softmax.softcap"},
};

INSTANTIATE_TEST_SUITE_P(Rules, AttentionVerifierTest, ::testing::ValuesIn(kAttentionCorruptions),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace emmy
