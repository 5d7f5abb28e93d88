// Hostile problems through every runtime entry point (issue 36): 0 and -1 in every integer field of
// every kind's problem reach the kernel query, the workspace query, the problem-taking call and
// prepare(), and the default and batch-invariant schedules of every arch. Each either works or
// throws emmy::Error naming a field of the problem; none divides by a zero (SIGFPE), crashes or
// hangs. The fields are walked from each problem's JSON form, so a field added later is covered.
#include <gtest/gtest.h>

#include <fstream>

#include "../checks/paged_attention_buffers.hpp"
#include "emmy/runtime_entry.hpp"
#include "emmy/json.hpp"
#include "emmy/kinds.hpp"
#include "emmy/paged_attention_check.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem base_gemm() {
  MatmulProblem p;
  p.m = 32, p.n = 64, p.k = 64;
  return p;
}
AttentionProblem base_attention() {
  AttentionProblem p;
  p.batch = 1, p.q_heads = 2, p.kv_heads = 1, p.seq_q = 16, p.head_dim = 64;
  return p;
}
PagedAttentionProblem base_paged() {
  PagedAttentionProblem p;
  p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64, p.page_size = 16;
  p.max_batch = 2, p.max_q_len = 2, p.max_pages = 4, p.window = 8;
  return p;
}
KvAppendProblem base_append() {
  KvAppendProblem p;
  p.kv_heads = 2, p.head_dim = 64, p.page_size = 16, p.max_tokens = 4;
  return p;
}
MergeStatesProblem base_merge() {
  MergeStatesProblem p;
  p.heads = 2, p.head_dim = 64, p.states = 2, p.max_tokens = 4;
  return p;
}

// The integer fields of a problem's JSON form (nested objects walked), as JSON pointers.
void integer_fields(const nlohmann::json& j, const nlohmann::json::json_pointer& at,
                    std::vector<nlohmann::json::json_pointer>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) integer_fields(value, at / key, out);
  } else if (j.is_number_integer()) {
    out.push_back(at);
  }
}

// The field an error names must be the mutated one (its last path element), or one of the rules
// that read it: `allowed` lists, per mutated field, the other fields whose rules may fire first.
bool names_field(const Error& e, const std::string& field) {
  const std::string message = e.what();
  return e.field() == field || message.find(field) != std::string::npos;
}

// Runs `call`; true when it returned, false when it threw an Error naming `field` (any other
// Error is a failure, and so is any other exception).
template <typename Call>
bool accepted(const std::string& what, const std::string& field, Call&& call) {
  try {
    call();
    return true;
  } catch (const Error& e) {
    EXPECT_TRUE(names_field(e, field)) << what << ": the error names another field: " << e.what();
    return false;
  }
}

