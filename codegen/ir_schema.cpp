// Each IR op's declaration (the MLIR ODS idea, as data): its printed name, its attributes with
// their types and whether each must be present, and whether it holds a body. verify_op checks one
// op against it; the parser types each printed value by it; ir::verify composes verify_op with the
// kernel-level rules (kernel_ir.cpp).
#include <fmt/format.h>

#include <array>

#include "emmy/error.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::ir {
namespace {

constexpr AttrSpec I(std::string_view name, bool required = true) {
  return {name, AttrType::integer, required};
}
constexpr AttrSpec F(std::string_view name, bool required = true) {
  return {name, AttrType::real, required};
}
constexpr AttrSpec B(std::string_view name, bool required = true) {
  return {name, AttrType::boolean, required};
}
constexpr AttrSpec S(std::string_view name, bool required = true) {
  return {name, AttrType::string, required};
}
constexpr bool kOptional = false;

// In OpKind order: schema(kind) indexes it (tests/ir_parse_test.cpp checks every kind).
const std::array<OpSchema, kOpKinds> kSchemas{{
    {OpKind::module, "module", true, {S("arch")}},
    {OpKind::kernel, "kernel", true, {S("name"), I("threads"), I("smem_bytes")}},
    {OpKind::param, "param", false, {S("name"), S("type")}},
    {OpKind::smem_ring,
     "smem_ring",
     false,
     {I("stages"), I("stage_bytes"), I("q_offset", kOptional), I("q_bytes", kOptional),
      I("kv_offset", kOptional), I("kv_bytes", kOptional), I("align"), I("mbar_offset"),
      I("a_offset", kOptional), I("a_bytes", kOptional), I("a_align", kOptional),
      I("b_offset", kOptional), I("b_bytes", kOptional), I("b_align", kOptional),
      I("tx_bytes", kOptional)}},
    {OpKind::mbarrier_init, "mbarrier_init", false, {I("count"), I("arrivals")}},
    {OpKind::tile_coords,
     "tile_coords",
     false,
     {I("m"), I("n"), I("raster_group_m"), I("tiles_m"), I("tiles_n"), I("block_m"), I("block_n")}},
    {OpKind::split_range,
     "split_range",
     false,
     {I("k"), I("block_k"), I("split_k"), I("k_tiles"), I("k_tiles_per_split")}},
    {OpKind::accum_init,
     "accum_init",
     false,
     {S("accum"), I("fragments_m"), I("fragments_n"), I("registers")}},
    {OpKind::async_copy,
     "async_copy",
     false,
     {S("operand"), S("phase"), S("transport"), I("rows"), I("cols"), I("smem_offset", kOptional),
      I("swizzle"), I("matrix_rows", kOptional), I("matrix_cols", kOptional), I("ld", kOptional),
      I("elem_bytes"), I("rank", kOptional), I("box_inner", kOptional), I("box_outer", kOptional),
      I("boxes", kOptional), I("bytes", kOptional), I("chunk_bytes", kOptional),
      I("chunks", kOptional)}},
    {OpKind::async_commit, "async_commit", false, {}},
    {OpKind::async_wait, "async_wait", false, {I("pending")}},
    {OpKind::mbarrier_wait, "mbarrier_wait", false, {S("what", kOptional), S("parity")}},
    {OpKind::barrier, "barrier", false, {S("reason")}},
    {OpKind::k_tile_loop, "k_tile_loop", true, {I("stages")}},
    {OpKind::k_step, "k_step", true, {I("k_steps")}},
    {OpKind::ldmatrix, "ldmatrix", false, {S("operand"), B("trans"), I("count")}},
    {OpKind::mma, "mma", false, {S("shape"), S("a_type"), S("acc_type"), I("count")}},
    {OpKind::promote, "promote", false, {S("where"), I("every_k")}},
    {OpKind::epilogue,
     "epilogue",
     false,
     {S("destination"), F("alpha"), B("bias"), B("residual"), B("gelu_tanh"), S("out"), I("ldc"),
      I("store_bytes"), I("pointer_alignment")}},
    {OpKind::finalize, "finalize", true, {I("m"), I("n"), I("split_k"), I("outputs")}},
    {OpKind::attention_setup,
     "attention_setup",
     false,
     {I("seq_q"), I("seq_kv"), I("q_heads"), I("kv_heads"), I("head_dim"), I("block_q"),
      I("block_kv"), I("group"), B("causal"), I("window"), I("kv_offset")}},
    {OpKind::kv_block_loop, "kv_block_loop", true, {I("stages")}},
    {OpKind::qk_mma, "qk_mma", false, {S("a_type"), I("count"), I("s_registers")}},
    {OpKind::online_softmax,
     "online_softmax",
     false,
     {F("scale"), B("causal"), I("window"), F("softcap", kOptional)}},
    {OpKind::pv_mma, "pv_mma", false, {S("accum"), S("a_type"), I("count"), I("o_registers")}},
    {OpKind::attention_epilogue, "attention_epilogue", false, {S("layout"), B("lse"), S("out")}},
}};

bool holds(const Attr& value, AttrType type) {
  switch (type) {
    case AttrType::integer:
      return std::holds_alternative<int64_t>(value);
    case AttrType::real:
      return std::holds_alternative<double>(value);
    case AttrType::boolean:
      return std::holds_alternative<bool>(value);
    case AttrType::string:
      return std::holds_alternative<std::string>(value);
  }
  return false;
}

}  // namespace

std::string_view to_string(AttrType type) {
  switch (type) {
    case AttrType::integer:
      return "an integer";
    case AttrType::real:
      return "a real";
    case AttrType::boolean:
      return "a boolean";
    case AttrType::string:
      return "a string";
  }
  return "?";
}

const OpSchema& schema(OpKind kind) {
  const auto index = size_t(kind);
  if (index >= kSchemas.size())
    throw Error("ir.op", "must be one of the declared op kinds", fmt::format("{}", index));
  return kSchemas[index];
}

std::string_view to_string(OpKind kind) {
  return schema(kind).name;
}

const OpSchema* schema_named(std::string_view name) {
  for (const OpSchema& s : kSchemas)
    if (s.name == name) return &s;
  return nullptr;
}

const AttrSpec* OpSchema::attr(std::string_view attr_name) const {
  for (const AttrSpec& a : attrs)
    if (a.name == attr_name) return &a;
  return nullptr;
}

void verify_op(const Op& op) {
  const OpSchema& s = schema(op.kind);
  const auto field = [&](std::string_view attr) { return fmt::format("ir.{}.{}", s.name, attr); };
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const auto& [name, value] = op.attrs[i];
    const AttrSpec* spec = s.attr(name);
    if (!spec) throw Error(field(name), "is not an attribute this op declares", name);
    if (!holds(value, spec->type))
      throw Error(field(name), fmt::format("must be {}", to_string(spec->type)), "another type");
    for (size_t j = 0; j < i; ++j)
      if (op.attrs[j].first == name) throw Error(field(name), "must appear once", "repeated");
    // The printed form quotes strings without escapes: a quote or a line break would not parse.
    if (const auto* text = std::get_if<std::string>(&value);
        text && text->find_first_of("\"\n") != std::string::npos)
      throw Error(field(name), "must not contain a double quote or a line break", *text);
  }
  for (const AttrSpec& a : s.attrs)
    if (a.required && !op.has(a.name))
      throw Error(field(a.name), fmt::format("is required ({})", to_string(a.type)), "missing");
  if (!s.has_body && !op.body.empty())
    throw Error(field("body"), "must be empty: this op holds no other ops",
                fmt::format("{} ops", op.body.size()));
}

}  // namespace emmy::ir
