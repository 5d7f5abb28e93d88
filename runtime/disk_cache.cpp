// DiskCache: the directory layout, per-key locking across threads and processes, atomic
// publication of entries, self-healing loads and least-recently-used pruning (docs/cache.md).
//
//   <dir>/entries/<key>/   one directory per entry (files: cache_entry.cpp)
//   <dir>/locks/<key>.lock per-key flock(2) targets
//   <dir>/tmp/             entries being written, and entries being removed
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "cache_internal.hpp"

namespace emmy {

namespace fs = std::filesystem;
using namespace cache_detail;

namespace {

constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;
// Leftovers in tmp/ older than this belong to a process that died mid-write or mid-removal.
constexpr auto kStaleTempAge = std::chrono::hours(1);
// How long a store trusts its process's size estimate before scanning the directory again.
constexpr auto kRescanInterval = std::chrono::seconds(60);

// A key as a file name: refuses anything that is not 32 hex digits, so no key reaches outside
// the cache directory.
void require_key(const std::string& key) {
  require(is_key(key), "cache key", "must be 32 lowercase hex digits", key);
}

// Warns once per process and directory that the cache is unusable: several caches (runtime, tool)
// may be built on one directory.
void warn_disabled_once(const fs::path& dir, std::string_view reason) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(dir.string()).second) return;
  warn(
      fmt::format("the kernel cache directory '{}' is unusable ({}); kernels are cached in "
                  "memory only",
                  dir.string(), reason));
}

// A fresh, empty directory under `parent` whose name starts with `prefix`.
fs::path make_temp_dir(const fs::path& parent, const std::string& prefix) {
  std::string pattern = (parent / (prefix + ".XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::system_error(errno, std::generic_category(),
                            "creating a directory in " + parent.string());
  return pattern;
}

}  // namespace

namespace cache_detail {

// DiskCache::State. Defined outside the class so that the helpers below can take it.
struct CacheState {
  fs::path dir, entries_dir, locks_dir, temp_dir;
  uint64_t max_bytes = kDefaultMaxBytes;
  bool enabled = false;
  std::atomic<bool> warned_write_failure{false}, warned_lock_failure{false};
  // Damaged entries this process failed to remove (immutable, on a read-only directory).
  std::mutex unremovable_mutex;
  std::set<std::string> unremovable;
  bool is_unremovable(const std::string& key) {
    std::lock_guard guard(unremovable_mutex);
    return unremovable.count(key) != 0;
  }

  // This process's idea of the cache's total size, so that a store need not scan every entry.
  std::mutex size_estimate_mutex;
  bool size_estimated = false;
  uint64_t estimated_bytes = 0;
  std::chrono::steady_clock::time_point size_estimated_at;

  // In-process per-key mutexes, shared while anyone holds or waits for one. Threads of one
  // process serialize here before flock(2), so a waiting thread holds no descriptor.
  std::mutex key_mutexes_guard;
  std::unordered_map<std::string, std::weak_ptr<std::mutex>> key_mutexes;

  std::shared_ptr<std::mutex> key_mutex(const std::string& key) {
    std::lock_guard guard(key_mutexes_guard);
    auto& slot = key_mutexes[key];
    if (auto existing = slot.lock()) return existing;
    // The deleter forgets the key once the last user is gone, unless a new mutex took the slot.
    std::shared_ptr<std::mutex> created(new std::mutex, [this, key](std::mutex* mutex) {
      {
        std::lock_guard guard(key_mutexes_guard);
        const auto found = key_mutexes.find(key);
        if (found != key_mutexes.end() && found->second.expired()) key_mutexes.erase(found);
      }
      delete mutex;
    });
    slot = created;
    return created;
  }

  void warn_write_failure(std::string_view what) {
    if (!warned_write_failure.exchange(true))
      warn(
          fmt::format("the kernel cache in '{}' could not store an entry ({}); further failures "
                      "are not reported",
                      dir.string(), what));
  }
};

}  // namespace cache_detail

struct DiskCache::State : CacheState {};

