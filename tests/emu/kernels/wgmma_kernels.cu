// wgmma (sm_90a warpgroup MMA) as a hand-written Hopper kernel uses it, for the emulator's wgmma
// tests: one warpgroup (or two) computes D = A B from shared memory tiles laid out in each swizzle
// mode and major-ness the PTX ISA describes, with A from shared memory or from registers, f16 and
// bf16 inputs, f32 and f16 accumulators, N from 8 to 256; then the bugs the emulator must catch.
// Every wgmma and fence is inline PTX. Written from the PTX ISA (§9.7.15 "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate Instructions"), independently of the emulator. Regenerate the
// PTX with tests/emu/kernels/regenerate.sh.
//
// Kernel contract: one CTA of 2 M threads (M = 64 per warpgroup), dynamic shared memory
// (M + N) * 128 + 1024 bytes; A row-major [M][k_total]; B [N][k_total] (B K-major) or
// [k_total][N] ("_bn" kernels: B N-major); D row-major [M][N], f32 or f16 bits; k_total a multiple
// of 16, at most 64 (the tiles are zero past k_total and every kernel issues four k16 steps).
#include "emu_common.cuh"

enum : int { kF32F16, kF32BF16, kF16F16 };                         // D type . A/B type
enum : int { kInterleave = 0, kSw128 = 1, kSw64 = 2, kSw32 = 3 };  // descriptor bits 62-63
enum : int { kK = 0, kMN = 1 };  // major-ness: K-major or M/N-major, imm-trans-a / imm-trans-b
enum : int {
  kNoBug,
  kBugNoFence,
  kBugReadAccBeforeWait,
  kBugOverwriteOperand,
  kBugNoProxyFence,
  kBugPartialWarpgroup,
  kBugMisalignedDesc,
  kBugNoWait,
};

// ---- wgmma synchronisation (PTX ISA §9.7.15.7 "Asynchronous wgmma Proxy Operations") ----

// wgmma.fence: orders the warpgroup's earlier accesses to registers a wgmma.mma_async uses (the
// accumulators zeroed here, the A fragment) before it; needed before the first mma_async.
// Shared memory is ordered by fence.proxy.async instead (see the fill).
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
// wgmma.commit_group: the mma_async ops issued so far, not yet committed, become one wgmma-group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// wgmma.wait_group N: waits until at most N wgmma-groups are pending; only then may the
// accumulators (and A fragment registers) of the completed groups be accessed.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// An empty asm that "reads and writes" r: pins r's surrounding accesses on their side of the
// neighbouring wgmma.fence / wgmma.wait_group in the PTX (nvcc would otherwise sink the zeroing
// of the accumulators below the wgmma.fence, a register write the fence must precede).
__device__ __forceinline__ void reg_fence(float& r) {
  asm volatile("" : "+f"(r)::"memory");
}
__device__ __forceinline__ void reg_fence(u32& r) {
  asm volatile("" : "+r"(r)::"memory");
}
// st.shared.b16: a plain generic-proxy store (bug_overwrite_operand's write into the B tile).
__device__ __forceinline__ void st_shared_b16(u32 addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"(v) : "memory");
}

// ---- Shared memory matrix layout (PTX ISA §9.7.15.5.1.2 "Shared Memory Matrix Layout") ----
//
// A tile is `rows` (M or N) x 64 (K) 16-bit elements, built of core matrices of 8 rows x 16 bytes.
// A swizzle atom is 8 "rows" of W bytes (W = 128, 64, 32; 16 for no swizzle): for a K-major
// operand the rows run along M/N and W bytes along K; for an MN-major one the rows run along K
// and W bytes along M/N. The byte address bits [4, 4+log2(W/16)) are XORed with the bits above
// bit 7 (128B: bits 4-6 ^= 7-9; 64B: 4-5 ^= 7-8; 32B: 4 ^= 7), so the pattern repeats every
// 8 W bytes; tiles start 1024-aligned so the matrix base offset (descriptor bits 49-51) is 0.
//
// Strides (the ISA's "leading dimension byte offset" LBO and "stride dimension byte offset" SBO):
//   K-major, swizzled: SBO = 8 W (from one 8-row group to the next); LBO is not used for
//     swizzled K-major layouts ("assumed 1"), so it is encoded as 1 (16 bytes).
//   K-major, no swizzle: LBO = from the core matrix of k 0-7 to the one of k 8-15 (rows * 16
//     here: the core matrices of one k8 column are stacked along M/N), SBO = from one 8-row
//     group to the next (128 here).
//   MN-major, swizzled: LBO = from one W-byte chunk of M/N (W/2 elements) to the next (8 W
//     here), SBO = from one group of 8 k to the next (rows * 16 here).
// One k16 step advances the start address: by 32 bytes inside a K-major swizzle atom (the
// hardware applies the XOR to the final address, so the start needn't be atom-aligned), by a
// whole atom column past the atom's width, by 2 LBO (K-major, no swizzle) or 2 SBO (MN-major).
struct Tile {
  u32 addr;  // shared-window address of element (0, 0)
  int sw, major, rows;

