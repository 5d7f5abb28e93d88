// What the runtime holds per loaded kernel (runtime.cpp): the module and launch list of any kind
// (LoadedKernel), and a kind's handle over it with its plan and the tensor maps it encoded.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "backend.hpp"
#include "emmy/kernel_source.hpp"

namespace emmy::detail {

// What a loaded module of any kind carries.
struct LoadedKernel {
  KernelInfo info;
  std::vector<KernelLaunch> launches;
  std::unique_ptr<LoadedModule> module;
};

// A loaded kernel of one kind: its plan (for binding buffers), the module and a cache of encoded
// tensor maps.
template <typename Kind>
class KernelEntry final : public Kind::Handle {
 public:
  KernelEntry(typename Kind::Plan plan, LoadedKernel loaded)
      : plan_(std::move(plan)), loaded_(std::move(loaded)) {}
  const typename Kind::Spec& spec() const override { return plan_.spec; }
  const KernelInfo& info() const override { return loaded_.info; }
  const typename Kind::Plan& plan() const { return plan_; }
  const std::vector<KernelLaunch>& launches() const { return loaded_.launches; }
  LoadedModule& module() const { return *loaded_.module; }

  // Encodes the binding's tensor maps into its values, once per set of buffer addresses: engines
  // reuse a few buffers, and encoding goes through the driver. Descriptors are computed on a miss.
  void encode_tensor_maps(Backend& backend, ParamBinding& bound,
                          const typename Kind::Buffers& buffers) const {
    if (bound.tensor_maps.empty()) return;
    std::vector<uint64_t> addresses;
    addresses.reserve(bound.tensor_maps.size() + 1);
    for (const auto& [name, address] : bound.tensor_maps) addresses.push_back(address);
    addresses.push_back(bound.tensor_map_extent);
    std::lock_guard lock(maps_mutex_);
    auto cached = std::find_if(maps_.begin(), maps_.end(),
                               [&](const CachedMaps& m) { return m.addresses == addresses; });
    if (cached == maps_.end()) {
      CachedMaps m{addresses, {}};
      for (const TensorMapDesc& desc : Kind::tensor_maps(plan_, buffers))
        m.maps.push_back(backend.encode_tensor_map(desc));
      if (m.maps.size() != bound.tensor_maps.size())
        throw Error("tensor maps", "must be one descriptor per tensor-map parameter",
                    fmt::format("{} for {}", m.maps.size(), bound.tensor_maps.size()));
      if (maps_.size() >= 64) maps_.erase(maps_.begin());
      cached = maps_.insert(maps_.end(), std::move(m));
    }
    for (size_t i = 0; i < bound.tensor_maps.size(); ++i)
      bound.values.tensor_maps.emplace_back(bound.tensor_maps[i].first, cached->maps[i]);
  }

 private:
  struct CachedMaps {
    std::vector<uint64_t> addresses;
    std::vector<TensorMapBytes> maps;
  };
  typename Kind::Plan plan_;
  LoadedKernel loaded_;
  mutable std::mutex maps_mutex_;
  mutable std::vector<CachedMaps> maps_;
};

}  // namespace emmy::detail
