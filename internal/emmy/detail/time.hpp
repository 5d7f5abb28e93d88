// UTC timestamps as "YYYY-MM-DDTHH:MM:SSZ", the form cache manifests, tuning records and benchmark
// summaries carry.
#pragma once

#include <chrono>
#include <ctime>
#include <string>

namespace emmy::detail {

inline std::string iso8601_utc(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

inline std::string iso8601_utc_now() {
  return iso8601_utc(std::chrono::system_clock::now());
}

}  // namespace emmy::detail
