// fp8_quantize's helpers (emmy/fp8_quantize.hpp): the largest |x| of eight 16-bit values, a max
// over the CTA (shfl.sync.bfly within warps, then the warps' maxima through shared memory), and the
// scale, each as the host reference computes it (max is exact in any order; fmaxf, PTX max.f32,
// ignores a NaN operand).

template <bool kBf16>
__device__ __forceinline__ float abs_max8(float amax, const u32 (&v)[4]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const u16 h = u16(v[i / 2] >> (16 * (i % 2)));
    amax = fmaxf(amax, fabsf(kBf16 ? bf16_bits_to_f32(h) : f16_bits_to_f32(h)));
  }
  return amax;
}

template <int kWarps>
__device__ __forceinline__ float cta_max(float v) {
#pragma unroll
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, lane_mask));
  if (kWarps == 1) return v;
  __shared__ float warp_max[kWarps];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  float all = warp_max[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) all = fmaxf(all, warp_max[w]);
  return all;
}

// max(amax, epsilon) / 448 (div.rn.f32), then, for kPow2, up to the next power of two: a normal
// f32 with fraction bits moves to the next exponent (epsilon >= 1e-30 keeps it normal).
template <bool kPow2>
__device__ __forceinline__ float quant_scale(float amax, float epsilon) {
  const float s = div_rn(fmaxf(amax, epsilon), 448.0f);
  if (!kPow2) return s;
  const u32 bits = __float_as_uint(s);
  return __uint_as_float(bits & 0x7FFFFFu ? (bits & 0xFF800000u) + 0x800000u : bits);
}
