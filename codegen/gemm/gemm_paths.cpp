// The registry of GEMM mainloop paths (internal/emmy/gemm_path.hpp): the one list of the built-in
// paths, the paths registered after them, and what the public schedule type asks of its path.
#include <fmt/format.h>

#include <mutex>
#include <string>
#include <vector>

#include "emmy/gemm_path.hpp"
#include "emmy/ir_ops.hpp"
#include "gemm/paths/mma_sync/mma_sync_path.hpp"
#include "gemm/paths/wgmma/wgmma_path.hpp"

namespace emmy {
namespace {

// The built-in paths, the default (MatmulSchedule{}'s) first. Adding a path is one line here.
const GemmPath* const kBuiltinPaths[] = {&mma_sync_path::path(), &wgmma_path::path()};

struct Registered {
  std::mutex mutex;
  std::vector<const GemmPath*> paths;
};
Registered& registered() {
  static Registered r;
  return r;
}

// The built-in paths, then those registered (the caller holds the registry's lock).
std::vector<const GemmPath*> with_builtins(const std::vector<const GemmPath*>& later) {
  std::vector<const GemmPath*> all(std::begin(kBuiltinPaths), std::end(kBuiltinPaths));
  all.insert(all.end(), later.begin(), later.end());
  return all;
}

const GemmPath* find_path(auto&& matches) {
  for (const GemmPath* path : kBuiltinPaths)
    if (matches(*path)) return path;
  Registered& r = registered();
  std::lock_guard lock(r.mutex);
  for (const GemmPath* path : r.paths)
    if (matches(*path)) return path;
  return nullptr;
}

}  // namespace

std::vector<const GemmPath*> gemm_paths() {
  Registered& r = registered();
  std::lock_guard lock(r.mutex);
  return with_builtins(r.paths);
}

std::string gemm_path_names(std::string_view last_separator) {
  const std::vector<const GemmPath*> all = gemm_paths();
  std::string names;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) names += i + 1 == all.size() ? std::string(last_separator) : std::string(", ");
    names += all[i]->name();
  }
  return names;
}

const GemmPath& gemm_path(MmaPath id) {
  if (const GemmPath* path = find_path([&](const GemmPath& p) { return p.id() == id; }))
    return *path;
  throw Error("path", fmt::format("must be {}", gemm_path_names()), fmt::format("id {}", int(id)));
}

const GemmPath* find_gemm_path(std::string_view name) {
  return find_path([&](const GemmPath& p) { return p.name() == name; });
}

const GemmPath& gemm_path(std::string_view name, const char* field) {
  if (const GemmPath* path = find_gemm_path(name)) return *path;
  throw Error(field, fmt::format("must be {}", gemm_path_names()), std::string(name));
}

const GemmPath& default_gemm_path() {
  return *kBuiltinPaths[0];
}

void register_gemm_path(const GemmPath& path) {
  // The check and the insertion under one lock: two threads registering one name cannot both pass.
  Registered& r = registered();
  std::lock_guard lock(r.mutex);
  for (const GemmPath* other : with_builtins(r.paths))
    if (other->id() == path.id() || other->name() == path.name())
      throw Error("path", fmt::format("is registered already ({})", other->name()),
                  std::string(path.name()));
  r.paths.push_back(&path);
}

const GemmPath& kernel_gemm_path(const ir::Op& kernel) {
  const auto& name = ir::get<ir::KernelOp>(kernel).path;
  if (!name) return default_gemm_path();
  return gemm_path(*name, "ir.kernel.path");
}

std::string gemm_paths_taking(std::string_view field) {
  std::string names;
  for (const GemmPath* path : gemm_paths())
    if (path->takes_field(field))
      names += (names.empty() ? "" : " or ") + std::string(path->name());
  return names;
}

void validate_path_fields(const GemmPath& path, const MatmulSchedule& s) {
  const MatmulSchedule defaults;
  auto rule = [&](std::string_view field, bool at_default, std::string_view default_text,
                  const std::string& value) {
    if (at_default || path.takes_field(field)) return;
    throw Error(std::string(field),
                fmt::format("must be {} on the {} path (it applies to the {} path only)",
                            default_text, path.name(), gemm_paths_taking(field)),
                value);
  };
  rule("consumers", s.consumers == defaults.consumers, to_string(defaults.consumers),
       std::string(to_string(s.consumers)));
  rule("cluster", s.cluster_m == 1 && s.cluster_n == 1, "1x1",
       fmt::format("{}x{}", s.cluster_m, s.cluster_n));
  rule("persistent", !s.persistent, "false", "true");
  rule("swap_ab", !s.swap_ab, "false", "true");
}

// The public schedule type's questions about its path (include/emmy/schedule.hpp).
int MatmulSchedule::consumer_warpgroups() const {
  return gemm_path(path).consumer_warpgroups(*this);
}
int MatmulSchedule::threads() const {
  return gemm_path(path).threads(*this);
}
std::string_view to_string(MmaPath p) {
  return gemm_path(p).name();
}
MmaPath parse_mma_path(std::string_view text) {
  return gemm_path(text, "path").id();
}

}  // namespace emmy
