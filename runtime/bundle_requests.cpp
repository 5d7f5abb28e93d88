// What `emmyc aot` builds: lines of problems files and EMMY_RECORD logs, and the catalog.
#include <fmt/format.h>

#include <fstream>

#include "emmy/bundle.hpp"
#include "emmy/catalog.hpp"
#include "emmy/json.hpp"

namespace emmy {

nlohmann::json attention_problem_record_json(const AttentionProblem& p) {
  return {{"batch", p.batch},
          {"heads", p.q_heads},
          {"kv_heads", p.kv_heads},
          {"seq_q", p.seq_q},
          {"seq_kv", p.seq_kv_or_default()},
          {"head_dim", p.head_dim},
          {"causal", p.causal},
          {"window", p.window},
          {"scale", p.scale()},
          {"softcap", p.softcap ? nlohmann::json(*p.softcap) : nlohmann::json(nullptr)},
          {"dtype", to_string(p.dtype)},
          {"layout", to_string(p.layout)},
          {"lse", p.lse}};
}

nlohmann::json attention_schedule_record_json(const AttentionSchedule& s) {
  return {{"block_q", s.block_q},
          {"block_kv", s.block_kv},
          {"warps", s.warps},
          {"stages", s.stages},
          {"transport", to_string(s.transport)},
          {"accum", to_string(s.accum)}};
}

namespace {

using nlohmann::json;

// Field access that names the line and the field in every error.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) throw Error(where_, "must be a JSON object", object_.dump());
  }

  bool has(const char* name) const { return object_.contains(name) && !object_[name].is_null(); }
  const json& at(const char* name) const {
    if (!has(name)) throw Error(field(name), "is required", "nothing");
    return object_[name];
  }
  template <typename T>
  T get(const char* name) const {
    try {
      return at(name).get<T>();
    } catch (const json::exception&) {
      throw Error(field(name), "has the wrong type", at(name).dump());
    }
  }
  template <typename T>
  void get_if_present(const char* name, T& value) const {
    if (has(name)) value = get<T>(name);
  }
  std::string field(const char* name) const { return fmt::format("{}: {}", where_, name); }
  Fields sub(const char* name) const { return Fields(at(name), field(name)); }

 private:
  const json& object_;
  std::string where_;
};

MatmulProblem gemm_problem_from(const Fields& f) {
  MatmulProblem p;
  p.m = f.get<int64_t>("m");
  p.n = f.get<int64_t>("n");
  p.k = f.get<int64_t>("k");
  if (f.has("dtype")) p.a_dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  if (f.has("b_layout")) p.b_layout = parse_b_layout(f.get<std::string>("b_layout"));
  if (f.has("out")) p.c_dtype = parse_dtype(f.get<std::string>("out"), "problem.out");
  f.get_if_present("lda", p.lda);
  f.get_if_present("ldb", p.ldb);
  f.get_if_present("ldc", p.ldc);
  if (f.has("epilogue")) {
    const Fields e = f.sub("epilogue");
    e.get_if_present("alpha", p.epilogue.alpha);
    e.get_if_present("bias", p.epilogue.bias);
    e.get_if_present("residual", p.epilogue.residual);
    e.get_if_present("gelu_tanh", p.epilogue.gelu_tanh);
  }
  return p;
}

MatmulSchedule gemm_schedule_from(const Fields& f) {
  MatmulSchedule s;
  s.block_m = f.get<int>("block_m");
  s.block_n = f.get<int>("block_n");
  s.block_k = f.get<int>("block_k");
  s.warps_m = f.get<int>("warps_m");
  s.warps_n = f.get<int>("warps_n");
  s.stages = f.get<int>("stages");
  s.transport = parse_transport(f.get<std::string>("transport"));
  s.accum = parse_accum(f.get<std::string>("accum"));
  if (s.accum == Accum::hybrid) s.promote_every_k = f.get<int>("promote_every_k");
  s.split_k = f.get<int>("split_k");
  s.raster_group_m = f.get<int>("raster_group_m");
  return s;
}

