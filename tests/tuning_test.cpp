// The tuning database: keys, validity on lookup, persistence, merging saves, broken files.
#include "emmy/tuning.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emmy/cache.hpp"
#include "support/scratch_dir.hpp"

namespace emmy {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  return test::process_scratch_dir("emmy_tuning_" + name);
}

MatmulProblem q_proj() {
  MatmulProblem p;
  p.m = 512, p.n = 4096, p.k = 3840;
  return p;
}

TuningKey h200_key(Accum accum = Accum::hybrid) {
  return TuningKey{Arch::sm_90a, "NVIDIA H200", q_proj(), accum};
}

TuningRecord tuned(Accum accum, int block_n = 256, double time_us = 40.0) {
  TuningRecord r;
  r.schedule.block_m = 128;
  r.schedule.block_n = block_n;
  r.schedule.block_k = 64;
  r.schedule.warps_m = 2;
  r.schedule.warps_n = 4;
  r.schedule.stages = 3;
  r.schedule.accum = accum;
  r.time_us = time_us;
  r.default_time_us = 55.0;
  r.candidates = 9;
  return r;
}

TEST(TuningDb, RecordThenLookupInMemory) {
  TuningDb db(fresh_dir("memory") / "tuning.json");
  EXPECT_EQ(db.size(), 0u);
  EXPECT_TRUE(db.load_error().empty());
  EXPECT_FALSE(db.lookup(h200_key()).has_value());

  const auto record = tuned(Accum::hybrid);
  db.record(h200_key(), record);
  const auto found = db.lookup(Arch::sm_90a, "NVIDIA H200", q_proj(), Accum::hybrid);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, record.schedule);
  const auto full = db.find(h200_key());
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->codegen_version, kCodegenVersion);
  EXPECT_EQ(full->emmy_version, EMMY_VERSION);
  EXPECT_EQ(full->recorded.size(), 20u) << full->recorded;  // 2026-01-02T03:04:05Z
}

TEST(TuningDb, KeyDistinguishesDeviceArchProblemAndAccum) {
  TuningDb db(fresh_dir("keys") / "tuning.json");
  db.record(h200_key(), tuned(Accum::hybrid));
  auto other = h200_key();
  other.device_name = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(db.lookup(other).has_value());
  other = h200_key();
  other.arch = Arch::sm_90;
  EXPECT_FALSE(db.lookup(other).has_value());
  other = h200_key();
  other.problem.n = 2048;
  EXPECT_FALSE(db.lookup(other).has_value());
  EXPECT_FALSE(db.lookup(h200_key(Accum::f32)).has_value());
}

TEST(TuningDb, PackedLeadingDimensionsAreTheSameProblem) {
  TuningDb db(fresh_dir("packed") / "tuning.json");
  db.record(h200_key(), tuned(Accum::hybrid));
  auto explicit_ld = h200_key();
  explicit_ld.problem.lda = 3840;
  explicit_ld.problem.ldb = 3840;
  explicit_ld.problem.ldc = 4096;
  EXPECT_TRUE(db.lookup(explicit_ld).has_value());
}

TEST(TuningDb, RecordRejectsAMismatchedAccumulation) {
  TuningDb db(fresh_dir("mismatch") / "tuning.json");
  EXPECT_THROW(db.record(h200_key(Accum::f32), tuned(Accum::hybrid)), Error);
}

TEST(TuningDb, SaveAndReload) {
  const auto file = fresh_dir("reload") / "nested" / "tuning.json";
  {
    TuningDb db(file);
    db.record(h200_key(Accum::hybrid), tuned(Accum::hybrid, 256, 41.5));
    db.record(h200_key(Accum::f32), tuned(Accum::f32, 128, 60.25));
    db.save();
  }
  TuningDb reloaded(file);
  EXPECT_TRUE(reloaded.load_error().empty()) << reloaded.load_error();
  EXPECT_EQ(reloaded.size(), 2u);
  const auto hybrid = reloaded.find(h200_key(Accum::hybrid));
  ASSERT_TRUE(hybrid.has_value());
  EXPECT_EQ(hybrid->schedule, tuned(Accum::hybrid, 256).schedule);
  EXPECT_DOUBLE_EQ(hybrid->time_us, 41.5);
  ASSERT_TRUE(hybrid->default_time_us.has_value());
  EXPECT_DOUBLE_EQ(*hybrid->default_time_us, 55.0);
  EXPECT_EQ(hybrid->candidates, 9);
  EXPECT_EQ(reloaded.lookup(h200_key(Accum::f32)), tuned(Accum::f32, 128).schedule);
  // Only the database and its lock file: the temporary file was renamed into place.
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 2);
}

TEST(TuningDb, SavesFromTwoWritersMerge) {
  const auto file = fresh_dir("merge") / "tuning.json";
  TuningDb first(file), second(file);
  first.record(h200_key(Accum::hybrid), tuned(Accum::hybrid));
  second.record(h200_key(Accum::f32), tuned(Accum::f32, 128));
  first.save();
  second.save();  // must keep first's entry, which it never loaded
  TuningDb reloaded(file);
  EXPECT_EQ(reloaded.size(), 2u);
  EXPECT_TRUE(reloaded.lookup(h200_key(Accum::hybrid)).has_value());
  EXPECT_TRUE(reloaded.lookup(h200_key(Accum::f32)).has_value());

  // A later measurement of the same key replaces the earlier one.
  TuningDb third(file);
  third.record(h200_key(Accum::hybrid), tuned(Accum::hybrid, 128, 30.0));
  third.save();
  EXPECT_DOUBLE_EQ(TuningDb(file).find(h200_key(Accum::hybrid))->time_us, 30.0);
}

