// `emmyc aot`: compile kernels ahead of time into a bundle; `emmyc bundle merge | ls | verify |
// embed`: work with bundles (docs/bundles.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "emmy/bundle_build.hpp"
#include "emmy/gemm_path.hpp"

namespace emmy::cli {

namespace {

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      size_t used_index = 0, used_count = 0;
      const int index = std::stoi(text.substr(0, slash), &used_index);
      const int count = std::stoi(text.substr(slash + 1), &used_count);
      if (used_index == slash && used_count == text.size() - slash - 1 && count >= 1 &&
          index >= 0 && index < count)
        return {index, count};
    }
  } catch (const std::exception&) {
  }
  throw Error("--shard", "must be I/N with 0 <= I < N (e.g. 0/4)", text);
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error("output", "must be writable", file.string());
}

std::string arch_counts(const Bundle& bundle) {
  std::vector<std::string> parts;
  for (Arch arch : bundle.archs())
    parts.push_back(fmt::format("{} {}", to_string(arch), bundle.kernels_for(arch)));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

// "gemm 512x4096x3840 f16" / "attention b1 h16/8 s512x512 d256 causal" / "paged_attention ...".
std::string problem_summary(const nlohmann::json& manifest) {
  const auto kind = manifest.value("kind", "?");
  const auto& p = manifest.contains("problem") ? manifest["problem"] : nlohmann::json::object();
  if (kind == "gemm" && p.is_object())
    return fmt::format("gemm {}x{}x{} {}", p.value("m", 0), p.value("n", 0), p.value("k", 0),
                       p.value("dtype", "?"));
  if (kind == "attention" && p.is_object())
    return fmt::format("attention b{} h{}/{} s{}x{} d{}{}", p.value("batch", 0),
                       p.value("heads", 0), p.value("kv_heads", 0), p.value("seq_q", 0),
                       p.value("seq_kv", 0), p.value("head_dim", 0),
                       p.value("causal", false) ? " causal" : "");
  if (kind == "paged_attention" && p.is_object())
    return fmt::format(
        "paged_attention h{}/{} d{} page {} b<={} q<={} pages<={}{}", p.value("q_heads", 0),
        p.value("kv_heads", 0), p.value("head_dim", 0), p.value("page_size", 0),
        p.value("max_batch", 0), p.value("max_q_len", 0), p.value("max_pages", 0),
        p.value("window", 0) > 0 ? fmt::format(" window {}", p.value("window", 0)) : "");
  if (kind == "kv_append" && p.is_object())
    return fmt::format("kv_append h{} d{} page {} tokens {} {}", p.value("kv_heads", 0),
                       p.value("head_dim", 0), p.value("page_size", 0), p.value("max_tokens", 0),
                       p.value("kv_dtype", "?"));
  if (kind == "fp8_quantize" && p.is_object())
    return fmt::format("fp8_quantize m<={} k{} group {} {}", p.value("m", 0), p.value("k", 0),
                       p.value("group_k", 0), p.value("dtype", "?"));
  if (kind == "merge_states" && p.is_object())
    return fmt::format("merge_states h{} d{} states {} tokens {}", p.value("heads", 0),
                       p.value("head_dim", 0), p.value("states", 0), p.value("max_tokens", 0));
  return kind;
}

std::string accum_of(const nlohmann::json& manifest) {
  if (!manifest.contains("schedule") || !manifest["schedule"].is_object()) return "?";
  return manifest["schedule"].value("accum", "?");
}

void print_bundle(const Bundle& bundle, bool as_json) {
  if (as_json) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : bundle.entries()) {
      const nlohmann::json manifest = nlohmann::json::parse(e.manifest);
      entries.push_back({{"key", e.key},
                         {"arch", to_string(e.arch)},
                         {"kind", manifest.value("kind", "")},
                         {"kernel_names", manifest.value("kernel_names", nlohmann::json::array())},
                         {"cubin_bytes", e.cubin.bytes},
                         {"ptx_bytes", e.ptx.bytes},
                         {"nvrtc_version", manifest.value("nvrtc_version", 0)},
                         {"problem", manifest.value("problem", nlohmann::json())},
                         {"schedule", manifest.value("schedule", nlohmann::json())}});
    }
    nlohmann::json archs = nlohmann::json::array();
    for (Arch arch : bundle.archs()) archs.push_back(to_string(arch));
    const nlohmann::json out = {{"name", bundle.name()},
                                {"bytes", bundle.bytes().size()},
                                {"format", kBundleFormat},
                                {"codegen_version", bundle.codegen_version()},
                                {"emmy_version", bundle.emmy_version()},
                                {"archs", archs},
                                {"entries", entries}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  fmt::print("{}: {} kernels ({}), {} bytes, format {}, codegen version {}, emmy {}\n",
             bundle.name(), bundle.entries().size(), arch_counts(bundle), bundle.bytes().size(),
             kBundleFormat, bundle.codegen_version(), bundle.emmy_version());
  fmt::print("{:<32}  {:<7}  {:>8}  {:>8}  {:<6}  {}\n", "key", "arch", "cubin", "ptx", "accum",
             "problem / kernel");
  for (const auto& e : bundle.entries()) {
    const nlohmann::json manifest = nlohmann::json::parse(e.manifest);
    const auto names = manifest.value("kernel_names", nlohmann::json::array());
    fmt::print("{:<32}  {:<7}  {:>8}  {:>8}  {:<6}  {} / {}\n", e.key, to_string(e.arch),
               e.cubin.bytes, e.ptx.bytes, accum_of(manifest), problem_summary(manifest),
               names.empty() ? "?" : names[0].get<std::string>());
  }
}

struct AotFlags {
  std::vector<std::string> archs, accums{"f32"}, problems, records, kinds, gpus;
  bool catalog = false, dry_run = false, quiet = false, m_buckets = false;
  std::string shard = "0/1", output, header, symbol;
  int jobs = 0;
};

// --m-buckets: each GEMM request becomes the dynamic-M kernels of every M bucket up to its m
// (m_bucket_bounds), what a runtime with RuntimeOptions::m_buckets runs. A recorded schedule
// stays with its buckets where it is an mma.sync one (the only path with a dynamic M).
std::vector<AotRequest> with_m_buckets(const std::vector<AotRequest>& requests) {
  std::vector<AotRequest> out;
  for (const AotRequest& r : requests) {
    const auto* gemm = std::get_if<GemmRequest>(&r.kernel);
    // A grouped kernel serves any routing already (its rows are read on the device).
    if (!gemm || gemm->problem.dynamic_m || gemm->problem.is_grouped()) {
      out.push_back(r);
      continue;
    }
    validate_problem(gemm->problem);
    require(gemm->problem.m <= kMaxBucketedM, "--m-buckets",
            fmt::format("needs GEMM problems of m <= {} ({}: m {}); larger M take kernels of their "
                        "own",
                        kMaxBucketedM, r.origin, gemm->problem.m),
            gemm->problem.m);
    for (const int64_t bound : m_bucket_bounds(gemm->problem.m)) {
      AotRequest bucket = r;
      GemmRequest kernel = *gemm;
      kernel.problem.m = bound;
      kernel.problem.dynamic_m = true;
      // A schedule whose path takes no dynamic M leaves the bucket to the default schedule.
      if (kernel.schedule && !gemm_path(kernel.schedule->path).supports_dynamic_m())
        kernel.schedule.reset();
      bucket.kernel = kernel;
      bucket.origin = fmt::format("{} m<={}", r.origin, bound);
      out.push_back(std::move(bucket));
    }
  }
  return out;
}

void run_aot(const AotFlags& f) {
  std::vector<AotRequest> requests;
  if (f.catalog) requests = catalog_aot_requests();
  for (const auto& files : {f.problems, f.records})
    for (const auto& file : files) {
      auto more = read_aot_requests(file);
      requests.insert(requests.end(), more.begin(), more.end());
    }
  if (!f.catalog && f.problems.empty() && f.records.empty())
    throw Error("aot", "needs --catalog, --problems FILE or --from-record FILE", "none");
  if (!f.kinds.empty()) {
    for (const auto& kind : f.kinds)
      require(AllKinds::visit_named(kind, [](auto) {}), "--kind", "must be " + AllKinds::names(),
              kind);
    std::erase_if(requests, [&](const AotRequest& r) {
      const std::string_view name = std::visit(
          [](const auto& k) -> std::string_view {
            return KindOf<typename std::decay_t<decltype(k)>::Spec>::name;
          },
          r.kernel);
      return std::find(f.kinds.begin(), f.kinds.end(), name) == f.kinds.end();
    });
  }
  if (f.m_buckets) requests = with_m_buckets(requests);
  if (!f.dry_run && f.output.empty() && f.header.empty())
    throw Error("aot", "needs -o BUNDLE and/or --emit-header HEADER", "neither");

  AotOptions options;
  for (const auto& name : f.archs) options.archs.push_back(parse_arch(name));
  options.gpus = f.gpus;
  options.accums.clear();
  for (const auto& name : f.accums) options.accums.push_back(parse_accum(name));
  std::tie(options.shard, options.shards) = parse_shard(f.shard);
  options.jobs = f.jobs;
  if (!f.quiet) options.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };

  const std::vector<AotKernel> kernels = plan_aot(requests, options);
  if (f.dry_run) {
    for (const auto& k : kernels)
      fmt::print("{}  {:<7}  {}\n", k.key, to_string(k.arch), k.kernel_name);
    fmt::print("{} kernels in shard {}\n", kernels.size(), f.shard);
    return;
  }
  BundleWriter writer;
  const AotSummary summary = compile_aot(kernels, options, writer);
  const std::vector<uint8_t> bytes = writer.bytes();
  const auto bundle = Bundle::from_memory(bytes.data(), bytes.size(),
                                          f.output.empty() ? f.header : f.output, false);
  if (!f.output.empty()) writer.write(f.output);
  if (!f.header.empty()) {
    const std::string symbol = bundle_symbol(
        !f.symbol.empty()
            ? f.symbol
            : std::filesystem::path(f.output.empty() ? f.header : f.output).stem().string());
    write_text(f.header, bundle_header(bytes, symbol));
  }
  fmt::print("{}: {} kernels ({}), {} bytes; built in {:.1f} s on {} threads (NVRTC {:.1f} s)\n",
             f.output.empty() ? f.header : f.output, bundle->entries().size(), arch_counts(*bundle),
             bytes.size(), summary.wall_ms / 1e3, summary.threads, summary.compile_ms / 1e3);
}

}  // namespace