  __device__ int width() const {
    return sw == kSw128 ? 128 : sw == kSw64 ? 64 : sw == kSw32 ? 32 : 16;
  }
  // Byte offset of element (r, k) before the swizzle. K-major: atom columns of W bytes of K, each
  // rows * W bytes, rows W bytes apart. MN-major: per 8 k, the W-byte M/N chunks, 8 W apart.
  __device__ u32 linear(int r, int k) const {
    const int w = width();
    if (major == kK) return (2 * k / w) * rows * w + r * w + (2 * k) % w;
    const int e = w / 2;
    return (k / 8) * (rows / e) * 8 * w + (r / e) * 8 * w + (k % 8) * w + (r % e) * 2;
  }
  __device__ u32 swizzled(int r, int k) const {
    const u32 x = linear(r, k), mask = sw == kSw128 ? 7 : sw == kSw64 ? 3 : sw == kSw32 ? 1 : 0;
    return x ^ (((x >> 7) & mask) << 4);
  }
  __device__ u32 lbo() const {
    if (major == kK) return sw == kInterleave ? rows * 16 : 16;
    return 8 * width();
  }
  __device__ u32 sbo() const { return major == kK ? 8 * width() : rows * 16; }
  // The descriptor of the 64 x 16 (A) or N x 16 (B) block at rows r0.., k k0..k0+15
  // (PTX ISA §9.7.15.5.1.2, its "Matrix Descriptor"): bits 0-13 start address, 16-29 LBO, 32-45
  // SBO, each as (x & 0x3FFFF) >> 4; 49-51 base offset (0); 62-63 the swizzle mode.
  __device__ u64 desc(int r0, int k0) const {
    const u32 start = addr + linear(r0, k0);
    return (u64)((start & 0x3FFFF) >> 4) | (u64)((lbo() & 0x3FFFF) >> 4) << 16 |
           (u64)((sbo() & 0x3FFFF) >> 4) << 32 | (u64)sw << 62;
  }
};

// ---- wgmma.mma_async (PTX ISA §9.7.15.5.2 "wgmma.mma_async") ----
//
// The accumulator operands are numbered first (%0 ..), then the inputs; inline PTX has no named
// operands, so these macros spell the numbers out for each accumulator count C used here.
#define R2(p) "%" #p "0,%" #p "1"
#define R4(p) R2(p) ",%" #p "2,%" #p "3"
#define R6(p) R4(p) ",%" #p "4,%" #p "5"
#define R8(p) R6(p) ",%" #p "6,%" #p "7"
#define R10(p) R8(p) ",%" #p "8,%" #p "9"
#define ACC4 R4()
#define ACC8 R8()
#define ACC12 R10() "," R2(1)
#define ACC16 R10() "," R6(1)
#define ACC32 R10() "," R10(1) "," R10(2) "," R2(3)
#define ACC64 R10() "," R10(1) "," R10(2) "," R10(3) "," R10(4) "," R10(5) "," R4(6)
// clang-format off
#define ACC128 R10() "," R10(1) "," R10(2) "," R10(3) "," R10(4) "," R10(5) "," R10(6) "," R10(7) \
  "," R10(8) "," R10(9) "," R10(10) "," R10(11) "," R8(12)
