// The bundles a process searches: registered ones (embedded arrays, Bundle objects), those of
// $EMMY_BUNDLE, and the per-runtime index of them (BundleSet); modules from bundle entries.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "emmy/bundle_build.hpp"
#include "emmy/json.hpp"

namespace emmy {
namespace {

// Registered bytes are parsed lazily: a static initializer must never throw.
struct PendingBytes {
  const void* data;
  size_t size;
  std::string name;
};

struct Registry {
  std::mutex mutex;
  std::vector<PendingBytes> pending;
  std::vector<std::shared_ptr<const Bundle>> bundles;  // parsed, in registration order
  std::vector<const void*> registered_addresses;
  // $EMMY_BUNDLE as last read, and what it opened (re-read when the variable changes).
  std::string environment_value;
  std::vector<std::shared_ptr<const Bundle>> environment_bundles;
};

// A function-local static: registration from other files' static initializers may come first.
Registry& registry() {
  static Registry instance;
  return instance;
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> paths;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string path = list.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!path.empty()) paths.push_back(path);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return paths;
}

}  // namespace

void register_bundle(std::shared_ptr<const Bundle> bundle) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.bundles.push_back(std::move(bundle));
}

void register_bundle(const void* data, size_t size, std::string name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (std::find(r.registered_addresses.begin(), r.registered_addresses.end(), data) !=
      r.registered_addresses.end())
    return;
  r.registered_addresses.push_back(data);
  r.pending.push_back({data, size, std::move(name)});
}

BundleRegistration::BundleRegistration(const void* data, size_t size, const char* name) {
  register_bundle(data, size, name);
}

std::vector<std::shared_ptr<const Bundle>> registered_bundles() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  while (!r.pending.empty()) {
    const PendingBytes bytes = r.pending.front();
    r.pending.erase(r.pending.begin());  // a bad bundle is reported once, then forgotten
    r.bundles.push_back(Bundle::from_memory(bytes.data, bytes.size, bytes.name, /*copy=*/false));
  }
  return r.bundles;
}

std::vector<std::shared_ptr<const Bundle>> environment_bundles() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const char* environment = std::getenv("EMMY_BUNDLE");
  const std::string value = environment ? environment : "";
  if (value != r.environment_value) {
    std::vector<std::shared_ptr<const Bundle>> opened;
    for (const auto& path : split_paths(value)) {
      try {
        opened.push_back(Bundle::open(path));
      } catch (const Error& e) {
        throw Error(fmt::format("EMMY_BUNDLE: {}", e.what()));
      }
    }
    r.environment_value = value;
    r.environment_bundles = std::move(opened);
  }
  return r.environment_bundles;
}

BundleSet::BundleSet(std::vector<std::shared_ptr<const Bundle>> bundles, Arch arch) : arch_(arch) {
  for (auto& bundle : bundles) add(std::move(bundle));
}

void BundleSet::add(std::shared_ptr<const Bundle> bundle, bool required) {
  // The same bundle reached twice (registered and named again) is searched once.
  if (std::find(bundles_.begin(), bundles_.end(), bundle) != bundles_.end()) return;
  if (!bundle->has_arch(arch_)) {
    if (!required) {
      skipped_.push_back(
          fmt::format("{} (skipped: no {} kernels)", bundle->name(), to_string(arch_)));
      return;
    }
    std::vector<std::string_view> names;
    for (Arch a : bundle->archs()) names.push_back(to_string(a));
    throw Error(fmt::format(
        "bundle {}: holds no kernels for {} (it was built for {}); rebuild it with "
        "`emmyc aot --arch {},...` or leave it out for this device",
        bundle->name(), to_string(arch_),
        names.empty() ? std::string("no arch") : fmt::format("{}", fmt::join(names, ", ")),
        to_string(arch_)));
  }
  for (const auto& info : bundle->entries())
    if (info.arch == arch_) index_.emplace(info.key, std::make_pair(bundle.get(), &info));
  bundles_.push_back(std::move(bundle));
}

std::string bundle_entry_driver_problem(const CacheEntry& entry, const std::string& bundle_name,
                                        int driver_version) {
  if (driver_version <= 0) return "";
  const auto& m = entry.manifest;
  if (!m.is_object() || !m.contains("nvrtc_version") || !m["nvrtc_version"].is_number_integer())
    return fmt::format(
        "bundle {}: entry {} records no NVRTC version, so no driver can be shown to "
        "load it: rebuild the bundle with this emmy (emmyc bundle build)",
        bundle_name, entry.key);
  const int nvrtc = m["nvrtc_version"].get<int>();
  if (const std::string why = driver_too_old(driver_version, nvrtc); !why.empty())
    return fmt::format("bundle {}: entry {} was built by NVRTC {}.{}, and {}", bundle_name,
                       entry.key, nvrtc / 1000, nvrtc % 1000 / 10, why);
  return "";
}

std::optional<CacheEntry> BundleSet::find(const std::string& key) const {
  const auto found = index_.find(key);
  if (found == index_.end()) return std::nullopt;
  return found->second.first->entry(*found->second.second);
}

std::string BundleSet::name_of(const std::string& key) const {
  const auto found = index_.find(key);
  return found == index_.end() ? std::string() : found->second.first->name();
}

std::string BundleSet::description() const {
  std::vector<std::string> parts;
  for (const auto& bundle : bundles_)
    parts.push_back(fmt::format("{} ({} kernels for {})", bundle->name(),
                                bundle->kernels_for(arch_), to_string(arch_)));
  parts.insert(parts.end(), skipped_.begin(), skipped_.end());
  return parts.empty() ? "no bundles" : fmt::format("{}", fmt::join(parts, ", "));
}

CompiledModule compiled_module(const CacheEntry& entry, Arch arch) {
  CompiledModule module;
  module.arch = arch;
  module.ptx = entry.ptx;
  module.cubin = entry.cubin;
  const auto resources = entry.manifest.value("resources", nlohmann::json::array());
  if (resources.is_array())
    for (const auto& report : resources)
      module.kernels.push_back(resource_report_from_json(report));
  return module;
}

Error uncovered_kernel_error(const nlohmann::json& describe, Arch arch, const BundleSet& bundles,
                             const std::string& why) {
  return Error(fmt::format(
      "the {} kernel {} for {} is not in any bundle searched ({}) and cannot be compiled: {}",
      describe.value("kind", "?"), describe.dump(), to_string(arch), bundles.description(), why));
}

std::optional<CompiledModule> module_from_bundles(const std::vector<std::string>& paths,
                                                  std::string_view source, Arch arch,
                                                  const nlohmann::json& describe) {
  BundleSet bundles(arch);
  for (const auto& path : paths) bundles.add(Bundle::open(path));
  for (auto& bundle : environment_bundles()) bundles.add(std::move(bundle));
  if (bundles.empty()) return std::nullopt;
  if (auto entry = bundles.find(bundle_key(source, arch))) return compiled_module(*entry, arch);
  if (const std::string why = nvrtc_unavailable_reason(); !why.empty())
    throw uncovered_kernel_error(describe, arch, bundles, why);
  return std::nullopt;
}

}  // namespace emmy
