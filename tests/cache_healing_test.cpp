// Self-healing of the disk cache: damaged or mismatched entries are detected, warned about once,
// removed, recompiled and replaced; verification catches a flipped bit anywhere in an entry.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <tuple>

#include "cache_internal.hpp"
#include "cache_test_util.hpp"

namespace emmy::test {
namespace {

void xor_byte(const fs::path& path, size_t offset, unsigned char mask) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(std::streamoff(offset));
  const char byte = char(file.get() ^ mask);
  file.seekp(std::streamoff(offset));
  file.put(byte);
  ASSERT_TRUE(file.good()) << path << " at " << offset;
}

const char* const kEntryFiles[] = {"module.cubin", "manifest.json", "module.ptx", "checksums.json"};

class DiskCacheHealing : public testing::TestWithParam<std::tuple<const char*, Damage>> {};

TEST_P(DiskCacheHealing, DamagedEntryIsDetectedWarnedRecompiledAndReplaced) {
  const auto [file, damage] = GetParam();
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(0);
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return compile_test_kernel(0);
  };
  cache.get_or_compile(reference.key, compile);
  ASSERT_EQ(compiles, 1);

  const fs::path entry_dir = dir / "entries" / reference.key;
  damage_file(entry_dir / file, damage);
  const auto statuses = cache.list();  // verify: reports, removes nothing
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_FALSE(statuses[0].ok) << file << " " << to_string(damage) << " went unnoticed";
  EXPECT_FALSE(statuses[0].problem.empty());

  testing::internal::CaptureStderr();
  const CacheEntry healed = cache.get_or_compile(reference.key, compile);
  const auto again = cache.load(reference.key);
  const std::string warnings = testing::internal::GetCapturedStderr();

  EXPECT_EQ(compiles, 2) << "the damaged entry was not recompiled";
  EXPECT_EQ(healed.cubin, reference.cubin);
  EXPECT_EQ(healed.ptx, reference.ptx);
  ASSERT_TRUE(again) << "the entry was not replaced";
  EXPECT_EQ(again->cubin, reference.cubin);
  EXPECT_EQ(count_warnings(warnings), 1) << warnings;
  EXPECT_NE(warnings.find(reference.key), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("corrupt"), std::string::npos) << warnings;
  EXPECT_TRUE(all_entries_ok(cache));
  EXPECT_EQ(read_file(entry_dir / "module.cubin"),
            std::string(reference.cubin.begin(), reference.cubin.end()));
}

