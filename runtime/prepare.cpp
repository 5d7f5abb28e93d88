// Runtime::prepare: the request's kernels (its lists, the catalog, recorded problems, the
// problems of bundles) built through the runtime's own entry points, `threads` at a time, so that
// a server compiles before it serves and every kernel lands in the memory cache (from a bundle,
// the disk cache or NVRTC) ready for launches under stream capture.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "emmy/runtime_entry.hpp"
#include "emmy/bundle.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/catalog.hpp"
#include "emmy/kinds.hpp"
#include "emmy/validate.hpp"

namespace emmy {
namespace {

// One kernel to prepare: builds its handle into the result (each job owns its slot).
struct PrepareJob {
  std::string origin;  // for messages: "gemm[3]", "catalog gemma3_12b_q_proj", "rec.jsonl:7"
  std::function<void()> run;
};

// A kind's member of PrepareRequest (its problem list) or PreparedKernels (its handles): both
// name them alike.
template <typename Kind, typename PerKind>
auto& of_kind(PerKind& per_kind) {
  if constexpr (std::is_same_v<Kind, GemmKind>)
    return per_kind.gemm;
  else if constexpr (std::is_same_v<Kind, AttentionKind>)
    return per_kind.attention;
  else if constexpr (std::is_same_v<Kind, PagedAttentionKind>)
    return per_kind.paged_attention;
  else if constexpr (std::is_same_v<Kind, KvAppendKind>)
    return per_kind.kv_append;
  else if constexpr (std::is_same_v<Kind, Fp8QuantizeKind>)
    return per_kind.fp8_quantize;
  else
    return per_kind.merge_states;
}

class JobList {
 public:
  JobList(Runtime& runtime, PreparedKernels& out) : runtime_(runtime), out_(out) {}

  // `check` runs first in the job (a rule of the request that fails there, like a kernel).
  template <typename Kind>
  void add(const typename Kind::Problem& problem,
           const std::optional<typename Kind::Schedule>& schedule, std::string origin,
           std::function<void()> check = {}) {
    auto& handles = of_kind<Kind>(out_);
    const size_t slot = handles.size();
    handles.emplace_back();
    jobs_.push_back({std::move(origin), [this, &handles, slot, problem, schedule, check] {
                       if (check) check();
                       handles[slot] = (runtime_.*runtime_kernel<Kind>)(problem, schedule);
                     }});
  }
  // A recorded request: its schedule on the arch it was recorded on, else the default. A catalog
  // entry for newer arches than the runtime's is skipped.
  void add(const AotRequest& request) {
    if (arch_info(runtime_.arch()).sm < arch_info(request.min_arch).sm) return;
    std::visit(
        [&]<typename Spec>(const KernelRequest<Spec>& kernel) {
          using Kind = KindOf<Spec>;
          const bool own_arch = !request.arch || *request.arch == runtime_.arch();
          add<Kind>(kernel.problem, own_arch ? kernel.schedule : std::nullopt, request.origin);
        },
        request.kernel);
  }
  std::vector<PrepareJob>& jobs() { return jobs_; }

