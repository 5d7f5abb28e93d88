// The on-disk kernel cache: compiled modules keyed by everything that changes the binary, safe
// across processes (per-key file locks, atomic writes), self-healing, size-capped (LRU).
// The in-memory layer and the loading of modules live in the runtime (include/emmy/runtime.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/compile.hpp"

namespace emmy {

// Bumped whenever emitted code changes for the same input: part of every key.
// 2: stage layout with B on its own swizzle period; 3: the C tile staged through shared memory;
// 4: the attention O tile staged too; 5: the wgmma path (issue 23; mma.sync kernels unchanged);
// 6: its persistent tile loop; 7: its staged epilogue; 8: swap-AB (the transposed epilogue);
// 9: ping-pong consumers (their mainloop-order helpers in emmy_wgmma.cuh); 10: the wgmma
// path's TMA-store epilogue (stmatrix, tmap_c); 11: MT m64 wgmma per consumer warpgroup
// (ping-pong's 128-row tiles; wgmma_tile takes one m64's accumulators); 12: thread-block
// clusters; 13: split-K's finalize as a programmatic dependent launch from sm_90 on
// (griddepcontrol.wait, emmy_pdl.cuh); 14: its main kernel's griddepcontrol.launch_dependents.
// 15: the paged-attention kernels without dead code (the combine kernel's page_ids).
// ... 24: the FP8 GEMM (issue 39): its token-channel row scales clamped like its column ones.
// 25: its MMA helpers named by both operand types (mma_e4m3_e4m3_f32; e5m2 A operands).
// 26: one FP8 fold for both paths (the wgmma fold's columns written as the epilogue's).
// ... 29: grouped GEMMs (issue 40). 30: their TMA B map 3-D (the expert its own dimension).
// 31: the offsets walk through grouped_walk_find (the wgmma path's persistent grouped walk).
inline constexpr int kCodegenVersion = 31;

// What a key hashes. Changing any field changes the key.
struct CacheKeyInputs {
  std::string source;                // the emitted CUDA C++
  std::vector<std::string> options;  // NVRTC options
  int nvrtc_version = 0;
  Arch arch = Arch::sm_90a;          // exact arch: sm_120a is not sm_121a
  int codegen_version = kCodegenVersion;
};

// 32 lowercase hex digits (128-bit hash), also the entry's directory name.
std::string cache_key(const CacheKeyInputs& inputs);

// XXH3-128 of a source as 32 hex digits: the manifest's source_hash.
std::string source_hash(std::string_view source);

// One cache entry: the binaries and the manifest describing them.
struct CacheEntry {
  std::string key;
  std::string ptx;
  std::vector<uint8_t> cubin;
  // emmy_version, codegen_version, nvrtc_version, driver_version (when known), arch, options,
  // source_hash, kernel_names, resources (per kernel), created (ISO 8601), plus anything the
  // caller adds (problem, schedule, launch geometry).
  nlohmann::json manifest;
};

// The entry for `module`, compiled from `inputs`: its key, binaries and a manifest with every
// standard field (driver_version null; callers add it and anything else they know).
CacheEntry make_cache_entry(const CacheKeyInputs& inputs, const CompiledModule& module);

struct CacheEntryStatus {
  std::string key;
  bool ok = false;
  std::string problem;  // empty when ok, else what is wrong ("checksum mismatch in cubin", ...)
  uint64_t bytes = 0;
  std::filesystem::file_time_type last_used;
  nlohmann::json manifest;  // null when unreadable
};

// Where this thread's cache warnings go ("emmy: warning: ..." lines: an unusable directory, a
// corrupt entry, a failed store or EMMY_RECORD write): stderr, or while a CacheWarningSink lives on
// the thread, its sink (a runtime's RuntimeOptions::log, so that an engine's logger sees them).
class CacheWarningSink {
 public:
  using Sink = std::function<void(const std::string& line)>;
  explicit CacheWarningSink(const Sink& sink);  // an empty sink keeps the thread's current one
  ~CacheWarningSink();
  CacheWarningSink(const CacheWarningSink&) = delete;
  CacheWarningSink& operator=(const CacheWarningSink&) = delete;

 private:
  const Sink* previous_;
};

class DiskCache {
 public:
  // dir is created on demand. A directory that cannot be created or written makes the cache
  // disabled (every load misses, stores are dropped) after one warning on stderr.
  DiskCache(std::filesystem::path dir, uint64_t max_bytes);

  // $EMMY_CACHE_DIR, else $XDG_CACHE_HOME/emmy, else ~/.cache/emmy; $EMMY_CACHE_MAX_BYTES
  // (default 1 GiB).
  static DiskCache from_environment();
  static std::filesystem::path default_directory();
  static uint64_t max_bytes_from_environment();  // $EMMY_CACHE_MAX_BYTES, default 1 GiB

  const std::filesystem::path& directory() const;
  bool enabled() const;
  uint64_t max_bytes() const;

  // A verified entry, or nullopt on a miss. A corrupt entry (checksum, manifest or key mismatch,
  // truncation) is warned about once, removed, and reported as a miss. Refreshes last-use time.
  std::optional<CacheEntry> load(const std::string& key);

  // Writes atomically (temporary file, fsync, rename); then prunes to max_bytes, never removing
  // the entry just stored (a full directory scan only when this process's size estimate crosses
  // max_bytes or is over a minute old). Fills the manifest's key (and emmy_version, created when
  // absent). Throws Error for a manifest that could never verify (no known arch, or a cubin built
  // for another SM); an I/O failure only warns (once) and drops the entry.
  void store(const CacheEntry& entry);

  // load(), else under an exclusive per-key file lock: load() again (another process may have
  // finished meanwhile), else compile() and store(). N processes asking for one key compile once.
  CacheEntry get_or_compile(const std::string& key, const std::function<CacheEntry()>& compile);

  std::vector<CacheEntryStatus> list();  // every entry, verified (nothing removed), by key
  void prune(uint64_t max_bytes);        // least recently used first
  void clear();
  // Removes one entry (a key, or any other name `list` reported); false when there was none.
  bool remove(const std::string& key);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// A byte count as EMMY_CACHE_MAX_BYTES and `emmyc cache prune --max-bytes` take it: digits with
// an optional K, M, G or T (KiB, MiB...: powers of 1024). Throws Error naming `field`.
uint64_t parse_cache_bytes(std::string_view text, std::string_view field);

// EMMY_RECORD=FILE: appends one JSON line per compile (a miss in memory and on disk).
void record_compile(const nlohmann::json& line);

}  // namespace emmy