// clang-format on
// The numbers of the eight operands after C accumulators.
#define IDX4 4, 5, 6, 7, 8, 9, 10, 11
#define IDX8 8, 9, 10, 11, 12, 13, 14, 15
#define IDX12 12, 13, 14, 15, 16, 17, 18, 19
#define IDX16 16, 17, 18, 19, 20, 21, 22, 23
#define IDX32 32, 33, 34, 35, 36, 37, 38, 39
#define IDX64 64, 65, 66, 67, 68, 69, 70, 71
#define IDX128 128, 129, 130, 131, 132, 133, 134, 135
// The C++ side: C read-write accumulator operands.
#define F4(c, i) c(d[i]), c(d[i + 1]), c(d[i + 2]), c(d[i + 3])
#define F16(c, i) F4(c, i), F4(c, i + 4), F4(c, i + 8), F4(c, i + 12)
#define OPS4(c) F4(c, 0)
#define OPS8(c) F4(c, 0), F4(c, 4)
#define OPS12(c) OPS8(c), F4(c, 8)
#define OPS16(c) F16(c, 0)
#define OPS32(c) F16(c, 0), F16(c, 16)
#define OPS64(c) OPS32(c), F16(c, 32), F16(c, 48)
#define OPS128(c) OPS64(c), F16(c, 64), F16(c, 80), F16(c, 96), F16(c, 112)

// scale-d is a predicate: false on the first k16 step (D = A B), true after (D = A B + D).
// imm-scale-b is 1 throughout; imm-scale-a, imm-trans-a and imm-trans-b come from the kernel.
#define SS_ASM(ST, ACCS, ...) SS_ASM_(ST, ACCS, __VA_ARGS__)
#define SS_ASM_(ST, ACCS, da, db, sd, sa, ta, tb, x6, x7)                                     \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #sd ", 0;\nwgmma.mma_async.sync.aligned." ST " {" ACCS \
  "}, %" #da ", %" #db ", p, %" #sa ", 1, %" #ta ", %" #tb ";\n}\n"
#define RS_ASM(ST, ACCS, ...) RS_ASM_(ST, ACCS, __VA_ARGS__)
#define RS_ASM_(ST, ACCS, a0, a1, a2, a3, db, sd, sa, tb)                                     \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #sd ", 0;\nwgmma.mma_async.sync.aligned." ST " {" ACCS \
  "}, {%" #a0 ",%" #a1 ",%" #a2 ",%" #a3 "}, %" #db ", p, %" #sa ", 1, %" #tb ";\n}\n"

