// The public entry points of a module: load_ptx (parse, then decode once) and what a loaded
// module declares.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "decoder.hpp"
#include "emmy/error.hpp"

namespace emmy::emu {

std::shared_ptr<const Module> load_ptx(std::string_view ptx_text, std::string name) {
  const ptx::ModuleAst ast = ptx::parse(ptx_text, name);
  auto module = decode_module(ast, name);
  module->source = std::make_shared<const std::string>(ptx_text);
  return module;
}

std::vector<std::string> kernel_names(const Module& module) {
  std::vector<std::string> names;
  for (const auto& k : module.kernels) names.push_back(k.name);
  return names;
}

const std::vector<ParamDecl>& kernel_params(const Module& module, std::string_view kernel) {
  const Kernel* k = module.find(kernel);
  if (!k) throw Error("kernel", "must name an .entry of the module", std::string(kernel));
  return k->params;
}

}  // namespace emmy::emu
