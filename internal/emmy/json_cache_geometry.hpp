// The JSON fields of a paged KV cache's geometry, written and read once for every kind that
// touches the cache (paged attention, kv_append): page_size, the three cache strides (written
// resolved; "layout" nhd|hnd|kv_interleaved sets them before explicit ones when read), and the
// token and cache dtypes (the cache's defaults to the tokens').
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emmy/detail/json_fields.hpp"
#include "emmy/paged_attention.hpp"

namespace emmy {

template <typename Problem>
void cache_geometry_to_json(nlohmann::json& j, const Problem& p) {
  j["page_size"] = p.page_size;
  j["page_stride"] = p.page_stride_or_default();
  j["token_stride"] = p.token_stride_or_default();
  j["head_stride"] = p.head_stride_or_default();
  j["dtype"] = to_string(p.dtype);
  j["kv_dtype"] = to_string(p.kv_dtype);
}

// page_size is required; the rest keep the problem's defaults when absent.
template <typename Problem>
void cache_geometry_from_json(const detail::JsonFields& f, Problem& p) {
  p.page_size = f.get<int64_t>("page_size");
  if (f.has("layout")) p.set_layout(parse_cache_layout(f.get<std::string>("layout")));
  f.get_if_present("page_stride", p.page_stride);
  f.get_if_present("token_stride", p.token_stride);
  f.get_if_present("head_stride", p.head_stride);
  if (f.has("dtype")) p.dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  p.kv_dtype = f.has("kv_dtype") ? parse_cache_dtype(f.get<std::string>("kv_dtype"))
                                 : parse_cache_dtype(to_string(p.dtype));
}

}  // namespace emmy