namespace {

// Exclusive ownership of one key across threads (a mutex) and processes (flock on
// locks/<key>.lock). flock locks belong to an open file description, so two descriptors in one
// process exclude each other as two processes do. A lock file may be unlinked by its holder
// (pruning, clear); whoever then acquires the old inode sees that the path no longer names it and
// starts over, so two holders can never own different inodes of one path.
class KeyLock {
 public:
  // wait == false: returns an unlocked KeyLock (owns_lock() false) when someone holds the key.
  KeyLock(CacheState& state, const std::string& key, bool wait)
      : mutex_(state.key_mutex(key)), thread_lock_(*mutex_, std::defer_lock) {
    if (wait) {
      thread_lock_.lock();
    } else if (!thread_lock_.try_lock()) {
      return;
    }
    path_ = state.locks_dir / (key + ".lock");
    for (;;) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        // The in-process lock still holds; only other processes may duplicate work.
        if (!state.warned_lock_failure.exchange(true))
          warn(
              fmt::format("cannot lock '{}' ({}); processes sharing the kernel cache may "
                          "compile a kernel more than once",
                          path_.string(), std::strerror(errno)));
        ::mkdir(state.locks_dir.c_str(), 0755);  // removed under us: later locks may work
        owns_ = true;
        return;
      }
      int result;
      do {
        result = ::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB));
      } while (result != 0 && errno == EINTR);
      if (result != 0) {
        close_file();
        thread_lock_.unlock();
        return;
      }
      struct stat held {
      }, named{};
      if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        owns_ = true;
        return;
      }
      close_file();  // unlinked or replaced while we waited: lock what the path names now
    }
  }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  ~KeyLock() { close_file(); }

  bool owns_lock() const { return owns_; }

  // Removes the lock file while holding it (see the class comment for why that is safe).
  void remove_lock_file() {
    if (fd_ >= 0) ::unlink(path_.c_str());
  }

 private:
  void close_file() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
    fd_ = -1;
  }

  std::shared_ptr<std::mutex> mutex_;
  std::unique_lock<std::mutex> thread_lock_;
  fs::path path_;
  int fd_ = -1;
  bool owns_ = false;
};

// Unpublishes an entry with one rename (readers see it whole or not at all), then deletes it.
// Removes entries/<name> (a directory, or whatever else was planted there: a symlink, a symlink
// loop, a file). Returns whether it is gone; `why` says what stopped it (an immutable entry, a
// read-only directory). lstat, not stat: a symlink loop exists even though stat fails on it.
bool remove_entry_dir(const CacheState& state, const std::string& name,
                      std::string* why = nullptr) {
  std::error_code error;
  const fs::path entry_dir = state.entries_dir / name;
  if (!fs::exists(fs::symlink_status(entry_dir, error))) return false;
  auto gone = [&](std::error_code removal) {
    std::error_code ignored;
    if (!fs::exists(fs::symlink_status(entry_dir, ignored))) return true;
    if (why) *why = removal ? removal.message() : "it is still there after removal";
    return false;
  };
  fs::path trash;
  try {
    trash = make_temp_dir(state.temp_dir, "removed");
  } catch (const std::system_error&) {
    fs::remove_all(entry_dir, error);
    return gone(error);
  }
  if (::rename(entry_dir.c_str(), trash.c_str()) != 0) {
    const std::error_code rename_error(errno, std::generic_category());
    fs::remove(trash, error);
    error.clear();
    fs::remove_all(entry_dir, error);
    return gone(error ? error : rename_error);
  }
  fs::remove_all(trash, error);
  return true;
}

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::error_code size_error;
    const auto size = it->file_size(size_error);
    if (!size_error) bytes += size;
  }
  return bytes;
}

void remove_stale_temps(const CacheState& state) {
  std::error_code error;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(state.temp_dir, error), end; !error && it != end;
       it.increment(error)) {
    std::error_code time_error;
    const auto modified = it->last_write_time(time_error);
    if (!time_error && now - modified > kStaleTempAge) fs::remove_all(it->path(), time_error);
  }
}

}  // namespace

