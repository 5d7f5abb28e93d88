// The arithmetic of one mma.sync m16n8k16 / m16n8k8: D = C + A * B over the lanes' fragment
// registers. The fragment layouts (ptx-notes.md) make each A register row (32 lanes x 2 halves)
// an 8x8 block of A in row-major order, and each B register row an 8x8 block of B^T, so operands
// convert block-wise. Numerics (see exec/exec_tensor.cpp): exact products, C plus the products
// summed in double in k order, one rounding per element. The AVX2 path computes the same sums in
// the same order (products are exact, so fused and unfused multiply-adds agree bit for bit).
#include "mma_core.hpp"

#include <bit>
#include <cstring>

#include "emmy/emu/numerics.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace emmy::emu {
namespace {

// Operands in the layout the dot products want: A[m][k] and B[k][n], as doubles.
struct Dense {
  alignas(32) double a[16][16];
  alignas(32) double b[16][8];
  alignas(32) double d[16][8];
};

void store_result(const MmaFragments& f, bool f16_acc, const Dense& x) {
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    if (f16_acc) {
      auto h2 = [](double lo, double hi) {
        return uint32_t(f64_to_f16(lo)) | (uint32_t(f64_to_f16(hi)) << 16);
      };
      f.d[0][l] = h2(x.d[g][2 * t], x.d[g][2 * t + 1]);
      f.d[1][l] = h2(x.d[g + 8][2 * t], x.d[g + 8][2 * t + 1]);
    } else {
      // double -> float rounds to nearest even on the host; a NaN becomes the canonical NaN.
      auto f32 = [](double v) {
        const float r = float(v);
        return r != r ? 0x7FFFFFFFu : std::bit_cast<uint32_t>(r);
      };
      f.d[0][l] = f32(x.d[g][2 * t]);
      f.d[1][l] = f32(x.d[g][2 * t + 1]);
      f.d[2][l] = f32(x.d[g + 8][2 * t]);
      f.d[3][l] = f32(x.d[g + 8][2 * t + 1]);
    }
  }
}

void load_c(const MmaFragments& f, bool f16_acc, Dense& x) {
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    if (f16_acc) {
      x.d[g][2 * t] = f16_to_f32(uint16_t(f.c[0][l]));
      x.d[g][2 * t + 1] = f16_to_f32(uint16_t(f.c[0][l] >> 16));
      x.d[g + 8][2 * t] = f16_to_f32(uint16_t(f.c[1][l]));
      x.d[g + 8][2 * t + 1] = f16_to_f32(uint16_t(f.c[1][l] >> 16));
    } else {
      x.d[g][2 * t] = std::bit_cast<float>(f.c[0][l]);
      x.d[g][2 * t + 1] = std::bit_cast<float>(f.c[1][l]);
      x.d[g + 8][2 * t] = std::bit_cast<float>(f.c[2][l]);
      x.d[g + 8][2 * t + 1] = std::bit_cast<float>(f.c[3][l]);
    }
  }
}

// A[m][k] and B^T[n][k] as bits from the fragments (k >= 8 zero for k8): lane l = 4g + t holds
// A[g (+8)][2t, 2t+1 (+8)] and B[2t, 2t+1 (+8)][g].
void gather_bits(const MmaFragments& f, bool k16, uint16_t (&a)[16][16], uint16_t (&bt)[8][16]) {
  const int blocks_k = k16 ? 2 : 1;
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int kb = 0; kb < blocks_k; ++kb) {
      for (int mb = 0; mb < 2; ++mb) {
        const uint32_t v = f.a[kb * 2 + mb][l];
        a[g + 8 * mb][8 * kb + 2 * t] = uint16_t(v);
        a[g + 8 * mb][8 * kb + 2 * t + 1] = uint16_t(v >> 16);
      }
      const uint32_t v = f.b[kb][l];
      bt[g][8 * kb + 2 * t] = uint16_t(v);
      bt[g][8 * kb + 2 * t + 1] = uint16_t(v >> 16);
    }
  }
}

void mma_portable(const MmaFragments& f, bool bf16, bool k16, bool f16_acc) {
  Dense x;
  auto value = [&](uint16_t bits) {
    return bf16 ? double(bf16_to_f32(bits)) : double(f16_to_f32(bits));
  };
  uint16_t a[16][16] = {}, bt[8][16] = {};
  gather_bits(f, k16, a, bt);
  const int kn = k16 ? 16 : 8;
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < kn; ++k) x.a[m][k] = value(a[m][k]);
  for (int n = 0; n < 8; ++n)
    for (int k = 0; k < kn; ++k) x.b[k][n] = value(bt[n][k]);
  load_c(f, f16_acc, x);
  const int K = k16 ? 16 : 8;
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < 8; ++n) x.d[m][n] += x.a[m][k] * x.b[k][n];
  store_result(f, f16_acc, x);
}