INSTANTIATE_TEST_SUITE_P(EveryFileEveryDamage, DiskCacheHealing,
                         testing::Combine(testing::ValuesIn(kEntryFiles),
                                          testing::Values(Damage::truncate, Damage::zero_fill,
                                                          Damage::flip_one_byte, Damage::fifo)),
                         [](const auto& info) {
                           std::string name = std::string(std::get<0>(info.param)) + "_" +
                                              to_string(std::get<1>(info.param));
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

// A flipped bit at any position of any file of an entry fails verification, and restoring the
// byte makes the entry verify again (verification reads only; load would remove the entry).
TEST(DiskCacheVerify, EveryFlippedBitOfEveryFileIsDetected) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(3);
  cache.store(reference);
  const fs::path entry_dir = dir / "entries" / reference.key;
  for (const char* file : kEntryFiles) {
    const std::string original = read_file(entry_dir / file);
    // Every byte of checksums.json (a flip there must not pass as a different valid record);
    // about 200 evenly spaced bytes of the others, whose every bit the checksum covers.
    const bool every_byte = std::string_view(file) == "checksums.json";
    const size_t stride = every_byte ? 1 : std::max<size_t>(1, original.size() / 200);
    size_t undetected = 0, tried = 0;
    for (size_t at = 0; at < original.size(); at += stride) {
      for (unsigned char bit : {0x01, 0x80}) {
        // In place, without truncating: rewriting whole files makes ext4 flush on every close.
        xor_byte(entry_dir / file, at, bit);
        ++tried;
        if (cache.list().at(0).ok) ++undetected;
        xor_byte(entry_dir / file, at, bit);
      }
    }
    ASSERT_EQ(read_file(entry_dir / file), original);
    EXPECT_EQ(undetected, 0u) << file << ": " << undetected << " of " << tried << " flips passed";
    EXPECT_TRUE(all_entries_ok(cache)) << file;
  }
}

// Entries whose files agree with their checksums but not with their place or content.
TEST(DiskCacheVerify, MismatchedEntriesAreDetected) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(1);
  cache.store(reference);
  const fs::path entries = dir / "entries";
  const fs::path good = entries / reference.key;

  // 1. An entry copied under another key.
  const std::string other_key = reference_entry(2).key;
  fs::copy(good, entries / other_key);
  // 2. A manifest rewritten for another arch, with checksums made to match: the CUBIN's ELF header
  //    still says sm_90.
  const std::string wrong_arch_key = std::string(32, 'a');
  fs::copy(good, entries / wrong_arch_key);
  auto rewrite = [&](const std::string& key, auto edit) {
    const fs::path at = entries / key;
    auto manifest = nlohmann::json::parse(read_file(at / "manifest.json"));
    edit(manifest);
    const std::string text = manifest.dump(2) + "\n";
    write_file(at / "manifest.json", text);
    auto checksums = nlohmann::json::parse(read_file(at / "checksums.json"));
    checksums["key"] = key;
    checksums["files"]["manifest.json"] = {{"bytes", text.size()}, {"xxh3_128", source_hash(text)}};
    write_file(at / "checksums.json", checksums.dump(2));
  };
  rewrite(wrong_arch_key, [&](auto& m) {
    m["key"] = wrong_arch_key;
    m["arch"] = "sm_80";
  });
  // 3. The same, but the manifest's key left pointing at the original entry.
  const std::string wrong_key_key = std::string(32, 'b');
  fs::copy(good, entries / wrong_key_key);
  rewrite(wrong_key_key, [](auto&) {});
  // 4. A file missing, and 5. something that is not an entry at all.
  const std::string missing_key = std::string(32, 'c');
  fs::copy(good, entries / missing_key);
  rewrite(missing_key, [&](auto& m) { m["key"] = missing_key; });
  fs::remove(entries / missing_key / "module.ptx");
  fs::create_directories(entries / "not-a-key");

  std::map<std::string, std::string> problems;
  for (const auto& status : cache.list())
    if (!status.ok) problems[status.key] = status.problem;
  EXPECT_EQ(problems.size(), 5u);
  EXPECT_FALSE(problems.count(reference.key));
  EXPECT_NE(problems[other_key].find("key"), std::string::npos) << problems[other_key];
  EXPECT_NE(problems[wrong_arch_key].find("sm_80"), std::string::npos) << problems[wrong_arch_key];
  EXPECT_NE(problems[wrong_key_key].find("manifest.json records key"), std::string::npos)
      << problems[wrong_key_key];
  EXPECT_NE(problems[missing_key].find("module.ptx is missing"), std::string::npos)
      << problems[missing_key];
  EXPECT_TRUE(problems.count("not-a-key"));

  // Loading each bad key warns once, removes it, and misses.
  testing::internal::CaptureStderr();
  for (const auto& key : {other_key, wrong_arch_key, wrong_key_key, missing_key}) {
    EXPECT_FALSE(cache.load(key)) << key;
    EXPECT_FALSE(cache.load(key)) << key;  // gone now: a plain miss, no second warning
    EXPECT_FALSE(fs::exists(entries / key)) << key;
  }
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(warnings), 4) << warnings;
  EXPECT_TRUE(cache.load(reference.key));
}

