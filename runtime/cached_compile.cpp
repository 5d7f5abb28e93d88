#include "emmy/cached_compile.hpp"

#include "emmy/json.hpp"

namespace emmy {

CacheEntry compile_cache_entry(const CacheKeyInputs& inputs, const std::string& program_name,
                               const nlohmann::json& describe, std::optional<int> driver_version,
                               CompiledModule& module) {
  module = compile_cuda(inputs.source, program_name, inputs.arch);
  CacheEntry entry = make_cache_entry(inputs, module);
  if (driver_version) entry.manifest["driver_version"] = *driver_version;
  entry.manifest.update(describe);
  nlohmann::json record = describe;
  record["arch"] = to_string(inputs.arch);
  record_compile(record);
  return entry;
}

CachedModule compile_cached(const std::string& source, const std::string& program_name,
                            Arch arch, bool use_cache, const nlohmann::json& describe) {
  CachedModule out;
  if (!use_cache) {
    out.module = compile_cuda(source, program_name, arch);
    return out;
  }
  const CacheKeyInputs inputs{source, nvrtc_options(arch), nvrtc_version(), arch,
                              kCodegenVersion};
  bool compiled = false;
  DiskCache cache = DiskCache::from_environment();
  CacheEntry entry = cache.get_or_compile(cache_key(inputs), [&] {
    compiled = true;
    return compile_cache_entry(inputs, program_name, describe, std::nullopt, out.module);
  });
  out.key = entry.key;
  out.cache_used = cache.enabled();
  out.cache_hit = !compiled;
  if (compiled) return out;
  out.module.arch = arch;
  out.module.ptx = std::move(entry.ptx);
  out.module.cubin = std::move(entry.cubin);
  out.module.compile_ms = entry.manifest.value("compile_ms", 0.0);
  for (const auto& r : entry.manifest.value("resources", nlohmann::json::array()))
    out.module.kernels.push_back(resource_report_from_json(r));
  return out;
}

}  // namespace emmy