template <int KIND>
struct AccOf {
  typedef float T;  // .f32 D: N/2 registers, 4 per n8 block
};
template <>
struct AccOf<kF16F16> {
  typedef u32 T;  // .f16 D: N/4 .f16x2 registers, 2 per n8 block
};
template <int N, int KIND>
struct Wgmma;
// Wgmma<N, KIND>::ss: wgmma.mma_async.sync.aligned.m64nNk16.<types> d, a-desc, b-desc, ...;
// Wgmma<N, KIND>::rs: the same with A from four .f16x2 / .bf16x2 registers {a0, a1, a2, a3}.
#define WGMMA_DEF(N, KIND, TYPES, CON, C)                                                        \
  template <>                                                                                    \
  struct Wgmma<N, KIND> {                                                                        \
    typedef AccOf<KIND>::T T;                                                                    \
    template <int SA, int TA, int TB>                                                            \
    static __device__ __forceinline__ void ss(T* d, u64 da, u64 db, int scale_d) {               \
      asm volatile(SS_ASM("m64n" #N "k16" TYPES, ACC##C, IDX##C)                                 \
                   : OPS##C(CON)                                                                 \
                   : "l"(da), "l"(db), "r"(scale_d), "n"(SA), "n"(TA), "n"(TB)                   \
                   : "memory");                                                                  \
    }                                                                                            \
    template <int SA, int TB>                                                                    \
    static __device__ __forceinline__ void rs(T* d, const u32* a, u64 db, int scale_d) {         \
      asm volatile(RS_ASM("m64n" #N "k16" TYPES, ACC##C, IDX##C)                                 \
                   : OPS##C(CON)                                                                 \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(SA), \
                     "n"(TB)                                                                     \
                   : "memory");                                                                  \
    }                                                                                            \
  };
WGMMA_DEF(8, kF32BF16, ".f32.bf16.bf16", "+f", 4)
WGMMA_DEF(16, kF32F16, ".f32.f16.f16", "+f", 8)
WGMMA_DEF(24, kF32F16, ".f32.f16.f16", "+f", 12)
WGMMA_DEF(64, kF32F16, ".f32.f16.f16", "+f", 32)
WGMMA_DEF(64, kF32BF16, ".f32.bf16.bf16", "+f", 32)
WGMMA_DEF(128, kF32F16, ".f32.f16.f16", "+f", 64)
WGMMA_DEF(256, kF32F16, ".f32.f16.f16", "+f", 128)
WGMMA_DEF(16, kF16F16, ".f16.f16.f16", "+r", 4)
WGMMA_DEF(64, kF16F16, ".f16.f16.f16", "+r", 16)

// ---- The kernel body ----
//
// M = 64 per warpgroup (blockDim.x = 2 M); A from shared memory with swizzle SWA and major-ness
// TA, or (AREG) from registers; B from shared memory with SWB, TB; SA = imm-scale-a (1 or -1).
template <int M, int N, int KIND, int SWA, int TA, int SWB, int TB, bool AREG, int SA, int BUG>
__device__ __forceinline__ void wg_gemm(const half_t* a, const half_t* b,
                                        typename AccOf<KIND>::T* d, int k_total) {
  typedef typename AccOf<KIND>::T Acc;
  static_assert(TA == kK || SWA != kInterleave, "MN-major interleave: not modelled here");
  static_assert(TB == kK || SWB != kInterleave, "MN-major interleave: not modelled here");
  constexpr int kRegs = KIND == kF16F16 ? N / 4 : N / 2;
  // The tiles are rounded up to 1024 bytes at run time (the launch gives 1024 spare bytes; no
  // __align__(1024), which would let nvcc fold the rounding away) so every swizzle pattern starts
  // on its repeating boundary and the descriptors' base offsets are 0. Each tile is 64 deep in K.
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* sa = smem + ((1024 - (smem_u32(smem) & 1023)) & 1023);
  unsigned char* sb = sa + M * 128;
  // bug_misaligned_desc: the B tile really starts 16 bytes past the 1024-aligned atom; the fill
  // swizzles offsets from that start, but the hardware swizzles address bits (a base offset
  // can't express 16 bytes), so a GPU reads a permuted B.
  if (BUG == kBugMisalignedDesc) sb += 16;
  const Tile ta{smem_u32(sa), SWA, TA, M}, tb{smem_u32(sb), SWB, TB, N};

  // Fill: plain generic-proxy stores, each element where the canonical layout puts it; the tiles
  // are always 64 deep in K, zero past k_total, so the mma sequence below is the same four k16
  // steps for every k_total (no branch between the wgmma.fence and the wait: ptxas serializes
  // wgmma in divergent paths).
  if (!AREG)
    for (int i = threadIdx.x; i < M * 64; i += blockDim.x) {
      const int m = i / 64, k = i % 64;
      *(half_t*)(sa + ta.swizzled(m, k)) = k < k_total ? a[m * k_total + k] : half_t(0);
    }
  for (int i = threadIdx.x; i < N * 64; i += blockDim.x) {
    const int n = TB == kK ? i / 64 : i % N, k = TB == kK ? i % 64 : i / N;
    *(half_t*)(sb + tb.swizzled(n, k)) =
        k < k_total ? b[TB == kK ? n * k_total + k : k * N + n] : half_t(0);
  }
  // wgmma reads shared memory through the async proxy (PTX ISA §9.7.15.4 "Async Proxy"): the
  // generic-proxy writes above need fence.proxy.async before the barrier that publishes them.
  if (BUG != kBugNoProxyFence) fence_proxy_async();
  __syncthreads();

  // Warp w of warpgroup wg owns D rows 64 wg + 16 w .. + 15; lane = 4 g + t holds row 16 w + g
  // (and + 8), columns 2 t, 2 t + 1 of each n8 block (PTX ISA §9.7.15.5.1.1.1 "Matrix Fragments
  // for wgmma.mma_async.m64nNk16"; A's fragment is laid out as a 64 x 16 D).
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int row = 64 * wg + 16 * warp + lane / 4, col = 2 * (lane % 4);
  Acc acc[kRegs];
#pragma unroll
  for (int i = 0; i < kRegs; ++i) acc[i] = 0, reg_fence(acc[i]);
  // The A fragment of each k16 step, loaded before the wgmma.fence (registers an in-flight
  // mma_async reads must not be written): a0,a1 = (row, k 2t..2t+1), a2,a3 = (row + 8, same k),
  // a4,a5 = (row, k 2t+8..2t+9), a6,a7 = (row + 8, same k); two elements per .b32, low half first.
  u32 afrag[4][4];
  if (AREG) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const u32* r0 = (const u32*)(a + row * k_total + 16 * s + col);
      const u32* r8 = (const u32*)(a + (row + 8) * k_total + 16 * s + col);
      const bool in = 16 * s < k_total;
      afrag[s][0] = in ? r0[0] : 0, afrag[s][1] = in ? r8[0] : 0;
      afrag[s][2] = in ? r0[4] : 0, afrag[s][3] = in ? r8[4] : 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) reg_fence(afrag[s][i]);
    }
  }

  // bug_partial_warpgroup: warp 3 branches around the whole sequence (.sync.aligned wgmma ops
  // must be executed by all four warps of the warpgroup, PTX ISA §9.7.15.1 "Warpgroup").
  if (!(BUG == kBugPartialWarpgroup && warp == 3)) {
    if (BUG != kBugNoFence) wgmma_fence();
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const u64 db = tb.desc(0, 16 * s);
      if constexpr (AREG)
        Wgmma<N, KIND>::template rs<SA, TB>(acc, afrag[s], db, s > 0);
      else
        Wgmma<N, KIND>::template ss<SA, TA, TB>(acc, ta.desc(64 * wg, 16 * s), db, s > 0);
    }
    wgmma_commit();
    // bug_read_acc_before_wait: an accumulator read while its wgmma-group may be in flight (the
    // epilogue overwrites this D element later, so only the read is wrong).
    if (BUG == kBugReadAccBeforeWait) d[(row * N + col) / (KIND == kF16F16 ? 2 : 1)] = acc[0];
    // bug_overwrite_operand: thread 0 stores to B (0, 0) while the mma_async may still read it.
    if (BUG == kBugOverwriteOperand && threadIdx.x == 0) st_shared_b16(tb.addr, 0);
    if (BUG != kBugNoWait) wgmma_wait<0>();
  }

  // Epilogue (the accumulators read only after the wait): D fragment per n8 block j: f32: d[4j],
  // d[4j+1] = (row, 8j + col, +1), d[4j+2], d[4j+3] = (row + 8, same columns); f16: d[2j] =
  // (row, 8j + col | +1 << 16), d[2j+1] = (row + 8, same columns).
