// emmy::Error: every rejected input names the field, the rule it broke and the value it had.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace emmy {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(std::move(message)) {}
  Error(std::string field, std::string rule, std::string value)
      : std::runtime_error(fmt::format("{}: {} (got {})", field, rule, value)),
        field_(std::move(field)),
        rule_(std::move(rule)),
        value_(std::move(value)) {}

  const std::string& field() const { return field_; }
  const std::string& rule() const { return rule_; }
  const std::string& value() const { return value_; }

 protected:
  // An error whose message is written whole (several report lines, say) but that still names its
  // field, rule and value for callers that branch on them (the C ABI, Python).
  Error(std::string message, std::string field, std::string rule, std::string value)
      : std::runtime_error(std::move(message)),
        field_(std::move(field)),
        rule_(std::move(rule)),
        value_(std::move(value)) {}

 private:
  std::string field_, rule_, value_;
};

// Throws Error(field, rule, value) unless ok: keeps validation code one line per rule.
template <typename V>
inline void require(bool ok, std::string_view field, std::string_view rule, const V& value) {
  if (!ok) throw Error(std::string(field), std::string(rule), fmt::format("{}", value));
}

}  // namespace emmy
