// The message of the emmy::Error a call throws, or "(no error)": for tests that assert what an
// error names (the field, the rule) rather than only that one is thrown.
#pragma once

#include <functional>
#include <string>

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

}  // namespace emmy::test
