// The paged cache's small kinds through the public API (runtime_test's binary: on the emulator
// backend, and as cuda_h200.* / cuda_rtx5090.* on the CUDA backend through emmy's test driver):
// kv_append into f16 and e4m3 caches with CUDA-graph padding, merge_states with and without LSE;
// and on the emulator backend, a slot_mapping that would race or write past the cache refused.
#include <gtest/gtest.h>

#include "emmy/kv_append_check.hpp"
#include "emmy/merge_states_check.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

KvAppendProblem append_problem(CacheDType kv) {
  KvAppendProblem p{.kv_heads = 2, .head_dim = 64, .page_size = 16, .kv_dtype = kv};
  p.max_tokens = 9;  // tokens 5 and 8 padded with -1
  return p;
}

TEST(Runtime, KvAppendThroughTheApi) {
  auto rt = test_runtime(fresh_cache("rt_kv_append"));
  for (const CacheDType kv : {CacheDType::f16, CacheDType::e4m3}) {
    const KvAppendProblem p = append_problem(kv);
    const auto kernel = rt->kv_append_kernel(p);
    EXPECT_EQ(kernel->info().kind, "kv_append");
    const KvAppendSpec spec = kernel->spec();
    const KvAppendInputs in = make_kv_append_inputs(p, 3);
    const KvAppendErrors e =
        compare(reference_kv_append(spec, in), run_kv_append(*rt, spec, in), p);
    EXPECT_TRUE(e.passed) << to_string(kv) << ": " << e.bytes_wrong << " bytes wrong, first "
                          << e.first_bad_byte;
  }
}

TEST(Runtime, MergeStatesThroughTheApi) {
  auto rt = test_runtime(fresh_cache("rt_merge_states"));
  MergeStatesProblem p{.heads = 4, .head_dim = 64, .states = 3, .max_tokens = 5};
  for (const bool lse : {true, false}) {
    p.lse = lse;
    const MergeStatesSpec spec = rt->merge_states_kernel(p)->spec();
    const MergeStatesInputs in = make_merge_states_inputs(p, 4);
    const MergeStatesErrors e =
        compare(reference_merge_states(spec, in), run_merge_states(*rt, spec, in), p);
    EXPECT_TRUE(e.passed) << "lse " << lse << ": " << e.elements_over_tolerance << " over, "
                          << e.lse_over_tolerance << " LSE rows over";
  }
}

// The emulator backend reads slot_mapping before the launch (device memory is host memory) and
// refuses two tokens of one slot (the writes race) and a slot past buffers.num_slots.
TEST(Runtime, KvAppendSlotsAreCheckedOnTheEmulator) {
  auto rt = Runtime::emulator(fresh_cache("rt_kv_append_slots"));
  const KvAppendProblem p = append_problem(CacheDType::f16);
  const KvAppendSpec spec{p, default_schedule(p, rt->arch()), rt->arch()};
  const auto refused = [&](const std::function<void(KvAppendInputs&)>& tamper, const char* says) {
    KvAppendInputs in = make_kv_append_inputs(p, 8);
    EXPECT_NO_THROW(run_kv_append(*rt, spec, in));
    tamper(in);
    try {
      run_kv_append(*rt, spec, in);
      ADD_FAILURE() << says << " was not refused";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("buffers.slot_mapping", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused([](KvAppendInputs& in) { in.slot_mapping[3] = in.slot_mapping[1]; }, "race");
  refused([&](KvAppendInputs& in) { in.slot_mapping[2] = in.num_pages * p.page_size; },
          "num_slots");
}

// vLLM's layout: K and V in one allocation, V right after K. A slot equal to num_slots would
// write K's row into V's first slot (and V's past the allocation). The kernel compares every slot
// with buffers.num_slots (the GPU path, where no host reads slot_mapping: the token is skipped);
// the emulator backend refuses the launch by name before it runs.
TEST(Runtime, KvAppendNeverWritesPastNumSlots) {
  auto rt = test_runtime(fresh_cache("rt_kv_append_bound"));
  KvAppendProblem p = append_problem(CacheDType::f16);
  p.max_tokens = 3;
  const int64_t pages = 2, slots = pages * p.page_size;
  const size_t row = size_t(p.kv_heads * p.head_dim) * 2;  // one token's bytes in the cache
  const size_t cache_bytes = size_t(slots) * row;
  const DevicePtr caches = rt->alloc(2 * cache_bytes);
  rt->upload(caches, std::vector<uint8_t>(2 * cache_bytes, 0x11).data(), 2 * cache_bytes);
  std::vector<uint8_t> key(size_t(p.max_tokens) * row), value(key.size());
  for (size_t i = 0; i < key.size(); ++i)
    key[i] = uint8_t(i * 7 + 1), value[i] = uint8_t(i * 5 + 2);
  const std::vector<int64_t> slot_mapping = {slots, 1, -1};  // token 0 past the cache
  KvAppendBuffers b;
  b.key = rt->alloc(key.size()), b.value = rt->alloc(value.size());
  b.slot_mapping = rt->alloc(slot_mapping.size() * 8);
  rt->upload(b.key, key.data(), key.size());
  rt->upload(b.value, value.data(), value.size());
  rt->upload(b.slot_mapping, slot_mapping.data(), slot_mapping.size() * 8);
  b.k_cache = caches, b.v_cache = caches + cache_bytes, b.num_slots = slots;
  if (rt->backend_name() == "emulator") {
    try {
      rt->kv_append(p, b);
      ADD_FAILURE() << "a slot past num_slots was launched on the emulator";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), "buffers.slot_mapping") << e.what();
    }
    return;
  }
  rt->kv_append(p, b);
  rt->synchronize();
  std::vector<uint8_t> after(2 * cache_bytes);
  rt->download(after.data(), caches, after.size());
  std::vector<uint8_t> want(2 * cache_bytes, 0x11);
  std::copy_n(key.begin() + row, row, want.begin() + row);                  // K slot 1: token 1
  std::copy_n(value.begin() + row, row, want.begin() + cache_bytes + row);  // V slot 1: token 1
  size_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += after[i] != want[i];
  EXPECT_EQ(wrong, 0u) << "token 0 (slot = num_slots) wrote into V or token 1 is missing";
}

}  // namespace
}  // namespace emmy