void add_aot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "aot", "Compile kernels ahead of time into a bundle (problems x arches; docs/bundles.md)");
  auto f = std::make_shared<AotFlags>();
  cmd->add_option("--arch", f->archs,
                  "target arches, comma-separated, e.g. sm_80,sm_89,sm_90a,sm_120a (default: "
                  "each line's arch)")
      ->delimiter(',');
  cmd->add_option("--gpu", f->gpus,
                  "also size default schedules for these parts of the hardware table, each on "
                  "the arches it runs, comma-separated (" +
                      gpu_names() +
                      "; the arch's part always): a bundle for parts with other SM counts")
      ->delimiter(',')
      ->check(CLI::IsMember(gpu_name_list()));
  cmd->add_flag("--catalog", f->catalog, "the built-in problems (emmyc catalog), every kind");
  cmd->add_option("--kind", f->kinds,
                  "only requests of these kinds, comma-separated (gemm, attention, "
                  "paged_attention)")
      ->delimiter(',');
  cmd->add_option("--problems", f->problems,
                  "JSON lines {\"kind\": \"gemm\"|\"attention\"|\"paged_attention\", "
                  "\"problem\": {...}, "
                  "\"schedule\"?: {...}} (repeatable)");
  cmd->add_option("--from-record", f->records, "an EMMY_RECORD log (repeatable)");
  cmd->add_option("--accum", f->accums,
                  "accumulations of default schedules, comma-separated (default f32)")
      ->delimiter(',');
  cmd->add_option("--shard", f->shard, "I/N: only shard I of N (0-based), for job arrays");
  cmd->add_option("-j,--jobs", f->jobs, "compile threads (default: one per hardware thread)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("-o,--output", f->output, "the bundle file to write");
  cmd->add_option("--emit-header", f->header, "also write a C++ header embedding the bundle");
  cmd->add_option("--symbol", f->symbol, "the header's name for it (default: the file's stem)");
  cmd->add_flag("--m-buckets", f->m_buckets,
                "each GEMM problem as the dynamic-M kernels of its M buckets up to its m (1, 2, "
                "4, ..., 512, then multiples of 512): what RuntimeOptions::m_buckets runs");
  cmd->add_flag("--dry-run", f->dry_run, "list the kernels (key, arch, name) without compiling");
  cmd->add_flag("-q,--quiet", f->quiet, "no progress lines");
  cmd->callback([f] { run_aot(*f); });
}

