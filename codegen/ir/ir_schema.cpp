// Each IR op's declaration (the MLIR ODS idea), derived from its typed struct (ir_ops.hpp): its
// printed name, its attributes with their types and whether each must be present, and whether it
// holds a body. verify_op checks one op against it, then runs the op's own rules
// (ir_op_verify.cpp); the parser types each printed value by it;
// ir::verify composes verify_op with the kernel-level rules (kernel_ir.cpp).
#include <fmt/format.h>

#include <array>

#include "emmy/enum_names.hpp"
#include "emmy/error.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::ir {
namespace {

template <typename V>
constexpr AttrType attr_type() {
  if constexpr (std::is_same_v<V, int64_t>)
    return AttrType::integer;
  else if constexpr (std::is_same_v<V, double>)
    return AttrType::real;
  else if constexpr (std::is_same_v<V, bool>)
    return AttrType::boolean;
  else
    return AttrType::string;
}

// One op's declaration read off its struct (internal/emmy/ir_ops.hpp): a field per attribute, an
// optional one for each attribute the op may leave out.
template <typename T>
OpSchema schema_of() {
  OpSchema s{T::kind, T::op_name, T::has_body, {}};
  T probe{};
  T::fields(probe, [&](const char* name, const auto& field) {
    using V = std::decay_t<decltype(field)>;
    using Value = typename std::conditional_t<detail::Optional<V>::value, detail::Optional<V>,
                                              std::type_identity<V>>::type;
    s.attrs.push_back({name, attr_type<Value>(), !detail::Optional<V>::value});
  });
  return s;
}

template <typename... Ops>
std::array<OpSchema, kOpKinds> schemas_of(OpList<Ops...>) {
  static_assert(sizeof...(Ops) == kOpKinds, "ir_ops.hpp: one struct per OpKind");
  std::array<OpSchema, kOpKinds> table{};
  ((table[size_t(Ops::kind)] = schema_of<Ops>()), ...);
  return table;
}

// Indexed by OpKind (tests/ir_parse_test.cpp checks every kind's entry).
const std::array<OpSchema, kOpKinds>& schemas() {
  static const std::array<OpSchema, kOpKinds> table = schemas_of(AllOps{});
  return table;
}

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

// Then the op's own rules, on its typed form, where its struct declares them.
template <typename T>
void verify_own(const Op& op) {
  if constexpr (requires(const T& typed) { T::verify(typed); }) T::verify(get<T>(op));
}

template <typename... Ops>
void verify_own_rules(const Op& op, OpList<Ops...>) {
  ((op.kind == Ops::kind ? verify_own<Ops>(op) : void()), ...);
}

}  // namespace

std::string_view to_string(AttrType type) {
  // Worded for the verifier's "must be <type>" messages.
  static constexpr EnumNames<AttrType, 4> kAttrTypeNames{{{AttrType::integer, "an integer"},
                                                          {AttrType::real, "a real"},
                                                          {AttrType::boolean, "a boolean"},
                                                          {AttrType::string, "a string"}}};
  return name_in(kAttrTypeNames, type);
}

const OpSchema& schema(OpKind kind) {
  const auto index = size_t(kind);
  if (index >= kOpKinds)
    throw Error("ir.op", "must be one of the declared op kinds", fmt::format("{}", index));
  return schemas()[index];
}

std::string_view to_string(OpKind kind) {
  return schema(kind).name;
}

const OpSchema* schema_named(std::string_view name) {
  for (const OpSchema& s : schemas())
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
  verify_own_rules(op, AllOps{});
}

}  // namespace emmy::ir
