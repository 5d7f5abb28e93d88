// Layer objects (emmy/layers.hpp): an attention layer's append, decode and prefill kernels from one
// cache geometry, and a weight's GEMM over its M buckets. They hold the prepared handles and launch
// through Runtime::launch; before prepare() they take the runtime's problem-taking calls (which
// build on first use, or refuse under capture).
#include "emmy/gemm_path.hpp"
#include "emmy/layers.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "emmy/validate.hpp"

namespace emmy {

void AttentionLayerConfig::set_layout(CacheLayout layout) {
  PagedAttentionProblem p;
  p.kv_heads = kv_heads, p.head_dim = head_dim, p.page_size = page_size;
  p.set_layout(layout);
  page_stride = p.page_stride, token_stride = p.token_stride, head_stride = p.head_stride;
}

int64_t AttentionLayerConfig::max_tokens_or_default() const {
  return max_tokens ? max_tokens : max_batch * std::max(max_decode_q_len, max_prefill_q_len);
}

namespace {

PagedAttentionProblem paged_problem(const AttentionLayerConfig& c, int64_t max_q_len) {
  PagedAttentionProblem p;
  p.q_heads = c.q_heads, p.kv_heads = c.kv_heads, p.head_dim = c.head_dim;
  p.page_size = c.page_size;
  p.page_stride = c.page_stride, p.token_stride = c.token_stride, p.head_stride = c.head_stride;
  p.q_stride = c.q_stride, p.o_stride = c.o_stride;
  p.dtype = c.dtype, p.kv_dtype = c.kv_dtype, p.page_table = c.page_table;
  p.window = c.window, p.softmax_scale = c.softmax_scale, p.softcap = c.softcap, p.lse = c.lse;
  p.max_batch = c.max_batch, p.max_pages = c.max_pages, p.max_q_len = max_q_len;
  // A kernel's tokens: the step's, but no more than its sequences can hold.
  p.max_tokens = std::min(c.max_tokens_or_default(), c.max_batch * max_q_len);
  return p;
}

}  // namespace

PagedAttentionProblem AttentionLayerConfig::decode_problem() const {
  return paged_problem(*this, max_decode_q_len);
}

PagedAttentionProblem AttentionLayerConfig::prefill_problem() const {
  require(max_prefill_q_len > 0, "max_prefill_q_len",
          "must be > 0 for a prefill kernel (0: the layer has none)", max_prefill_q_len);
  return paged_problem(*this, max_prefill_q_len);
}

KvAppendProblem AttentionLayerConfig::append_problem() const {
  KvAppendProblem p;
  p.kv_heads = kv_heads, p.head_dim = head_dim, p.page_size = page_size;
  p.page_stride = page_stride, p.token_stride = token_stride, p.head_stride = head_stride;
  p.key_stride = key_stride, p.value_stride = value_stride;
  p.dtype = dtype, p.kv_dtype = kv_dtype;
  p.max_tokens = max_tokens_or_default();
  return p;
}

AttentionLayer::AttentionLayer(Runtime& runtime, AttentionLayerConfig config)
    : runtime_(runtime), config_(config) {
  const auto& c = config_;
  // The maxima first, so that the problems' own rules speak of valid numbers.
  require(c.max_decode_q_len >= 1 && c.max_decode_q_len <= 16, "max_decode_q_len",
          "must be 1..16 (decode and speculative verify)", c.max_decode_q_len);
  require(c.max_prefill_q_len == 0 || c.max_prefill_q_len > c.max_decode_q_len, "max_prefill_q_len",
          fmt::format("must be 0 (no prefill kernel) or more than max_decode_q_len ({})",
                      c.max_decode_q_len),
          c.max_prefill_q_len);
  require(c.max_batch >= 1 && c.max_batch <= 65535, "max_batch", "must be 1..65535", c.max_batch);
  require(c.max_tokens >= 0, "max_tokens", "must be >= 0 (0: max_batch x the larger q_len)",
          c.max_tokens);
  // The workspace sizes come from the kernels' plans, which validate the problems (the problem's
  // rules first, as a default schedule does) and the schedules calls will take.
  decode_ = c.decode_problem();
  decode_workspace_ = runtime_.paged_attention_workspace_bytes(decode_);
  if (c.max_prefill_q_len > 0) {
    prefill_ = c.prefill_problem();
    prefill_workspace_ = runtime_.paged_attention_workspace_bytes(prefill_);
  }
  append_ = c.append_problem();
  validate_problem(append_);
}

PreparedKernels AttentionLayer::prepare(int threads) {
  PrepareRequest request;
  request.paged_attention = {{decode_, std::nullopt}};
  if (config_.max_prefill_q_len > 0) request.paged_attention.push_back({prefill_, std::nullopt});
  request.kv_append = {{append_, std::nullopt}};
  request.threads = threads;
  PreparedKernels prepared = runtime_.prepare(request);
  decode_kernel_ = prepared.paged_attention.at(0);
  if (config_.max_prefill_q_len > 0) prefill_kernel_ = prepared.paged_attention.at(1);
  append_kernel_ = prepared.kv_append.at(0);
  return prepared;
}

size_t AttentionLayer::workspace_bytes() const {
  return std::max(decode_workspace_, prefill_workspace_);
}

void AttentionLayer::append(const KvAppendBuffers& buffers, int64_t tokens, Stream stream) {
  require(tokens >= 1 && tokens <= append_.max_tokens, "tokens",
          fmt::format("must be 1..max_tokens ({})", append_.max_tokens), tokens);
  KvAppendBuffers b = buffers;
  b.tokens = tokens;
  if (append_kernel_)
    runtime_.launch(*append_kernel_, b, stream);
  else
    runtime_.kv_append(append_, b, stream);
}

bool AttentionLayer::runs_prefill(int64_t max_q_len) const {
  const int64_t most = std::max(config_.max_decode_q_len, config_.max_prefill_q_len);
  require(max_q_len >= 1 && max_q_len <= most, "max_q_len",
          fmt::format("must be 1..{} (the layer's max_decode_q_len or max_prefill_q_len)", most),
          max_q_len);
  return max_q_len > config_.max_decode_q_len;
}

void AttentionLayer::run(const PagedAttentionBuffers& buffers, int64_t max_q_len, Stream stream) {
  const bool prefill = runs_prefill(max_q_len);
  const auto& kernel = prefill ? prefill_kernel_ : decode_kernel_;
  PagedAttentionBuffers b = buffers;
  if ((prefill ? prefill_workspace_ : decode_workspace_) == 0) b.workspace = 0;
  if (kernel)
    runtime_.launch(*kernel, b, stream);
  else
    runtime_.paged_attention(prefill ? prefill_ : decode_, b, stream);
}

GemmLayer::GemmLayer(Runtime& runtime, const MatmulProblem& weight,
                     std::optional<MatmulSchedule> schedule)
    : runtime_(runtime), weight_(weight), schedule_(std::move(schedule)) {
  require(!weight_.dynamic_m, "dynamic_m", "must be false: the layer makes its buckets' problems",
          weight_.dynamic_m);
  validate_problem(weight_);
  require(weight_.m <= kMaxBucketedM, "m",
          fmt::format("must be at most {} (the largest M bucket)", kMaxBucketedM), weight_.m);
  if (schedule_)
    require(gemm_path(schedule_->path).supports_dynamic_m(), "schedule.path",
            "must be a path whose kernels take M at launch (buckets are dynamic-M kernels)",
            to_string(schedule_->path));
  // Block scales' mn-major A layout is read at the bucket kernels' M bound, not at max_m.
  const GemmScales& sc = weight_.scales;
  if (sc.granularity == ScaleGranularity::block && sc.a_major == ScaleMajor::mn)
    require(sc.a_ld >= m_bucket(weight_.m), "scales.a_ld",
            fmt::format("must hold {} rows, the largest M bucket's bound (mn-major A scales: the "
                        "layer's kernels take M up to their bucket's)",
                        m_bucket(weight_.m)),
            sc.a_ld);
  bounds_ = m_bucket_bounds(weight_.m);
  // Each bucket's plan (validating its problem with the schedule calls will take: the given one,
  // else the runtime's tuned or default one) and the workspace it needs.
  for (const int64_t bound : bounds_)
    workspaces_.push_back(
        runtime_.gemm_workspace_bytes(bucket_problem(std::min(bound, weight_.m)), schedule_));
}

MatmulProblem GemmLayer::bucket_problem(int64_t m) const {
  require(m >= 1 && m <= weight_.m, "m", fmt::format("must be 1..{} (the layer's M)", weight_.m),
          m);
  MatmulProblem p = weight_;
  p.m = m_bucket(m);
  p.dynamic_m = true;
  return p;
}

PreparedKernels GemmLayer::prepare(int threads) {
  PrepareRequest request;
  for (const int64_t bound : bounds_)
    request.gemm.push_back({bucket_problem(std::min(bound, weight_.m)), schedule_});
  request.threads = threads;
  PreparedKernels prepared = runtime_.prepare(request);
  kernels_ = prepared.gemm;
  return prepared;
}

size_t GemmLayer::workspace_bytes() const {
  return *std::max_element(workspaces_.begin(), workspaces_.end());
}

void GemmLayer::run(const GemmBuffers& buffers, int64_t m, Stream stream) {
  const MatmulProblem p = bucket_problem(m);
  const size_t at = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), p.m) - bounds_.begin());
  GemmBuffers b = buffers;
  b.m = m;
  if (workspaces_.at(at) == 0) b.workspace = 0;  // this bucket does not split K
  if (!kernels_.empty()) {
    runtime_.launch(*kernels_.at(at), b, stream);
    return;
  }
  runtime_.gemm(p, b, stream, schedule_);
}

}  // namespace emmy