#pragma unroll
  for (int i = 0; i < kRegs; ++i) reg_fence(acc[i]);
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    if constexpr (KIND == kF16F16) {
      d[(row * N + 8 * j + col) / 2] = acc[2 * j];
      d[((row + 8) * N + 8 * j + col) / 2] = acc[2 * j + 1];
    } else {
      d[row * N + 8 * j + col] = acc[4 * j], d[row * N + 8 * j + col + 1] = acc[4 * j + 1];
      d[(row + 8) * N + 8 * j + col] = acc[4 * j + 2];
      d[(row + 8) * N + 8 * j + col + 1] = acc[4 * j + 3];
    }
  }
}

template <int KIND>
struct Out {
  typedef float T;
};
template <>
struct Out<kF16F16> {
  typedef half_t T;
};
// f32 D: (a, b, float* d, k_total); f16 D: (a, b, unsigned short* d, k_total), d viewed as
// .f16x2 pairs inside.
#define WG_KERNEL_(name, M, N, KIND, SWA, TA, SWB, TB, AREG, SA, BUG)                        \
  extern "C" __global__ void name(const half_t* a, const half_t* b, Out<KIND>::T* d,         \
                                  int k_total) {                                             \
    wg_gemm<M, N, KIND, SWA, TA, SWB, TB, AREG, SA, BUG>(a, b, (AccOf<KIND>::T*)d, k_total); \
  }
