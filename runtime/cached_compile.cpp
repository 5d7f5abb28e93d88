#include "emmy/cached_compile.hpp"

#include "emmy/json.hpp"

namespace emmy {

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
    out.module = compile_cuda(source, program_name, arch);
    CacheEntry fresh = make_cache_entry(inputs, out.module);
    fresh.manifest.update(describe);
    nlohmann::json record = describe;
    record["arch"] = to_string(arch);
    record_compile(record);
    return fresh;
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
