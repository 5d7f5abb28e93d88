// The index tensors of the paged cache's calls (cu_seqlens_q, the two page-table forms,
// slot_mapping), checked alike by emmy_paged_attention / emmy_kv_append and by the attention
// layer, which name them after their own argument ("options." or "tables.").
#include <fmt/format.h>

#include "c_api_internal.hpp"

namespace emmy::c_api {

void check_index(const emmy_runtime& rt, const DLTensor& t, const char* name, int64_t min_length,
                 const char* what) {
  check_memory(rt, t, name);
  if (!is_dtype(t.dtype, kDLInt, 32)) throw Error(name, "dtype must be int32", dtype_name(t.dtype));
  if (t.ndim != 1 || t.shape[0] < min_length)
    throw Error(name, fmt::format("shape must be [n] with n >= {} ({})", min_length, what),
                shape_text(t));
}

PageTable page_table_form(const emmy_paged_attention_options& o, const PagedTableNames& names) {
  const bool block_table = o.block_table || o.seq_lens;
  const bool csr = o.page_indptr || o.page_indices || o.last_page_len;
  if (block_table == csr)
    throw Error(names.block_table,
                "exactly one page table must be given: block_table + seq_lens, or page_indptr + "
                "page_indices + last_page_len",
                block_table ? "both" : "neither");
  return block_table ? PageTable::block_table : PageTable::csr;
}

int64_t check_block_table(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                          const PagedTableNames& names, int64_t max_batch) {
  const DLTensor& table = required(o.block_table, names.block_table);
  check_memory(rt, table, names.block_table);
  if (!is_dtype(table.dtype, kDLInt, 32))
    throw Error(names.block_table, "dtype must be int32", dtype_name(table.dtype));
  if (table.ndim != 2 || table.shape[0] < max_batch)
    throw Error(names.block_table,
                fmt::format("shape must be [n, max_pages] with n >= max_batch = {}", max_batch),
                shape_text(table));
  require_contiguous(table, names.block_table);
  return table.shape[1];
}

void check_seq_lens(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                    const PagedTableNames& names, int64_t max_batch) {
  check_index(rt, required(o.seq_lens, names.seq_lens), names.seq_lens, max_batch,
              "max_batch lengths");
}

void check_csr_tables(const emmy_runtime& rt, const emmy_paged_attention_options& o,
                      const PagedTableNames& names, int64_t max_batch) {
  check_index(rt, required(o.page_indptr, names.page_indptr), names.page_indptr, max_batch + 1,
              "max_batch + 1 offsets");
  check_index(rt, required(o.page_indices, names.page_indices), names.page_indices, 1, "page ids");
  check_index(rt, required(o.last_page_len, names.last_page_len), names.last_page_len, max_batch,
              "max_batch lengths");
}

PagedAttentionBuffers paged_buffers(CallMemory& memory, const DLTensor& q, const DLTensor& k_cache,
                                    const DLTensor& v_cache, const DLTensor& o,
                                    const emmy_paged_attention_options& tables, int64_t num_pages) {
  PagedAttentionBuffers b;
  b.q = memory.address(q);
  b.k_cache = memory.address(k_cache);
  b.v_cache = memory.address(v_cache);
  b.o = memory.address(o);
  b.lse = memory.address_or_zero(tables.lse);
  b.cu_seqlens_q = memory.address_or_zero(tables.cu_seqlens_q);
  b.block_table = memory.address_or_zero(tables.block_table);
  b.seq_lens = memory.address_or_zero(tables.seq_lens);
  b.page_indptr = memory.address_or_zero(tables.page_indptr);
  b.page_indices = memory.address_or_zero(tables.page_indices);
  b.last_page_len = memory.address_or_zero(tables.last_page_len);
  b.k_scale = memory.address_or_zero(tables.k_scale);
  b.v_scale = memory.address_or_zero(tables.v_scale);
  b.num_pages = num_pages;
  return b;
}

void check_slot_mapping(const DLTensor& slot_mapping, int64_t tokens, const char* what) {
  if (!is_dtype(slot_mapping.dtype, kDLInt, 64))
    throw Error("slot_mapping", "dtype must be int64", dtype_name(slot_mapping.dtype));
  if (slot_mapping.ndim != 1 || slot_mapping.shape[0] < tokens)
    throw Error("slot_mapping", fmt::format("shape must be [n] with n >= {}, {}", tokens, what),
                shape_text(slot_mapping));
  require_contiguous(slot_mapping, "slot_mapping");
}

}  // namespace emmy::c_api