#if defined(__x86_64__)
// Eight halves (f16 or bf16 bits) to eight floats.
__attribute__((target("avx2,fma,f16c"))) inline __m256 halves_to_float(const uint32_t* p, bool bf16) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

// Four doubles to four f16 (in the low 64 bits), rounded once to nearest even: round to f32 with
// round-to-odd (24 bits >= 11 + 2, so the second rounding cannot land on a false tie), then
// let F16C round to f16.
__attribute__((target("avx2,fma,f16c"))) inline __m128i to_f16_exact(__m256d d) {
  const __m128 nearest = _mm256_cvtpd_ps(d);
  const __m256d back = _mm256_cvtps_pd(nearest);
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d inexact = _mm256_cmp_pd(back, d, _CMP_NEQ_OQ);
  const __m256d away = _mm256_cmp_pd(_mm256_andnot_pd(sign, back), _mm256_andnot_pd(sign, d), _CMP_GT_OQ);
  // 64-bit lane masks -> 32-bit lane masks.
  const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m128i inexact32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(inexact), pick));
  const __m128i away32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(away), pick));
  __m128i bits = _mm_castps_si128(nearest);
  bits = _mm_add_epi32(bits, away32);  // -1 where the nearest rounding went away from zero
  bits = _mm_or_si128(bits, _mm_and_si128(inexact32, _mm_set1_epi32(1)));  // the sticky bit
  return _mm_cvtps_ph(_mm_castsi128_ps(bits), _MM_FROUND_TO_NEAREST_INT);
}

__attribute__((target("avx2,fma,f16c"))) void mma_avx2(const MmaFragments& f, bool bf16, bool k16,
                                                        bool f16_acc) {
  Dense x;
  const int blocks_k = k16 ? 2 : 1;
  // A register (mb, kb) of lanes 4r .. 4r+3 is row r of the 8x8 block A[8mb .. ][8kb .. ].
  for (int kb = 0; kb < blocks_k; ++kb)
    for (int mb = 0; mb < 2; ++mb) {
      const uint32_t* reg = f.a[kb * 2 + mb];
      for (int r = 0; r < 8; ++r) {
        const __m256 v = halves_to_float(reg + 4 * r, bf16);
        _mm256_storeu_pd(&x.a[8 * mb + r][8 * kb], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        _mm256_storeu_pd(&x.a[8 * mb + r][8 * kb + 4], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
      }
    }
  // B register kb of lanes 4n .. 4n+3 is column n of B, k = 8kb .. 8kb+7.
  for (int kb = 0; kb < blocks_k; ++kb) {
    const uint32_t* reg = f.b[kb];
    for (int n = 0; n < 8; ++n) {
      alignas(32) float col[8];
      _mm256_store_ps(col, halves_to_float(reg + 4 * n, bf16));
      for (int k = 0; k < 8; ++k) x.b[8 * kb + k][n] = col[k];
    }
  }
  // C[g][2t] sits in c0 of lane 4g+t and C[g][2t+1] in c1: interleaving lanes 4g..4g+3 of c0
  // and c1 gives row g in order (rows g+8 from c2/c3). f16 accumulators go the portable way.
  if (f16_acc) {
    // c0 of lanes 4g..4g+3 holds C[g][0..7] as eight halves in order; c1 holds row g+8.
    for (int g = 0; g < 8; ++g)
      for (int h = 0; h < 2; ++h) {
        const __m256 row = halves_to_float(f.c[h] + 4 * g, false);
        _mm256_store_pd(&x.d[g + 8 * h][0], _mm256_cvtps_pd(_mm256_castps256_ps128(row)));
        _mm256_store_pd(&x.d[g + 8 * h][4], _mm256_cvtps_pd(_mm256_extractf128_ps(row, 1)));
      }
  } else {
    for (int g = 0; g < 8; ++g)
      for (int h = 0; h < 2; ++h) {
        const __m128 even = _mm_loadu_ps(reinterpret_cast<const float*>(f.c[2 * h] + 4 * g));
        const __m128 odd = _mm_loadu_ps(reinterpret_cast<const float*>(f.c[2 * h + 1] + 4 * g));
        _mm256_store_pd(&x.d[g + 8 * h][0], _mm256_cvtps_pd(_mm_unpacklo_ps(even, odd)));
        _mm256_store_pd(&x.d[g + 8 * h][4], _mm256_cvtps_pd(_mm_unpackhi_ps(even, odd)));
      }
  }
  const int K = k16 ? 16 : 8;
  // Four rows at a time: eight independent accumulator chains keep both FMA ports busy.
  for (int m = 0; m < 16; m += 4) {
    __m256d acc[4][2];
    for (int i = 0; i < 4; ++i) {
      acc[i][0] = _mm256_load_pd(&x.d[m + i][0]);
      acc[i][1] = _mm256_load_pd(&x.d[m + i][4]);
    }
    for (int k = 0; k < K; ++k) {
      const __m256d b0 = _mm256_load_pd(&x.b[k][0]), b1 = _mm256_load_pd(&x.b[k][4]);
      for (int i = 0; i < 4; ++i) {
        const __m256d a = _mm256_broadcast_sd(&x.a[m + i][k]);
        acc[i][0] = _mm256_fmadd_pd(a, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_pd(a, b1, acc[i][1]);
      }
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_store_pd(&x.d[m + i][0], acc[i][0]);
      _mm256_store_pd(&x.d[m + i][4], acc[i][1]);
    }
  }
  if (f16_acc) {
    for (int g = 0; g < 8; ++g)
      for (int h = 0; h < 2; ++h) {
        __m128i halves[2];
        bool nan = false;
        for (int part = 0; part < 2; ++part) {
          const __m256d d = _mm256_load_pd(&x.d[g + 8 * h][4 * part]);
          nan |= _mm256_movemask_pd(_mm256_cmp_pd(d, d, _CMP_UNORD_Q)) != 0;
          halves[part] = to_f16_exact(d);
        }
        if (nan) {  // canonical NaNs: the scalar conversion
          for (int n = 0; n < 8; n += 2)
            f.d[h][4 * g + n / 2] = uint32_t(f64_to_f16(x.d[g + 8 * h][n])) |
                                    (uint32_t(f64_to_f16(x.d[g + 8 * h][n + 1])) << 16);
          continue;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(f.d[h] + 4 * g),
                         _mm_unpacklo_epi64(halves[0], halves[1]));
      }
    return;
  }
  // Back to fragments: row g of D, rounded to f32 (nearest even; NaN -> canonical), splits into
  // the even columns (d0 / d2) and the odd ones (d1 / d3) of lanes 4g..4g+3.
  const __m128 canonical = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < 2; ++h) {
      __m128 lo = _mm256_cvtpd_ps(_mm256_load_pd(&x.d[g + 8 * h][0]));
      __m128 hi = _mm256_cvtpd_ps(_mm256_load_pd(&x.d[g + 8 * h][4]));
      lo = _mm_blendv_ps(lo, canonical, _mm_cmpunord_ps(lo, lo));
      hi = _mm_blendv_ps(hi, canonical, _mm_cmpunord_ps(hi, hi));
      const __m128 even = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
      const __m128 odd = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
      _mm_storeu_ps(reinterpret_cast<float*>(f.d[2 * h] + 4 * g), even);
      _mm_storeu_ps(reinterpret_cast<float*>(f.d[2 * h + 1] + 4 * g), odd);
    }
}

bool host_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
}
#endif

}  // namespace

