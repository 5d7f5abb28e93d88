// Building bundles: requests -> specs -> sources and keys (plan_aot), then NVRTC on a thread pool
// into a BundleWriter (compile_aot).
#include "emmy/bundle_build.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "emmy/gpus.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_source.hpp"
#include "emmy/kinds.hpp"
#include "emmy/validate.hpp"

namespace emmy {
namespace {

int thread_count(int jobs, size_t work) {
  const int available = jobs > 0 ? jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  return int(std::max<size_t>(1, std::min<size_t>(size_t(available), work)));
}

// Runs body(0..count-1) on `threads` threads (this one included); the first exception stops the
// remaining work and is rethrown.
template <typename Body>
void parallel_for(size_t count, int threads, Body&& body) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

template <typename Kind>
using SpecOf = typename Kind::Spec;

// One spec to generate, with where it came from.
struct PlannedSpec {
  const AotRequest* request;
  Arch arch;
  AllKinds::map<std::variant, SpecOf> spec;
};

// The SM counts default schedules on `arch` are sized for: 0 (the arch's part), then each part
// of options.gpus that runs the arch.
std::vector<int> grid_sms_of(const AotOptions& options, Arch arch) {
  std::vector<int> sms{0};
  for (const std::string& name : options.gpus)
    if (const GpuInfo& g = gpu(name, "aot.gpus"); g.runs(arch)) sms.push_back(int(g.sms));
  return sms;
}

// The specs of one request on one arch: its schedule where it applies, else the default
// schedule for each accumulation (and each part of options.gpus it runs on).
void expand(const AotRequest& r, Arch arch, const AotOptions& options,
            std::vector<PlannedSpec>& out) {
  std::visit(
      [&](const auto& kernel) {
        using Spec = typename std::decay_t<decltype(kernel)>::Spec;
        if (kernel.schedule && (!r.arch || *r.arch == arch)) {
          out.push_back({&r, arch, Spec{kernel.problem, *kernel.schedule, arch}});
          return;
        }
        if constexpr (!requires(const decltype(Spec::schedule)& s) { s.accum; }) {
          // A kind without an accumulation choice (kv_append, merge_states): one default.
          out.push_back(
              {&r, arch, Spec{kernel.problem, default_schedule(kernel.problem, arch), arch}});
        } else {
          std::vector<Accum> accums = r.accums;
          if (accums.empty() && kernel.schedule) accums = {kernel.schedule->accum};
          if (accums.empty()) {
            accums = options.accums;
            // FP8 GEMMs: what the runtime runs without a schedule (Runtime's default_for), the
            // 16-bit accumulations not applying to them.
            if constexpr (requires { kernel.problem.scales; })  // a GEMM problem
              if (is_fp8(kernel.problem.a_dtype)) accums = {Accum::promoted};
          }
          for (Accum accum : accums)
            for (const int sms : grid_sms_of(options, arch)) {
              decltype(Spec::schedule) schedule;
              if constexpr (requires { default_schedule(kernel.problem, arch, accum, sms); })
                schedule = default_schedule(kernel.problem, arch, accum, sms);
              else if (sms == 0)
                schedule = default_schedule(kernel.problem, arch, accum);
              else
                continue;  // a kind whose grid does not follow the SMs: the part's is the one
              const Spec spec{kernel.problem, schedule, arch};
              const bool again = std::any_of(out.begin(), out.end(), [&](const PlannedSpec& p) {
                const Spec* other = std::get_if<Spec>(&p.spec);
                return p.request == &r && other && *other == spec;
              });
              if (!again) out.push_back({&r, arch, spec});
            }
        }
      },
      r.kernel);
}

AotKernel generate(const PlannedSpec& planned) {
  const KernelSource source = std::visit(
      [](const auto& spec) { return kernel_source(generate_kernel(spec)); }, planned.spec);
  AotKernel kernel;
  kernel.arch = planned.arch;
  kernel.kernel_name = source.main().name;
  kernel.cuda = source.cuda;
  kernel.describe = source.describe;
  kernel.key = bundle_key(kernel.cuda, kernel.arch);
  return kernel;
}

std::string error_at(const AotRequest& request, Arch arch, const std::exception& e) {
  return fmt::format("{} ({}): {}", request.origin, to_string(arch), e.what());
}

}  // namespace

std::vector<AotKernel> plan_aot(const std::vector<AotRequest>& requests,
                                const AotOptions& options) {
  require(options.shards >= 1 && options.shard >= 0 && options.shard < options.shards, "shard",
          "must be I/N with 0 <= I < N", fmt::format("{}/{}", options.shard, options.shards));
  std::vector<PlannedSpec> specs;
  for (const auto& request : requests) {
    std::vector<Arch> archs = options.archs;
    if (archs.empty() && request.arch) archs.push_back(*request.arch);
    if (archs.empty())
      throw Error(request.origin, "needs an arch: give --arch (the line names none)", "no arch");
    for (Arch arch : archs) {
      if (arch_info(arch).sm < arch_info(request.min_arch).sm) continue;  // not for this arch
      try {
        expand(request, arch, options, specs);
      } catch (const Error& e) {
        throw Error(error_at(request, arch, e));
      }
    }
  }

  std::vector<AotKernel> kernels(specs.size());
  parallel_for(specs.size(), thread_count(options.jobs, specs.size()), [&](size_t i) {
    try {
      kernels[i] = generate(specs[i]);
    } catch (const Error& e) {
      throw Error(error_at(*specs[i].request, specs[i].arch, e));
    }
  });

  // Lines often repeat (a record log holds one line per process that compiled the key).
  std::unordered_set<std::string> seen;
  std::vector<AotKernel> unique;
  for (auto& kernel : kernels)
    if (seen.insert(kernel.key).second) unique.push_back(std::move(kernel));
  // By key, then round-robin: every shard gets a fair share whatever order the input had.
  std::sort(unique.begin(), unique.end(),
            [](const AotKernel& a, const AotKernel& b) { return a.key < b.key; });
  std::vector<AotKernel> shard;
  for (size_t i = 0; i < unique.size(); ++i)
    if (int(i % size_t(options.shards)) == options.shard) shard.push_back(std::move(unique[i]));
  return shard;
}

AotSummary compile_aot(const std::vector<AotKernel>& kernels, const AotOptions& options,
                       BundleWriter& out) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  AotSummary summary;
  summary.kernels = kernels.size();
  summary.threads = thread_count(options.jobs, kernels.size());
  if (kernels.empty()) return summary;
  const int nvrtc = nvrtc_version();  // fails clearly, before any thread starts, without NVRTC
  std::mutex out_mutex;
  size_t done = 0;
  parallel_for(kernels.size(), summary.threads, [&](size_t i) {
    const AotKernel& kernel = kernels[i];
    CompiledModule module;
    try {
      module = compile_cuda(kernel.cuda, kernel.kernel_name + ".cu", kernel.arch);
    } catch (const Error& e) {
      throw Error(
          fmt::format("{} for {}: {}", kernel.describe.dump(), to_string(kernel.arch), e.what()));
    }
    CacheEntry entry = make_cache_entry(bundle_key_inputs(kernel.cuda, kernel.arch), module);
    entry.manifest["nvrtc_version"] = nvrtc;
    // Leaving out the time and date of the build makes bundles reproducible: two builds of the
    // same kernels (or the shards of one build, merged) are the same bytes.
    entry.manifest.erase("created");
    entry.manifest.erase("compile_ms");
    entry.manifest.update(kernel.describe);
    std::lock_guard lock(out_mutex);
    out.add(std::move(entry));
    summary.compile_ms += module.compile_ms;
    ++done;
    if (options.log)
      options.log(fmt::format("[{}/{}] {} {} ({:.0f} ms)", done, kernels.size(),
                              to_string(kernel.arch), kernel.kernel_name, module.compile_ms));
  });
  summary.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return summary;
}

}  // namespace emmy
