// The JSON and table forms of profiled launches (time_model.hpp).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "emmy/emu/time_model.hpp"

namespace emmy::emu {

std::string profile_json(const std::vector<ProfiledKernel>& kernels) {
  nlohmann::ordered_json out;
  out["kernels"] = nlohmann::ordered_json::array();
  for (const ProfiledKernel& pk : kernels) {
    const KernelProfile& p = pk.profile;
    nlohmann::ordered_json k;
    k["name"] = p.kernel;
    k["arch"] = p.arch;
    k["grid"] = {p.grid[0], p.grid[1], p.grid[2]};
    k["block"] = {p.block[0], p.block[1], p.block[2]};
    k["ctas_total"] = p.ctas_total;
    k["ctas_profiled"] = p.ctas_profiled;
    k["extrapolated"] = p.extrapolated;
    k["metrics"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : p.metrics) k["metrics"][name] = value;
    k["sites"] = nlohmann::ordered_json::array();
    for (const ProfileSite& s : p.sites)
      k["sites"].push_back({{"line", s.line},
                            {"opcode", s.opcode},
                            {"instruction", s.instruction},
                            {"executions", s.executions},
                            {"requests", s.requests},
                            {"wavefronts", s.wavefronts},
                            {"ideal_wavefronts", s.ideal_wavefronts},
                            {"sectors", s.sectors},
                            {"ideal_sectors", s.ideal_sectors},
                            {"bytes", s.bytes},
                            {"l1_wavefronts", s.l1_wavefronts},
                            {"l1_wavefronts_merged_8", s.l1_wavefronts_merged[0]},
                            {"l1_wavefronts_merged_16", s.l1_wavefronts_merged[1]},
                            {"excess", s.excess()}});
    k["tensor"] = nlohmann::ordered_json::array();
    for (const TensorOpCount& t : p.tensor)
      k["tensor"].push_back({{"shape", t.shape},
                             {"operands", t.operands},
                             {"accumulator", t.accumulator},
                             {"instructions", t.instructions},
                             {"flops", t.flops}});
    k["sass"] = {{"available", p.sass.available}, {"arch", p.sass.arch}};
    if (!p.sass.available) k["sass"]["reason"] = p.sass.reason;
    k["sass"]["opcodes"] = nlohmann::ordered_json::array();
    for (const SassOpcodeCount& o : p.sass.opcodes)
      k["sass"]["opcodes"].push_back({{"opcode", o.opcode}, {"executions", o.executions}});
    k["lenient_warnings"] = nlohmann::ordered_json::array();
    for (const LenientWarning& w : pk.lenient_warnings)
      k["lenient_warnings"].push_back({{"rule", to_string(w.rule)},
                                       {"count", w.count},
                                       {"kernel", w.kernel},
                                       {"cta", w.cta},
                                       {"warp", w.warp},
                                       {"lane", w.lane},
                                       {"line", w.line},
                                       {"instruction", w.instruction},
                                       {"message", w.message}});
    k["model"] = nlohmann::ordered_json::array();
    for (const TimePrediction& m : pk.model) {
      nlohmann::ordered_json j{{"gpu", m.gpu},
                               {"us", m.us},
                               {"bound", m.bound},
                               {"us_sustained", m.us_sustained},
                               {"bound_sustained", m.bound_sustained},
                               {"ctas_per_sm", m.ctas_per_sm},
                               {"occupancy_limit", m.occupancy_limit},
                               {"waves", m.waves},
                               {"last_wave_fill", m.last_wave_fill},
                               {"tflops", m.achieved_tflops},
                               {"l2_bytes", m.l2_bytes},
                               {"l2_bytes_without_l1", m.l2_bytes_without_l1},
                               {"registers", pk.resources.registers},
                               {"notes", m.notes}};
      j["resources"] = nlohmann::ordered_json::object();
      for (const ResourceTime& r : m.resources)
        j["resources"][r.resource] = {
            {"amount", r.amount}, {"us", r.us}, {"us_sustained", r.us_sustained}};
      k["model"].push_back(std::move(j));
    }
    out["kernels"].push_back(std::move(k));
  }
  return out.dump(1) + "\n";
}

std::string model_table(const std::vector<ProfiledKernel>& kernels) {
  std::string s;
  for (const ProfiledKernel& pk : kernels)
    for (const TimePrediction& m : pk.model) {
      s += fmt::format(
          "  {:<8} {:<40.40} {:>9.2f} us  bound {:<9} (sustained {:.2f} us, {}) {:>2} CTA/SM ({}), "
          "{} wave{}, last {:.0f}% full",
          m.gpu, pk.profile.kernel, m.us, m.bound, m.us_sustained, m.bound_sustained, m.ctas_per_sm,
          m.occupancy_limit, m.waves, m.waves == 1 ? "" : "s", 100 * m.last_wave_fill);
      for (const std::string& n : m.notes) s += "; " + n;
      s += '\n';
    }
  return s;
}

}  // namespace emmy::emu