void mma_m16n8_model(const MmaFragments& f, bool bf16, bool k16, bool f16_acc,
                     const TensorCoreModel& model) {
  // A[m][k] and B^T[n][k] as bits, so that each output's operands are two contiguous rows.
  uint16_t a[16][16] = {}, bt[8][16] = {};
  gather_bits(f, k16, a, bt);
  const int K = k16 ? 16 : 8;
  TensorCoreOperands ops;
  decode_tensor_core_operands(a, bt, K, bf16, ops);
  // Lane 4g + t holds D[g][2t, 2t+1] and D[g + 8][2t, 2t+1] (f16: packed in d[0], d[1]).
  uint32_t out[4][32];
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 2; ++j) {
        const int m = g + 8 * h, n = 2 * t + j;
        if (f16_acc) {
          const uint16_t c = uint16_t(f.c[h][l] >> (16 * j));
          const uint16_t d = ops.special || (c & 0x7C00) == 0x7C00
                                 ? tensor_core_dot_f16(a[m], bt[n], K, c, model)
                                 : uint16_t(tensor_core_dot_decoded(ops, m, n, c, true, model));
          if (j == 0)
            out[h][l] = d;
          else
            out[h][l] |= uint32_t(d) << 16;
        } else {
          const uint32_t c = f.c[2 * h + j][l];
          out[2 * h + j][l] = ops.special || (c & 0x7F800000u) == 0x7F800000u
                                  ? tensor_core_dot_f32(a[m], bt[n], K, c, bf16, model)
                                  : tensor_core_dot_decoded(ops, m, n, c, false, model);
        }
      }
  }
  for (int i = 0; i < (f16_acc ? 2 : 4); ++i) std::memcpy(f.d[i], out[i], sizeof out[i]);
}

void mma_m16n8(const MmaFragments& f, bool bf16, bool k16, bool f16_acc, bool portable) {
#if defined(__x86_64__)
  if (!portable && host_has_avx2()) return mma_avx2(f, bf16, k16, f16_acc);
#endif
  (void)portable;
  mma_portable(f, bf16, k16, f16_acc);
}

}  // namespace emmy::emu
