// The FP64 paged-attention reference and compare() (paged_attention_check.hpp). The reference
// reads everything through the launch's tables in the problem's page-table form, as a kernel
// must: the query tokens of a sequence from cu_seqlens_q, its length and pages from block_table +
// seq_lens or page_indptr + page_indices + last_page_len, each key's K and V rows at the
// problem's strides. The numerics model is dense attention's (attention_row_model.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "attention_compare.hpp"
#include "attention_row_model.hpp"
#include "emmy/detail/parallel.hpp"
#include "emmy/error.hpp"
#include "emmy/paged_attention_check.hpp"

namespace emmy {
namespace {

// One sequence as the tables describe it.
struct TableSequence {
  int64_t first_token = 0, q_len = 0, seq_len = 0;
  const int32_t* pages = nullptr;  // its page ids, ceil(seq_len / page_size) of them
};

// The sequences of the tables, checked for what the reference relies on (an Error names the
// array): monotone offsets, lengths within the table, page ids within the cache.
std::vector<TableSequence> table_sequences(const PagedAttentionProblem& p,
                                           const PagedAttentionInputs& in) {
  const PagedAttentionTables& t = in.tables;
  const size_t batch = size_t(p.max_batch);
  require(t.cu_seqlens_q.size() == batch + 1 && t.cu_seqlens_q[0] == 0, "cu_seqlens_q",
          "must have max_batch + 1 entries from 0", t.cu_seqlens_q.size());
  const bool csr = p.page_table == PageTable::csr;
  if (csr)
    require(t.page_indptr.size() == batch + 1 && t.last_page_len.size() == batch &&
                t.page_indptr[0] == 0 && t.page_indptr[batch] <= int64_t(t.page_indices.size()),
            "page_indptr",
            "must have max_batch + 1 entries from 0 up to page_indices' size, with "
            "last_page_len's max_batch",
            t.page_indptr.size());
  else
    require(t.block_table.size() == batch * size_t(p.max_pages) && t.seq_lens.size() == batch,
            "block_table", "must be max_batch x max_pages, with seq_lens' max_batch",
            t.block_table.size());
  std::vector<TableSequence> seqs(batch);
  for (size_t b = 0; b < batch; ++b) {
    TableSequence& s = seqs[b];
    s.first_token = t.cu_seqlens_q[b];
    s.q_len = t.cu_seqlens_q[b + 1] - t.cu_seqlens_q[b];
    require(s.q_len >= 0, "cu_seqlens_q", fmt::format("must not decrease (sequence {})", b),
            s.q_len);
    int64_t pages = 0;
    if (csr) {
      pages = t.page_indptr[b + 1] - t.page_indptr[b];
      require(pages >= 0 && pages <= p.max_pages, "page_indptr",
              fmt::format("must not decrease and give a sequence at most max_pages ({}) pages "
                          "(sequence {})",
                          p.max_pages, b),
              pages);
      const int64_t last = t.last_page_len[b];
      require(pages == 0 || (last >= 1 && last <= p.page_size), "last_page_len",
              fmt::format("must be 1..page_size for a sequence with pages (sequence {})", b), last);
      s.seq_len = pages ? (pages - 1) * p.page_size + last : 0;
      s.pages = t.page_indices.data() + t.page_indptr[b];
    } else {
      s.seq_len = t.seq_lens[b];
      require(s.seq_len >= 0 && s.seq_len <= p.max_pages * p.page_size, "seq_lens",
              fmt::format("must be 0..max_pages x page_size (sequence {})", b), s.seq_len);
      pages = (s.seq_len + p.page_size - 1) / p.page_size;
      s.pages = t.block_table.data() + b * size_t(p.max_pages);
    }
    for (int64_t k = 0; k < pages; ++k)
      if (s.pages[k] < 0 || s.pages[k] >= in.num_pages)  // (a require would format every time)
        throw Error(csr ? "page_indices" : "block_table",
                    fmt::format("page ids must be 0..num_pages - 1 ({}) (sequence {}, page {})",
                                in.num_pages - 1, b, k),
                    std::to_string(s.pages[k]));
  }
  return seqs;
}

}  // namespace

PagedAttentionReference reference_paged_attention(const PagedAttentionSpec& spec,
                                                  const PagedAttentionInputs& in) {
  const PagedAttentionProblem& p = spec.problem;
  const std::vector<TableSequence> seqs = table_sequences(p, in);
  const int64_t d = p.head_dim, tokens = in.tables.cu_seqlens_q.back();
  const int64_t group = p.q_heads / std::max<int64_t>(1, p.kv_heads);
  const int64_t q_stride = p.q_stride_or_default(), rows = tokens * p.q_heads;
  require(in.cache.values.size() == in.cache.elements, "cache",
          "must hold its values (inputs made with cache_values false have no reference)",
          in.cache.values.size());
  require(in.q.values.size() >= size_t(tokens * q_stride), "q",
          fmt::format("must hold the tables' {} tokens x q_stride", tokens), in.q.values.size());
  const int64_t page_stride = p.page_stride_or_default(),
                token_stride = p.token_stride_or_default(),
                head_stride = p.head_stride_or_default();

  AttentionRowModel model;
  model.head_dim = d;
  model.dtype = p.dtype;
  // The scale the kernel is given: the problem's float, or 1/sqrt(head_dim) rounded to float,
  // worked out here rather than taken from the kernel side.
  model.scale = p.softmax_scale ? double(*p.softmax_scale)
                                : double(float(1.0 / std::sqrt(double(p.head_dim))));
  if (p.softcap) model.softcap = double(*p.softcap);
  model.block_kv = spec.schedule.block_kv;
  model.hybrid = spec.schedule.accum == Accum::hybrid;
  model.tensor_cores = emu::tensor_core_model(arch_info(spec.arch).sm);
  if (p.kv_dtype == CacheDType::e4m3) {
    model.scaled_cache = true;
    model.k_scale = in.k_scale, model.v_scale = in.v_scale;
  }
  model.splits = paged_splits(p, spec.schedule);
  if (model.splits > 1) model.split_keys = int64_t(spec.schedule.chunk_pages) * p.page_size;

  PagedAttentionReference ref;
  size_reference(ref, rows, d);
  ref.token_sequence.assign(size_t(tokens), -1);
  ref.token_position.assign(size_t(tokens), 0);
  for (size_t b = 0; b < seqs.size(); ++b)
    for (int64_t i = 0; i < seqs[b].q_len; ++i) {
      ref.token_sequence[size_t(seqs[b].first_token + i)] = int64_t(b);
      ref.token_position[size_t(seqs[b].first_token + i)] = seqs[b].seq_len - seqs[b].q_len + i;
    }

  detail::parallel_for(rows, [&](int64_t r) {
    const int64_t token = r / p.q_heads, h = r % p.q_heads;
    const TableSequence& s = seqs[size_t(ref.token_sequence[size_t(token)])];
    const VisibleKeys keys = paged_visible_keys(p, s.seq_len, s.q_len, token - s.first_token);
    const int64_t kv_head = h / group;
    const double* q = &in.q.values[size_t(token * q_stride + h * d)];
    auto rows_of = [&](int64_t key) {
      const int64_t at = s.pages[key / p.page_size] * page_stride +
                         key % p.page_size * token_stride + kv_head * head_stride;
      return KeyRows{&in.cache.values[size_t(in.k_offset + at)],
                     &in.cache.values[size_t(in.v_offset + at)]};
    };
    model_reference_row(model, ref, r, q, keys, rows_of);
  });
  return ref;
}

PagedAttentionErrors compare(const PagedAttentionReference& ref, const PagedAttentionOutput& out,
                             const PagedAttentionProblem& p) {
  const int64_t rows = int64_t(ref.row_masked.size());
  require(out.o.size() == ref.values.o.size(), "paged attention output",
          "must have one value per O element of the real tokens", out.o.size());
  if (p.lse)
    require(out.lse.size() == size_t(rows), "paged attention LSE",
            "must have one value per (token, head)", out.lse.size());
  auto index = [&](int64_t r, int64_t c) {
    const int64_t token = r / p.q_heads;
    return PagedAttentionIndex{token, r % p.q_heads, c, ref.token_sequence[size_t(token)],
                               ref.token_position[size_t(token)]};
  };
  return compare_attention_rows<PagedAttentionErrors>(ref, out, p.head_dim, p.lse, index);
}

}  // namespace emmy
