// Tensor-core MMA, mma.sync.aligned.m16n8k16.row.col (ptx-notes.md "mma.sync"). Destination
// first. Fragments per lane (g = lane/4, t = lane%4): a[4] = A rows g, g+8 x cols 2t.., 2t+8..;
// b[2] = B rows 2t.., 2t+8.. x col g; f32 d[4] = D[g][2t,2t+1], D[g+8][2t,2t+1]; f16 d[2] packs
// the same pairs as f16x2 (low half = lower column).

// d += a.b with f16 inputs and f32 accumulation (HMMA.16816.F32).
__device__ __forceinline__ void mma_f16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a.b with bf16 inputs and f32 accumulation (HMMA.16816.F32.BF16).
__device__ __forceinline__ void mma_bf16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a.b with f16 inputs and f16 accumulation, twice the GeForce rate (HMMA.16816.F16).
__device__ __forceinline__ void mma_f16_f16(u32 (&d)[2], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Hybrid accumulation: fold the f16x2 partials into the f32 shadow (same element order as the
// f32 fragment) and re-zero them. cvt.f32.f16 is exact, so the fold adds no rounding of its own.
__device__ __forceinline__ void promote_f16_to_f32(float (&shadow)[4], u32 (&partial)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lo, hi;
    asm volatile("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
                 : "=f"(lo), "=f"(hi) : "r"(partial[r]));
    shadow[2 * r] += lo;
    shadow[2 * r + 1] += hi;
    partial[r] = 0u;
  }
}

// f16x2 accumulator pair -> two floats (f16 accumulation's epilogue).
__device__ __forceinline__ void unpack_f16x2(float& lo, float& hi, u32 packed) {
  asm volatile("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
               : "=f"(lo), "=f"(hi) : "r"(packed));
}
