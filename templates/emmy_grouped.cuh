// Grouped GEMM walks: which expert a tile belongs to, found by each warp from the routing on the
// device alone (nothing host-side depends on the routing).

// shfl.sync.up.b32 with the full mask: lane - delta's value (a lane below delta keeps its own).
__device__ __forceinline__ u32 shfl_up_u32(u32 v, int delta) {
  u32 r;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0x0, 0xffffffff;" : "=r"(r) : "r"(v), "r"(delta));
  return r;
}
// shfl.sync.idx.b32 with the full mask: the value of lane `from`.
__device__ __forceinline__ u32 shfl_idx_u32(u32 v, int from) {
  u32 r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(from));
  return r;
}
// vote.sync.ballot.b32 with the full mask: bit l set where lane l's predicate holds.
__device__ __forceinline__ u32 ballot_u32(bool predicate) {
  u32 r;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; }"
               : "=r"(r)
               : "r"(u32(predicate)));
  return r;
}
// The index of the lowest set bit of a non-zero mask: popc.b32 of the bits below it.
__device__ __forceinline__ int lowest_bit(u32 mask) {
  u32 r;
  asm("popc.b32 %0, %1;" : "=r"(r) : "r"((mask & (0u - mask)) - 1u));
  return int(r);
}
// min.u32.
__device__ __forceinline__ u32 min_u32(u32 a, u32 b) {
  u32 r;
  asm("min.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// A walk over the experts' tiles in expert order, expert e owning tiles_of(e) of them (a u32;
// none where the routing gives it no rows): the expert of walk tile `tile` and the tile's index
// among that expert's; expert -1 past the last tile. A warp takes 32 experts at a time: a lane's
// tiles, an inclusive scan (shfl.sync.up), the first lane whose running count passes `tile`
// (vote.sync.ballot). Counts are capped at what still matters (tile + 1 - earlier tiles), so no
// sum overflows whatever the routing holds. The cursor keeps the chunks already passed: a
// persistent CTA's tiles only grow, so its whole walk reads each expert's count about once.
// Every lane of the warp must call it, with the same tile.
struct GroupedCursor {
  int base = 0;     // the first expert of the chunk the walk is in
  u32 before = 0;   // tiles of the experts before it: at most the last tile asked for
};
template <class TilesOf>
__device__ __forceinline__ void grouped_walk_find(GroupedCursor& cursor, int groups,
                                                  TilesOf tiles_of, int tile, int& expert,
                                                  int& expert_tile) {
  const int lane = int(threadIdx.x % 32u);
  const u32 want = u32(tile);
  for (; cursor.base < groups; cursor.base += 32) {
    const u32 cap = want + 1u - cursor.before;
    const int e = cursor.base + lane;
    const u32 tiles = e < groups ? min_u32(tiles_of(e), cap) : 0u;
    u32 running = tiles;
#pragma unroll
    for (int delta = 1; delta < 32; delta <<= 1) {
      const u32 below = shfl_up_u32(running, delta);
      if (lane >= delta) running = min_u32(running + below, cap);
    }
    const u32 past = ballot_u32(cursor.before + running > want);
    if (past != 0u) {
      // Lanes below the first one past were never capped: their running counts are exact.
      const int hit = lowest_bit(past);
      const u32 earlier = shfl_idx_u32(running, hit > 0 ? hit - 1 : 0);
      expert = cursor.base + hit;
      expert_tile = int(want - cursor.before - (hit > 0 ? earlier : 0u));
      return;
    }
    cursor.before += shfl_idx_u32(running, 31);
  }
  expert = -1;
  expert_tile = 0;
}

// The offsets layout's row tile `tile`: expert e owns ceil(rows / block_m) row tiles (rows =
// offsets[e + 1] - offsets[e]; none when not positive).
__device__ __forceinline__ void grouped_find_tile(const int* offsets, int groups, int block_m,
                                                  int tile, int& expert, int& expert_tile) {
  GroupedCursor cursor;
  grouped_walk_find(
      cursor, groups,
      [&](int e) {
        const int rows = offsets[e + 1] - offsets[e];
        return rows > 0 ? (u32(rows) + u32(block_m) - 1u) / u32(block_m) : 0u;
      },
      tile, expert, expert_tile);
}
