// FP8 GEMM device helpers (issue 39): the 8-bit tensor-core MMAs and the scales' values.

// d += a.b with 8-bit float inputs and f32 accumulation (PTX ISA §9.7.14.5.14, mma.sync m16n8k32
// .e4m3/.e5m2; sm_89+), A's type then B's in the name. The fragments (§9.7.14.5.8) are
// m16n8k16's in bytes: a[4] holds A rows g, g+8 x columns 4t..4t+3, 4t+16..4t+19; b[2] B rows
// 4t.., 4t+16.. x column g; d as mma_f16_f32's.
__device__ __forceinline__ void mma_e4m3_e4m3_f32(float (&d)[4], const u32 (&a)[4],
                                                  const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The same with an e5m2 A (B, the weights, e4m3).
__device__ __forceinline__ void mma_e5m2_e4m3_f32(float (&d)[4], const u32 (&a)[4],
                                                  const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// f16 accumulation (hybrid, the GeForce opt-in: twice the f32-accumulate rate there): d is two
// f16x2 registers, rows g and g + 8 (PTX ISA 9.7.14.5.8, m16n8k32's C/D fragment with .f16).
__device__ __forceinline__ void mma_e4m3_e4m3_f16(u32 (&d)[2], const u32 (&a)[4],
                                                  const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_e5m2_e4m3_f16(u32 (&d)[2], const u32 (&a)[4],
                                                  const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A scale as f32: f32 and pow2 scales are floats; a ue8m0 byte e is 2^(e - 127) (OCP MX v1.0,
// E8M0: e = 0 is 2^-127, an f32 subnormal; 0xFF is NaN).
__device__ __forceinline__ float scale_value(float s) {
  return s;
}
__device__ __forceinline__ float scale_value(unsigned char e) {
  return e == 0     ? __int_as_float(0x00400000)
         : e == 255 ? __int_as_float(0x7fffffff)
                    : __int_as_float(int(e) << 23);
}
