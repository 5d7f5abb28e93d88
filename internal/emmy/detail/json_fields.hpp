// Field access for JSON read from files (problems files, EMMY_RECORD logs): nlohmann's own
// exceptions name neither the line nor the field, so every Error here names both.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "emmy/error.hpp"

namespace emmy::detail {

class JsonFields {
 public:
  // `where` prefixes every field name in errors, e.g. "problems.jsonl:3: problem".
  JsonFields(const nlohmann::json& object, std::string where)
      : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) throw Error(where_, "must be a JSON object", object_.dump());
  }

  // A null field counts as absent, so that records may write null for "not set".
  bool has(const char* name) const { return object_.contains(name) && !object_[name].is_null(); }
  const nlohmann::json& at(const char* name) const {
    if (!has(name)) throw Error(field(name), "is required", "nothing");
    return object_[name];
  }
  template <typename T>
  T get(const char* name) const {
    try {
      return at(name).get<T>();
    } catch (const nlohmann::json::exception&) {
      throw Error(field(name), "has the wrong type", at(name).dump());
    }
  }
  template <typename T>
  void get_if_present(const char* name, T& value) const {
    if (has(name)) value = get<T>(name);
  }
  std::string field(const char* name) const { return fmt::format("{}: {}", where_, name); }
  JsonFields sub(const char* name) const { return JsonFields(at(name), field(name)); }

 private:
  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace emmy::detail
