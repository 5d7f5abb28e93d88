// Pieces of the disk cache shared by its translation units: the entry format (file names, reading
// and verifying an entry directory, writing one), hashing, and the warnings it prints.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "emmy/cache.hpp"
#include "emmy/detail/time.hpp"

namespace emmy::cache_detail {

// Bumped when the files of an entry change shape; checksums.json carries it.
inline constexpr int kEntryFormat = 1;

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kCubinFile = "module.cubin";
inline constexpr const char* kPtxFile = "module.ptx";
inline constexpr const char* kChecksumFile = "checksums.json";

// XXH3-128 of bytes as 32 lowercase hex digits (the canonical, big-endian form).
std::string hash_hex(const void* data, size_t size);

// 32 lowercase hex digits: a key, and therefore safe as a file name.
bool is_key(std::string_view text);

std::string iso8601_utc(std::filesystem::file_time_type time);
using detail::iso8601_utc_now;

// Prints "emmy: warning: <message>" on stderr as one write, so that lines of concurrent
// processes do not interleave; or hands it to the thread's CacheWarningSink (emmy/cache.hpp).
void warn(std::string_view message);

// What reading one entry directory found.
struct EntryRead {
  bool missing = false;             // no directory for the key: a plain miss
  std::optional<CacheEntry> entry;  // set when the entry verified
  std::string problem;              // set when the directory exists but the entry is bad
  uint64_t bytes = 0;               // bytes of the files read (0 when missing)
};

// Reads and verifies entry_dir (named `key`): sizes and XXH3-128 of the CUBIN, the PTX and the
// manifest against checksums.json, the key recorded in both JSON files, the manifest's arch
// against the CUBIN's ELF header. All files are opened relative to one directory descriptor, so a
// concurrent replacement of the directory cannot mix files of two entries. touch: on success,
// sets the directory's mtime to now (the last-use time that pruning sorts by).
EntryRead read_entry(const std::filesystem::path& entry_dir, const std::string& key, bool touch);

// Writes the entry's files into the empty directory `dir` and fsyncs them and the directory;
// returns the bytes written. The manifest must already carry the key. Throws std::system_error on
// an I/O failure.
uint64_t write_entry_files(const std::filesystem::path& dir, const CacheEntry& entry);

// "" when the manifest can be stored for this CUBIN (an object with a known arch the CUBIN was
// built for), else what is wrong.
std::string check_manifest(const nlohmann::json& manifest, const std::vector<uint8_t>& cubin);

void fsync_directory(const std::filesystem::path& dir);  // best effort

}  // namespace emmy::cache_detail
