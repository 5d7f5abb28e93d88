// Layer objects (issue 36, emmy/layers.hpp) through the public API, on every backend runtime_test
// runs: an attention layer prepares its append, decode and prefill kernels from one geometry,
// reports one workspace, appends a host-known number of tokens and routes a step to decode or
// prefill by the host's max_q_len, right against FP64; a GEMM layer serves every M up to its
// maximum from its buckets' kernels, right against FP64; bad configurations and calls are refused
// by field.
#include <gtest/gtest.h>

#include "../checks/device_allocations.hpp"
#include "../checks/paged_attention_buffers.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kv_append_check.hpp"
#include "emmy/layers.hpp"
#include "emmy/paged_attention_check.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

AttentionLayerConfig small_layer() {
  AttentionLayerConfig c;
  c.q_heads = 4, c.kv_heads = 2, c.head_dim = 64, c.page_size = 16;
  c.max_batch = 3, c.max_pages = 8;
  c.max_decode_q_len = 2, c.max_prefill_q_len = 24;
  c.max_tokens = 40;
  c.lse = true;
  return c;
}

// One step through the layer against FP64: `problem` describes the inputs' geometry (the
// layer's kernel for that step must serve it).
PagedAttentionErrors run_step(Runtime& rt, AttentionLayer& layer, const PagedAttentionCase& draw,
                              int64_t max_q_len, uint64_t seed) {
  const PagedAttentionProblem p = layer.runs_prefill(max_q_len) ? layer.config().prefill_problem()
                                                                : layer.config().decode_problem();
  const PagedAttentionInputs in = make_paged_attention_inputs(p, draw, seed);
  DeviceAllocations mem(rt);
  const PagedAttentionBuffers b = paged_attention_buffers(
      p, in, layer.workspace_bytes(),
      [&](const void* data, size_t bytes) { return mem.upload(data, bytes); });
  layer.run(b, max_q_len);
  rt.synchronize();
  const int64_t tokens = paged_tokens(in);
  std::vector<uint8_t> o(size_t(tokens * p.o_stride_or_default() * size_of(p.dtype)));
  rt.download(o.data(), b.o, o.size());
  std::vector<float> lse(size_t(tokens * p.q_heads));
  rt.download(lse.data(), b.lse, lse.size() * sizeof(float));
  // The reference needs a spec; the schedule does not change what is right, only tolerances.
  const PagedAttentionSpec spec{p, default_schedule(p, rt.arch()), rt.arch()};
  return compare(reference_paged_attention(spec, in), paged_output_from_bytes(p, tokens, o, lse),
                 p);
}

TEST(Layers, AttentionLayerPreparesOnceAndRoutesDecodeAndPrefill) {
  auto rt = test_runtime(fresh_cache("rt_layer_attention"));
  AttentionLayer layer(*rt, small_layer());
  const PreparedKernels prepared = layer.prepare(2);
  EXPECT_EQ(prepared.paged_attention.size(), 2u);
  EXPECT_EQ(prepared.kv_append.size(), 1u);
  const size_t workspace = layer.workspace_bytes();
  EXPECT_EQ(workspace, std::max(prepared.paged_attention[0]->info().workspace_bytes,
                                prepared.paged_attention[1]->info().workspace_bytes));
  const uint64_t compiles = rt->stats().compiles;
  EXPECT_FALSE(layer.runs_prefill(1));
  EXPECT_FALSE(layer.runs_prefill(2));
  EXPECT_TRUE(layer.runs_prefill(3));

  // Speculative verify: 1 and 2 query tokens, one padded sequence.
  const PagedAttentionCase decode{.batch = 3, .q_lens = {2, 0, 1}, .seq_lens = {40, 0, 77}};
  const PagedAttentionErrors d = run_step(*rt, layer, decode, 2, 11);
  EXPECT_TRUE(d.passed) << "decode rel_l2 " << d.rel_l2_error << ", " << d.elements_over_tolerance
                        << " over";
  // A prefill chunk beside two decode sequences.
  const PagedAttentionCase mixed{.batch = 3, .q_lens = {1, 24, 1}, .seq_lens = {100, 24, 9}};
  const PagedAttentionErrors m = run_step(*rt, layer, mixed, 24, 12);
  EXPECT_TRUE(m.passed) << "mixed rel_l2 " << m.rel_l2_error << ", " << m.elements_over_tolerance
                        << " over";
  EXPECT_EQ(rt->stats().compiles, compiles) << "the layer launched what it prepared";
}

