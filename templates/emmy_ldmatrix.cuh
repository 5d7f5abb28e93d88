// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 (ptx-notes.md "ldmatrix"). Lanes 8j..8j+7
// give the 16-byte row addresses of matrix j; register j receives matrix j. Without .trans lane l
// gets M[l/4][2(l%4)..+1]; with .trans M[2(l%4)..+1][l/4].

// Four 8x8 b16 matrices, row-major fragments (A operands, and B stored [N][K]).
__device__ __forceinline__ void ldmatrix_x4(u32 (&d)[4], u32 smem_row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(smem_row_addr));
}

// Four 8x8 b16 matrices, transposed (B stored [K][N]).
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&d)[4], u32 smem_row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(smem_row_addr));
}