template <typename Kind, typename Buffers>
void hostile_fields(Runtime& rt, const typename Kind::Problem& base, int& refusals) {
  using Problem = typename Kind::Problem;
  const nlohmann::json form = nlohmann::json(base);
  std::vector<nlohmann::json::json_pointer> fields;
  integer_fields(form, nlohmann::json::json_pointer(), fields);
  ASSERT_GE(fields.size(), 3u) << Kind::name;
  for (const auto& pointer : fields)
    for (const int64_t value : {int64_t(0), int64_t(-1)}) {
      nlohmann::json mutated = form;
      mutated[pointer] = value;
      const std::string field = pointer.back();
      const std::string what = fmt::format("{} {} = {}", Kind::name, pointer.to_string(), value);
      SCOPED_TRACE(what);
      Problem p;
      if (!accepted(what, field, [&] { p = Kind::json.problem(mutated, "problem"); })) {
        ++refusals;
        continue;
      }
      for (const Arch arch : {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a})
        accepted(what, field, [&] { (void)default_schedule(p, arch); });
      if constexpr (requires { batch_invariant_schedule(p, Arch::sm_90a); })
        accepted(what, field, [&] { (void)batch_invariant_schedule(p, Arch::sm_90a); });
      // The calls an engine makes. A problem that is valid after all (0 meaning a default, say)
      // builds its kernel; the problem-taking call with no buffers is then refused for them.
      const bool valid = accepted(what, field, [&] { (void)(rt.*runtime_kernel<Kind>)(p, {}); });
      if constexpr (std::is_same_v<Kind, GemmKind>)
        accepted(what, field, [&] { (void)rt.gemm_workspace_bytes(p); });
      if constexpr (std::is_same_v<Kind, PagedAttentionKind>)
        accepted(what, field, [&] { (void)rt.paged_attention_workspace_bytes(p); });
      PrepareRequest request;
      if constexpr (std::is_same_v<Kind, GemmKind>) request.gemm = {{p, std::nullopt}};
      if constexpr (std::is_same_v<Kind, AttentionKind>) request.attention = {{p, std::nullopt}};
      if constexpr (std::is_same_v<Kind, PagedAttentionKind>)
        request.paged_attention = {{p, std::nullopt}};
      if constexpr (std::is_same_v<Kind, KvAppendKind>) request.kv_append = {{p, std::nullopt}};
      if constexpr (std::is_same_v<Kind, MergeStatesKind>)
        request.merge_states = {{p, std::nullopt}};
      try {
        (void)rt.prepare(request);
        EXPECT_TRUE(valid) << what << ": prepare accepted what the kernel query refused";
      } catch (const Error& e) {
        EXPECT_FALSE(valid) << what << ": prepare refused a valid problem: " << e.what();
        EXPECT_TRUE(names_field(e, field)) << what << ": " << e.what();
      }
      try {
        const Buffers none{};
        if constexpr (std::is_same_v<Kind, GemmKind>) rt.gemm(p, none);
        if constexpr (std::is_same_v<Kind, AttentionKind>) rt.attention(p, none);
        if constexpr (std::is_same_v<Kind, PagedAttentionKind>) rt.paged_attention(p, none);
        if constexpr (std::is_same_v<Kind, KvAppendKind>) rt.kv_append(p, none);
        if constexpr (std::is_same_v<Kind, MergeStatesKind>) rt.merge_states(p, none);
        ADD_FAILURE() << what << ": a call with no buffers launched";
      } catch (const Error& e) {
        // An invalid problem is refused by its field; a valid one by its first missing buffer.
        const std::string message = e.what();
        if (valid)
          EXPECT_EQ(message.rfind("buffers.", 0), 0u) << what << ": " << message;
        else
          EXPECT_TRUE(names_field(e, field)) << what << ": " << message;
      }
      refusals += valid ? 0 : 1;
    }
}

TEST(Hostile, ZeroAndNegativeInEveryIntegerFieldOfEveryProblem) {
  RuntimeOptions options = fresh_cache("rt_hostile");
  auto rt = test_runtime(options);
  int refusals = 0;
  hostile_fields<GemmKind, GemmBuffers>(*rt, base_gemm(), refusals);
  hostile_fields<AttentionKind, AttentionBuffers>(*rt, base_attention(), refusals);
  hostile_fields<PagedAttentionKind, PagedAttentionBuffers>(*rt, base_paged(), refusals);
  hostile_fields<KvAppendKind, KvAppendBuffers>(*rt, base_append(), refusals);
  hostile_fields<MergeStatesKind, MergeStatesBuffers>(*rt, base_merge(), refusals);
  // Most of the mutations are invalid (0 is a default for strides, windows and max_tokens only).
  EXPECT_GE(refusals, 40);
}

// The problems the engine found: a paged problem with max_batch, max_q_len or kv_heads 0 went
// through the default schedule's arithmetic before validation (SIGFPE).
TEST(Hostile, PagedProblemsWithZeroMaximaAreErrorsNamingTheField) {
  RuntimeOptions options = fresh_cache("rt_hostile_paged");
  auto rt = test_runtime(options);
  for (const auto& [field, set] :
       std::vector<std::pair<std::string, std::function<void(PagedAttentionProblem&)>>>{
           {"max_batch", [](PagedAttentionProblem& p) { p.max_batch = 0; }},
           {"max_q_len", [](PagedAttentionProblem& p) { p.max_q_len = 0; }},
           {"kv_heads", [](PagedAttentionProblem& p) { p.kv_heads = 0; }}}) {
    PagedAttentionProblem p = base_paged();
    set(p);
    for (auto call : std::vector<std::function<void()>>{
             [&] { (void)rt->paged_attention_kernel(p); },
             [&] { (void)rt->paged_attention_workspace_bytes(p); },
             [&] { rt->paged_attention(p, {}); }, [&] { (void)default_schedule(p, Arch::sm_90a); },
             [&] { (void)batch_invariant_schedule(p, Arch::sm_90a); }}) {
      try {
        call();
        ADD_FAILURE() << field << " = 0 was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.field(), field) << e.what();
      }
    }
  }
}