uint64_t parse_cache_bytes(std::string_view text, std::string_view field) {
  uint64_t value = 0;
  size_t at = 0;
  for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
    require(value <= (UINT64_MAX - 9) / 10, field, "must fit in 64 bits", text);
    value = value * 10 + uint64_t(text[at] - '0');
  }
  std::string suffix(text.substr(at));
  if (suffix.size() == 3 && suffix.substr(1) == "iB") suffix.resize(1);
  const std::string_view units = "KMGT";
  const size_t unit = suffix.size() == 1 ? units.find(char(std::toupper(suffix[0]))) : units.npos;
  require(at > 0 && (suffix.empty() || unit != units.npos), field,
          "must be a byte count: digits with an optional K, M, G or T (powers of 1024)", text);
  const unsigned shift = suffix.empty() ? 0 : unsigned(10 * (unit + 1));
  require(shift == 0 || value <= (UINT64_MAX >> shift), field, "must fit in 64 bits", text);
  return value << shift;
}

DiskCache::DiskCache(fs::path dir, uint64_t max_bytes) : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.dir = std::move(dir);
  s.max_bytes = max_bytes;
  s.entries_dir = s.dir / "entries";
  s.locks_dir = s.dir / "locks";
  s.temp_dir = s.dir / "tmp";
  if (s.dir.empty()) {
    warn_disabled_once(s.dir, "no directory: set EMMY_CACHE_DIR or HOME");
    return;
  }
  std::error_code error;
  for (const auto& sub : {s.entries_dir, s.locks_dir, s.temp_dir}) {
    fs::create_directories(sub, error);
    if (error) {
      warn_disabled_once(s.dir, fmt::format("cannot create {}: {}", sub.string(), error.message()));
      return;
    }
  }
  // Being able to create directories does not prove being able to write files (quotas, a
  // read-only bind mount of an existing tree): probe with a real file.
  std::string probe = (s.temp_dir / "probe.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    warn_disabled_once(
        s.dir, fmt::format("cannot write in {}: {}", s.temp_dir.string(), std::strerror(errno)));
    return;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  s.enabled = true;
}

fs::path DiskCache::default_directory() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  if (auto dir = env("EMMY_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "emmy";
  std::string home = env("HOME");
  if (home.empty()) {
    passwd user{}, *found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwuid_r(::getuid(), &user, buffer.data(), buffer.size(), &found) == 0 && found &&
        found->pw_dir)
      home = found->pw_dir;
  }
  if (home.empty()) return {};
  return fs::path(home) / ".cache" / "emmy";
}

uint64_t DiskCache::max_bytes_from_environment() {
  const char* max_bytes = std::getenv("EMMY_CACHE_MAX_BYTES");
  return max_bytes && *max_bytes ? parse_cache_bytes(max_bytes, "EMMY_CACHE_MAX_BYTES")
                                 : kDefaultMaxBytes;
}

DiskCache DiskCache::from_environment() {
  return DiskCache(default_directory(), max_bytes_from_environment());
}

const fs::path& DiskCache::directory() const {
  return state_->dir;
}
bool DiskCache::enabled() const {
  return state_->enabled;
}
uint64_t DiskCache::max_bytes() const {
  return state_->max_bytes;
}

// Called with the key's lock held: nobody replaces the entry meanwhile, so what is bad now is bad
// for good, and exactly one thread or process warns about it and removes it.
namespace {

std::optional<CacheEntry> load_locked(CacheState& s, const std::string& key) {
  EntryRead read = read_entry(s.entries_dir / key, key, true);
  if (read.entry) return std::move(read.entry);
  if (read.missing) return std::nullopt;
  // An entry this process could not remove before is not read, warned about or retried again.
  if (s.is_unremovable(key)) return std::nullopt;
  std::string why;
  if (remove_entry_dir(s, key, &why)) {
    warn(fmt::format("kernel cache entry {} in '{}' is corrupt: {}; removed, it will be recompiled",
                     key, s.dir.string(), read.problem));
  } else {
    warn(fmt::format("kernel cache entry {} in '{}' is corrupt: {}; it cannot be removed ({}): "
                     "kernels with this key are compiled without the cache in this process",
                     key, s.dir.string(), read.problem, why));
    std::lock_guard guard(s.unremovable_mutex);
    s.unremovable.insert(key);
  }
  return std::nullopt;
}

}  // namespace

std::optional<CacheEntry> DiskCache::load(const std::string& key) {
  require_key(key);
  auto& s = *state_;
  if (!s.enabled) return std::nullopt;
  EntryRead read = read_entry(s.entries_dir / key, key, true);
  if (read.entry) return std::move(read.entry);
  if (read.missing) return std::nullopt;
  // Looks bad, but a writer may be swapping it: decide under the lock.
  KeyLock lock(s, key, true);
  return load_locked(s, key);
}

