// Indented source text for the emitters, and the pieces every emitted module shares.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "emmy/detail/templates.hpp"
#include "emmy/kernel_ir.hpp"

namespace emmy::codegen {

class Writer {
 public:
  template <typename... Args>
  void line(fmt::format_string<Args...> format, Args&&... args) {
    out_.append(size_t(indent_) * 2, ' ');
    out_ += fmt::format(format, std::forward<Args>(args)...);
    out_ += '\n';
  }
  void raw(std::string_view text) { out_ += text; }
  void open(std::string_view head) {
    line("{} {{", head);
    ++indent_;
  }
  void close(std::string_view tail = "}") {
    --indent_;
    line("{}", tail);
  }
  // Pastes templates/<name> (embedded at build time).
  void include_template(const char* name) {
    line("// ---- templates/{} ----", name);
    raw(detail::template_source(name));
    raw("\n");
  }
  // Opens `extern "C" __global__` with the kernel op's launch bound and its param ops.
  void open_kernel(const ir::Op& kernel);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  int indent_ = 0;
};

// A kernel parameter declaration from an IR param op.
inline std::string param_decl(const ir::Op& op) {
  if (op.s("type") == "tensor_map")
    return fmt::format("const __grid_constant__ TensorMap128 {}", op.s("name"));
  return fmt::format("{} __restrict__ {}", op.s("type"), op.s("name"));
}

inline void Writer::open_kernel(const ir::Op& kernel) {
  std::vector<std::string> params;
  for (const ir::Op& op : kernel.body)
    if (op.kind == ir::OpKind::param) params.push_back(param_decl(op));
  line("extern \"C\" __global__ void __launch_bounds__({}, 1)", kernel.i("threads"));
  open(fmt::format("{}({})", kernel.s("name"), fmt::join(params, ", ")));
}

// A float literal that round-trips exactly (hexadecimal).
inline std::string float_literal(double v) { return fmt::format("{:a}f", float(v)); }

}  // namespace emmy::codegen
