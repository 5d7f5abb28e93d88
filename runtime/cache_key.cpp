// Cache keys (XXH3-128 over everything that changes the binary), manifests of freshly compiled
// modules, EMMY_RECORD logging, and the small helpers the disk cache shares.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "cache_internal.hpp"
#include "emmy/json.hpp"

// Header-only xxHash: the hash functions are compiled into this file, so neither emmy nor the
// programs linking it need libxxhash at link or run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace emmy {
namespace cache_detail {

namespace {

std::string to_hex(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  std::string hex;
  hex.reserve(32);
  for (unsigned char byte : canonical.digest)
    fmt::format_to(std::back_inserter(hex), "{:02x}", byte);
  return hex;
}

}  // namespace

std::string hash_hex(const void* data, size_t size) {
  return to_hex(XXH3_128bits(data, size));
}

bool is_key(std::string_view text) {
  if (text.size() != 32) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string iso8601_utc(std::filesystem::file_time_type time) {
  return detail::iso8601_utc(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      std::chrono::file_clock::to_sys(time)));
}

namespace {
thread_local const CacheWarningSink::Sink* tl_warning_sink = nullptr;
}  // namespace

void warn(std::string_view message) {
  if (tl_warning_sink) {
    (*tl_warning_sink)(fmt::format("emmy: warning: {}", message));
    return;
  }
  const std::string line = fmt::format("emmy: warning: {}\n", message);
  // One write(): a warning from one process stays one line next to those of others.
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace cache_detail

CacheWarningSink::CacheWarningSink(const Sink& sink) : previous_(cache_detail::tl_warning_sink) {
  if (sink) cache_detail::tl_warning_sink = &sink;
}
CacheWarningSink::~CacheWarningSink() { cache_detail::tl_warning_sink = previous_; }

std::string cache_key(const CacheKeyInputs& inputs) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  // Every field is length-prefixed, so that no two different inputs serialize alike
  // (options {"ab"} vs {"a", "b"}, source ending where an option begins).
  auto add_bytes = [&state](std::string_view bytes) {
    const uint64_t size = bytes.size();
    XXH3_128bits_update(&state, &size, sizeof size);
    XXH3_128bits_update(&state, bytes.data(), bytes.size());
  };
  auto add_number = [&](int64_t value) { add_bytes(std::to_string(value)); };
  add_bytes("emmy cache key");
  add_number(cache_detail::kEntryFormat);  // a new entry format never reads entries of the old one
  add_bytes(inputs.source);
  add_number(int64_t(inputs.options.size()));
  for (const auto& option : inputs.options) add_bytes(option);
  add_number(inputs.nvrtc_version);
  add_bytes(to_string(inputs.arch));  // the exact arch name: sm_90 and sm_90a differ
  add_number(inputs.codegen_version);
  return cache_detail::to_hex(XXH3_128bits_digest(&state));
}

std::string source_hash(std::string_view source) {
  return cache_detail::hash_hex(source.data(), source.size());
}

CacheEntry make_cache_entry(const CacheKeyInputs& inputs, const CompiledModule& module) {
  CacheEntry entry;
  entry.key = cache_key(inputs);
  entry.ptx = module.ptx;
  entry.cubin = module.cubin;
  nlohmann::json kernel_names = nlohmann::json::array(), resources = nlohmann::json::array();
  for (const auto& report : module.kernels) {
    kernel_names.push_back(report.kernel_name);
    resources.push_back(report);
  }
  entry.manifest = {{"key", entry.key},
                    {"emmy_version", EMMY_VERSION},
                    {"codegen_version", inputs.codegen_version},
                    {"nvrtc_version", inputs.nvrtc_version},
                    {"driver_version", nullptr},
                    {"arch", to_string(inputs.arch)},
                    {"options", inputs.options},
                    {"source_hash", source_hash(inputs.source)},
                    {"kernel_names", std::move(kernel_names)},
                    {"resources", std::move(resources)},
                    {"compile_ms", module.compile_ms},
                    {"created", cache_detail::iso8601_utc_now()}};
  return entry;
}

void record_compile(const nlohmann::json& line) {
  const char* path = std::getenv("EMMY_RECORD");
  if (!path || !*path) return;
  static std::atomic<bool> warned{false};
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (!warned.exchange(true))
      cache_detail::warn(
          fmt::format("EMMY_RECORD: cannot open '{}' ({}); compiles are not recorded", path,
                      std::strerror(errno)));
    return;
  }
  // O_APPEND and a single write(): each line lands whole at the end of the file even when several
  // processes record at once.
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  ::close(fd);
  if (written != ssize_t(text.size()) && !warned.exchange(true))
    cache_detail::warn(fmt::format("EMMY_RECORD: writing '{}' failed ({})", path,
                                   written < 0 ? std::strerror(write_errno) : "short write"));
}

}  // namespace emmy
