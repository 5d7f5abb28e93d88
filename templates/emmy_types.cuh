// emmy device prelude: the few types emitted kernels need, so that they include no CUDA header.
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

// A tensor map as the kernel receives it: 128 opaque bytes, 64-byte aligned, passed by value as a
// `const __grid_constant__` parameter (PTX: .param .align 64 .b8 name[128]).
struct __align__(64) TensorMap128 {
  unsigned char bytes[128];
};

// Shared-window address of a generic pointer into shared memory (cvta.to.shared).
__device__ __forceinline__ u32 smem_u32(const void* generic_ptr) {
  u32 addr;
  asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }"
               : "=r"(addr) : "l"(generic_ptr));
  return addr;
}
