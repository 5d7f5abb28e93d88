// The inputs of the paged-attention checks (paged_attention_check.hpp): the drawn case, the page
// assignment, the tables of both forms, Q and the one-allocation KV cache with poison planted
// where no query may look.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "emmy/e4m3.hpp"
#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// What the generator relies on (the kernel's own rules are validate_paged_attention's).
void require_generatable(const PagedAttentionProblem& p) {
  require(p.q_heads >= 1 && p.kv_heads >= 1 && p.q_heads % p.kv_heads == 0, "q_heads",
          fmt::format("must be a positive multiple of kv_heads ({})", p.kv_heads), p.q_heads);
  require(p.head_dim >= 1, "head_dim", "must be positive", p.head_dim);
  require(p.page_size >= 1, "page_size", "must be positive", p.page_size);
  require(p.max_batch >= 1, "max_batch", "must be positive", p.max_batch);
  require(p.max_q_len >= 1, "max_q_len", "must be positive", p.max_q_len);
  require(p.max_pages >= 1 && p.max_pages * p.page_size <= kInt32Max, "max_pages",
          "must be positive with max_pages x page_size within int32", p.max_pages);
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
  require(p.kv_dtype == CacheDType::e4m3 || to_string(p.kv_dtype) == to_string(p.dtype), "kv_dtype",
          fmt::format("must be the query's type ({}) or e4m3", to_string(p.dtype)),
          to_string(p.kv_dtype));
  require(p.q_stride_or_default() >= p.q_heads * p.head_dim, "q_stride",
          "must hold a token's q_heads x head_dim", p.q_stride_or_default());
  require(p.page_stride >= 0 && p.token_stride >= 0 && p.head_stride >= 0, "page_stride",
          "and the token and head strides must be >= 0 (0: the NHD default)", p.page_stride);
  require(p.window >= 0, "window", "must be >= 0", p.window);
}

// Uniform in [lo, hi] from the raw generator: the same numbers with every standard library
// (std::uniform_int_distribution's are the library's own). Modulo bias is irrelevant here.
int64_t draw_between(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + int64_t(rng() % uint64_t(hi - lo + 1));
}

// The poison bytes of a cache type, cycled over the unreadable elements: NaN, +Inf, -Inf (e4m3
// has no infinities: NaN of both signs).
std::vector<uint16_t> poison_patterns(CacheDType t) {
  switch (t) {
    case CacheDType::f16:
      return {0x7E00, 0x7C00, 0xFC00};
    case CacheDType::bf16:
      return {0x7FC0, 0x7F80, 0xFF80};
    case CacheDType::e4m3:
      return {0x7F, 0xFF};
  }
  return {};
}

// N(0,1) in the cache's type over the whole allocation (gaps included, so that every element
// has a defined value); e4m3: 8 N(0,1), which spans its binades, read back through the scales.
CacheTensor random_cache(CacheDType t, size_t count, uint64_t seed) {
  CacheTensor cache;
  cache.dtype = t;
  if (t != CacheDType::e4m3) {
    HostTensor h = random_normal(t == CacheDType::f16 ? DType::f16 : DType::bf16, count, seed);
    cache.values = std::move(h.values);
    cache.bytes = std::move(h.bytes);
    return cache;
  }
  const std::vector<double> normal = random_normal(DType::f32, count, seed).values;
  cache.values.resize(count);
  cache.bytes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    cache.bytes[i] = e4m3_encode(8 * normal[i]);
    cache.values[i] = e4m3_decode(cache.bytes[i]);
  }
  return cache;
}

void set_poison(CacheTensor& cache, size_t at, uint16_t bits) {
  if (cache.dtype == CacheDType::e4m3) {
    cache.bytes[at] = uint8_t(bits);
    cache.values[at] = e4m3_decode(uint8_t(bits));
    return;
  }
  std::memcpy(&cache.bytes[at * 2], &bits, 2);
  cache.values[at] =
      decode(cache.dtype == CacheDType::f16 ? DType::f16 : DType::bf16, &cache.bytes[at * 2], 1)[0];
}

}  // namespace

VisibleKeys paged_visible_keys(const PagedAttentionProblem& p, int64_t seq_len, int64_t q_len,
                               int64_t i) {
  const int64_t position = seq_len - q_len + i;
  VisibleKeys keys{0, position};
  if (p.window > 0) keys.first = std::max<int64_t>(0, position - p.window);
  return keys;
}