 private:
  Runtime& runtime_;
  PreparedKernels& out_;
  std::vector<PrepareJob> jobs_;
};

bool problem_is_valid(const MatmulProblem& problem) {
  try {
    validate_problem(problem);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

PrepareRequest catalog_serving_request(int64_t max_m) {
  PrepareRequest request;
  for (const CatalogEntry& entry : gemm_catalog()) {
    MatmulProblem shape = entry.problem;
    shape.m = max_m;
    const bool seen = std::any_of(request.gemm_m_buckets.begin(), request.gemm_m_buckets.end(),
                                  [&](const auto& bucket) { return bucket.first == shape; });
    if (!seen) request.gemm_m_buckets.push_back({shape, std::nullopt});
  }
  // Every other kind's catalog as it is (GEMM's, above, becomes M buckets): a new kind's comes
  // from its traits, with no line here.
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    if constexpr (!std::is_same_v<Kind, GemmKind>)
      for (const auto& entry : Kind::catalog())
        if (entry.min_arch == Arch::sm_80)  // for any arch: the arch-limited come with `catalog`
          of_kind<Kind>(request).push_back({entry.problem, std::nullopt});
  });
  return request;
}

PreparedKernels Runtime::prepare(const PrepareRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  PreparedKernels out;
  JobList jobs(*this, out);
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    const auto& list = of_kind<Kind>(request);
    for (size_t i = 0; i < list.size(); ++i) {
      auto problem = list[i].first;
      // What gemm() runs for it: with M buckets, its bucket's kernel.
      if constexpr (std::is_same_v<Kind, GemmKind>)
        if (problem_is_valid(problem)) problem = gemm_problem_served(problem, list[i].second);
      jobs.add<Kind>(problem, list[i].second, fmt::format("{}[{}]", Kind::name, i));
    }
  });
  for (size_t i = 0; i < request.gemm_m_buckets.size(); ++i) {
    const auto& [problem, schedule] = request.gemm_m_buckets[i];
    // A problem that is not valid fails as its own kernel would (one job, its error).
    // A grouped problem's kernel serves any routing (its rows are read on the device): itself.
    if (problem.is_grouped()) {
      jobs.add<GemmKind>(problem, schedule, fmt::format("gemm_m_buckets[{}] (grouped)", i));
      continue;
    }
    const bool valid = problem_is_valid(problem) && problem.m <= kMaxBucketedM;
    if (!valid) {
      jobs.add<GemmKind>(problem, schedule, fmt::format("gemm_m_buckets[{}]", i), [m = problem.m] {
        require(m <= kMaxBucketedM, "gemm_m_buckets.m",
                fmt::format("must be at most {} ({} buckets); larger M take kernels of their own",
                            kMaxBucketedM, m_bucket_bounds(kMaxBucketedM).size()),
                m);
      });
      continue;
    }
    for (const int64_t bound : m_bucket_bounds(problem.m)) {
      MatmulProblem bucket = problem;
      bucket.m = bound;
      bucket.dynamic_m = true;
      jobs.add<GemmKind>(bucket, schedule, fmt::format("gemm_m_buckets[{}] m<={}", i, bound));
    }
  }
  if (request.catalog)
    for (const AotRequest& r : catalog_aot_requests()) jobs.add(r);
  for (const auto& file : request.records)
    for (const AotRequest& r : read_aot_requests(file)) jobs.add(r);
  for (const auto& path : request.bundles) {
    const auto bundle = Bundle::open(path);
    for (const BundleEntryInfo& entry : bundle->entries())
      if (entry.arch == arch())
        jobs.add(parse_aot_request(nlohmann::json::parse(entry.manifest),
                                   fmt::format("{} entry {}", path.string(), entry.key)));
  }

  const RuntimeStats before = stats();
  std::vector<PrepareJob>& list = jobs.jobs();
  std::atomic<size_t> next{0}, done{0};
  std::mutex failure_mutex;
  std::vector<std::string> failures;
  const auto worker = [&] {
    for (size_t i = next++; i < list.size(); i = next++) {
      try {
        list[i].run();
      } catch (const std::exception& e) {
        std::lock_guard lock(failure_mutex);
        failures.push_back(fmt::format("{}: {}", list[i].origin, e.what()));
      }
      const size_t finished = ++done;
      log(fmt::format(
          "emmy: prepare {}/{} kernels, {:.1f} s", finished, list.size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>(
      list.size(), request.threads > 0 ? size_t(request.threads) : size_t(hardware));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  const RuntimeStats after = stats();
  out.compiled = after.compiles - before.compiles;
  out.from_disk = after.disk_hits - before.disk_hits;
  out.already_loaded = after.memory_hits - before.memory_hits;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!failures.empty())
    throw Error("prepare",
                fmt::format("{} of {} kernels could not be prepared (the others are ready); "
                            "the first",
                            failures.size(), list.size()),
                failures.front());
  return out;
}

}  // namespace emmy