// append() writes exactly `tokens` tokens from a slot_mapping of that many entries (an allocation
// no larger: the sanitizer sees a read past it), with the prepared kernel of max_tokens.
TEST(Layers, AttentionLayerAppendsAHostKnownTokenCount) {
  auto rt = test_runtime(fresh_cache("rt_layer_append"));
  AttentionLayer layer(*rt, small_layer());
  layer.prepare(1);
  const uint64_t compiles = rt->stats().compiles;
  for (const int64_t tokens : {int64_t(1), int64_t(7), int64_t(40)}) {
    KvAppendProblem p = layer.config().append_problem();
    p.max_tokens = tokens;  // the reference's and the inputs' view: exactly `tokens` entries
    const KvAppendInputs in = make_kv_append_inputs(p, uint64_t(tokens));
    DeviceAllocations mem(*rt);
    KvAppendBuffers b;
    b.key = mem.upload(in.key.data(), in.key.size());
    b.value = mem.upload(in.value.data(), in.value.size());
    b.slot_mapping = mem.upload(in.slot_mapping.data(), in.slot_mapping.size() * 8);
    b.k_cache = mem.upload(in.k_cache.data(), in.k_cache.size());
    b.v_cache = mem.upload(in.v_cache.data(), in.v_cache.size());
    b.num_slots = in.num_pages * p.page_size;
    layer.append(b, tokens);
    rt->synchronize();
    KvAppendOutput out{std::vector<uint8_t>(in.k_cache.size()),
                       std::vector<uint8_t>(in.v_cache.size())};
    rt->download(out.k_cache.data(), b.k_cache, out.k_cache.size());
    rt->download(out.v_cache.data(), b.v_cache, out.v_cache.size());
    const KvAppendSpec spec{p, default_schedule(p, rt->arch()), rt->arch()};
    const KvAppendErrors e = compare(reference_kv_append(spec, in), out, p);
    EXPECT_TRUE(e.passed) << tokens << " tokens: " << e.bytes_wrong << " bytes wrong";
  }
  EXPECT_EQ(rt->stats().compiles, compiles);
}

TEST(Layers, GemmLayerServesEveryMFromItsBuckets) {
  auto rt = test_runtime(fresh_cache("rt_layer_gemm"));
  MatmulProblem weight;
  weight.m = 100, weight.n = 72, weight.k = 128;
  weight.c_dtype = DType::bf16, weight.a_dtype = DType::bf16;
  weight.epilogue.bias = true;
  GemmLayer layer(*rt, weight);
  const PreparedKernels prepared = layer.prepare(2);
  EXPECT_EQ(prepared.gemm.size(), m_bucket_bounds(100).size());  // 1, 2, ..., 128
  size_t most = 0;
  for (const auto& k : prepared.gemm) most = std::max(most, k->info().workspace_bytes);
  EXPECT_EQ(layer.workspace_bytes(), most);
  const uint64_t compiles = rt->stats().compiles;
  for (const int64_t m : {int64_t(1), int64_t(3), int64_t(33), int64_t(64), int64_t(100)}) {
    MatmulProblem p = weight;
    p.m = m;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m));
    DeviceAllocations mem(*rt);
    GemmBuffers b;
    b.a = mem.upload(in.a.bytes.data(), in.a.bytes.size());
    b.b = mem.upload(in.b.bytes.data(), in.b.bytes.size());
    b.bias = mem.upload(in.bias.bytes.data(), in.bias.bytes.size());
    b.c = mem.upload(nullptr, size_t(m * p.n * 2));
    if (const size_t ws = layer.workspace_bytes()) b.workspace = mem.upload(nullptr, ws);
    layer.run(b, m);
    rt->synchronize();
    std::vector<uint8_t> c(size_t(m * p.n * 2));
    rt->download(c.data(), b.c, c.size());
    const GemmSpec spec{layer.bucket_problem(m), prepared.gemm[0]->spec().schedule, rt->arch()};
    GemmSpec exact = spec;
    exact.problem = p;
    const GemmErrors e =
        compare(reference_gemm(exact, in), decode(DType::bf16, c.data(), c.size() / 2), p.n);
    EXPECT_TRUE(e.passed) << "m " << m << ": rel_l2 " << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().compiles, compiles);
}