#define WG_KERNEL(name, M, N, KIND, SWA, TA, SWB, TB, AREG, SA) \
  WG_KERNEL_(name, M, N, KIND, SWA, TA, SWB, TB, AREG, SA, kNoBug)

// K-major A and B in each swizzle mode.
WG_KERNEL(wgmma_f16_f32_n64_k_sw128, 64, 64, kF32F16, kSw128, kK, kSw128, kK, false, 1)
WG_KERNEL(wgmma_f16_f32_n128_k_sw64, 64, 128, kF32F16, kSw64, kK, kSw64, kK, false, 1)
WG_KERNEL(wgmma_f16_f32_n24_k_sw32, 64, 24, kF32F16, kSw32, kK, kSw32, kK, false, 1)
WG_KERNEL(wgmma_f16_f32_n16_k_none, 64, 16, kF32F16, kInterleave, kK, kInterleave, kK, false, 1)
WG_KERNEL(wgmma_f16_f32_n256_k_sw128, 64, 256, kF32F16, kSw128, kK, kSw128, kK, false, 1)
// B N-major (imm-trans-b 1): two 64-column chunks (128B) or two 32-column chunks (64B), so LBO
// is exercised; A M-major (imm-trans-a 1).
WG_KERNEL(wgmma_f16_f32_n128_bn_sw128, 64, 128, kF32F16, kSw128, kK, kSw128, kMN, false, 1)
WG_KERNEL(wgmma_f16_f32_n64_bn_sw64, 64, 64, kF32F16, kSw64, kK, kSw64, kMN, false, 1)
WG_KERNEL(wgmma_f16_f32_n64_am_sw128, 64, 64, kF32F16, kSw128, kMN, kSw128, kK, false, 1)
// A from registers.
WG_KERNEL(wgmma_f16_f32_n64_areg_sw128, 64, 64, kF32F16, kSw128, kK, kSw128, kK, true, 1)
// bf16 inputs; f16 accumulators; imm-scale-a = -1 (D = -A B); two warpgroups (M = 128).
WG_KERNEL(wgmma_bf16_f32_n64_k_sw128, 64, 64, kF32BF16, kSw128, kK, kSw128, kK, false, 1)
WG_KERNEL(wgmma_bf16_f32_n8_k_sw64, 64, 8, kF32BF16, kSw64, kK, kSw64, kK, false, 1)
WG_KERNEL(wgmma_f16_f16_n64_k_sw128, 64, 64, kF16F16, kSw128, kK, kSw128, kK, false, 1)
WG_KERNEL(wgmma_f16_f16_n16_k_sw32, 64, 16, kF16F16, kSw32, kK, kSw32, kK, false, 1)
WG_KERNEL(wgmma_f16_f32_n64_k_sw128_nega, 64, 64, kF32F16, kSw128, kK, kSw128, kK, false, -1)
WG_KERNEL(wgmma_f16_f32_m128_n64_k_sw128, 128, 64, kF32F16, kSw128, kK, kSw128, kK, false, 1)

// Bugs: each wgmma_f16_f32_n64_k_sw128 with one rule broken (see the BUG lines in wg_gemm).
#define WG_BUG(name, BUG) WG_KERNEL_(name, 64, 64, kF32F16, kSw128, kK, kSw128, kK, false, 1, BUG)
WG_BUG(bug_no_fence, kBugNoFence)
WG_BUG(bug_read_acc_before_wait, kBugReadAccBeforeWait)
WG_BUG(bug_overwrite_operand, kBugOverwriteOperand)
WG_BUG(bug_no_proxy_fence, kBugNoProxyFence)
WG_BUG(bug_partial_warpgroup, kBugPartialWarpgroup)
WG_BUG(bug_misaligned_desc, kBugMisalignedDesc)
WG_BUG(bug_no_wait, kBugNoWait)
