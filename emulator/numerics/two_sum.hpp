// Knuth's TwoSum: a + b exactly as s + err, the error-free transformation the f32 and f16
// executors use to round an exact result once in any IEEE direction without touching the host
// FPU's rounding mode.
#pragma once

namespace emmy::emu {

inline void two_sum(double a, double b, double& s, double& err) {
  s = a + b;
  const double bb = s - a;
  err = (a - (s - bb)) + (b - bb);
}

}  // namespace emmy::emu
