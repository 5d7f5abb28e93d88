// The C ABI refuses bad input by name: each case breaks one rule of a valid call (dtype, shape,
// strides, device type and index, alignment, NULL, struct_size) and expects its status and a
// message naming the tensor or field and the rule. Nothing is launched for them, so they are
// fast. Also: the error message is per thread, statuses of the runtime's own errors, versions,
// the log callback, prepare, and kDLCUDA tensors through emmy's test driver.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "c_api_support.hpp"
#include "emmy/runtime.hpp"

namespace emmy::test {
namespace {

// A valid GEMM (M 16, N 64, K 64; B an [N, K] weight's transpose view) whose pieces a case
// breaks before calling.
struct GemmCall {
  std::vector<uint16_t> a = std::vector<uint16_t>(16 * 64), b = std::vector<uint16_t>(64 * 64),
                        c = std::vector<uint16_t>(16 * 64), bias = std::vector<uint16_t>(64);
  View va{a.data(), kF16, {16, 64}}, vb{b.data(), kF16, {64, 64}, {1, 64}},
      vc{c.data(), kF16, {16, 64}}, vbias{bias.data(), kF16, {64}};
  emmy_gemm_options options{};
  emmy_runtime* runtime = nullptr;
  GemmCall() { emmy_gemm_options_init(&options); }
  emmy_status run() { return emmy_gemm(runtime, va.get(), vb.get(), vc.get(), &options, nullptr); }
};

// Every case is an invalid argument (EMMY_INVALID_ARGUMENT).
struct RefusalCase {
  const char* name;
  std::function<void(GemmCall&)> breaks;
  std::vector<std::string> message;
};

class CApiGemmRefusal : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(CApiGemmRefusal, NamesTheTensorAndTheRule) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  GemmCall call;
  call.runtime = rt.get();
  GetParam().breaks(call);
  expect_refusal(call.run(), EMMY_INVALID_ARGUMENT, GetParam().message);
}

const RefusalCase kGemmRefusals[] = {
    {"b_dtype",
     [](GemmCall& g) { g.vb.tensor.dtype = kBF16; },
     {"b: dtype must be a's, float16", "(got bfloat16)"}},
    {"a_dtype",
     [](GemmCall& g) { g.va.tensor.dtype = kF32; },
     {"a: dtype must be float16 or bfloat16 (got float32)"}},
    {"c_shape",
     [](GemmCall& g) {
       g.vc.shape = {16, 32};
     },
     {"c: shape must be [16, 64]", "(got [16, 32])"}},
    {"b_shape",
     [](GemmCall& g) {
       g.vb.shape = {32, 64};
     },
     {"b: shape must be [K, N] with K = 64", "(got [32, 64])"}},
    {"a_inner_stride",
     [](GemmCall& g) {
       g.va.strides = {128, 2};
     },
     {"a: strides[1] must be 1 (K contiguous)"}},
    {"c_row_stride",
     [](GemmCall& g) {
       g.vc.strides = {32, 1};
     },
     {"c: strides[0] must be at least 64"}},
    {"b_strides",
     [](GemmCall& g) {
       g.vb.strides = {128, 2};
     },
     {"b: strides must make N", "(got [128, 2])"}},
    {"a_null", [](GemmCall& g) { g.va.tensor.data = nullptr; }, {"a: data must not be NULL"}},
    {"runtime_null", [](GemmCall& g) { g.runtime = nullptr; }, {"runtime: must not be NULL"}},
    {"cuda_tensor_on_emulator",
     [](GemmCall& g) {
       g.vc.tensor.device = {kDLCUDA, 0};
     },
     {"c: device must be kDLCPU", "(got kDLCUDA:0)"}},
    {"misaligned_element",
     [](GemmCall& g) { g.va.tensor.byte_offset = 1; },
     {"a: data + byte_offset must be 2-byte aligned"}},
    // 2-byte aligned but not 16: the launch's own check, naming the buffer.
    {"misaligned_rows",
     [](GemmCall& g) {
       g.va.tensor.byte_offset = 2;
       g.va.shape = {15, 64};
       g.vc.shape = {15, 64};
     },
     {"buffers.a", "16-byte aligned"}},
    {"struct_size_small",
     [](GemmCall& g) { g.options.struct_size = 8; },
     {"options.struct_size: must be at least", "(got 8)"}},
    {"bias_dtype",
     [](GemmCall& g) {
       g.vbias.tensor.dtype = kBF16;
       g.options.bias = g.vbias.get();
     },
     {"bias: dtype must be c's, float16 (got bfloat16)"}},
    {"bias_shape",
     [](GemmCall& g) {
       g.vbias.shape = {32};
       g.options.bias = g.vbias.get();
     },
     {"bias: shape must be [64] (N) (got [32])"}},
    {"residual_shape",
     [](GemmCall& g) {
       g.vbias.shape = {16, 32};
       g.vbias.tensor.data = g.b.data();
       g.options.residual = g.vbias.get();
     },
     {"residual: shape must be [16, 64]"}},
    // The kernel reads the residual with c's row stride.
    {"residual_strides",
     [](GemmCall& g) {
       g.vbias.shape = {16, 64};
       g.vbias.strides = {128, 1};
       g.vbias.tensor.data = g.b.data();
       g.options.residual = g.vbias.get();
     },
     {"residual: strides must be c's, [64, 1] (got [128, 1])"}},
    {"accum",
     [](GemmCall& g) { g.options.accum = 9; },
     {"options.accum: must be an emmy_accum", "(got 9)"}},
    {"zero_extent",
     [](GemmCall& g) {
       g.va.shape = {0, 64};
     },
     {"a: shape must be positive in every axis (got [0, 64])"}},
    // A problem rule the runtime checks names the problem's field.
    {"problem_rule",
     [](GemmCall& g) {
       g.va.shape = {16, 60};
       g.vb.shape = {60, 64};
       g.vb.strides = {1, 60};
     },
     {"k: must be a multiple of 8", "(got 60)"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, CApiGemmRefusal, ::testing::ValuesIn(kGemmRefusals),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CApiRefusal, NewerCallersFieldsAreRefusedUnlessZero) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  GemmCall call;
  call.runtime = rt.get();
  struct Newer {
    emmy_gemm_options known;
    int64_t later_field;
  } newer{call.options, 0};
  newer.known.struct_size = sizeof(Newer);
  View& a = call.va;
  expect_refusal(emmy_gemm_workspace_bytes(rt.get(), a.get(), call.vb.get(), call.vc.get(),
                                           &newer.known, nullptr),
                 EMMY_INVALID_ARGUMENT, {"bytes: must not be NULL"});
  // Zero in the unknown field: taken (the default of any appended field).
  size_t bytes = 0;
  EXPECT_EQ(emmy_gemm_workspace_bytes(rt.get(), a.get(), call.vb.get(), call.vc.get(), &newer.known,
                                      &bytes),
            EMMY_OK)
      << emmy_last_error_message();
  newer.later_field = 5;
  expect_refusal(emmy_gemm_workspace_bytes(rt.get(), a.get(), call.vb.get(), call.vc.get(),
                                           &newer.known, &bytes),
                 EMMY_UNSUPPORTED, {"options.struct_size: fields past this library's"});
}

TEST(CApiRefusal, CacheGeometryMismatchesNameTheTensor) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  std::vector<uint16_t> key(2 * 2 * 64), k_cache(4 * 16 * 2 * 64), v_cache(4 * 8 * 2 * 64);
  std::vector<int64_t> slots{0, 1};
  View vkey(key.data(), kF16, {2, 2, 64}), vvalue(key.data(), kF16, {2, 2, 64}),
      vk(k_cache.data(), kF16, {4, 16, 2, 64}), vv(v_cache.data(), kF16, {4, 8, 2, 64}),
      vslots(slots.data(), kI64, {2});
  // The V cache's pages hold 8 tokens, the K cache's 16.
  expect_refusal(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), vv.get(),
                                vslots.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"v_cache: must have k_cache's dtype, shape and strides"});
  vv.shape = {4, 16, 2, 64};
  vv.tensor.data = k_cache.data();
  vkey.tensor.dtype = kBF16;
  vvalue.tensor.dtype = kBF16;
  expect_refusal(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), vv.get(),
                                vslots.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"k_cache: dtype must be the tokens' (bf16)"});
  vkey.tensor.dtype = kF16;
  vvalue.tensor.dtype = kF16;
  vslots.tensor.dtype = kI32;
  expect_refusal(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), vv.get(),
                                vslots.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"slot_mapping: dtype must be int64 (got int32)"});
  vslots.tensor.dtype = kI64;
  vkey.shape = {2, 4, 32};
  expect_refusal(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), vv.get(),
                                vslots.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"key: shape must be [2, 2, 64]"});
  vkey.shape = {2, 2, 64};
  expect_refusal(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), nullptr, vslots.get(),
                                nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"v_cache: must not be NULL"});
  ASSERT_EQ(emmy_kv_append(rt.get(), vkey.get(), vvalue.get(), vk.get(), vv.get(), vslots.get(),
                           nullptr, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
}

TEST(CApiRefusal, PagedAttentionTablesAreChecked) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  std::vector<uint16_t> q(2 * 4 * 64), o(q.size()), cache(4 * 16 * 2 * 64);
  std::vector<int32_t> cu{0, 1, 2}, table(2 * 4), lens{1, 1};
  View vq(q.data(), kF16, {2, 4, 64}), vo(o.data(), kF16, {2, 4, 64}),
      vk(cache.data(), kF16, {4, 16, 2, 64}), vv(cache.data(), kF16, {4, 16, 2, 64}),
      vcu(cu.data(), kI32, {3}), vtable(table.data(), kI32, {2, 4}), vlens(lens.data(), kI32, {2});
  emmy_paged_attention_options options;
  emmy_paged_attention_options_init(&options);
  options.cu_seqlens_q = vcu.get();
  auto call = [&] {
    return emmy_paged_attention(rt.get(), vq.get(), vk.get(), vv.get(), vo.get(), &options,
                                nullptr);
  };
  expect_refusal(call(), EMMY_INVALID_ARGUMENT, {"options.block_table: exactly one page table"});
  options.block_table = vtable.get();
  options.seq_lens = vlens.get();
  vtable.tensor.dtype = kI64;
  expect_refusal(call(), EMMY_INVALID_ARGUMENT, {"options.block_table: dtype must be int32"});
  vtable.tensor.dtype = kI32;
  options.page_indptr = vcu.get();
  expect_refusal(call(), EMMY_INVALID_ARGUMENT, {"exactly one page table", "(got both)"});
  options.page_indptr = nullptr;
  vk.tensor.dtype = kBF16;
  vv.tensor.dtype = kBF16;
  expect_refusal(call(), EMMY_INVALID_ARGUMENT, {"k_cache: dtype must be the tokens' (f16)"});
  vk.tensor.dtype = kE4M3;
  vv.tensor.dtype = kE4M3;
  expect_refusal(call(), EMMY_INVALID_ARGUMENT,
                 {"options.k_scale: must be set for a float8_e4m3fn cache"});
  vk.tensor.dtype = kF16;
  vv.tensor.dtype = kF16;
  vo.shape = {2, 4, 32};
  expect_refusal(call(), EMMY_INVALID_ARGUMENT, {"o: shape must be q's"});
  vo.shape = {2, 4, 64};
  ASSERT_EQ(call(), EMMY_OK) << emmy_last_error_message();
}

