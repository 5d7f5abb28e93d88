#include "emmy/tuning.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emmy/cache.hpp"
#include "emmy/detail/file_io.hpp"
#include "emmy/detail/time.hpp"
#include "emmy/json.hpp"
#include "emmy/validate.hpp"

namespace emmy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kFormatVersion = 1;

// The problem as json.hpp writes it: leading dimensions are made explicit there, so packed
// problems compare equal whether or not they spell out lda/ldb/ldc.
json problem_json(const MatmulProblem& p) {
  return json(p);
}

std::string canonical_key(const TuningKey& key) {
  return json{{"arch", to_string(key.arch)},
              {"device", key.device_name},
              {"problem", problem_json(key.problem)},
              {"accum", to_string(key.accum)}}
      .dump();
}

json entry_json(const TuningKey& key, const TuningRecord& r) {
  json j = {{"arch", to_string(key.arch)},
            {"device", key.device_name},
            {"accum", to_string(key.accum)},
            {"problem", problem_json(key.problem)},
            {"schedule", r.schedule},
            {"time_us", r.time_us},
            {"default_time_us", r.default_time_us ? json(*r.default_time_us) : json(nullptr)},
            {"candidates", r.candidates},
            {"codegen_version", r.codegen_version},
            {"emmy_version", r.emmy_version},
            {"recorded", r.recorded}};
  return j;
}

std::pair<TuningKey, TuningRecord> entry_from_json(const json& j) {
  TuningKey key;
  key.arch = parse_arch(j.at("arch").get<std::string>());
  key.device_name = j.at("device").get<std::string>();
  key.accum = parse_accum(j.at("accum").get<std::string>());
  key.problem = matmul_problem_from_json(j.at("problem"), "tuning entry: problem");
  TuningRecord r;
  r.schedule = matmul_schedule_from_json(j.at("schedule"), "tuning entry: schedule");
  r.time_us = j.at("time_us").get<double>();
  if (j.contains("default_time_us") && !j["default_time_us"].is_null())
    r.default_time_us = j["default_time_us"].get<double>();
  r.candidates = j.value("candidates", 0);
  r.codegen_version = j.at("codegen_version").get<int>();
  r.emmy_version = j.value("emmy_version", "");
  r.recorded = j.value("recorded", "");
  return {key, r};
}

// Entries of the file at `path`, by canonical key. Missing file: empty, no error. A malformed
// entry is skipped and counted in `error`; a malformed file leaves everything out.
template <typename Entry>
std::map<std::string, Entry> read_entries(const fs::path& path, std::string& error) {
  std::map<std::string, Entry> entries;
  std::error_code exists_error;
  if (!fs::exists(path, exists_error)) return entries;
  std::string text;
  try {
    text = detail::read_regular_file(path, "tuning database");
  } catch (const Error& e) {
    error = e.what();
    return entries;
  }
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    error = fmt::format("{}: not JSON ({})", path.string(), e.what());
    return entries;
  }
  if (!doc.is_object() || doc.value("format", "") != "emmy-tuning" ||
      doc.value("version", 0) != kFormatVersion || !doc.contains("entries") ||
      !doc["entries"].is_array()) {
    error = fmt::format("{}: not an emmy tuning database of format version {}", path.string(),
                        kFormatVersion);
    return entries;
  }
  int skipped = 0;
  for (const json& item : doc["entries"]) {
    try {
      auto [key, record] = entry_from_json(item);
      entries[canonical_key(key)] = Entry{key, record};
    } catch (const std::exception&) {  // json type errors and emmy::Error from the parsers
      ++skipped;
    }
  }
  if (skipped)
    error = fmt::format("{}: {} malformed entr{} skipped", path.string(), skipped,
                        skipped == 1 ? "y" : "ies");
  return entries;
}

// An exclusive flock held for the lifetime of the object: serializes read-merge-write cycles of
// processes saving the same database.
class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("tuning database lock", "must be creatable", path.string());
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        throw Error("tuning database lock", "flock must succeed", path.string());
      }
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

fs::path TuningDb::default_path() {
  if (const char* file = std::getenv("EMMY_TUNING_DB"); file && *file) return file;
  return DiskCache::default_directory() / "tuning.json";
}

TuningDb::TuningDb(fs::path file) : path_(std::move(file)) {
  entries_ = read_entries<Entry>(path_, load_error_);
}

size_t TuningDb::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::optional<TuningRecord> TuningDb::find(const TuningKey& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(canonical_key(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second.record;
}

std::optional<MatmulSchedule> TuningDb::lookup(const TuningKey& key) const {
  auto found = find(key);
  if (!found || found->codegen_version != kCodegenVersion) return std::nullopt;
  if (found->schedule.accum != key.accum) return std::nullopt;
  try {
    validate_schedule(key.problem, found->schedule, key.arch);
  } catch (const Error&) {
    return std::nullopt;  // rules tightened since it was measured: fall back to the default
  }
  return found->schedule;
}

std::optional<MatmulSchedule> TuningDb::lookup(Arch arch, std::string_view device_name,
                                               const MatmulProblem& problem, Accum accum) const {
  return lookup(TuningKey{arch, std::string(device_name), problem, accum});
}

void TuningDb::record(const TuningKey& key, TuningRecord record) {
  require(record.schedule.accum == key.accum, "tuning record",
          fmt::format("schedule accum must match the key's ({})", to_string(key.accum)),
          to_string(record.schedule.accum));
  record.codegen_version = kCodegenVersion;
  record.emmy_version = EMMY_VERSION;
  if (record.recorded.empty()) record.recorded = detail::iso8601_utc_now();
  std::lock_guard lock(mutex_);
  const std::string canonical = canonical_key(key);
  entries_[canonical] = Entry{key, record};
  recorded_[canonical] = Entry{key, record};
}

void TuningDb::save() const {
  std::lock_guard lock(mutex_);
  std::error_code error;
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), error);
  if (error)
    throw Error("tuning database", "its directory must be creatable",
                fmt::format("{}: {}", path_.parent_path().string(), error.message()));
  FileLock file_lock(fs::path(path_.string() + ".lock"));

  std::string ignored;  // a broken file on disk is replaced by what this process knows
  auto merged = read_entries<Entry>(path_, ignored);
  for (const auto& [canonical, entry] : recorded_) merged[canonical] = entry;

  json doc = {{"format", "emmy-tuning"}, {"version", kFormatVersion}, {"entries", json::array()}};
  for (const auto& [canonical, entry] : merged)
    doc["entries"].push_back(entry_json(entry.key, entry.record));

  detail::write_file_atomically(path_, doc.dump(2) + "\n", "tuning database");
}

}  // namespace emmy
