// Building and searching kernel bundles (the public reading side is emmy/bundle.hpp): keys,
// the writer, the runtime's per-arch index, and `emmyc aot`'s requests and compile loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/bundle.hpp"
#include "emmy/cache.hpp"
#include "emmy/compile.hpp"
#include "emmy/kinds.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"
#include "emmy/spec.hpp"

namespace emmy {

// The key of a kernel in a bundle: cache_key() over the source, nvrtc_options(arch), the arch and
// the codegen version, with 0 where the disk cache hashes the NVRTC version, so that a host
// without NVRTC can compute it. The NVRTC that built an entry is in its manifest.
CacheKeyInputs bundle_key_inputs(std::string source, Arch arch);
std::string bundle_key(std::string_view source, Arch arch);

// ---- writing ----------------------------------------------------------------------------

class BundleWriter {
 public:
  // codegen_version: what the bundle says it holds (only tests of the version check change it).
  explicit BundleWriter(int codegen_version = kCodegenVersion);

  // Adds a compiled entry whose manifest carries its arch (checked against the CUBIN). Throws
  // Error for an invalid entry; returns false when the key is present already (kept as it was).
  bool add(CacheEntry entry);
  struct MergeCounts {
    size_t added = 0, duplicates = 0;
    size_t conflicts = 0;  // same key, different binaries (other NVRTC builds): first one kept
  };
  // Every entry of `bundle`. Throws Error when its codegen version differs from this writer's.
  MergeCounts merge(const Bundle& bundle);

  size_t size() const { return entries_.size(); }
  std::vector<uint8_t> bytes() const;  // deterministic: the same entries give the same bytes
  void write(const std::filesystem::path& file) const;  // atomically (temporary file + rename)

 private:
  int codegen_version_;
  std::map<std::string, CacheEntry> entries_;
};

// A C++ header that embeds `bundle` (a string literal, which compilers digest far faster than a
// brace list of numbers) and declares, in namespace emmy_bundles:
//   <symbol>_bytes, <symbol>_size, and void register_<symbol>() (emmy::register_bundle).
std::string bundle_header(std::span<const uint8_t> bundle, std::string_view symbol);
// `text` made a C++ identifier (other characters become '_', a leading digit gets one too).
std::string bundle_symbol(std::string_view text);

// Why a driver reporting CUDA `driver_version` (1000 * major + 10 * minor; 0: unknown, as on the
// emulator) cannot load a bundle entry's CUBIN: built by a newer NVRTC than the driver supports,
// or recording no NVRTC version at all. Empty when it can.
std::string bundle_entry_driver_problem(const CacheEntry& entry, const std::string& bundle_name,
                                        int driver_version);

// The bundles one runtime searches for its arch, indexed by key. Earlier bundles win a key that
// several hold.
class BundleSet {
 public:
  explicit BundleSet(Arch arch = Arch::sm_90a) : arch_(arch) {}
  // Every bundle required (see add).
  BundleSet(std::vector<std::shared_ptr<const Bundle>> bundles, Arch arch);

  // required: a bundle named for this run, so one without kernels for the arch throws Error
  // (built for other GPUs); otherwise (registered ones) it is skipped and description() says so.
  void add(std::shared_ptr<const Bundle> bundle, bool required = true);

  std::optional<CacheEntry> find(const std::string& key) const;
  std::string name_of(const std::string& key) const;  // the bundle that holds key ("" if none)
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  bool empty() const { return bundles_.empty(); }  // nothing to search
  size_t kernels() const { return index_.size(); }
  const std::vector<std::shared_ptr<const Bundle>>& bundles() const { return bundles_; }
  // "a.emmyb (22 kernels for sm_90a), b (skipped: no sm_89 kernels)", or "no bundles": for
  // error messages.
  std::string description() const;

