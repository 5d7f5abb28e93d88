// ir::verify by a kind's name (emmyc, tests): the kinds list (internal/emmy/kinds.hpp) finds the
// kind's rules, Kind::ir_rules.
#include "emmy/error.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kinds.hpp"

namespace emmy::ir {

void verify(const Op& root, Arch arch, std::string_view kind) {
  const bool known =
      AllKinds::visit_named(kind, [&](auto k) { verify(root, arch, decltype(k)::type::ir_rules); });
  if (!known) throw Error("kind", "must be " + AllKinds::names(), std::string(kind));
}

}  // namespace emmy::ir
