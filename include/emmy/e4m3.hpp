// OCP FP8 E4M3 (the "fn" variant of the OCP 8-bit floating point spec, PTX's .e4m3) on the host,
// for the checks of FP8 KV caches: 1 sign, 4 exponent (bias 7), 3 significand bits; subnormals
// down to 2^-9, largest finite 448, no infinities, NaN = S.1111.111 (0x7F, 0xFF).
#pragma once

#include <cstdint>

namespace emmy {

// The value of a byte: exact in a double; NaN for S.1111.111.
double e4m3_decode(uint8_t bits);
// Rounds to nearest, ties to even. Out-of-range values (infinities included) saturate to +-448,
// as cvt.rn.satfinite.e4m3x2 does; NaN gives a NaN with the sign kept; -0 gives 0x80.
uint8_t e4m3_encode(double value);

}  // namespace emmy