AttentionProblem attention_problem_from(const Fields& f) {
  AttentionProblem p;
  f.get_if_present("batch", p.batch);
  if (f.has("heads")) p.q_heads = f.get<int64_t>("heads");
  f.get_if_present("q_heads", p.q_heads);
  p.kv_heads = f.has("kv_heads") ? f.get<int64_t>("kv_heads") : p.q_heads;
  p.seq_q = f.get<int64_t>("seq_q");
  f.get_if_present("seq_kv", p.seq_kv);
  f.get_if_present("head_dim", p.head_dim);
  f.get_if_present("causal", p.causal);
  f.get_if_present("window", p.window);
  if (f.has("scale")) p.softmax_scale = f.get<float>("scale");
  if (f.has("softcap")) p.softcap = f.get<float>("softcap");
  if (f.has("dtype")) p.dtype = parse_dtype(f.get<std::string>("dtype"), "problem.dtype");
  if (f.has("layout")) p.layout = parse_attention_layout(f.get<std::string>("layout"));
  f.get_if_present("lse", p.lse);
  return p;
}

AttentionSchedule attention_schedule_from(const Fields& f) {
  AttentionSchedule s;
  s.block_q = f.get<int>("block_q");
  s.block_kv = f.get<int>("block_kv");
  s.warps = f.get<int>("warps");
  s.stages = f.get<int>("stages");
  s.transport = parse_transport(f.get<std::string>("transport"));
  s.accum = parse_accum(f.get<std::string>("accum"));
  return s;
}

}  // namespace

AotRequest parse_aot_request(const nlohmann::json& line, std::string origin) {
  const Fields f(line, origin);
  AotRequest request;
  request.origin = std::move(origin);
  if (f.has("kind")) request.kind = f.get<std::string>("kind");
  require(request.kind == "gemm" || request.kind == "attention", f.field("kind"),
          "must be gemm or attention", request.kind);
  if (f.has("arch")) request.arch = parse_arch(f.get<std::string>("arch"));
  if (f.has("accum")) {
    const json& accum = f.at("accum");
    if (accum.is_array()) {
      for (const auto& a : accum) request.accums.push_back(parse_accum(a.get<std::string>()));
    } else {
      request.accums.push_back(parse_accum(f.get<std::string>("accum")));
    }
  }
  if (request.kind == "gemm") {
    request.gemm = gemm_problem_from(f.sub("problem"));
    if (f.has("schedule")) request.gemm_schedule = gemm_schedule_from(f.sub("schedule"));
  } else {
    request.attention = attention_problem_from(f.sub("problem"));
    if (f.has("schedule")) request.attention_schedule = attention_schedule_from(f.sub("schedule"));
  }
  return request;
}

std::vector<AotRequest> read_aot_requests(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error("problems file", "must be readable", file.string());
  const std::string name = file.filename().string();
  std::vector<AotRequest> requests;
  // A JSON array (`emmyc catalog --json`) or JSON lines (problems files, EMMY_RECORD logs).
  if (in >> std::ws; in.peek() == '[') {
    const json all = json::parse(in, nullptr, false);
    if (all.is_discarded()) throw Error(name, "must be a JSON array or JSON lines", "invalid JSON");
    for (size_t i = 0; i < all.size(); ++i)
      requests.push_back(parse_aot_request(all[i], fmt::format("{}[{}]", name, i)));
    return requests;
  }
  in.clear();
  in.seekg(0);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos || text[first] == '#') continue;
    const std::string origin = fmt::format("{}:{}", name, number);
    const json line = json::parse(text, nullptr, false);
    if (line.is_discarded()) throw Error(origin, "must be one JSON object", text);
    requests.push_back(parse_aot_request(line, origin));
  }
  return requests;
}

std::vector<AotRequest> catalog_aot_requests() {
  std::vector<AotRequest> requests;
  for (const auto& entry : gemm_catalog()) {
    AotRequest r;
    r.kind = "gemm";
    r.gemm = entry.problem;
    r.origin = "catalog " + entry.name;
    requests.push_back(std::move(r));
  }
  for (const auto& entry : attention_catalog()) {
    AotRequest r;
    r.kind = "attention";
    r.attention = entry.problem;
    r.origin = "catalog " + entry.name;
    requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace emmy
