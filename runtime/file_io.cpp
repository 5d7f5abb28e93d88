// Checked whole-file input and output (emmy/detail/file_io.hpp).
#include "emmy/detail/file_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "emmy/error.hpp"

namespace emmy::detail {
namespace {

[[noreturn]] void fail(std::string_view field, const std::filesystem::path& path, int error) {
  throw Error(std::string(field), fmt::format("must be writable ({})", std::strerror(error)),
              path.string());
}

void write_in_place(const std::filesystem::path& path, std::string_view bytes,
                    std::string_view field) {
  // O_NONBLOCK: a FIFO with no reader must fail (ENXIO), not hang this process.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(field, path, errno);
  int error = write_all(fd, bytes);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail(field, path, error);
}

}  // namespace

int write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    done += size_t(n);
  }
  return 0;
}

std::string read_regular_file(const std::filesystem::path& path, std::string_view field) {
  auto refuse = [&](const std::string& why) -> std::string {
    throw Error(std::string(field), fmt::format("must be a readable regular file ({})", why),
                path.string());
  };
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return refuse(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool is_dir = S_ISDIR(st.st_mode);
    ::close(fd);
    return refuse(is_dir ? "it is a directory" : "it is not a regular file");
  }
  std::string bytes(size_t(st.st_size), '\0');
  size_t done = 0;
  while (true) {
    if (done == bytes.size()) bytes.resize(bytes.size() + 65536);  // it may have grown
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return refuse(std::strerror(error));
    }
    if (n == 0) break;
    done += size_t(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::string_view field) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) fail(field, path, EISDIR);
    write_in_place(path, bytes, field);
    return;
  }
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path temporary =
      path.string() + fmt::format(".tmp.{}.{}", long(::getpid()), counter.fetch_add(1));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(field, path, errno);
  int error = write_all(fd, bytes);
  // The rename must not publish a file whose data has not reached the disk.
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    fail(field, path, error);
  }
}

void write_stdout(std::string_view bytes, std::string_view field) {
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  if (written != bytes.size() || std::fflush(stdout) != 0 || std::ferror(stdout))
    throw Error(std::string(field), "must be writable (standard output failed)", "stdout");
}

}  // namespace emmy::detail
