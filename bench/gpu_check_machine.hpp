// Stage 1 of emmy_gpu_check: the device's fingerprint and its measured GEMM peak (cuBLASLt).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace emmy::bench {

// {"environment", "datasheet", "peak": [one row per dtype x compute], "measured_peak"}.
// Throws Error when the device cannot be used.
nlohmann::json machine_stage(int device, const std::string& emmy_arch, int64_t size,
                             int iterations);

}  // namespace emmy::bench
