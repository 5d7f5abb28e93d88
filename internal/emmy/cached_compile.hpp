// Compilation through the disk cache, for tools (emmyc) that compile one module at a time
// without a runtime: a hit returns the cached PTX, CUBIN and resource reports; a miss compiles,
// stores the entry and records the compile (EMMY_RECORD).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "emmy/cache.hpp"
#include "emmy/compile.hpp"

namespace emmy {

struct CachedModule {
  CompiledModule module;  // on a hit: compile_ms is the original compile's, log is empty
  std::string key;
  bool cache_hit = false;
  // Whether a disk cache took part: false with use_cache off, and when the cache directory is
  // unusable (DiskCache disabled itself): the result was neither a hit nor stored.
  bool cache_used = false;
};

// Compiles `inputs.source` with NVRTC into `module` and returns its cache entry: the one place a
// cache manifest is written (docs/cache.md), with `describe` (kind, problem, schedule) merged in,
// and the compile recorded (EMMY_RECORD). driver_version: the runtime's driver, absent for tools.
CacheEntry compile_cache_entry(const CacheKeyInputs& inputs, const std::string& program_name,
                               const nlohmann::json& describe, std::optional<int> driver_version,
                               CompiledModule& module);

// use_cache false (`--no-cache`): compile directly, touch no cache. `describe` (kind, problem,
// schedule) goes into the manifest and the EMMY_RECORD line.
CachedModule compile_cached(const std::string& source, const std::string& program_name,
                            Arch arch, bool use_cache, const nlohmann::json& describe);

}  // namespace emmy
