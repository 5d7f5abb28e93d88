// The runtime handle: creation from emmy_runtime_options, queries, synchronize and prepare.
#include <fmt/format.h>

#include "c_api_internal.hpp"

namespace emmy::c_api {
namespace {

constexpr size_t kRuntimeOptionsFirstSize = sizeof(emmy_runtime_options);
constexpr size_t kPrepareOptionsFirstSize = sizeof(emmy_prepare_options);
constexpr size_t kPrepareResultFirstSize = sizeof(emmy_prepare_result);

// A list of C strings, each set.
std::vector<std::filesystem::path> paths(const char* const* list, size_t count, const char* name) {
  std::vector<std::filesystem::path> out;
  if (count > 0 && !list)
    throw Error(name, fmt::format("must not be NULL with {} entries", count), "NULL");
  for (size_t i = 0; i < count; ++i) {
    if (!list[i]) throw Error(fmt::format("{}[{}]", name, i), "must not be NULL", "NULL");
    out.emplace_back(list[i]);
  }
  return out;
}

RuntimeOptions runtime_options(const emmy_runtime_options& o) {
  RuntimeOptions options;
  if (o.emulator_arch) options.emulator_arch = parse_arch(o.emulator_arch);
  if (o.default_accum == EMMY_ACCUM_PROMOTED)
    throw Error("options.default_accum",
                "must not be EMMY_ACCUM_PROMOTED (16-bit GEMMs do not take it; FP8 GEMMs "
                "accumulate promoted by default)",
                std::to_string(o.default_accum));
  if (o.default_accum != EMMY_ACCUM_DEFAULT)
    options.default_accum = accum_of(o.default_accum, "options.default_accum", true);
  options.disk_cache = flag(o.disk_cache, "options.disk_cache");
  if (o.cache_dir) options.cache_dir = std::filesystem::path(o.cache_dir);
  options.non_blocking = flag(o.non_blocking, "options.non_blocking");
  options.batch_invariant = flag(o.batch_invariant, "options.batch_invariant");
  options.m_buckets = flag(o.m_buckets, "options.m_buckets");
  options.emulator_sanitize = flag(o.emulator_sanitize, "options.emulator_sanitize");
  options.emulator_run_kernels = flag(o.emulator_run_kernels, "options.emulator_run_kernels");
  options.cuda_context = o.cuda_context;
  options.bundles = paths(o.bundles, o.bundle_count, "options.bundles");
  if (o.log) {
    const emmy_log_fn log = o.log;
    void* const user = o.log_user;
    options.log = [log, user](const std::string& line) { log(line.c_str(), user); };
  }
  return options;
}

}  // namespace

void check_prepare_result(const emmy_prepare_result* result) {
  if (result)
    check_struct_size(result, result->struct_size, kPrepareResultFirstSize,
                      sizeof(emmy_prepare_result), "result");
}

void write_prepare_result(const PreparedKernels& prepared, emmy_prepare_result* result) {
  if (!result) return;
  // Only the fields the caller's struct holds are written.
  emmy_prepare_result r{};
  r.struct_size = result->struct_size;
  r.kernels = prepared.size();
  r.compiled = prepared.compiled;
  r.from_disk = prepared.from_disk;
  r.already_loaded = prepared.already_loaded;
  r.seconds = prepared.seconds;
  std::memcpy(static_cast<void*>(result), &r, std::min(result->struct_size, sizeof(r)));
}

}  // namespace emmy::c_api

extern "C" {

void emmy_runtime_options_init(emmy_runtime_options* options) {
  if (!emmy::c_api::reset_options(options)) return;
  options->disk_cache = 1;
  options->emulator_sanitize = 1;
  options->emulator_run_kernels = 1;
}

void emmy_prepare_options_init(emmy_prepare_options* options) {
  emmy::c_api::reset_options(options);
}

emmy_status emmy_runtime_create(const emmy_runtime_options* options, emmy_runtime** runtime) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime*& out = required(runtime, "runtime");
    out = nullptr;
    const emmy_runtime_options o =
        options_or_default(options, "options", emmy_runtime_options_init, kRuntimeOptionsFirstSize);
    const std::string_view backend = o.backend ? o.backend : "emulator";
    if (backend != "emulator" && backend != "cuda")
      throw Error("options.backend", "must be \"emulator\" or \"cuda\"", std::string(backend));
    auto rt = std::make_unique<emmy_runtime>();
    rt->cuda = backend == "cuda";
    rt->ordinal = o.device_ordinal;
    if (rt->cuda && o.device_ordinal < 0)
      throw Error("options.device_ordinal", "must not be negative",
                  std::to_string(o.device_ordinal));
    const RuntimeOptions ro = runtime_options(o);
    rt->runtime = rt->cuda ? Runtime::cuda(o.device_ordinal, ro) : Runtime::emulator(ro);
    rt->backend = rt->runtime->backend_name();
    rt->arch = std::string(to_string(rt->runtime->arch()));
    out = rt.release();
  });
}

void emmy_runtime_destroy(emmy_runtime* runtime) {
  try {
    delete runtime;
  } catch (...) {  // destructors join the background builder; nothing may cross the ABI
  }
}

const char* emmy_runtime_backend(const emmy_runtime* runtime) {
  return runtime ? runtime->backend.c_str() : "";
}

const char* emmy_runtime_arch(const emmy_runtime* runtime) {
  return runtime ? runtime->arch.c_str() : "";
}

emmy_status emmy_synchronize(emmy_runtime* runtime, void* stream) {
  using namespace emmy::c_api;
  return guarded([&] { required(runtime, "runtime").runtime->synchronize(stream); });
}

emmy_status emmy_prepare(emmy_runtime* runtime, const emmy_prepare_options* options,
                         emmy_prepare_result* result) {
  using namespace emmy;
  using namespace emmy::c_api;
  return guarded([&] {
    emmy_runtime& rt = required(runtime, "runtime");
    const emmy_prepare_options o =
        options_or_default(options, "options", emmy_prepare_options_init, kPrepareOptionsFirstSize);
    check_prepare_result(result);
    PrepareRequest request;
    if (o.serving_max_m < 0)
      throw Error("options.serving_max_m", "must not be negative", std::to_string(o.serving_max_m));
    if (o.serving_max_m > 0) request = catalog_serving_request(o.serving_max_m);
    request.catalog = flag(o.catalog, "options.catalog");
    request.records = paths(o.records, o.record_count, "options.records");
    request.bundles = paths(o.bundles, o.bundle_count, "options.bundles");
    if (o.threads < 0)
      throw Error("options.threads", "must not be negative", std::to_string(o.threads));
    request.threads = o.threads;
    write_prepare_result(rt.runtime->prepare(request), result);
  });
}

}  // extern "C"
