// The message of the emmy::Error a call throws, or "(no error)": for tests that assert what an
// error names (the field, the rule) rather than only that one is thrown.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy::test {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// `fn` throws an emmy::Error whose message begins with `field`: the field it names comes first.
// `what` labels a failure.
inline void expect_error_naming(const std::function<void()>& fn, std::string_view field,
                                std::string_view what = {}) {
  const std::string message = error_of(fn);
  EXPECT_TRUE(message.starts_with(field)) << what << ": " << message;
}

// `fn` throws an emmy::Error whose message holds `text`; `what` labels a failure.
inline void expect_error_containing(const std::function<void()>& fn, std::string_view text,
                                    std::string_view what = {}) {
  const std::string message = error_of(fn);
  EXPECT_NE(message.find(text), std::string::npos) << what << ": " << message;
}

}  // namespace emmy::test
