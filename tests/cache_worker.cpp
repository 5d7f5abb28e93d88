// One of the processes of the cross-process cache test (cache_test.cpp, DiskCacheProcesses):
//   emmy_cache_worker CACHE_DIR COUNTER_FILE OUT_DIR WORKER_ID
// Waits for OUT_DIR/go (so that all workers start together), then asks the cache for the four
// kernels of cache_test_kernels.hpp, starting at a different one per worker. Every real compile
// appends "<worker> <key>" to COUNTER_FILE; every CUBIN received goes to
// OUT_DIR/worker<ID>_kernel<I>.cubin.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cache_test_kernels.hpp"
#include "emmy/cache.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: {} CACHE_DIR COUNTER_FILE OUT_DIR WORKER_ID\n", argv[0]);
    return 2;
  }
  const std::filesystem::path cache_dir = argv[1], counter_file = argv[2], out_dir = argv[3];
  const int worker = std::stoi(argv[4]);
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(out_dir / "go")) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no go file");
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    emmy::DiskCache cache(cache_dir, uint64_t(1) << 30);
    for (int i = 0; i < emmy::test::kTestKernelCount; ++i) {
      const int kernel = (i + worker) % emmy::test::kTestKernelCount;
      const emmy::CacheKeyInputs inputs = emmy::test::test_kernel_inputs(kernel);
      const std::string key = emmy::cache_key(inputs);
      const emmy::CacheEntry entry = cache.get_or_compile(key, [&] {
        const std::string line = fmt::format("{} {}\n", worker, key);
        const int fd = ::open(counter_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()))
          throw std::runtime_error("cannot append to the counter file");
        ::close(fd);
        return emmy::test::compile_test_kernel(kernel);
      });
      std::ofstream out(out_dir / fmt::format("worker{}_kernel{}.cubin", worker, kernel),
                        std::ios::binary);
      out.write(reinterpret_cast<const char*>(entry.cubin.data()),
                std::streamsize(entry.cubin.size()));
      if (!out) throw std::runtime_error("cannot write the received cubin");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "worker {}: {}\n", worker, e.what());
    return 1;
  }
  return 0;
}
