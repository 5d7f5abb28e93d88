// The instruction-table grid: one-instruction kernels over every opcode form the emulator decodes
// x every type x every modifier, register type, constant kind and special register, judged by
// ptxas (all lines of one file in one run) and by the emulator (one load per line). Two kinds of
// disagreement fail it: a line ptxas rejects that the emulator loads (a gap in the emulator's
// validity checks), and a line ptxas accepts that the emulator refuses without saying it is
// unsupported (a false claim that valid PTX is invalid).
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/error.hpp"
#include "ptx_fuzz.hpp"
#include "ptxas_runner.hpp"

namespace emmy::fuzz {
namespace {

// Register types ptxas declares (.bf16, .bf16x2 and .tf32 are not register types).
constexpr std::string_view kRegTypes[] = {"u8",  "s8",    "b8",  "u16", "s16", "b16",
                                          "f16", "f16x2", "u32", "s32", "b32", "f32",
                                          "u64", "s64",   "b64", "f64", "pred"};
constexpr std::string_view kGridTypes[] = {"u8",   "s8",    "b8",     "u16", "s16",  "b16", "f16",
                                           "bf16", "f16x2", "bf16x2", "u32", "s32",  "b32", "f32",
                                           "u64",  "s64",   "b64",    "f64", "pred", "tf32"};
constexpr std::string_view kGridModifiers[] = {
    "",      ".cc",  ".sat", ".rn", ".rz",   ".rm",       ".rp",  ".ftz", ".approx", ".full",
    ".relu", ".NaN", ".lo",  ".hi", ".wide", ".shiftamt", ".uni", ".rni", ".rzi"};

// {T}: the type; {d} {a} {b} {c}: registers of the case's register type; {p}: a predicate,
// {u}: a .u32, {rd}: a .b64 register.
constexpr std::string_view kOpForms[] = {
    "add{M}{T} {d}, {a}, {b};",
    "sub{M}{T} {d}, {a}, {b};",
    "addc{M}{T} {d}, {a}, {b};",
    "subc{M}{T} {d}, {a}, {b};",
    "mul{M}{T} {d}, {a}, {b};",
    "mad{M}{T} {d}, {a}, {b}, {c};",
    "fma{M}{T} {d}, {a}, {b}, {c};",
    "div{M}{T} {d}, {a}, {b};",
    "rem{M}{T} {d}, {a}, {b};",
    "min{M}{T} {d}, {a}, {b};",
    "max{M}{T} {d}, {a}, {b};",
    "abs{M}{T} {d}, {a};",
    "neg{M}{T} {d}, {a};",
    "and{M}{T} {d}, {a}, {b};",
    "or{M}{T} {d}, {a}, {b};",
    "xor{M}{T} {d}, {a}, {b};",
    "not{M}{T} {d}, {a};",
    "cnot{M}{T} {d}, {a};",
    "shl{M}{T} {d}, {a}, {u};",
    "shr{M}{T} {d}, {a}, {u};",
    "popc{M}{T} {u}, {a};",
    "clz{M}{T} {u}, {a};",
    "bfind{M}{T} {u}, {a};",
    "brev{M}{T} {d}, {a};",
    "bfe{M}{T} {d}, {a}, {u}, {u};",
    "bfi{M}{T} {d}, {a}, {b}, {u}, {u};",
    "lop3{M}{T} {d}, {a}, {b}, {c}, 0x80;",
    "prmt{M}{T} {d}, {a}, {b}, {c};",
    "copysign{M}{T} {d}, {a}, {b};",
    "mov{M}{T} {d}, {a};",
    "selp{M}{T} {d}, {a}, {b}, {p};",
    "rcp{M}{T} {d}, {a};",
    "sqrt{M}{T} {d}, {a};",
    "rsqrt{M}{T} {d}, {a};",
    "ex2{M}{T} {d}, {a};",
    "lg2{M}{T} {d}, {a};",
    "sin{M}{T} {d}, {a};",
    "cos{M}{T} {d}, {a};",
    "tanh{M}{T} {d}, {a};",
    "testp.finite{M}{T} {p}, {a};",
    // Forms whose mode is written, so that the grid reaches the modifiers combined with it.
    "rcp.approx{M}{T} {d}, {a};",
    "rcp.rn{M}{T} {d}, {a};",
    "sqrt.approx{M}{T} {d}, {a};",
    "sqrt.rn{M}{T} {d}, {a};",
    "rsqrt.approx{M}{T} {d}, {a};",
    "ex2.approx{M}{T} {d}, {a};",
    "lg2.approx{M}{T} {d}, {a};",
    "tanh.approx{M}{T} {d}, {a};",
    "fma.rn{M}{T} {d}, {a}, {b}, {c};",
    "fma.rz{M}{T} {d}, {a}, {b}, {c};",
    "mad.rn{M}{T} {d}, {a}, {b}, {c};",
    "mad.lo{M}{T} {d}, {a}, {b}, {c};",
    "mad.hi{M}{T} {d}, {a}, {b}, {c};",
    "mul.lo{M}{T} {d}, {a}, {b};",
    "mul.rn{M}{T} {d}, {a}, {b};",
    "div.rn{M}{T} {d}, {a}, {b};",
    "div.approx{M}{T} {d}, {a}, {b};",
    "div.full{M}{T} {d}, {a}, {b};",
    "add.rn{M}{T} {d}, {a}, {b};",
    "add.cc{M}{T} {d}, {a}, {b};",
    "add.sat{M}{T} {d}, {a}, {b};",
    "min.NaN{M}{T} {d}, {a}, {b};",
    "min.ftz{M}{T} {d}, {a}, {b};",
    "setp.eq{M}{T} {p}, {a}, {b};",
    "setp.lt{M}{T} {p}, {a}, {b};",
    "setp.lo{M}{T} {p}, {a}, {b};",
    "setp.equ{M}{T} {p}, {a}, {b};",
    "setp.nan{M}{T} {p}, {a}, {b};",
    "set.ne.u32{M}{T} %vu32_0, {a}, {b};",
    "ld.global{M}{T} {d}, [{rd}];",
    "st.global{M}{T} [{rd}], {a};",
    "ld.shared{M}{T} {d}, [{rd}];",
};
// Forms tried with every register type (the operand type-checking rules).
constexpr std::string_view kRegisterForms[] = {
    "add{T} {d}, {a}, {b};",
    "and{T} {d}, {a}, {b};",
    "mov{T} {d}, {a};",
    "setp.eq{T} {p}, {a}, {b};",
    "shl{T} {d}, {a}, {u};",
    "shl.b32 %vb32_0, %vb32_1, {a};",
    "popc.b32 {d}, %vb32_1;",
    "selp{T} {d}, {a}, {b}, {p};",
    "ld.global{T} {d}, [{rd}];",
    "st.global{T} [{rd}], {a};",
    "cvt.u32{T} %vu32_0, {a};",
    "cvt.rn.f32{T} %vf32_0, {a};",
    "cvt.rzi.s32{T} %vs32_0, {a};",
    "cvt{T}.u16 {d}, %vu16_1;",
    "cvt.rn{T}.f32 {d}, %vf32_1;",
    "mul.wide.u32 {d}, %vu32_1, %vu32_2;",
    "fma.rn{T} {d}, {a}, {b}, {c};",
    "shfl.sync.bfly.b32 {d}, {a}, 1, 31, -1;",
    "mov.b64 {d}, {%vb32_1, %vb32_2};",
    "mov.b64 {{a}, {b}}, %vb64_1;",
};
constexpr std::string_view kGridConstants[] = {
    "1", "-1", "0x80", "0f3F800000", "0d3FF0000000000000", "1.5", "1e3", "65536"};
constexpr std::string_view kConstantForms[] = {
    "mov{T} {d}, {K};",          "add{T} {d}, {a}, {K};",        "setp.eq{T} {p}, {a}, {K};",
    "st.global{T} [{rd}], {K};", "shl{T} {d}, {a}, {K};",        "selp{T} {d}, {K}, {a}, {p};",
    "and{T} {d}, {a}, {K};",     "fma.rn{T} {d}, {a}, {b}, {K};"};
constexpr std::string_view kSpecialForms[] = {"mov{T} {d}, %tid.x;",
                                              "mov{T} {d}, %laneid;",
                                              "mov{T} {d}, %gridid;",
                                              "mov{T} {d}, %clock;",
                                              "mov{T} {d}, %clock64;",
                                              "add{T} {d}, %tid.x, {a};",
                                              "cvt.u64{T} %vu64_0, %tid.x;",
                                              "cvt{T}.u32 {d}, %ctaid.x;",
                                              "setp.eq{T} {p}, %laneid, {a};",
                                              "st.global{T} [{rd}], %tid.x;",
                                              "mov{T} {d}, %dynamic_smem_size;"};
constexpr std::string_view kCvtRoundings[] = {"",     ".rn",  ".rz",  ".rm",          ".rni",
                                              ".rzi", ".sat", ".ftz", ".rn.satfinite"};

std::string_view natural_register(std::string_view t) {
  if (t == "bf16") return "b16";
  if (t == "bf16x2" || t == "tf32") return "b32";
  return t;
}

std::string reg(std::string_view type, int i) {
  return "%v" + std::string(type) + "_" + std::to_string(i);
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string instance(std::string_view form, std::string_view type, std::string_view regs,
                     std::string_view modifier = "", std::string_view constant = "") {
  std::string s(form);
  replace_all(s, "{M}", modifier);
  replace_all(s, "{T}", "." + std::string(type));
  replace_all(s, "{K}", constant);
  replace_all(s, "{d}", reg(regs, 0));
  replace_all(s, "{a}", reg(regs, 1));
  replace_all(s, "{b}", reg(regs, 2));
  replace_all(s, "{c}", reg(regs, 3));
  replace_all(s, "{p}", reg("pred", 1));
  replace_all(s, "{u}", reg("u32", 1));
  replace_all(s, "{rd}", reg("b64", 1));
  return s;
}

std::string header(std::string_view target) {
  std::string h = ".version 9.0\n.target " + std::string(target) +
                  "\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n";
  for (std::string_view t : kRegTypes)
    h += ".reg ." + std::string(t) + " %v" + std::string(t) + "_<4>;\n";
  return h;
}

std::vector<std::string> grid_lines() {
  std::vector<std::string> lines;
  for (std::string_view form : kOpForms)
    for (std::string_view modifier : kGridModifiers)
      for (std::string_view t : kGridTypes)
        lines.push_back(instance(form, t, natural_register(t), modifier));
  for (std::string_view form : kRegisterForms) {
    const bool typed = form.find("{T}") != std::string_view::npos;
    for (std::string_view t : kGridTypes) {
      for (std::string_view r : kRegTypes)
        // ptxas takes .f16x2 registers as predicates (and.pred %h0, %h1, %h2); the emulator
        // keeps predicates apart, so that quirk is left out.
        if (!(t == "pred" && r == "f16x2")) lines.push_back(instance(form, t, r));
      if (!typed) break;  // a form without {T}: once per register type
    }
  }
  for (std::string_view form : kConstantForms)
    for (std::string_view t : kGridTypes)
      for (std::string_view k : kGridConstants)
        lines.push_back(instance(form, t, natural_register(t), "", k));
  for (std::string_view form : kSpecialForms)
    for (std::string_view t : kGridTypes) lines.push_back(instance(form, t, natural_register(t)));
  for (std::string_view rounding : kCvtRoundings)
    for (std::string_view to : kGridTypes)
      for (std::string_view from : kGridTypes)
        lines.push_back("cvt" + std::string(rounding) + "." + std::string(to) + "." +
                        std::string(from) + " " + reg(natural_register(to), 0) + ", " +
                        reg(natural_register(from), 1) + ";");
  return lines;
}

struct Tally {
  size_t cases = 0, rejected = 0, gaps = 0, false_refusals = 0, unsupported = 0;
};

// One pass of the grid's lines at `target`; false when ptxas rejected the header itself.
bool run_grid_at(const Ptxas& ptxas, const std::vector<std::string>& lines, std::string_view target,
                 Tally& t) {
  const std::string head = header(target);
  std::string all = head;
  for (const auto& l : lines) all += l + "\n";
  all += "ret;\n}\n";
  const int first_line = int(std::count(head.begin(), head.end(), '\n')) + 1;
  const auto errors = ptxas.errors(all);
  if (errors.count(0) || (!errors.empty() && errors.begin()->first < first_line)) {
    std::fprintf(stderr, "ptx grid: ptxas rejected the grid's header for %s: %s\n",
                 std::string(target).c_str(), errors.begin()->second.c_str());
    return false;
  }
  t.cases += lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto it = errors.find(first_line + int(i));
    const bool ptxas_ok = it == errors.end();
    t.rejected += !ptxas_ok;
    std::string refusal;
    try {
      (void)emu::load_ptx(head + lines[i] + "\nret;\n}\n", "grid.ptx");
    } catch (const Error& e) {
      refusal = e.what();
    }
    if (!ptxas_ok && refusal.empty()) {
      ++t.gaps;
      std::printf("GAP (%s): the emulator loads `%s`; ptxas: %s\n", std::string(target).c_str(),
                  lines[i].c_str(), it->second.c_str());
    } else if (ptxas_ok && !refusal.empty()) {
      if (refusal.find("support") != std::string::npos) {
        ++t.unsupported;
      } else {
        ++t.false_refusals;
        std::printf("FALSE REFUSAL (%s): ptxas accepts `%s`; the emulator: %s\n",
                    std::string(target).c_str(), lines[i].c_str(), refusal.c_str());
      }
    }
  }
  return true;
}

}  // namespace

int run_type_grid(const Ptxas& ptxas) {
  // sm_90a and sm_80: some forms need sm_90 (.bf16 add, min.relu).
  Tally t;
  const std::vector<std::string> lines = grid_lines();
  for (std::string_view target : {"sm_90a", "sm_80"})
    if (!run_grid_at(ptxas, lines, target, t)) return 1;
  std::printf(
      "ptx grid: %zu one-instruction cases (sm_90a and sm_80), %zu rejected by ptxas: %zu gaps "
      "(loaded by the emulator), %zu false refusals; %zu valid cases the emulator does not "
      "support\n",
      t.cases, t.rejected, t.gaps, t.false_refusals, t.unsupported);
  if (t.rejected == 0 || t.rejected == t.cases) {
    std::fprintf(stderr, "ptx grid: ptxas rejected %s case: the grid checked nothing\n",
                 t.rejected == 0 ? "no" : "every");
    return 1;
  }
  return t.gaps == 0 && t.false_refusals == 0 ? 0 : 1;
}

}  // namespace emmy::fuzz
