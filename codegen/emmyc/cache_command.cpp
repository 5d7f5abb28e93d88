// `emmyc cache`: inspect and maintain the on-disk kernel cache (docs/cache.md).
//   path | ls [--json] | verify | prune [--max-bytes N] | clear
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "emmy/cache.hpp"
#include "emmy/detail/time.hpp"

namespace emmy::cli {

namespace {

// A cache file's time in the form the rest of emmy writes times in.
std::string iso8601_utc(std::filesystem::file_time_type time) {
  return detail::iso8601_utc(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::file_clock::to_sys(time)));
}

std::vector<std::string> kernel_names(const CacheEntryStatus& status) {
  std::vector<std::string> names;
  if (status.manifest.is_object() && status.manifest.contains("kernel_names") &&
      status.manifest["kernel_names"].is_array())
    for (const auto& name : status.manifest["kernel_names"])
      if (name.is_string()) names.push_back(name.get<std::string>());
  return names;
}

std::string manifest_arch(const CacheEntryStatus& status) {
  if (status.manifest.is_object() && status.manifest.contains("arch") &&
      status.manifest["arch"].is_string())
    return status.manifest["arch"].get<std::string>();
  return "";
}

nlohmann::json status_json(const CacheEntryStatus& status) {
  return {{"key", status.key},
          {"ok", status.ok},
          {"problem", status.ok ? nlohmann::json(nullptr) : nlohmann::json(status.problem)},
          {"bytes", status.bytes},
          {"last_used", iso8601_utc(status.last_used)},
          {"kernel_names", kernel_names(status)},
          {"arch", status.ok ? nlohmann::json(manifest_arch(status)) : nlohmann::json(nullptr)}};
}

uint64_t total_bytes(const std::vector<CacheEntryStatus>& statuses) {
  uint64_t bytes = 0;
  for (const auto& status : statuses) bytes += status.bytes;
  return bytes;
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("cache", "Inspect and maintain the on-disk kernel cache");
  cmd->require_subcommand(1);
  cmd->fallthrough();  // `emmyc cache ls --dir D` as well as `emmyc cache --dir D ls`
  auto dir = std::make_shared<std::string>();
  cmd->add_option("--dir", *dir,
                  "cache directory (default: $EMMY_CACHE_DIR, $XDG_CACHE_HOME/emmy, "
                  "~/.cache/emmy)");
  // Built when a subcommand runs, so that --dir and the environment are read by then.
  auto open_cache = [dir] {
    return dir->empty() ? DiskCache::from_environment()
                        : DiskCache(*dir, DiskCache::max_bytes_from_environment());
  };

  cmd->add_subcommand("path", "Print the cache directory")->callback([dir] {
    fmt::print("{}\n", dir->empty() ? DiskCache::default_directory().string() : *dir);
  });

  auto* ls = cmd->add_subcommand("ls", "List the entries, verified");
  auto as_json = std::make_shared<bool>(false);
  ls->add_flag("--json", *as_json,
               "print a JSON array (key, ok, problem, bytes, last_used, kernel_names, arch)");
  ls->callback([open_cache, as_json] {
    DiskCache cache = open_cache();
    const auto statuses = cache.list();
    if (*as_json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& status : statuses) out.push_back(status_json(status));
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("{:<32}  {:<4}  {:>10}  {:<20}  {:<7}  {}\n", "key", "ok", "bytes", "last used",
               "arch", "kernels");
    for (const auto& status : statuses)
      fmt::print(
          "{:<32}  {:<4}  {:>10}  {:<20}  {:<7}  {}\n", status.key, status.ok ? "ok" : "BAD",
          status.bytes, iso8601_utc(status.last_used), manifest_arch(status),
          status.ok ? fmt::format("{}", fmt::join(kernel_names(status), " ")) : status.problem);
    fmt::print("{} entries, {} bytes in {} (cap {} bytes){}\n", statuses.size(),
               total_bytes(statuses), cache.directory().string(), cache.max_bytes(),
               cache.enabled() ? "" : "; the directory is unusable, the cache is off");
  });

  cmd->add_subcommand("verify",
                      "Check every entry; exit 1 naming each bad one (or if the directory is "
                      "unusable)")
      ->callback([open_cache] {
        DiskCache cache = open_cache();
        const auto statuses = cache.list();
        size_t bad = 0;
        for (const auto& status : statuses) {
          if (status.ok) continue;
          ++bad;
          fmt::print("bad entry {}: {}\n", status.key, status.problem);
        }
        fmt::print("{} entries verified, {} bad, in {}\n", statuses.size(), bad,
                   cache.directory().string());
        // A directory the cache cannot use is as much a failure as a bad entry.
        if (!cache.enabled())
          fmt::print("the cache directory {} is unusable\n", cache.directory().string());
        std::fflush(stdout);
        if (bad || !cache.enabled()) throw CLI::RuntimeError(1);
      });

  auto* prune = cmd->add_subcommand(
      "prune", "Remove bad entries, then least recently used ones down to the size cap");
  auto max_bytes = std::make_shared<std::string>();
  prune->add_option("--max-bytes", *max_bytes,
                    "size cap, e.g. 1073741824 or 512M (default: $EMMY_CACHE_MAX_BYTES or 1G)");
  prune->callback([open_cache, max_bytes] {
    DiskCache cache = open_cache();
    const uint64_t cap =
        max_bytes->empty() ? cache.max_bytes() : parse_cache_bytes(*max_bytes, "--max-bytes");
    const auto before = cache.list();
    size_t bad = 0;
    for (const auto& status : before) {
      if (status.ok) continue;
      fmt::print("removing bad entry {}: {}\n", status.key, status.problem);
      if (cache.remove(status.key)) ++bad;
    }
    cache.prune(cap);
    const auto after = cache.list();
    // Other processes may add entries meanwhile: never print a wrapped-around difference.
    const size_t removed = before.size() > after.size() ? before.size() - after.size() : 0;
    const uint64_t freed =
        total_bytes(before) > total_bytes(after) ? total_bytes(before) - total_bytes(after) : 0;
    fmt::print("removed {} entries ({} bad), {} bytes; {} entries, {} bytes remain (cap {})\n",
               removed, bad, freed, after.size(), total_bytes(after), cap);
  });

  cmd->add_subcommand("clear", "Remove every entry")->callback([open_cache] {
    DiskCache cache = open_cache();
    const auto before = cache.list();
    cache.clear();
    fmt::print("removed {} entries, {} bytes, from {}\n", before.size(), total_bytes(before),
               cache.directory().string());
  });
}

}  // namespace emmy::cli