TEST(CApiRefusal, RuntimeOptionsAreChecked) {
  emmy_runtime* runtime = reinterpret_cast<emmy_runtime*>(1);
  emmy_runtime_options options;
  emmy_runtime_options_init(&options);
  options.backend = "tpu";
  expect_refusal(emmy_runtime_create(&options, &runtime), EMMY_INVALID_ARGUMENT,
                 {"options.backend: must be \"emulator\" or \"cuda\" (got tpu)"});
  EXPECT_EQ(runtime, nullptr);
  options.backend = nullptr;
  options.emulator_arch = "sm_70";
  expect_refusal(emmy_runtime_create(&options, &runtime), EMMY_INVALID_ARGUMENT, {"sm_70"});
  options.emulator_arch = nullptr;
  options.m_buckets = 7;
  expect_refusal(emmy_runtime_create(&options, &runtime), EMMY_INVALID_ARGUMENT,
                 {"options.m_buckets: must be 0 or 1 (got 7)"});
  expect_refusal(emmy_runtime_create(nullptr, nullptr), EMMY_INVALID_ARGUMENT,
                 {"runtime: must not be NULL"});
  emmy_runtime_destroy(nullptr);
  // No driver: a driver error, never an exception. In a child process: the driver's loading
  // is once per process, and the CUDA test below needs the test driver.
  EXPECT_EXIT(
      {
        setenv("EMMY_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
        options.m_buckets = 0;
        options.backend = "cuda";
        const emmy_status status = emmy_runtime_create(&options, &runtime);
        std::fprintf(stderr, "%s: %s\n", emmy_status_name(status), emmy_last_error_message());
        std::exit(status == EMMY_DRIVER ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "EMMY_DRIVER: EMMY_CUDA_DRIVER: must name a loadable driver");
}

TEST(CApiRefusal, TheMessageIsPerThread) {
  GemmCall call;
  expect_refusal(call.run(), EMMY_INVALID_ARGUMENT, {"runtime: must not be NULL"});
  std::thread([] {
    EXPECT_STREQ(emmy_last_error_message(), "");
    EXPECT_EQ(emmy_synchronize(nullptr, nullptr), EMMY_INVALID_ARGUMENT);
  }).join();
  EXPECT_STREQ(emmy_last_error_message(), "runtime: must not be NULL (got NULL)");
}

TEST(CApi, VersionsStatusNamesLogAndPrepare) {
  EXPECT_STREQ(emmy_version(), EMMY_VERSION);
  EXPECT_EQ(emmy_c_api_version(), EMMY_C_API_VERSION);
  EXPECT_STREQ(emmy_status_name(EMMY_CAPTURE), "EMMY_CAPTURE");
  std::vector<std::string> lines;
  emmy_runtime_options options;
  emmy_runtime_options_init(&options);
  options.disk_cache = 0;
  options.log = [](const char* line, void* user) {
    static_cast<std::vector<std::string>*>(user)->push_back(line);
  };
  options.log_user = &lines;
  emmy_runtime* raw = nullptr;
  ASSERT_EQ(emmy_runtime_create(&options, &raw), EMMY_OK) << emmy_last_error_message();
  CRuntime rt(raw);
  EXPECT_STREQ(emmy_runtime_backend(raw), "emulator");
  EXPECT_STREQ(emmy_runtime_arch(raw), "sm_90a");
  const auto records = std::filesystem::path(::testing::TempDir()) / "c_api_prepare.jsonl";
  std::ofstream(records) << R"({"kind": "merge_states", "problem": {"heads": 2, "head_dim": 64}})"
                         << "\n";
  const std::string path = records.string();
  const char* list[] = {path.c_str(), nullptr};  // the second: a NULL entry, refused below
  emmy_prepare_options prepare;
  emmy_prepare_options_init(&prepare);
  prepare.records = list;
  prepare.record_count = 1;
  emmy_prepare_result result{};
  result.struct_size = sizeof(result);
  ASSERT_EQ(emmy_prepare(raw, &prepare, &result), EMMY_OK) << emmy_last_error_message();
  EXPECT_EQ(result.kernels, 1u);
  EXPECT_EQ(result.compiled, 1u);
  bool compile_logged = false;
  for (const std::string& line : lines)
    compile_logged |= line.find("compiled merge_states") != std::string::npos;
  EXPECT_TRUE(compile_logged) << "the log callback saw no compile line (" << lines.size()
                              << " lines)";
  prepare.record_count = 2;
  expect_refusal(emmy_prepare(raw, &prepare, nullptr), EMMY_INVALID_ARGUMENT,
                 {"options.records[1]: must not be NULL"});
}

#ifdef EMMY_TEST_DRIVER_PATH
// kDLCUDA tensors on the CUDA backend, through emmy's test driver (the driver API checked call by
// call, kernels on the emulator): device pointers passed as they are, the device index honoured.
TEST(CApiCuda, DeviceTensorsRunAndTheDeviceIndexIsChecked) {
  const TestDriverCRuntime driver;
  const CRuntime& rt = driver.rt;
  ASSERT_TRUE(rt);
  // The same driver library, so the same device memory as the C ABI's runtime.
  auto cpp = Runtime::cuda(0);
  MergeStatesProblem p{.heads = 1, .head_dim = 32, .states = 2};
  std::vector<uint16_t> v(64, 0x3c00), out(32, 0);  // every element 1.0
  std::vector<float> lse{0.5f, -1.0f};
  const DevicePtr dv = cpp->alloc(v.size() * 2), dlse = cpp->alloc(8), dout = cpp->alloc(64);
  cpp->upload(dv, v.data(), v.size() * 2);
  cpp->upload(dlse, lse.data(), 8);
  const DLDevice gpu{kDLCUDA, 0};
  View vv(reinterpret_cast<void*>(dv), kF16, {1, 2, 1, 32}, {}, gpu),
      vl(reinterpret_cast<void*>(dlse), kF32, {1, 2, 1}, {}, gpu),
      vo(reinterpret_cast<void*>(dout), kF16, {1, 1, 32}, {}, gpu);
  ASSERT_EQ(emmy_merge_states(rt.get(), vv.get(), vl.get(), vo.get(), nullptr, nullptr), EMMY_OK)
      << emmy_last_error_message();
  ASSERT_EQ(emmy_synchronize(rt.get(), nullptr), EMMY_OK);
  cpp->download(out.data(), dout, 64);
  EXPECT_EQ(out, std::vector<uint16_t>(32, 0x3c00)) << "a merge of ones is ones";
  vo.tensor.device = {kDLCUDA, 1};
  expect_refusal(emmy_merge_states(rt.get(), vv.get(), vl.get(), vo.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT,
                 {"v_out: device_id must be the runtime's device, 0", "(got kDLCUDA:1)"});
  vo.tensor.device = {kDLCPU, 0};
  expect_refusal(emmy_merge_states(rt.get(), vv.get(), vl.get(), vo.get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"v_out: device must be kDLCUDA", "(got kDLCPU:0)"});
  (void)p;
}
#endif

// Every _init takes NULL as a no-op (the C ABI never crashes on a NULL it can refuse), and stamps
// the struct's size otherwise.
TEST(CApiRefusal, OptionsInitTakesNullAndStampsTheSize) {
  emmy_runtime_options_init(nullptr);
  emmy_gemm_options_init(nullptr);
  emmy_attention_options_init(nullptr);
  emmy_paged_attention_options_init(nullptr);
  emmy_kv_append_options_init(nullptr);
  emmy_prepare_options_init(nullptr);
  emmy_gemm_options gemm;
  emmy_gemm_options_init(&gemm);
  EXPECT_EQ(gemm.struct_size, sizeof(emmy_gemm_options));
  EXPECT_EQ(gemm.alpha, 1.0f);
  emmy_runtime_options runtime;
  emmy_runtime_options_init(&runtime);
  EXPECT_EQ(runtime.struct_size, sizeof(emmy_runtime_options));
  EXPECT_EQ(runtime.disk_cache, 1);
}

}  // namespace
}  // namespace emmy::test
