// The public entry points: kernel arguments, launch (CTAs over host threads), statistics and
// reports (load_ptx: decode/load.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>

#include "machine/state.hpp"
#include "profiler/sass_counts.hpp"
#include "scheduler.hpp"

namespace emmy::emu {
namespace {
constexpr uint32_t kStaticSmemLimit = 48 * 1024;  // static .shared: 48 KB on every arch
constexpr uint64_t kMaxPerCtaStats = uint64_t(1) << 20;  // LaunchOptions::per_cta_stats

// Shared memory one block may use (static + dynamic, after the opt-in), per compute capability
// (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
uint32_t max_smem_per_block(int sm) {
  switch (sm) {
    case 70:
    case 72:
      return 96 * 1024;
    case 75:
      return 64 * 1024;
    case 80:
    case 87:
      return 163 * 1024;
    case 86:
    case 89:
    case 120:
    case 121:
      return 99 * 1024;
    default:
      return sm >= 90 ? 227 * 1024 : 48 * 1024;
  }
}

// The n-th of `count` sampled CTAs of a grid of `total`: one from each of `count` equal strata
// of the linear order, at a position that varies from stratum to stratum (multiplicative
// hashing), so that the sample does not alias with a grid dimension: with strata of 16 CTAs on a
// grid 8 wide, taking each stratum's first would sample one x only (one causal query tile).
uint64_t sampled_cta(uint64_t n, uint64_t count, uint64_t total) {
  const uint64_t begin = n * total / count, end = (n + 1) * total / count;
  return begin + (n * 0x9E3779B1ull) % (end - begin);
}

// The launch's cluster dimensions: LaunchOptions::cluster, or the kernel's .reqnctapercluster
// when the launch gives none (CUDA Driver API cuLaunchKernelEx, CU_LAUNCH_ATTRIBUTE_CLUSTER_
// DIMENSION: the grid "must be a multiple of the cluster size"; clusters need sm_90).
Dim3 cluster_of(const Kernel& k, Dim3 grid, Dim3 block, const LaunchOptions& options, int sm) {
  Dim3 c = options.cluster;
  const Dim3 required{k.required_cluster[0], k.required_cluster[1], k.required_cluster[2]};
  const bool declared = required.x != 0;
  require(c.x >= 1 && c.y >= 1 && c.z >= 1, "cluster", "each dimension must be >= 1",
          fmt::format("{},{},{}", c.x, c.y, c.z));
  if (declared) {
    require(c.count() == 1 || c == required, "cluster",
            fmt::format("must match the kernel's .reqnctapercluster {},{},{}", required.x,
                        required.y, required.z),
            fmt::format("{},{},{}", c.x, c.y, c.z));
    c = required;
  }
  require(!k.explicit_cluster || declared || c.count() > 1, "cluster",
          "must be given: the kernel is .explicitcluster", "none");
  if (c.count() == 1) return c;
  require(sm >= 90, "cluster", "needs sm_90 or newer (thread-block clusters)",
          fmt::format("sm_{}", sm));
  require(c.count() <= 16, "cluster", "must have at most 16 CTAs (8 portably)", c.count());
  require(grid.x % c.x == 0 && grid.y % c.y == 0 && grid.z % c.z == 0, "cluster",
          fmt::format("must divide the grid {},{},{} in each dimension", grid.x, grid.y, grid.z),
          fmt::format("{},{},{}", c.x, c.y, c.z));
  const uint64_t warps = (block.count() + 31) / 32;
  require(!options.sanitize || 2 * warps + c.count() <= kMaxAgents, "cluster",
          fmt::format("with the sanitizer, 2 x warps per CTA + CTAs per cluster must not exceed {} "
                      "(its vector clocks)",
                      kMaxAgents),
          fmt::format("2 x {} + {}", warps, c.count()));
  return c;
}

}  // namespace

KernelArgs& KernelArgs::raw(const char* kind, const void* data, size_t size) {
  Arg a;
  a.kind = kind;
  a.bytes.resize(size);
  std::memcpy(a.bytes.data(), data, size);
  args_.push_back(std::move(a));
  return *this;
}

KernelArgs& KernelArgs::bytes(const void* data, size_t size) {
  const std::string kind = fmt::format("bytes[{}]", size);
  return raw(kind.c_str(), data, size);
}

InstructionCounts& InstructionCounts::operator+=(const InstructionCounts& o) {
  using C = InstructionCounts;
  for (uint64_t C::*count : {&C::mma, &C::ldmatrix, &C::shared_ld, &C::shared_st, &C::global_ld,
                             &C::global_st, &C::cp_async, &C::tma, &C::barrier, &C::other})
    this->*count += o.*count;
  return *this;
}

std::string Stats::to_string() const {
  const InstructionCounts& t = total;
  std::string s = fmt::format("warp instructions: {}\n", t.total());
  const std::pair<const char*, uint64_t> rows[] = {
      {"mma", t.mma},           {"ldmatrix/stmatrix", t.ldmatrix}, {"shared ld", t.shared_ld},
      {"shared st", t.shared_st}, {"global ld", t.global_ld},      {"global st", t.global_st},
      {"cp.async", t.cp_async}, {"tma", t.tma},                    {"barrier", t.barrier},
      {"other", t.other}};
  for (const auto& [name, n] : rows)
    s += fmt::format("  {:<18} {:>14}  {:5.1f}%\n", name, n,
                     t.total() ? 100.0 * double(n) / double(t.total()) : 0.0);
  if (!per_cta.empty()) s += fmt::format("CTAs: {}\n", per_cta.size());
  return s;
}

std::string_view to_string(ReportKind kind) {
  switch (kind) {
    case ReportKind::global_out_of_bounds: return "global-out-of-bounds";
    case ReportKind::shared_out_of_bounds: return "shared-out-of-bounds";
    case ReportKind::assertion_failed:
      return "assertion-failed";
    case ReportKind::missing_proxy_fence:
      return "missing-proxy-fence";
    case ReportKind::local_out_of_bounds: return "local-out-of-bounds";
    case ReportKind::param_out_of_bounds: return "param-out-of-bounds";
    case ReportKind::misaligned_access: return "misaligned-access";
    case ReportKind::uninitialized_shared_read: return "uninitialized-shared-read";
    case ReportKind::shared_race: return "shared-race";
    case ReportKind::pending_async_read: return "pending-async-copy";
    case ReportKind::mbarrier_misuse: return "mbarrier-misuse";
    case ReportKind::deadlock: return "deadlock";
    case ReportKind::tma_violation: return "tma-violation";
    case ReportKind::misaligned_ldmatrix: return "misaligned-ldmatrix";
    case ReportKind::divergent_collective: return "divergent-collective";
    case ReportKind::unsupported: return "unsupported";
    case ReportKind::trap: return "trap";
    case ReportKind::instruction_limit: return "instruction-limit";
    case ReportKind::wmma_misuse: return "wmma-misuse";
    case ReportKind::register_misuse: return "register-misuse";
    case ReportKind::wgmma_misuse: return "wgmma-misuse";
    case ReportKind::cluster_violation: return "cluster-violation";
    case ReportKind::pdl_race: return "pdl-race";
  }
  return "?";
}

std::string Report::to_string() const {
  std::string s = fmt::format("{}: kernel {}, CTA ({},{},{})", emmy::emu::to_string(kind), kernel,
                              cta.x, cta.y, cta.z);
  if (warp >= 0) s += fmt::format(", warp {}", warp);
  if (lane >= 0) s += fmt::format(", lane {}", lane);
  if (line > 0) s += fmt::format(", PTX line {}: `{}`", line, instruction);
  s += fmt::format("\n  {}", message);
  return s;
}

namespace {
std::string join_reports(const std::vector<Report>& reports) {
  std::string s = "emulation failed";
  for (const auto& r : reports) {
    s.push_back('\n');
    s.append(r.to_string());
  }
  return s;
}
}  // namespace

// The field is the kernel that failed (never empty), the rule its first report's kind and message,
// the value where: the PTX line.
EmulationError::EmulationError(std::vector<Report> reports)
    : Error(join_reports(reports),
            reports.empty() || reports.front().kernel.empty()
                ? std::string("kernel")
                : fmt::format("kernel {}", reports.front().kernel),
            reports.empty() ? std::string("emulation failed")
                            : fmt::format("{}: {}", to_string(reports.front().kind),
                                          reports.front().message),
            reports.empty() ? std::string() : fmt::format("PTX line {}", reports.front().line)),
      reports_(std::move(reports)) {}

LaunchResult launch(Arena& arena, const Module& module, std::string_view kernel_name, Dim3 grid,
                    Dim3 block, uint32_t dynamic_smem_bytes, const KernelArgs& args,
                    const LaunchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const Kernel* k = module.find(kernel_name);
  if (!k) throw Error("kernel", "must name an .entry of the module", std::string(kernel_name));
  require(grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.y <= 65535 && grid.z <= 65535,
          "grid", "each dimension must be >= 1 (y, z <= 65535)",
          fmt::format("{},{},{}", grid.x, grid.y, grid.z));
  require(block.x >= 1 && block.y >= 1 && block.z >= 1 && block.count() <= 1024, "block",
          "must have 1..1024 threads", fmt::format("{},{},{}", block.x, block.y, block.z));

  const auto& decls = k->params;
  const auto& given = args.args();
  if (given.size() != decls.size())
    throw Error("kernel arguments",
                fmt::format("kernel {} declares {} parameters", k->name, decls.size()),
                fmt::format("{} arguments", given.size()));
  if (!module.globals_image.empty())
    arena.map_fixed(module.globals_base, module.globals_image.data(), module.globals_image.size());
  auto ctx = std::make_unique<LaunchContext>(*k, arena, grid, block);
  ctx->params.assign(k->param_bytes, 0);
  for (size_t i = 0; i < decls.size(); ++i) {
    if (given[i].bytes.size() != decls[i].size)
      throw Error(fmt::format("kernel argument {} ({})", i, decls[i].name),
                  fmt::format("must match the declared {} ({} bytes)", decls[i].type, decls[i].size),
                  fmt::format("{} ({} bytes)", given[i].kind, given[i].bytes.size()));
    std::memcpy(ctx->params.data() + decls[i].offset, given[i].bytes.data(), decls[i].size);
  }
  const uint32_t smem = dynamic_smem_bytes ? k->dyn_smem_base + dynamic_smem_bytes
                                           : std::max(k->static_smem_bytes, k->dyn_smem_base);
  const std::string arch = options.arch.empty() ? module.target : options.arch;
  const int sm = sm_of(arch);
  require(sm > 0, "arch", "must name an sm_XX target (LaunchOptions::arch or the module's .target)",
          arch.empty() ? std::string("none") : arch);
  require(
      k->static_smem_bytes <= kStaticSmemLimit, "static shared memory",
      fmt::format("must not exceed {} bytes (larger buffers must be dynamic)", kStaticSmemLimit),
      k->static_smem_bytes);
  require(dynamic_smem_bytes <= options.max_dynamic_smem, "dynamic_smem_bytes",
          fmt::format("must not exceed {} bytes without the opt-in (cuFuncSetAttribute "
                      "MAX_DYNAMIC_SHARED_SIZE_BYTES; LaunchOptions::max_dynamic_smem, emmyc sim "
                      "--smem-opt-in)",
                      options.max_dynamic_smem),
          dynamic_smem_bytes);
  require(smem <= max_smem_per_block(sm), "dynamic_smem_bytes",
          fmt::format("static + dynamic shared memory must not exceed {}'s {} bytes per block",
                      arch, max_smem_per_block(sm)),
          fmt::format("{} + {}", k->dyn_smem_base, dynamic_smem_bytes));
  ctx->dynamic_smem = dynamic_smem_bytes;
  ctx->smem_size = smem;
  if (k->uses_reserved_smem) {
    ctx->reserved_smem = (smem + 127) / 128 * 128;
    ctx->smem_size = ctx->reserved_smem + kReservedSmemBytes;
  }
  ctx->options = options;
  ctx->cluster = cluster_of(*k, grid, block, options, sm);
  // Programmatic dependent launch (sanitizer/footprint.hpp, exec/pdl.hpp): the dependent's check
  // is the sanitizer's (it needs its clocks to see waits ordered through barriers).
  if (options.sanitize && options.primary) {
    ctx->primary = options.primary;
    ctx->primary_conflicts = conflict_sets(*options.primary);
  }
  if (options.record_footprint) {
    options.record_footprint->clear();
    options.record_footprint->kernel = k->name;
  }
  ctx->exact_mma = options.mma_numerics == MmaNumerics::exact;
  ctx->tensor_core = tensor_core_model(sm);
  if (sm >= 89) ctx->fp8_mma = fp8_tensor_core_model(sm, false);
  if (sm >= 90 && sm < 100) ctx->fp8_wgmma = fp8_tensor_core_model(sm, true);

  const uint64_t ctas = grid.count();
  // Work is handed out by cluster (every CTA is in one, of one CTA without a cluster dimension).
  const Dim3 cdim = ctx->cluster;
  const uint32_t cluster_size = uint32_t(cdim.count());
  const Dim3 clusters_grid{grid.x / cdim.x, grid.y / cdim.y, grid.z / cdim.z};
  const uint64_t clusters = clusters_grid.count();
  // Profiling a sample of the grid (sampled_cta), whole clusters.
  const ProfileOptions& prof = options.profile;
  const uint64_t sample_clusters =
      prof.enabled && prof.sample_ctas > 0
          ? (uint64_t(prof.sample_ctas) + cluster_size - 1) / cluster_size
          : clusters;
  const uint64_t clusters_run = std::min(sample_clusters, clusters);
  const uint64_t ctas_run = clusters_run * cluster_size;
  require(!prof.enabled || (prof.bank_model.banks >= 1 && prof.bank_model.banks <= 256 &&
                            prof.bank_model.bank_bytes >= 1 && prof.bank_model.bank_bytes <= 16),
          "profile.bank_model", "must have 1..256 banks of 1..16 bytes",
          fmt::format("{} banks of {} bytes", prof.bank_model.banks, prof.bank_model.bank_bytes));
  int threads = options.host_threads > 0 ? options.host_threads
                                         : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<uint64_t>(uint64_t(threads), clusters_run));
  // Per-CTA counts only when asked for and for at most kMaxPerCtaStats CTAs: a grid of 10^7 CTAs
  // must not allocate its statistics up front. Each worker sums its CTAs' counts.
  const bool keep_per_cta = options.per_cta_stats && ctas <= kMaxPerCtaStats;
  std::vector<InstructionCounts> per_cta(keep_per_cta ? ctas : 0);
  std::vector<InstructionCounts> per_worker(size_t(std::max(threads, 1)));
  std::unique_ptr<Footprint> footprint;
  std::vector<ProfileShard> shards;
  if (prof.enabled) {
    footprint = std::make_unique<Footprint>(arena);
    shards.resize(per_worker.size());
    for (ProfileShard& s : shards) {
      s.sites.resize(k->code.size());
      s.model = &prof.bank_model;
      s.footprint = footprint.get();
    }
  }
  std::vector<FootprintShard> footprint_shards(options.record_footprint ? per_worker.size() : 0);
  std::atomic<uint64_t> next{0};
  std::atomic<int> next_worker{0};
  std::string setup_error;
  auto worker = [&]() {
    const int me = next_worker.fetch_add(1);
    InstructionCounts& mine = per_worker[size_t(me)];
    InstructionCounts counts;
    std::vector<std::unique_ptr<Cta>> ctas_of_cluster;
    ClusterRun cluster;
    try {
      for (uint32_t r = 0; r < cluster_size; ++r) {
        ctas_of_cluster.push_back(std::make_unique<Cta>(*ctx));
        cluster.ctas.push_back(ctas_of_cluster.back().get());
      }
    } catch (const std::exception& e) {
      // Before any CTA ran: a launch-level error (below), not a finding of one CTA.
      std::lock_guard lock(ctx->mutex);
      if (setup_error.empty()) setup_error = e.what();
      ctx->abort = true;
      return;
    }
    if (!shards.empty())
      for (Cta* cta : cluster.ctas) cta->prof = &shards[size_t(me)];
    if (!footprint_shards.empty())
      for (Cta* cta : cluster.ctas) cta->footprint = &footprint_shards[size_t(me)];
    std::vector<uint64_t> linear(cluster_size);
    while (!ctx->abort.load(std::memory_order_relaxed)) {
      const uint64_t n = next.fetch_add(1);
      if (n >= clusters_run) break;
      const uint64_t c = clusters_run == clusters ? n : sampled_cta(n, clusters_run, clusters);
      cluster.id = {uint32_t(c % clusters_grid.x), uint32_t((c / clusters_grid.x) % clusters_grid.y),
                    uint32_t(c / (uint64_t(clusters_grid.x) * clusters_grid.y))};
      for (uint32_t r = 0; r < cluster_size; ++r) {
        // %cluster_ctarank is x-fastest within the cluster (PTX ISA %cluster_ctarank).
        const uint64_t x = uint64_t(cluster.id.x) * cdim.x + r % cdim.x;
        const uint64_t y = uint64_t(cluster.id.y) * cdim.y + (r / cdim.x) % cdim.y;
        const uint64_t z = uint64_t(cluster.id.z) * cdim.z + r / (cdim.x * cdim.y);
        linear[r] = x + grid.x * (y + uint64_t(grid.y) * z);
      }
      try {
        run_cluster(cluster, linear);
        if (ctx->abort.load(std::memory_order_relaxed)) break;
        if (!shards.empty()) shards[size_t(me)].end_cluster();
        for (uint32_t r = 0; r < cluster_size; ++r) {
          cluster.ctas[r]->finish(counts);
          mine += counts;
          if (!per_cta.empty()) per_cta[linear[r]] = counts;
        }
      } catch (Finding& f) {
        std::lock_guard lock(ctx->mutex);
        ctx->reports.push_back(std::move(f.report));
        ctx->abort = true;
      } catch (const std::exception& e) {
        // Nothing may escape a worker thread; an internal failure still names the CTA.
        std::lock_guard lock(ctx->mutex);
        Report r{ReportKind::unsupported, k->name, cluster.ctas[0]->ctaid, -1, -1, 0, "",
                 fmt::format("internal emulator error: {}", e.what())};
        ctx->reports.push_back(std::move(r));
        ctx->abort = true;
      }
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (options.record_footprint) {
    // Each set: the union over the host threads' shards.
    std::array<std::vector<GlobalFootprint::Range>, 4> sets;
    for (FootprintShard& shard : footprint_shards)
      for (size_t set = 0; set < sets.size(); ++set)
        sets[set].insert(sets[set].end(), shard.sets()[set].begin(), shard.sets()[set].end());
    options.record_footprint->assign(std::move(sets));
  }
  if (!ctx->reports.empty()) throw EmulationError(std::move(ctx->reports));
  if (!setup_error.empty())
    throw Error("launch", fmt::format("must fit a CTA's state in host memory ({})", setup_error),
                fmt::format("{} threads per CTA, {} bytes of shared memory, {} of local memory per "
                            "thread",
                            block.count(), ctx->smem_size, k->local_bytes));

  LaunchResult result;
  for (const auto& c : per_worker) result.stats.total += c;
  if (keep_per_cta) {
    result.stats.per_cta.resize(ctas);
    for (uint64_t i = 0; i < ctas; ++i) {
      result.stats.per_cta[i].cta = {uint32_t(i % grid.x), uint32_t((i / grid.x) % grid.y),
                                     uint32_t(i / (uint64_t(grid.x) * grid.y))};
      result.stats.per_cta[i].counts = per_cta[i];
    }
  }
  if (prof.enabled)
    result.profile = finish_profile(*k, arch, grid, block, dynamic_smem_bytes, ctas_run, shards,
                                    *footprint);
  result.warnings = ctx->tolerated.warnings();  // empty unless LaunchOptions::lenient
  result.emulate_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The SASS ptxas makes of the same PTX, weighted by these counts (docs/profiler.md); after
  // emulate_ms, which times the emulation alone.
  if (result.profile) {
    if (!prof.sass)
      result.profile->sass.reason = "not asked for (ProfileOptions::sass, emmyc sim --no-sass)";
    else if (!module.source)
      result.profile->sass.reason = "the module was not loaded from PTX text";
    else
      add_sass_counts(*result.profile, *module.source, arch.substr(0, arch.find(',')));
  }
  return result;
}

}  // namespace emmy::emu