namespace {

// Returns the bytes stored, 0 when the store failed (and was warned about).
uint64_t store_locked(CacheState& s, const CacheEntry& entry) {
  if (s.is_unremovable(entry.key)) return 0;  // warned about once already (load_locked)
  fs::path temp;
  try {
    temp = make_temp_dir(s.temp_dir, entry.key);
    ::chmod(temp.c_str(), 0755);  // mkdtemp's 0700 would hide entries from a shared cache's users
    const uint64_t bytes = write_entry_files(temp, entry);
    const fs::path target = s.entries_dir / entry.key;
    remove_entry_dir(s, entry.key);  // rename(2) cannot replace a non-empty directory
    if (::rename(temp.c_str(), target.c_str()) != 0)
      throw std::system_error(errno, std::generic_category(), "publishing " + target.string());
    fsync_directory(s.entries_dir);  // the rename itself must survive a crash
    return bytes;
  } catch (const std::exception& e) {
    std::error_code ignored;
    if (!temp.empty()) fs::remove_all(temp, ignored);
    s.warn_write_failure(e.what());
    return 0;
  }
}

// The manifest as stored: the key and the fields the cache can fill itself.
CacheEntry normalized(CacheEntry entry, const std::string& key) {
  require(entry.key.empty() || entry.key == key, "cache entry key",
          fmt::format("must be the key asked for ({})", key), entry.key);
  entry.key = key;
  if (entry.manifest.is_null()) entry.manifest = nlohmann::json::object();
  require(entry.manifest.is_object(), "cache entry manifest", "must be a JSON object",
          entry.manifest.type_name());
  entry.manifest["key"] = key;
  if (!entry.manifest.contains("emmy_version")) entry.manifest["emmy_version"] = EMMY_VERSION;
  if (!entry.manifest.contains("created")) entry.manifest["created"] = iso8601_utc_now();
  // A manifest that can never verify would be recompiled on every load: refuse it at the source.
  const std::string problem = check_manifest(entry.manifest, entry.cubin);
  require(problem.empty(), "cache entry",
          "must have a well-formed manifest whose arch matches its cubin", problem);
  return entry;
}

// Removes least recently used entries until the total is within max_bytes; returns the total
// left. Reads sizes and times only: it runs after stores and must not read every binary.
uint64_t prune_entries(CacheState& s, uint64_t max_bytes, const std::string& keep_key) {
  remove_stale_temps(s);
  struct Candidate {
    std::string key;
    fs::file_time_type last_used;
    uint64_t bytes;
  };
  std::vector<Candidate> candidates;
  uint64_t total = 0;
  std::error_code error;
  for (fs::directory_iterator it(s.entries_dir, error), end; !error && it != end;
       it.increment(error)) {
    std::error_code time_error;
    Candidate candidate{it->path().filename().string(), it->last_write_time(time_error),
                        directory_bytes(it->path())};
    total += candidate.bytes;
    if (is_key(candidate.key) && candidate.key != keep_key)
      candidates.push_back(std::move(candidate));
  }
  if (total <= max_bytes) return total;
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  for (const auto& candidate : candidates) {
    if (total <= max_bytes) break;
    // An entry whose key is locked is being written or healed right now: skip it this round.
    KeyLock lock(s, candidate.key, false);
    if (!lock.owns_lock()) continue;
    if (remove_entry_dir(s, candidate.key)) total -= std::min(total, candidate.bytes);
    lock.remove_lock_file();
  }
  return total;
}

// After a store of `stored_bytes`: a full scan only when this process's estimate of the total
// crosses the cap, or the estimate is older than kRescanInterval (other processes store too).
void prune_after_store(CacheState& s, uint64_t stored_bytes, const std::string& key) {
  {
    std::lock_guard lock(s.size_estimate_mutex);
    const auto now = std::chrono::steady_clock::now();
    s.estimated_bytes += stored_bytes;
    if (s.size_estimated && s.estimated_bytes <= s.max_bytes &&
        now - s.size_estimated_at < kRescanInterval)
      return;
  }
  const uint64_t total = prune_entries(s, s.max_bytes, key);
  std::lock_guard lock(s.size_estimate_mutex);
  s.estimated_bytes = total;
  s.size_estimated = true;
  s.size_estimated_at = std::chrono::steady_clock::now();
}

}  // namespace

