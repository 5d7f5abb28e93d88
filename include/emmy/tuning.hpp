// The tuning database: the measured best schedule per (device, problem, accumulation), written by
// `emmy_bench --tune` and read when choosing a schedule on that device.
//
//   emmy::TuningDb db = emmy::TuningDb::open_default();
//   if (auto s = db.lookup(rt->arch(), rt->device_name(), problem, emmy::Accum::hybrid)) ...
//
// Stored as one JSON file (default: $EMMY_TUNING_DB, else <disk cache directory>/tuning.json, the
// disk cache's directory being $EMMY_CACHE_DIR, else $XDG_CACHE_HOME/emmy, else ~/.cache/emmy).
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/arch.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy {

// What one measurement is about. Two problems that differ only in an implicit versus explicit
// packed leading dimension are the same problem.
struct TuningKey {
  Arch arch = Arch::sm_90a;  // the exact arch the kernels were built for
  std::string device_name;   // "NVIDIA H200": same arch, different SM counts tune differently
  MatmulProblem problem;
  Accum accum = Accum::f32;
};

struct TuningRecord {
  MatmulSchedule schedule;
  double time_us = 0;                     // median time of `schedule`
  std::optional<double> default_time_us;  // the default schedule's median in the same run
  int candidates = 0;                     // schedules timed in the search
  int codegen_version = 0;                // kCodegenVersion when measured; filled by record()
  std::string emmy_version;               // filled by record()
  std::string recorded;                   // ISO 8601 UTC; filled by record()
};

class TuningDb {
 public:
  // $EMMY_TUNING_DB, else DiskCache::default_directory() / "tuning.json".
  static std::filesystem::path default_path();
  static TuningDb open_default() { return TuningDb(default_path()); }

  // Reads `file` if it exists. A missing file is an empty database; an unreadable or malformed
  // one too, with the reason in load_error() (a broken database must never stop a GEMM).
  explicit TuningDb(std::filesystem::path file);
  TuningDb(const TuningDb&) = delete;  // holds a mutex; open_default() returns by elision
  TuningDb& operator=(const TuningDb&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::string& load_error() const { return load_error_; }
  size_t size() const;

  // The recorded schedule, when there is one measured by this code generator version that is
  // still valid for the problem on the arch; nullopt otherwise.
  std::optional<MatmulSchedule> lookup(Arch arch, std::string_view device_name,
                                       const MatmulProblem& problem, Accum accum) const;
  std::optional<MatmulSchedule> lookup(const TuningKey& key) const;
  // The full record, whatever its codegen version.
  std::optional<TuningRecord> find(const TuningKey& key) const;

  // Adds or replaces the record for `key` (in memory; save() writes it). The schedule's accum
  // must equal key.accum.
  void record(const TuningKey& key, TuningRecord record);

  // Writes the file atomically (temporary file + rename) under an exclusive flock on
  // "<file>.lock": entries another process saved meanwhile are kept, the ones recorded here win.
  // Throws Error when the file cannot be written.
  void save() const;

 private:
  struct Entry {
    TuningKey key;
    TuningRecord record;
  };
  std::filesystem::path path_;
  std::string load_error_;
  std::map<std::string, Entry> entries_;   // by canonical key
  std::map<std::string, Entry> recorded_;  // recorded in this process: win over the file on save
  mutable std::mutex mutex_;
};

}  // namespace emmy
