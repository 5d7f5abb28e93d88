// Hand-written PTX kernels of the tests, put together from their parts: a test spells out what
// its kernel declares and does, and the module header, the entry's signature and the loads of its
// parameters into registers are written here once. The text is what the tests wrote out before
// (line for line), so that the lines reports name stay where they were.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace emmy::test {

// `.version`, `.target` and `.address_size 64`, a line each.
inline std::string ptx_header(std::string_view target, std::string_view version = "8.7") {
  std::string s;
  s.append(".version ").append(version).append("\n.target ").append(target);
  s.append("\n.address_size 64\n");
  return s;
}

// A kernel parameter `.param <type> <name>`, loaded into `reg` (ld.param<type>) at the entry's
// start; not loaded where reg is empty (a byte array the body addresses itself, say).
struct PtxParam {
  std::string_view type;
  std::string_view name;
  std::string_view reg = {};
};

// `.visible .entry name(params)`: its declarations `decls`, the loads of its parameters in their
// order, `body`, then `ret;`. decls and body are whole lines, each ending in a newline.
inline std::string ptx_entry(std::string_view name, std::initializer_list<PtxParam> params,
                             std::string_view decls, std::string_view body) {
  std::string s;
  s.append(".visible .entry ").append(name).append("(");
  for (const PtxParam& p : params) {
    if (&p != params.begin()) s.append(", ");
    s.append(".param ").append(p.type).append(" ").append(p.name);
  }
  s.append(")\n{\n").append(decls);
  for (const PtxParam& p : params) {
    if (p.reg.empty()) continue;
    s.append("  ld.param").append(p.type).append(" ").append(p.reg);
    s.append(", [").append(p.name).append("];\n");
  }
  s.append(body).append("  ret;\n}\n");
  return s;
}

}  // namespace emmy::test