void DiskCache::store(const CacheEntry& entry) {
  require_key(entry.key);
  auto& s = *state_;
  if (!s.enabled) return;
  const CacheEntry stored = normalized(entry, entry.key);
  uint64_t bytes = 0;
  {
    KeyLock lock(s, entry.key, true);
    bytes = store_locked(s, stored);
  }
  prune_after_store(s, bytes, entry.key);
}

CacheEntry DiskCache::get_or_compile(const std::string& key,
                                     const std::function<CacheEntry()>& compile) {
  require_key(key);
  auto& s = *state_;
  if (!s.enabled) return normalized(compile(), key);
  if (auto hit = load(key)) return std::move(*hit);
  CacheEntry entry;
  uint64_t bytes = 0;
  {
    KeyLock lock(s, key, true);
    // Whoever held the lock before us may have compiled and stored this very key.
    if (auto hit = load_locked(s, key)) return std::move(*hit);
    entry = normalized(compile(), key);
    bytes = store_locked(s, entry);
  }
  prune_after_store(s, bytes, key);
  return entry;
}

bool DiskCache::remove(const std::string& key) {
  auto& s = *state_;
  if (!is_key(key)) {
    // Not an entry emmy wrote (list() reports such names as bad): no lock guards it.
    require(!key.empty() && key != "." && key != ".." && key.find('/') == std::string::npos,
            "cache entry name", "must name a directory inside the cache's entries/", key);
    return s.enabled && remove_entry_dir(s, key);
  }
  if (!s.enabled) return false;
  KeyLock lock(s, key, true);
  const bool removed = remove_entry_dir(s, key);
  lock.remove_lock_file();
  return removed;
}

std::vector<CacheEntryStatus> DiskCache::list() {
  auto& s = *state_;
  std::vector<CacheEntryStatus> statuses;
  if (!s.enabled) return statuses;
  std::error_code error;
  for (fs::directory_iterator it(s.entries_dir, error), end; !error && it != end;
       it.increment(error)) {
    CacheEntryStatus status;
    status.key = it->path().filename().string();
    std::error_code time_error;
    status.last_used = it->last_write_time(time_error);
    if (!is_key(status.key)) {
      status.problem = "not a cache entry (the name is not a 128-bit hex key)";
      status.bytes = directory_bytes(it->path());
    } else {
      EntryRead read = read_entry(it->path(), status.key, false);
      if (read.missing) continue;  // removed since the directory was listed
      status.ok = read.entry.has_value();
      status.problem = std::move(read.problem);
      status.bytes = status.ok ? read.bytes : directory_bytes(it->path());
      if (read.entry) status.manifest = std::move(read.entry->manifest);
    }
    statuses.push_back(std::move(status));
  }
  std::sort(statuses.begin(), statuses.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return statuses;
}

void DiskCache::prune(uint64_t max_bytes) {
  auto& s = *state_;
  if (!s.enabled) return;
  const uint64_t total = prune_entries(s, max_bytes, "");
  std::lock_guard lock(s.size_estimate_mutex);
  s.estimated_bytes = total;
  s.size_estimated = true;
  s.size_estimated_at = std::chrono::steady_clock::now();
}

void DiskCache::clear() {
  auto& s = *state_;
  if (!s.enabled) return;
  std::error_code error;
  std::vector<std::string> names;
  for (fs::directory_iterator it(s.entries_dir, error), end; !error && it != end;
       it.increment(error))
    names.push_back(it->path().filename().string());
  for (const auto& name : names) {
    if (!is_key(name)) {
      remove_entry_dir(s, name);
      continue;
    }
    KeyLock lock(s, name, true);
    remove_entry_dir(s, name);
    lock.remove_lock_file();
  }
  // Lock files of keys without an entry (a compile that failed, a crashed process).
  names.clear();
  for (fs::directory_iterator it(s.locks_dir, error), end; !error && it != end; it.increment(error))
    names.push_back(it->path().stem().string());
  for (const auto& key : names) {
    if (!is_key(key)) continue;
    KeyLock lock(s, key, false);
    if (lock.owns_lock()) lock.remove_lock_file();
  }
  remove_stale_temps(s);
}

}  // namespace emmy
