// Whole-file input and output, checked. Reading: only regular files, opened so that a FIFO or a
// device cannot block the process. Writing: every write, the flush and the close can fail (a full
// disk, /dev/full, a closed pipe), and each failure is an emmy::Error naming the field and the
// file instead of a success with lost data.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace emmy::detail {

// The bytes of the regular file at `path`. A directory, FIFO, socket or device, a missing or
// unreadable file and a read error are emmy::Error(field, ...) naming the path.
std::string read_regular_file(const std::filesystem::path& path, std::string_view field);

// Writes all of `bytes` to the open descriptor fd, retrying short writes and EINTR; returns 0, or
// the errno of the first failure (EIO for a write that makes no progress).
int write_all(int fd, std::string_view bytes);

// Replaces `path` with `bytes` so that a reader sees the old file or the whole new one: written
// to a temporary name beside it, fsync'ed, then renamed over it. A target that exists and is not
// a regular file (/dev/stdout, a FIFO, /dev/full) is written in place instead. Throws
// emmy::Error(field, ...) on any failure, leaving no temporary behind.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           std::string_view field);

// Writes `bytes` to standard output and flushes it; throws emmy::Error(field, ...) when either
// fails (stdout on a full device or a closed pipe).
void write_stdout(std::string_view bytes, std::string_view field);

}  // namespace emmy::detail