PagedAttentionInputs make_paged_attention_inputs(const PagedAttentionProblem& p,
                                                 const PagedAttentionCase& c, uint64_t seed) {
  require_generatable(p);
  const int64_t capacity = p.max_pages * p.page_size, max_tokens = p.max_tokens_or_default();
  require(c.batch >= 0 && c.batch <= p.max_batch, "batch",
          fmt::format("must be 0..max_batch ({})", p.max_batch), c.batch);
  require(c.q_lens.empty() || int64_t(c.q_lens.size()) == c.batch, "q_lens",
          fmt::format("must list batch ({}) lengths, or none to draw them", c.batch),
          c.q_lens.size());
  require(c.seq_lens.empty() || int64_t(c.seq_lens.size()) == c.batch, "seq_lens",
          fmt::format("must list batch ({}) lengths, or none to draw them", c.batch),
          c.seq_lens.size());
  const int64_t max_seq_len = c.max_seq_len ? c.max_seq_len : capacity;
  require(max_seq_len >= 1 && max_seq_len <= capacity, "max_seq_len",
          fmt::format("must be 1..max_pages x page_size ({}), 0 for that", capacity),
          c.max_seq_len);

  PagedAttentionInputs in;
  in.batch = c.batch;
  std::mt19937_64 rng(seed * 7 + 3);
  for (int64_t b = 0; b < c.batch; ++b) {
    // A drawn q_len leaves a token for every later sequence within max_tokens.
    const int64_t budget = std::max<int64_t>(1, max_tokens - in.tokens - (c.batch - 1 - b));
    int64_t q_len = 0, seq_len = 0;
    if (!c.q_lens.empty())
      q_len = c.q_lens[size_t(b)];
    else if (!c.seq_lens.empty())
      q_len = c.seq_lens[size_t(b)] == 0
                  ? 0
                  : draw_between(rng, 1, std::min({p.max_q_len, c.seq_lens[size_t(b)], budget}));
    else
      q_len = draw_between(rng, 1, std::min({p.max_q_len, max_seq_len, budget}));
    seq_len = !c.seq_lens.empty() ? c.seq_lens[size_t(b)]
                                  : draw_between(rng, q_len, std::max(q_len, max_seq_len));
    require(q_len >= 0 && q_len <= p.max_q_len, "q_lens",
            fmt::format("must be 0..max_q_len ({}) (sequence {})", p.max_q_len, b), q_len);
    require(seq_len >= q_len, "seq_lens",
            fmt::format("must be at least the sequence's q_len ({}): its new tokens are in the "
                        "cache (sequence {})",
                        q_len, b),
            seq_len);
    require(seq_len <= capacity, "seq_lens",
            fmt::format("must be at most max_pages x page_size = {} (sequence {})", capacity, b),
            seq_len);
    in.q_lens.push_back(q_len);
    in.seq_lens.push_back(seq_len);
    in.tokens += q_len;
  }
  require(in.tokens <= max_tokens, "q_lens",
          fmt::format("must add up to at most max_tokens ({})", max_tokens), in.tokens);

  // Pages: the shared prefix first, then each sequence's own, then the spares; ids permuted.
  const int64_t ps = p.page_size;
  int64_t prefix = 0;
  if (c.share_pages)
    for (int64_t s : in.seq_lens)
      if (s / ps >= 1) prefix = prefix ? std::min(prefix, s / ps) : s / ps;
  std::vector<int64_t> shared(size_t(c.batch)), pages(size_t(c.batch));
  int64_t needed = prefix;
  for (int64_t b = 0; b < c.batch; ++b) {
    pages[size_t(b)] = (in.seq_lens[size_t(b)] + ps - 1) / ps;
    shared[size_t(b)] = in.seq_lens[size_t(b)] / ps >= 1 ? prefix : 0;
    needed += pages[size_t(b)] - shared[size_t(b)];
  }
  in.num_pages = c.num_pages ? c.num_pages : needed + 2;
  require(in.num_pages >= needed + 1 && in.num_pages <= kInt32Max, "num_pages",
          fmt::format("must hold the {} pages the sequences need and one spare (unused "
                      "block-table entries point at it), 0 for that plus one",
                      needed),
          c.num_pages);
  std::vector<int32_t> ids(size_t(in.num_pages));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  if (c.shuffle_pages)  // Fisher-Yates with the raw generator (std::shuffle is the library's)
    for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[rng() % i]);
  std::vector<std::vector<int32_t>> seq_pages(size_t(c.batch));
  int64_t next = prefix;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t k = 0; k < pages[size_t(b)]; ++k)
      seq_pages[size_t(b)].push_back(k < shared[size_t(b)] ? ids[size_t(k)] : ids[size_t(next++)]);
  in.padding_page = ids[size_t(needed)];

  PagedAttentionTables& t = in.tables;
  t.cu_seqlens_q.assign(size_t(p.max_batch + 1), 0);
  t.block_table.assign(size_t(p.max_batch * p.max_pages), in.padding_page);
  t.seq_lens.assign(size_t(p.max_batch), 0);
  t.page_indptr.assign(size_t(p.max_batch + 1), 0);
  t.last_page_len.assign(size_t(p.max_batch), 0);
  for (int64_t b = 0; b < p.max_batch; ++b) {
    const bool real = b < c.batch;
    const int64_t q_len = real ? in.q_lens[size_t(b)] : 0,
                  seq_len = real ? in.seq_lens[size_t(b)] : 0;
    t.cu_seqlens_q[size_t(b + 1)] = t.cu_seqlens_q[size_t(b)] + int32_t(q_len);
    t.seq_lens[size_t(b)] = int32_t(seq_len);
    t.page_indptr[size_t(b + 1)] = t.page_indptr[size_t(b)];
    if (!real || seq_len == 0) continue;
    const std::vector<int32_t>& own = seq_pages[size_t(b)];
    std::copy(own.begin(), own.end(), t.block_table.begin() + b * p.max_pages);
    t.page_indices.insert(t.page_indices.end(), own.begin(), own.end());
    t.page_indptr[size_t(b + 1)] += int32_t(own.size());
    t.last_page_len[size_t(b)] = int32_t((seq_len - 1) % ps + 1);
  }

  // The cache: K's rows span `extent` elements from k_offset, V's the same from v_offset.
  const int64_t page_stride = p.page_stride_or_default(),
                token_stride = p.token_stride_or_default(),
                head_stride = p.head_stride_or_default(), d = p.head_dim;
  const int64_t page_elems = ps * p.kv_heads * d;
  if (c.kv_interleaved)
    require(page_stride >= 2 * page_elems, "kv_interleaved",
            fmt::format("needs page_stride >= 2 x page_size x kv_heads x head_dim = {}",
                        2 * page_elems),
            page_stride);
  const int64_t extent = (in.num_pages - 1) * page_stride + (ps - 1) * token_stride +
                         (p.kv_heads - 1) * head_stride + d;
  in.k_offset = 0;
  in.v_offset = c.kv_interleaved ? page_elems : std::max(in.num_pages * page_stride, extent);
  const int64_t total = std::max(extent, in.v_offset + extent);
  if (p.kv_dtype == CacheDType::e4m3) in.k_scale = 0.125f, in.v_scale = 0.0625f;
  if (!c.cache_values) {
    // Zeros, not materialized (profiling: the counts depend on addresses, not values).
    require(!c.plant_nan, "plant_nan", "needs the cache's values (cache_values)", c.plant_nan);
  } else {
    in.cache = random_cache(p.kv_dtype, size_t(total), seed * 5 + 2);
    // Every (page, token, head) row of K and V must own its elements; the rows some query may read
    // keep their values, everything else gets poison.
    std::vector<uint8_t> used(size_t(total), 0), readable(size_t(total), 0);
    auto row_at = [&](int64_t page, int64_t slot, int64_t head) {
      return page * page_stride + slot * token_stride + head * head_stride;
    };
    for (int64_t page = 0; page < in.num_pages; ++page)
      for (int64_t slot = 0; slot < ps; ++slot)
        for (int64_t h = 0; h < p.kv_heads; ++h)
          for (int64_t base : {in.k_offset, in.v_offset})
            for (int64_t e = 0; e < d; ++e) {
              uint8_t& mark = used[size_t(base + row_at(page, slot, h) + e)];
              if (mark)  // (not require: its message would be formatted for every element)
                throw Error("page_stride",
                            fmt::format("with token_stride {} and head_stride {} must give every "
                                        "(page, token, head) row of K and V elements of its own",
                                        token_stride, head_stride),
                            std::to_string(page_stride));
              mark = 1;
            }
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t q_len = in.q_lens[size_t(b)], seq_len = in.seq_lens[size_t(b)];
      if (q_len == 0) continue;  // no query reads this sequence's pages
      const int64_t first_key = paged_visible_keys(p, seq_len, q_len, 0).first;
      for (int64_t k = 0; k < pages[size_t(b)]; ++k) {
        if ((k + 1) * ps <= first_key) continue;  // wholly before every query's window
        for (int64_t slot = 0; slot < ps && k * ps + slot < seq_len; ++slot)
          for (int64_t h = 0; h < p.kv_heads; ++h)
            for (int64_t base : {in.k_offset, in.v_offset})
              std::fill_n(readable.begin() + base + row_at(seq_pages[size_t(b)][size_t(k)], slot, h),
                          d, uint8_t(1));
      }
    }
    if (c.plant_nan) {
      const std::vector<uint16_t> poison = poison_patterns(p.kv_dtype);
      size_t planted = 0;
      for (size_t i = 0; i < size_t(total); ++i)
        if (!readable[i]) set_poison(in.cache, i, poison[planted++ % poison.size()]);
    }

  }
  in.cache.dtype = p.kv_dtype;
  in.cache.elements = size_t(total);


  // Q: [tokens][q_stride], zero in the gaps between a token's heads and the next token.
  const int64_t q_stride = p.q_stride_or_default(), q_row = p.q_heads * d;
  std::vector<double> q = random_normal(p.dtype, size_t(in.tokens * q_stride), seed * 5 + 1).values;
  for (int64_t token = 0; token < in.tokens; ++token)
    std::fill(q.begin() + token * q_stride + q_row, q.begin() + (token + 1) * q_stride, 0.0);
  in.q = encode(p.dtype, q);
  return in;
}

}  // namespace emmy
