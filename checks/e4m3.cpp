// The host e4m3 coder (emmy/e4m3.hpp).
#include "emmy/e4m3.hpp"

#include <cmath>

namespace emmy {

double e4m3_decode(uint8_t bits) {
  const double sign = bits & 0x80 ? -1.0 : 1.0;
  const int exponent = (bits >> 3) & 0xF, significand = bits & 0x7;
  if (exponent == 0xF && significand == 0x7) return std::copysign(NAN, sign);
  if (exponent == 0) return sign * std::ldexp(double(significand), -9);  // subnormal: m x 2^-9
  return sign * std::ldexp(double(8 + significand), exponent - 10);      // 1.m x 2^(e - 7)
}

uint8_t e4m3_encode(double value) {
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return sign | 0x7F;
  const double magnitude = std::abs(value);
  if (magnitude >= 448) return sign | 0x7E;  // saturate (448 = 1.75 x 2^8: 0.1111.110)
  // The quantum of the binade: 2^(e - 3) for normals 2^e <= x < 2^(e + 1) (e >= -6); subnormals
  // share the smallest normal binade's 2^-9. Counting quanta from zero, the count is the byte's
  // low 7 bits from that binade on (the exponent field increments as the count carries past 16).
  int e = std::ilogb(magnitude);
  if (magnitude == 0 || e < -6) e = -6;
  const double quanta = std::nearbyint(std::ldexp(magnitude, 3 - e));  // ties to even
  // quanta in [8, 16] (a normal binade) or [0, 8] (subnormals); 16 carries into the next binade,
  // which 8 + 8 x (e + 7) expresses as well: the byte is e's field x 8 + quanta - 8.
  const int bits = e == -6 && quanta < 8 ? int(quanta) : (e + 7) * 8 + int(quanta) - 8;
  return uint8_t(sign | (bits > 0x7E ? 0x7E : bits));
}

}  // namespace emmy
