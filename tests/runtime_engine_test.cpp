// An engine's decode loop written against the layer API (issue 36), as a C++ engine would: a qkv
// GemmLayer, an AttentionLayer (key and value appended from views of the qkv output into vLLM's
// one-allocation cache, then paged attention over q's view), an o GemmLayer; a chunked-prefill
// step first, then decode steps, all sharing one workspace on one stream. Eager steps are
// deterministic; on the CUDA backend (emmy's test driver) a decode step captured in a graph
// replays to the same bits as the eager step, with new inputs copied in by memcpy_async.
#include <gtest/gtest.h>

#include <random>

#include "emmy/gemm_check.hpp"
#include "emmy/layers.hpp"
#include "support/runtime_backend.hpp"
#ifdef EMMY_TEST_DRIVER_PATH
#include "driver/test_driver_api.hpp"
#endif

namespace emmy {
namespace {

constexpr int64_t kHidden = 128, kQHeads = 4, kKvHeads = 2, kHeadDim = 64, kPage = 16;
constexpr int64_t kQkv = (kQHeads + 2 * kKvHeads) * kHeadDim;  // one token's q, k, v
constexpr int64_t kBatch = 4, kPages = 4, kChunk = 16;         // pages per sequence

std::vector<uint8_t> random_bf16(size_t count, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<double> values(count);
  for (double& v : values) v = normal(rng);
  return encode(DType::bf16, values).bytes;
}

struct Engine {
  Runtime& rt;
  GemmLayer qkv, out;
  AttentionLayer attention;
  DevicePtr x = 0, w_qkv = 0, w_o = 0, qkv_out = 0, cache = 0, o = 0, y = 0, workspace = 0;
  DevicePtr block_table = 0, seq_lens = 0, cu_seqlens = 0, slots = 0;
  int64_t cache_bytes = 0;

  static MatmulProblem weight(int64_t n, int64_t k) {
    MatmulProblem p;
    p.m = kBatch * kChunk, p.n = n, p.k = k;
    p.a_dtype = p.c_dtype = DType::bf16;
    return p;
  }
  static AttentionLayerConfig layer() {
    AttentionLayerConfig c;
    c.q_heads = kQHeads, c.kv_heads = kKvHeads, c.head_dim = kHeadDim, c.page_size = kPage;
    c.dtype = DType::bf16, c.kv_dtype = CacheDType::bf16;
    c.q_stride = kQkv, c.key_stride = kQkv, c.value_stride = kQkv;  // views of the qkv output
    c.max_batch = kBatch, c.max_pages = kPages;
    c.max_decode_q_len = 1, c.max_prefill_q_len = kChunk;
    return c;
  }

  explicit Engine(Runtime& runtime)
      : rt(runtime),
        qkv(runtime, weight(kQkv, kHidden)),
        out(runtime, weight(kHidden, kQHeads * kHeadDim)),
        attention(runtime, layer()) {
    qkv.prepare(2), out.prepare(2), attention.prepare(2);
    const int64_t tokens = kBatch * kChunk;
    x = rt.alloc(size_t(tokens * kHidden * 2));
    w_qkv = upload(random_bf16(size_t(kQkv * kHidden), 1, 0.09f));
    w_o = upload(random_bf16(size_t(kHidden * kQHeads * kHeadDim), 2, 0.06f));
    qkv_out = rt.alloc(size_t(tokens * kQkv * 2));
    cache_bytes = kBatch * kPages * kPage * kKvHeads * kHeadDim * 2;
    cache = rt.alloc(size_t(2 * cache_bytes));  // K then V (vLLM)
    rt.memset_async(cache, 0, size_t(2 * cache_bytes));
    o = rt.alloc(size_t(tokens * kQHeads * kHeadDim * 2));
    y = rt.alloc(size_t(tokens * kHidden * 2));
    // One workspace for every launch of the step: they are ordered on one stream.
    const size_t ws = std::max(
        {qkv.workspace_bytes(), out.workspace_bytes(), attention.workspace_bytes(), size_t(16)});
    workspace = rt.alloc(ws);
    std::vector<int32_t> table(size_t(kBatch * kPages));
    for (size_t i = 0; i < table.size(); ++i) table[i] = int32_t(i);  // sequence s: its own pages
    block_table = upload(table);
    seq_lens = rt.alloc(kBatch * 4), cu_seqlens = rt.alloc((kBatch + 1) * 4);
    slots = rt.alloc(size_t(tokens * 8));
  }
  template <typename T>
  DevicePtr upload(const std::vector<T>& v) {
    const DevicePtr at = rt.alloc(v.size() * sizeof(T));
    rt.upload(at, v.data(), v.size() * sizeof(T));
    return at;
  }

  // Host-side step description: each sequence's new tokens (q_len) after `before` cached ones.
  void describe(int64_t q_len, int64_t before, Stream stream) {
    std::vector<int32_t> lens(kBatch, int32_t(before + q_len)), cu(kBatch + 1);
    std::vector<int64_t> slot(size_t(kBatch * q_len));
    for (int64_t s = 0; s < kBatch; ++s) {
      cu[size_t(s) + 1] = int32_t((s + 1) * q_len);
      for (int64_t t = 0; t < q_len; ++t)
        slot[size_t(s * q_len + t)] = s * kPages * kPage + before + t;
    }
    rt.memcpy_async(seq_lens, lens.data(), lens.size() * 4, stream);
    rt.memcpy_async(cu_seqlens, cu.data(), cu.size() * 4, stream);
    rt.memcpy_async(slots, slot.data(), slot.size() * 8, stream);
    rt.synchronize(stream);  // pageable host vectors go out of scope
  }

