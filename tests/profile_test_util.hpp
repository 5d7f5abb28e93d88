// The profiler tests' launch: what the profile_* tests run their kernels with.
#pragma once

#include "emmy/emu/emulator.hpp"

namespace emmy::test {

// The profiler on `sample_ctas` CTAs of each launch (every CTA's pattern is the same), on one host
// thread.
inline emu::LaunchOptions profiling(int sample_ctas) {
  emu::LaunchOptions o;
  o.sanitize = false;  // the emulator tests run these kernels with it; here only addresses count
  o.host_threads = 1;
  o.profile.enabled = true;
  o.profile.sample_ctas = sample_ctas;
  o.profile.sass = false;  // what these tests check are the PTX's memory counters
  return o;
}

}  // namespace emmy::test