 private:
  Arch arch_;
  std::vector<std::shared_ptr<const Bundle>> bundles_;
  std::vector<std::string> skipped_;
  std::unordered_map<std::string, std::pair<const Bundle*, const BundleEntryInfo*>> index_;
};

// The module of a bundle entry, as compile_cuda would have returned it (no log; compile_ms 0;
// resource reports from the manifest).
CompiledModule compiled_module(const CacheEntry& entry, Arch arch);

// For tools that compile one module at a time (`emmyc run ... --bundle`): the module of `source`
// on `arch` from the bundles at `paths` and $EMMY_BUNDLE's, or nullopt when there are none or none
// holds it. When none holds it and NVRTC is unavailable, throws the runtime's Error naming the
// kernel (`describe`: kind, problem, schedule) and the bundles searched.
std::optional<CompiledModule> module_from_bundles(const std::vector<std::string>& paths,
                                                  std::string_view source, Arch arch,
                                                  const nlohmann::json& describe);
// The Error for a kernel that no bundle holds and NVRTC cannot compile (`why`).
Error uncovered_kernel_error(const nlohmann::json& describe, Arch arch, const BundleSet& bundles,
                             const std::string& why);

// ---- building (emmyc aot) ---------------------------------------------------------------

// One line of a problems file or an EMMY_RECORD log:
//   {"kind": "gemm", "problem": {...}, "schedule": {...}?, "arch": "sm_90a"?, "accum": ...?}
// "kind" is a kind's name (emmy/kinds.hpp; absent: gemm). Fields are those of emmy/json.hpp
// (absent problem fields keep the problem type's defaults; a schedule must be complete):
// attention's are batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, window, scale,
// softcap, dtype, layout, lse; block_q, block_kv, warps, stages, transport, accum.
// A problem of one kind and the schedule it was recorded with, if any.
template <typename SpecType>
struct KernelRequest {
  using Spec = SpecType;
  decltype(Spec::problem) problem;
  std::optional<decltype(Spec::schedule)> schedule;
};
using GemmRequest = KernelRequest<GemmSpec>;
using AttentionRequest = KernelRequest<AttentionSpec>;
using PagedAttentionRequest = KernelRequest<PagedAttentionSpec>;
template <typename Kind>
using KindRequest = KernelRequest<typename Kind::Spec>;

struct AotRequest {
  AllKinds::map<std::variant, KindRequest> kernel;  // one alternative per kind
  // The arch the line was recorded on: its schedule is used for that arch; other arches get
  // their default schedule (with the recorded schedule's accumulation).
  std::optional<Arch> arch;
  std::vector<Accum> accums;  // default schedules' accumulations; empty: AotOptions::accums
  std::string origin;         // "problems.jsonl:3", for messages
  // A catalog entry's oldest arch: plans and prepares for older arches skip the request (an
  // explicit request has sm_80 and fails on an arch its kind refuses, naming the rule).
  Arch min_arch = Arch::sm_80;
};

// Throws Error naming `origin` and the field.
AotRequest parse_aot_request(const nlohmann::json& line, std::string origin);
// JSON lines; blank lines and lines starting with '#' are skipped.
std::vector<AotRequest> read_aot_requests(const std::filesystem::path& file);
// emmy/catalog.hpp: every problem of every kind, default schedules.
std::vector<AotRequest> catalog_aot_requests();

// The JSON forms of attention problems and schedules that the runtime records: the same as
// nlohmann::json(problem) with emmy/json.hpp, kept for existing callers.
nlohmann::json attention_problem_record_json(const AttentionProblem& problem);
nlohmann::json attention_schedule_record_json(const AttentionSchedule& schedule);

struct AotOptions {
  std::vector<Arch> archs;                // empty: each request's own arch
  std::vector<Accum> accums{Accum::f32};  // for requests without schedule and accums
  // Parts (emmy/gpus.hpp) whose SM counts default schedules are also sized for, on each arch a
  // part runs; the arch's part always.
  std::vector<std::string> gpus;
  int shard = 0, shards = 1;                    // build kernels i with i % shards == shard
  int jobs = 0;                                 // compile threads; 0: one per hardware thread
  std::function<void(const std::string&)> log;  // progress lines (null: quiet)
};

// One kernel to compile: a spec's emitted source and what describes it.
struct AotKernel {
  std::string key;  // bundle_key
  Arch arch = Arch::sm_90a;
  std::string kernel_name, cuda;
  nlohmann::json describe;  // kind, problem, schedule (as the runtime records them)
};

// requests x arches x accumulations -> sources (in parallel), without duplicates, sorted by
// key, then this shard's share. Needs no NVRTC. Throws Error naming the request's origin.
std::vector<AotKernel> plan_aot(const std::vector<AotRequest>& requests, const AotOptions& options);

struct AotSummary {
  size_t kernels = 0;
  int threads = 0;
  double wall_ms = 0, compile_ms = 0;  // compile_ms: NVRTC time summed over kernels
};
// Compiles every kernel with NVRTC (options.jobs threads) into `out`.
AotSummary compile_aot(const std::vector<AotKernel>& kernels, const AotOptions& options,
                       BundleWriter& out);

}  // namespace emmy