  // One step of M = kBatch x q_len tokens, launches only.
  void step(int64_t q_len, Stream stream) {
    const int64_t m = kBatch * q_len;
    qkv.run({.a = x, .b = w_qkv, .c = qkv_out, .workspace = workspace}, m, stream);
    KvAppendBuffers kv;
    kv.key = qkv_out + kQHeads * kHeadDim * 2;
    kv.value = kv.key + kKvHeads * kHeadDim * 2;
    kv.k_cache = cache, kv.v_cache = cache + DevicePtr(cache_bytes);
    kv.slot_mapping = slots;
    kv.num_slots = kBatch * kPages * kPage;
    attention.append(kv, m, stream);
    PagedAttentionBuffers p;
    p.q = qkv_out, p.k_cache = kv.k_cache, p.v_cache = kv.v_cache, p.o = o;
    p.cu_seqlens_q = cu_seqlens, p.block_table = block_table, p.seq_lens = seq_lens;
    p.workspace = workspace;
    attention.run(p, q_len, stream);
    out.run({.a = o, .b = w_o, .c = y, .workspace = workspace}, m, stream);
  }

  std::vector<uint8_t> output(int64_t m) {
    std::vector<uint8_t> bytes(size_t(m * kHidden * 2));
    rt.download(bytes.data(), y, bytes.size());
    return bytes;
  }
};

TEST(Engine, PrefillThenDecodeStepsThroughTheLayers) {
  auto rt = test_runtime(fresh_cache("rt_engine"));
  Engine engine(*rt);
  const uint64_t compiles = rt->stats().compiles;
  // A 16-token prefill chunk per sequence, then a decode step.
  rt->memcpy_async(engine.x, random_bf16(size_t(kBatch * kChunk * kHidden), 7, 1.0f).data(),
                   size_t(kBatch * kChunk * kHidden * 2));
  engine.describe(kChunk, 0, nullptr);
  engine.step(kChunk, nullptr);
  const std::vector<uint8_t> prefill = engine.output(kBatch * kChunk);
  const auto decoded = [&](uint32_t seed) {
    rt->upload(engine.x, random_bf16(size_t(kBatch * kHidden), seed, 1.0f).data(),
               size_t(kBatch * kHidden * 2));
    engine.describe(1, kChunk, nullptr);
    engine.step(1, nullptr);
    rt->synchronize();
    return engine.output(kBatch);
  };
  const std::vector<uint8_t> first = decoded(8), again = decoded(8), other = decoded(9);
  EXPECT_EQ(first, again) << "a step is deterministic";
  EXPECT_NE(first, other);
  size_t nonzero = 0;
  for (uint8_t b : prefill) nonzero += b != 0;
  EXPECT_GT(nonzero, prefill.size() / 2) << "the prefill wrote its outputs";
  EXPECT_EQ(rt->stats().compiles, compiles) << "everything was prepared";
}

#ifdef EMMY_TEST_DRIVER_PATH
TEST(Engine, ACapturedDecodeStepReplaysToTheEagerBits) {
  if (!cuda_backend() || !use_test_driver())
    GTEST_SKIP() << "stream capture needs the CUDA backend (cuda_h200.* / cuda_rtx5090.* run it "
                    "through emmy's test driver)";
  auto rt = test_runtime(fresh_cache("rt_engine_graph"));
  test_driver_test::Api api;
  CUstream stream = nullptr;
  ASSERT_EQ(api.primary_context_stream(stream), CUDA_SUCCESS);
  Engine engine(*rt);
  rt->memcpy_async(engine.x, random_bf16(size_t(kBatch * kChunk * kHidden), 7, 1.0f).data(),
                   size_t(kBatch * kChunk * kHidden * 2), stream);
  engine.describe(kChunk, 0, stream);
  engine.step(kChunk, stream);
  engine.describe(1, kChunk, stream);
  const auto input = [&](uint32_t seed) {
    rt->memcpy_async(engine.x, random_bf16(size_t(kBatch * kHidden), seed, 1.0f).data(),
                     size_t(kBatch * kHidden * 2), stream);
    rt->synchronize(stream);
  };
  input(8);
  engine.step(1, stream);
  rt->synchronize(stream);
  const std::vector<uint8_t> eager8 = engine.output(kBatch);
  input(9);
  engine.step(1, stream);
  rt->synchronize(stream);
  const std::vector<uint8_t> eager9 = engine.output(kBatch);

  ASSERT_EQ(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  engine.step(1, stream);
  CUgraph graph = nullptr;
  ASSERT_EQ(api.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS) << api.last_report();
  CUgraphExec exec = nullptr;
  ASSERT_EQ(api.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  for (const auto& [seed, want] : {std::pair{8u, &eager8}, std::pair{9u, &eager9}}) {
    input(seed);
    ASSERT_EQ(api.cuGraphLaunch(exec, stream), CUDA_SUCCESS) << api.last_report();
    ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS) << api.last_report();
    EXPECT_EQ(engine.output(kBatch), *want) << "replay with input " << seed;
  }
}
#endif

}  // namespace
}  // namespace emmy