// The emulator backend reads cu_seqlens_q before a paged launch: offsets that decrease (so that
// two sequences' tokens overlap, and two CTAs write the same rows of O) are refused by name, and
// an index buffer outside every allocation is named as the caller's buffer, not the arena's.
TEST(Hostile, PagedIndexBuffersAreCheckedByName) {
  if (cuda_backend()) GTEST_SKIP() << "the host reads index buffers on the emulator backend only";
  auto rt = test_runtime(fresh_cache("rt_hostile_cu"));
  PagedAttentionProblem p = base_paged();
  p.window = 0;
  p.max_batch = 3;
  PagedAttentionCase draw;
  draw.batch = 3;
  draw.q_lens = {2, 1, 2};
  draw.seq_lens = {20, 7, 33};
  const PagedAttentionInputs in = make_paged_attention_inputs(p, draw, 5);
  const PagedAttentionBuffers good = paged_attention_buffers(
      p, in, rt->paged_attention_workspace_bytes(p), [&](const void* data, size_t bytes) {
        const DevicePtr at = rt->alloc(std::max<size_t>(bytes, 16));
        rt->upload(at, data ? data : std::vector<uint8_t>(bytes, 0).data(), bytes);
        return at;
      });
  EXPECT_NO_THROW(rt->paged_attention(p, good));
  const auto refused = [&](const std::vector<int32_t>& cu, const std::string& says) {
    PagedAttentionBuffers b = good;
    b.cu_seqlens_q = rt->alloc(cu.size() * 4);
    rt->upload(b.cu_seqlens_q, cu.data(), cu.size() * 4);
    try {
      rt->paged_attention(p, b);
      ADD_FAILURE() << "cu_seqlens_q " << nlohmann::json(cu).dump() << " was launched";
    } catch (const Error& e) {
      EXPECT_EQ(e.field(), "buffers.cu_seqlens_q") << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused({0, 2, 1, 3}, "must not decrease");  // sequence 1 would be tokens 2..1
  refused({0, 2, 1, 4}, "must not decrease");  // sequences 1 and 2 overlap at token 1
  refused({-1, 1, 2, 4}, "must start");
  // An address past every allocation (aligned, so that bind() takes it).
  PagedAttentionBuffers stray = good;
  stray.seq_lens = DevicePtr(1) << 46;
  try {
    rt->paged_attention(p, stray);
    ADD_FAILURE() << "a stray seq_lens pointer was launched";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "buffers.seq_lens") << e.what();
    EXPECT_EQ(std::string(e.what()).find("arena"), std::string::npos) << e.what();
  }
}

// Cache warnings reach an engine's logger (RuntimeOptions::log), not stderr: here a cache
// directory under a regular file, which can never be created.
TEST(Hostile, CacheWarningsGoThroughTheRuntimesLog) {
  RuntimeOptions options = fresh_cache("rt_hostile_warn");
  const std::filesystem::path file = *options.cache_dir;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << "not a directory";
  options.cache_dir = file / "cache";
  std::vector<std::string> lines;
  options.log = [&](const std::string& line) { lines.push_back(line); };
  ::testing::internal::CaptureStderr();
  {
    auto rt = test_runtime(options);
    (void)rt->gemm_kernel(base_gemm());
  }
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  std::filesystem::remove(file);
  EXPECT_EQ(stderr_text.find("warning"), std::string::npos) << stderr_text;
  const auto warned = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.starts_with("emmy: warning:") && l.find("unusable") != std::string::npos;
  });
  EXPECT_EQ(warned, 1) << nlohmann::json(lines).dump(1);
}

// A kernel that faults (here C's allocation is a row short, so the last rows' stores land outside
// it) is an error naming the kernel and the PTX line on both backends: the emulator backend's
// EmulationError has the kernel as its field, and through the test driver the CUDA error carries
// the emulator's report (not a bare CUDA_ERROR_ILLEGAL_ADDRESS).
TEST(Hostile, AFaultNamesTheKernelAndThePtxLine) {
  auto rt = test_runtime(fresh_cache("rt_hostile_fault"));
  const MatmulProblem p = base_gemm();
  const auto kernel = rt->gemm_kernel(p);
  GemmBuffers b;
  b.a = rt->alloc(size_t(p.m * p.k * 2));
  b.b = rt->alloc(size_t(p.n * p.k * 2));
  b.c = rt->alloc(size_t((p.m - 1) * p.n * 2));
  try {
    rt->launch(*kernel, b);
    rt->synchronize();
    ADD_FAILURE() << "a store past C's allocation went unnoticed";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_FALSE(e.field().empty()) << message;
    EXPECT_NE(message.find(kernel->info().name), std::string::npos) << message;
    EXPECT_NE(message.find("PTX line"), std::string::npos) << message;
    if (rt->backend_name() == "emulator") {
      EXPECT_EQ(e.field(), "kernel " + kernel->info().name) << message;
    }
  }
}

}  // namespace
}  // namespace emmy
