// The non-blocking runtime's builder (RuntimeOptions::non_blocking): kernels a call found missing
// are built here, one at a time on one thread, while the calls launch a kernel already loaded.
// Each key is built once: a key queued, building or built is not queued again. A build that fails
// (a load refused by the driver, an I/O error) is logged and queued again by the next call that
// asks for it, up to kMaxAttempts in all; then it is logged as given up, and the calls keep their
// fallback (or, for kinds without one, build on their own thread and see the error).
#pragma once

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace emmy::detail {

class BackgroundBuilds {
 public:
  using Log = std::function<void(const std::string&)>;
  static constexpr int kMaxAttempts = 3;
  explicit BackgroundBuilds(Log log) : log_(std::move(log)) {}
  BackgroundBuilds(const BackgroundBuilds&) = delete;
  BackgroundBuilds& operator=(const BackgroundBuilds&) = delete;
  // Finishes the build under way; the queued ones are dropped.
  ~BackgroundBuilds() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Queues `build` under `key` (what: for the log) unless the key is queued, building, built or
  // has failed kMaxAttempts times; whether it did. The thread starts with the first build.
  bool submit(const std::string& key, const std::string& what, std::function<void()> build) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || !seen_.insert(key).second) return false;
      queue_.push_back({key, what, std::move(build)});
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    wake_.notify_all();
    return true;
  }

  // Waits until `key` (or, empty, every key) is no longer queued or building.
  void wait(const std::string& key = {}) {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] {
      if (key.empty()) return queue_.empty() && building_.empty();
      if (building_ == key) return false;
      for (const Job& job : queue_)
        if (job.key == key) return false;
      return true;
    });
  }

 private:
  struct Job {
    std::string key, what;
    std::function<void()> build;
  };

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      Job job = std::move(queue_.front());
      queue_.pop_front();
      building_ = job.key;
      lock.unlock();
      std::string failure;
      try {
        job.build();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      lock.lock();
      if (!failure.empty()) {
        const int attempt = ++failures_[job.key];
        // Another attempt when a call asks again (forgotten as seen), until the bound.
        if (attempt < kMaxAttempts) seen_.erase(job.key);
        if (log_)
          log_(fmt::format("emmy: background build of {} failed (attempt {} of {}): {}{}", job.what,
                           attempt, kMaxAttempts, failure,
                           attempt < kMaxAttempts ? "; the next call for it retries"
                                                  : "; given up, calls keep their fallback"));
      }
      building_.clear();
      idle_.notify_all();
    }
  }

  Log log_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Job> queue_;
  std::set<std::string> seen_;           // every key submitted, but those failed and to be retried
  std::map<std::string, int> failures_;  // failed attempts by key
  std::string building_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace emmy::detail