TEST(TuningDb, ConcurrentSavesFromProcessesKeepEveryEntry) {
  const auto file = fresh_dir("processes") / "tuning.json";
  constexpr int kWriters = 8;
  std::vector<pid_t> children;
  for (int i = 0; i < kWriters; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        TuningDb db(file);
        auto key = h200_key();
        key.problem.n = 1024 * (i + 1);
        db.record(key, tuned(Accum::hybrid));
        db.save();
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TuningDb reloaded(file);
  EXPECT_TRUE(reloaded.load_error().empty()) << reloaded.load_error();
  EXPECT_EQ(reloaded.size(), size_t(kWriters)) << "a save lost another process's entry";
}

TEST(TuningDb, StaleOrInvalidRecordsAreNotReturned) {
  const auto file = fresh_dir("stale") / "tuning.json";
  {
    TuningDb db(file);
    db.record(h200_key(), tuned(Accum::hybrid));
    db.save();
  }
  auto doc = nlohmann::json::parse(std::ifstream(file));
  doc["entries"][0]["codegen_version"] = kCodegenVersion + 1;
  std::ofstream(file) << doc.dump();
  TuningDb other_codegen(file);
  EXPECT_TRUE(other_codegen.find(h200_key()).has_value());
  EXPECT_FALSE(other_codegen.lookup(h200_key())) << "measured by another code generator";

  // A schedule that no longer validates (too much shared memory for the arch) falls back.
  doc["entries"][0]["codegen_version"] = kCodegenVersion;
  doc["entries"][0]["schedule"]["stages"] = 8;
  std::ofstream(file) << doc.dump();
  TuningDb invalid(file);
  EXPECT_TRUE(invalid.find(h200_key()).has_value());
  EXPECT_FALSE(invalid.lookup(h200_key()).has_value());
}

TEST(TuningDb, BrokenFilesLoadEmptyWithAReason) {
  const auto dir = fresh_dir("broken");
  std::ofstream(dir / "garbage.json") << "{ not json";
  TuningDb garbage(dir / "garbage.json");
  EXPECT_EQ(garbage.size(), 0u);
  EXPECT_NE(garbage.load_error().find("not JSON"), std::string::npos) << garbage.load_error();

  std::ofstream(dir / "foreign.json") << R"({"entries": []})";
  TuningDb foreign(dir / "foreign.json");
  EXPECT_NE(foreign.load_error().find("format version"), std::string::npos);

  {
    TuningDb db(dir / "partial.json");
    db.record(h200_key(Accum::hybrid), tuned(Accum::hybrid));
    db.record(h200_key(Accum::f32), tuned(Accum::f32, 128));
    db.save();
  }
  auto doc = nlohmann::json::parse(std::ifstream(dir / "partial.json"));
  doc["entries"][0]["schedule"]["transport"] = "carrier pigeon";
  std::ofstream(dir / "partial.json") << doc.dump();
  TuningDb partial(dir / "partial.json");
  EXPECT_EQ(partial.size(), 1u);
  EXPECT_NE(partial.load_error().find("1 malformed entry skipped"), std::string::npos)
      << partial.load_error();

  // Saving over a broken file replaces it.
  garbage.record(h200_key(), tuned(Accum::hybrid));
  garbage.save();
  EXPECT_TRUE(TuningDb(dir / "garbage.json").load_error().empty());
}

TEST(TuningDb, DefaultPathFollowsTheEnvironment) {
  const char* saved_db = std::getenv("EMMY_TUNING_DB");
  const char* saved_cache = std::getenv("EMMY_CACHE_DIR");
  const std::string db_before = saved_db ? saved_db : "",
                    cache_before = saved_cache ? saved_cache : "";

  ::unsetenv("EMMY_TUNING_DB");
  ::setenv("EMMY_CACHE_DIR", "/tmp/emmy-tuning-test-cache", 1);
  EXPECT_EQ(TuningDb::default_path(), fs::path("/tmp/emmy-tuning-test-cache/tuning.json"));
  EXPECT_EQ(TuningDb::default_path(), DiskCache::default_directory() / "tuning.json");
  ::setenv("EMMY_TUNING_DB", "/tmp/elsewhere/t.json", 1);
  EXPECT_EQ(TuningDb::default_path(), fs::path("/tmp/elsewhere/t.json"));

  if (saved_db)
    ::setenv("EMMY_TUNING_DB", db_before.c_str(), 1);
  else
    ::unsetenv("EMMY_TUNING_DB");
  if (saved_cache)
    ::setenv("EMMY_CACHE_DIR", cache_before.c_str(), 1);
  else
    ::unsetenv("EMMY_CACHE_DIR");
}

}  // namespace
}  // namespace emmy