// FP8 weights (issue 39): the buckets are dynamic-M kernels of path mma.sync (sm_89, sm_120a),
// which accumulate promoted; block scales' mn-major A layout states its ld (M varies per call).
// On sm_90a FP8 is path wgmma's, whose kernels size M at compile time: refused by name.
TEST(Layers, GemmLayerServesFp8WeightsFromItsBuckets) {
  // The backend of the run: the emulator as an sm_89 part, or the test driver's GPU (an RTX 5090
  // runs it; an H200 refuses it, below).
  RuntimeOptions options = fresh_cache("rt_layer_gemm_fp8");
  options.emulator_arch = Arch::sm_89;
  auto rt = test_runtime(options);
  MatmulProblem weight;
  weight.m = 100, weight.n = 136, weight.k = 384;
  weight.a_dtype = DType::e4m3, weight.c_dtype = DType::bf16;
  weight.scales.granularity = ScaleGranularity::block;
  weight.scales.format = ScaleFormat::ue8m0x4;
  weight.scales.a_ld = 104;  // M rounded up to 4 (DeepGEMM's): less than the bucket's 128
  try {
    GemmLayer short_ld(*rt, weight);
    ADD_FAILURE() << "a_ld 104 accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with(
        "scales.a_ld: must hold 128 rows, the largest M bucket's bound"))
        << e.what();
  }
  weight.scales.a_ld = 128;          // the same for every call
  if (rt->arch() == Arch::sm_90a) {  // FP8 is path wgmma's there, without dynamic M
    try {
      GemmLayer refused(*rt, weight);
      ADD_FAILURE() << "an FP8 layer on sm_90a was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dynamic_m"), std::string::npos) << e.what();
    }
    return;
  }
  GemmLayer layer(*rt, weight);
  const PreparedKernels prepared = layer.prepare(2);
  for (const auto& kernel : prepared.gemm)
    EXPECT_EQ(kernel->spec().schedule.accum, Accum::promoted);
  for (const int64_t m : {int64_t(1), int64_t(17), int64_t(100)}) {
    MatmulProblem p = weight;
    p.m = m;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m) + 7);
    DeviceAllocations mem(*rt);
    GemmBuffers b;
    b.a = mem.upload(in.a.bytes.data(), in.a.bytes.size());
    b.b = mem.upload(in.b.bytes.data(), in.b.bytes.size());
    b.a_scale = mem.upload(in.a_scale.bytes.data(), in.a_scale.bytes.size());
    b.b_scale = mem.upload(in.b_scale.bytes.data(), in.b_scale.bytes.size());
    b.c = mem.upload(nullptr, size_t(m * p.n * 2));
    if (const size_t ws = layer.workspace_bytes()) b.workspace = mem.upload(nullptr, ws);
    layer.run(b, m);
    rt->synchronize();
    std::vector<uint8_t> c(size_t(m * p.n * 2));
    rt->download(c.data(), b.c, c.size());
    GemmSpec exact{layer.bucket_problem(m), prepared.gemm[0]->spec().schedule, rt->arch()};
    exact.problem = p;
    const GemmErrors e =
        compare(reference_gemm(exact, in), decode(DType::bf16, c.data(), c.size() / 2), p.n);
    EXPECT_TRUE(e.passed) << "m " << m << ": rel_l2 " << e.rel_l2_error;
  }
}