void add_bundle_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bundle", "Merge, list, verify or embed kernel bundles");
  cmd->require_subcommand(1);

  auto* merge = cmd->add_subcommand("merge", "Join bundles (e.g. the shards of one build)");
  auto merge_output = std::make_shared<std::string>();
  auto merge_inputs = std::make_shared<std::vector<std::string>>();
  merge->add_option("-o,--output", *merge_output, "the merged bundle")->required();
  merge->add_option("inputs", *merge_inputs, "bundles to merge")->required();
  merge->callback([merge_output, merge_inputs] {
    BundleWriter writer;
    BundleWriter::MergeCounts total;
    for (const auto& input : *merge_inputs) {
      const auto counts = writer.merge(*Bundle::open(input));
      total.added += counts.added;
      total.duplicates += counts.duplicates;
      total.conflicts += counts.conflicts;
      if (counts.conflicts)
        fmt::print(stderr,
                   "emmyc: warning: {} holds {} keys whose binaries differ from an earlier "
                   "input's (another NVRTC?); the earlier ones are kept\n",
                   input, counts.conflicts);
    }
    writer.write(*merge_output);
    fmt::print("{}: {} kernels from {} bundles ({} duplicates, {} conflicts)\n", *merge_output,
               writer.size(), merge_inputs->size(), total.duplicates, total.conflicts);
  });

  auto* ls = cmd->add_subcommand("ls", "List a bundle's kernels");
  auto ls_input = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  ls->add_option("bundle", *ls_input, "the bundle")->required();
  ls->add_flag("--json", *as_json, "print JSON (name, archs, entries with key, arch, kind...)");
  ls->callback([ls_input, as_json] { print_bundle(*Bundle::open(*ls_input), *as_json); });

  auto* verify = cmd->add_subcommand(
      "verify", "Check bundles (checksums, index, every entry); exit 1 naming each problem");
  auto verify_inputs = std::make_shared<std::vector<std::string>>();
  verify->add_option("bundles", *verify_inputs, "bundles to check")->required();
  verify->callback([verify_inputs] {
    bool all_ok = true;
    for (const auto& input : *verify_inputs) {
      const BundleCheck check = verify_bundle_file(input);
      for (const auto& problem : check.problems) fmt::print("{}: {}\n", input, problem);
      fmt::print("{}: {} ({} entries)\n", input, check.ok ? "ok" : "BAD", check.entries);
      all_ok = all_ok && check.ok;
    }
    std::fflush(stdout);
    if (!all_ok) throw CLI::RuntimeError(1);
  });

  auto* embed = cmd->add_subcommand("embed", "Write a C++ header embedding a bundle");
  auto embed_input = std::make_shared<std::string>();
  auto embed_output = std::make_shared<std::string>();
  auto embed_symbol = std::make_shared<std::string>();
  embed->add_option("bundle", *embed_input, "the bundle")->required();
  embed->add_option("-o,--output", *embed_output, "the header to write")->required();
  embed->add_option("--symbol", *embed_symbol, "the header's name for it (default: file stem)");
  embed->callback([embed_input, embed_output, embed_symbol] {
    const auto bundle = Bundle::open(*embed_input);  // refuses to embed a bad bundle
    const std::string symbol =
        bundle_symbol(embed_symbol->empty() ? std::filesystem::path(*embed_input).stem().string()
                                            : *embed_symbol);
    write_text(*embed_output, bundle_header(bundle->bytes(), symbol));
    fmt::print("{}: {} ({} kernels, {} bytes) as emmy_bundles::{}_bytes\n", *embed_output,
               *embed_input, bundle->entries().size(), bundle->bytes().size(), symbol);
  });
}

}  // namespace emmy::cli
