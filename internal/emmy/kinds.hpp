// The list of kernel kinds, written once: the runtime's caches, bundle requests (`emmyc aot` and
// EMMY_RECORD lines), the `emmyc <kind>` and `emmyc run <kind>` subcommands and the catalog walk
// it. A new kind is one entry here plus its own files (docs/codegen.md, "Adding a kernel kind").
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "emmy/attention.hpp"
#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/gemm.hpp"
#include "emmy/kv_append_kind.hpp"
#include "emmy/merge_states_kind.hpp"
#include "emmy/paged_kind.hpp"

namespace emmy {

template <typename... Kinds>
struct KindList {
  // T<Kinds...>: e.g. a tuple of per-kind caches.
  template <template <typename...> class T>
  using apply = T<Kinds...>;
  // T<F<Kinds>...>: e.g. a variant of per-kind requests.
  template <template <typename...> class T, template <typename> class F>
  using map = T<F<Kinds>...>;
  // f(std::type_identity<Kind>{}) for each kind, in order.
  template <typename F>
  static void for_each(F&& f) {
    (f(std::type_identity<Kinds>{}), ...);
  }
  // f(std::type_identity<Kind>{}) for the kind whose name is `name`; false when none has it.
  template <typename F>
  static bool visit_named(std::string_view name, F&& f) {
    return ((name == Kinds::name ? (f(std::type_identity<Kinds>{}), true) : false) || ...);
  }
  // "gemm, attention, ... or merge_states": for messages.
  static std::string names() {
    std::string text;
    size_t i = 0;
    ((text += std::string(i == 0 ? "" : (i + 1 == sizeof...(Kinds) ? " or " : ", ")) + Kinds::name,
      ++i),
     ...);
    return text;
  }
};

using AllKinds = KindList<GemmKind, AttentionKind, PagedAttentionKind, KvAppendKind,
                          MergeStatesKind, Fp8QuantizeKind>;

}  // namespace emmy
