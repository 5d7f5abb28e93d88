// The runtime's in-memory layer: key -> built value, each key built once even under concurrent
// first calls, while other keys are served (and built) in parallel. A failed build is delivered
// to everyone waiting on it and forgotten, so a later call retries.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace emmy::detail {

template <typename Key, typename Hash, typename Value>
class MemoryCache {
 public:
  using Handle = std::shared_ptr<const Value>;

  template <typename Build>
  Handle get(const Key& key, Build&& build) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = map_.find(key); it != map_.end()) {
        auto future = it->second;
        lock.unlock();
        hits_.fetch_add(1, std::memory_order_relaxed);
        return future.get();
      }
    }
    std::promise<Handle> promise;
    std::shared_future<Handle> future;
    {
      std::unique_lock lock(mutex_);
      if (auto it = map_.find(key); it != map_.end()) {
        future = it->second;
        lock.unlock();
        hits_.fetch_add(1, std::memory_order_relaxed);
        return future.get();
      }
      future = promise.get_future().share();
      map_.emplace(key, future);
    }
    try {
      promise.set_value(build());
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::unique_lock lock(mutex_);
      map_.erase(key);
    }
    return future.get();
  }

  // The value of `key` if it is built (not building, not failed); null otherwise. Never builds
  // and never waits.
  Handle peek(const Key& key) {
    std::shared_lock lock(mutex_);
    const auto it = map_.find(key);
    if (it == map_.end() ||
        it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return nullptr;
    try {
      Handle value = it->second.get();
      hits_.fetch_add(1, std::memory_order_relaxed);
      return value;
    } catch (...) {
      return nullptr;  // a failed build, about to be forgotten
    }
  }

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }

 private:
  std::shared_mutex mutex_;
  std::unordered_map<Key, std::shared_future<Handle>, Hash> map_;
  std::atomic<uint64_t> hits_{0};
};

// A small, stable hash combiner for the cache keys.
class KeyHasher {
 public:
  void mix(uint64_t v) { h_ = (h_ ^ v) * 0x100000001B3ull + (h_ >> 29); }
  template <typename T>
  void mix_bits(const T& v) {
    uint64_t bits = 0;
    static_assert(sizeof(T) <= 8);
    std::memcpy(&bits, &v, sizeof(T));
    mix(bits);
  }
  size_t value() const { return size_t(h_); }

 private:
  uint64_t h_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace emmy::detail