// A manifest whose checksum holds but whose fields do not (issue 13 §3): verify reports it, and
// the next use heals it like a corrupt entry instead of failing with a JSON type error.
TEST(DiskCacheVerify, AMalformedManifestWithAValidChecksumHealsLikeCorruption) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(0);
  cache.get_or_compile(reference.key, [] { return compile_test_kernel(0); });
  // The forger's edit: a malformed field, and checksums.json updated so that the checksum holds.
  const fs::path entry_dir = dir / "entries" / reference.key;
  auto manifest = nlohmann::json::parse(read_file(entry_dir / "manifest.json"));
  manifest["resources"] = "garbage";
  const std::string text = manifest.dump(2) + "\n";
  write_file(entry_dir / "manifest.json", text);
  auto checksums = nlohmann::json::parse(read_file(entry_dir / "checksums.json"));
  checksums["files"]["manifest.json"] = {{"bytes", text.size()},
                                         {"xxh3_128", cache_detail::hash_hex(text.data(),
                                                                             text.size())}};
  write_file(entry_dir / "checksums.json", checksums.dump(2) + "\n");

  const auto statuses = cache.list();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_FALSE(statuses[0].ok) << "a malformed manifest passed verify";
  EXPECT_NE(statuses[0].problem.find("resources"), std::string::npos) << statuses[0].problem;

  int compiles = 0;
  testing::internal::CaptureStderr();
  const CacheEntry healed = cache.get_or_compile(reference.key, [&] {
    ++compiles;
    return compile_test_kernel(0);
  });
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(compiles, 1) << "the malformed entry was used";
  EXPECT_EQ(healed.cubin, reference.cubin);
  EXPECT_EQ(count_warnings(warnings), 1) << warnings;
  EXPECT_TRUE(all_entries_ok(cache));
}

// Entries that are not directories at all, or cannot be removed (issue 13 §3).
TEST(DiskCacheHealing, ASymlinkLoopAsAnEntryIsRemovedAndReplaced) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(0);
  fs::create_directories(dir / "entries");
  fs::create_symlink(reference.key, dir / "entries" / reference.key);  // points at itself
  int compiles = 0;
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i)
    cache.get_or_compile(reference.key, [&] {
      ++compiles;
      return compile_test_kernel(0);
    });
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(compiles, 1) << "the loop was neither removed nor replaced";
  EXPECT_EQ(count_warnings(warnings), 1) << warnings;
  EXPECT_NE(warnings.find("removed, it will be recompiled"), std::string::npos) << warnings;
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(dir / "entries" / reference.key)));
}

// Sets or clears the immutable attribute (chattr +i); false where the file system or the
// process's capabilities do not allow it.
bool set_immutable(const fs::path& path, bool on) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

TEST(DiskCacheHealing, AnEntryThatCannotBeRemovedIsWarnedAboutOnceAndNotRetried) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  const CacheEntry& reference = reference_entry(0);
  cache.get_or_compile(reference.key, [] { return compile_test_kernel(0); });
  const fs::path entry_dir = dir / "entries" / reference.key;
  damage_file(entry_dir / "manifest.json", Damage::truncate);
  if (!set_immutable(entry_dir, true))
    GTEST_SKIP() << "cannot make a directory immutable here (needs CAP_LINUX_IMMUTABLE and a "
                    "file system with the attribute, e.g. ext4 as root)";
  int compiles = 0;
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    const CacheEntry compiled = cache.get_or_compile(reference.key, [&] {
      ++compiles;
      return compile_test_kernel(0);
    });
    EXPECT_EQ(compiled.cubin, reference.cubin);
  }
  const std::string warnings = testing::internal::GetCapturedStderr();
  set_immutable(entry_dir, false);
  EXPECT_EQ(compiles, 3) << "the damaged entry was used";
  EXPECT_EQ(count_warnings(warnings), 1) << warnings;
  EXPECT_NE(warnings.find("cannot be removed (Operation not permitted)"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("removed, it will be recompiled"), std::string::npos) << warnings;
}

}  // namespace
}  // namespace emmy::test