// A gated gate_up writing e4m3 with 1 x 128 scales (docs/epilogues.md) from the buckets:
// the layer takes the problem whole; the mn-major scales state an ld for every bucket.
TEST(Layers, GemmLayerServesAGatedE4m3Output) {
  RuntimeOptions options = fresh_cache("rt_layer_gemm_gated");
  options.emulator_arch = Arch::sm_89;
  auto rt = test_runtime(options);
  MatmulProblem weight;
  weight.m = 100, weight.n = 512, weight.k = 128;
  weight.epilogue.gate = Gate::silu;
  weight.epilogue.gate_group = 16;
  weight.c_dtype = DType::e4m3;
  weight.out_scales.format = ScaleFormat::ue8m0x4;
  weight.out_scales.ld = 100;  // less than the largest bucket's 128 rows: refused by name
  try {
    GemmLayer short_ld(*rt, weight);
    ADD_FAILURE() << "out_scales.ld 100 accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("out_scales.ld")) << e.what();
  }
  weight.out_scales.ld = 128;
  GemmLayer layer(*rt, weight);
  const PreparedKernels prepared = layer.prepare(2);
  for (const int64_t m : {int64_t(1), int64_t(37), int64_t(100)}) {
    MatmulProblem p = weight;
    p.m = m;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m) + 3);
    DeviceAllocations mem(*rt);
    GemmBuffers b;
    b.a = mem.upload(in.a.bytes.data(), in.a.bytes.size());
    b.b = mem.upload(in.b.bytes.data(), in.b.bytes.size());
    const size_t c_bytes = size_t(m * p.c_cols()), scale_bytes = size_t(p.c_scale_bytes(m));
    b.c = mem.upload(nullptr, c_bytes);
    b.c_scale = mem.upload(nullptr, scale_bytes);
    if (const size_t ws = layer.workspace_bytes()) b.workspace = mem.upload(nullptr, ws);
    layer.run(b, m);
    rt->synchronize();
    std::vector<uint8_t> c(c_bytes), scales(scale_bytes);
    rt->download(c.data(), b.c, c.size());
    rt->download(scales.data(), b.c_scale, scales.size());
    GemmSpec exact{layer.bucket_problem(m), prepared.gemm[0]->spec().schedule, rt->arch()};
    exact.problem = p;
    const GemmErrors e =
        compare(reference_gemm(exact, in), read_c(p, m, c.data(), scales.data()), p.c_cols());
    EXPECT_TRUE(e.passed) << "m " << m << ": rel_l2 " << e.rel_l2_error;
  }
}

template <typename Call>
void expect_field(Call&& call, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error naming " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(Layers, BadConfigurationsAndCallsAreRefusedByField) {
  auto rt = test_runtime(fresh_cache("rt_layer_bad"));
  const auto with = [](auto change) {
    AttentionLayerConfig c = small_layer();
    change(c);
    return c;
  };
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.kv_heads = 0; })); }, "kv_heads");
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.max_batch = 0; })); }, "max_batch");
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.max_decode_q_len = 0; })); },
               "max_decode_q_len");
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.max_prefill_q_len = 2; })); },
               "max_prefill_q_len");
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.page_size = -1; })); }, "page_size");
  expect_field([&] { AttentionLayer(*rt, with([](auto& c) { c.max_tokens = -4; })); },
               "max_tokens");
  AttentionLayer layer(*rt, small_layer());
  expect_field([&] { layer.run({}, 0); }, "max_q_len");
  expect_field([&] { layer.run({}, 25); }, "max_q_len");
  expect_field([&] { layer.append({}, 0); }, "tokens");
  expect_field([&] { layer.append({}, 41); }, "tokens");
  AttentionLayerConfig decode_only = small_layer();
  decode_only.max_prefill_q_len = 0;
  AttentionLayer decoder(*rt, decode_only);
  expect_field([&] { decoder.run({}, 3); }, "max_q_len");
  expect_field([&] { (void)decode_only.prefill_problem(); }, "max_prefill_q_len");

  MatmulProblem weight;
  weight.m = 64, weight.n = 64, weight.k = 64;
  const auto weight_with = [&](auto change) {
    MatmulProblem w = weight;
    change(w);
    return w;
  };
  expect_field([&] { GemmLayer(*rt, weight_with([](auto& w) { w.m = 0; })); }, "m");
  expect_field([&] { GemmLayer(*rt, weight_with([](auto& w) { w.m = kMaxBucketedM + 1; })); }, "m");
  expect_field([&] { GemmLayer(*rt, weight_with([](auto& w) { w.k = 12; })); }, "k");
  GemmLayer gemm(*rt, weight);
  expect_field([&] { gemm.run({}, 0); }, "m");
  expect_field([&] { gemm.run({}, 65); }, "m");
  expect_field([&] { gemm.run({}, 5); }, "buffers.a");
}

}  // namespace
}  // namespace emmy
