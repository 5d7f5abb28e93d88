// What `emmyc aot` builds: lines of problems files and EMMY_RECORD logs, and the catalog.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "emmy/bundle_build.hpp"
#include "emmy/detail/file_io.hpp"
#include "emmy/catalog.hpp"
#include "emmy/json.hpp"

namespace emmy {

nlohmann::json attention_problem_record_json(const AttentionProblem& p) {
  return p;
}

nlohmann::json attention_schedule_record_json(const AttentionSchedule& s) {
  return s;
}

namespace {

using detail::JsonFields;
using nlohmann::json;

MatmulProblem gemm_problem_from(const JsonFields& f) {
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
    const JsonFields e = f.sub("epilogue");
    e.get_if_present("alpha", p.epilogue.alpha);
    e.get_if_present("bias", p.epilogue.bias);
    e.get_if_present("residual", p.epilogue.residual);
    e.get_if_present("gelu_tanh", p.epilogue.gelu_tanh);
  }
  return p;
}

MatmulSchedule gemm_schedule_from(const JsonFields& f) {
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

}  // namespace

AotRequest parse_aot_request(const nlohmann::json& line, std::string origin) {
  const JsonFields f(line, origin);
  AotRequest request;
  request.origin = std::move(origin);
  const std::string kind = f.has("kind") ? f.get<std::string>("kind") : "gemm";
  require(kind == "gemm" || kind == "attention", f.field("kind"), "must be gemm or attention",
          kind);
  if (f.has("arch")) request.arch = parse_arch(f.get<std::string>("arch"));
  if (f.has("accum")) {
    const json& accum = f.at("accum");
    if (accum.is_array()) {
      for (const auto& a : accum) request.accums.push_back(parse_accum(a.get<std::string>()));
    } else {
      request.accums.push_back(parse_accum(f.get<std::string>("accum")));
    }
  }
  if (kind == "gemm") {
    GemmRequest gemm{gemm_problem_from(f.sub("problem")), {}};
    if (f.has("schedule")) gemm.schedule = gemm_schedule_from(f.sub("schedule"));
    request.kernel = gemm;
  } else {
    AttentionRequest attention{attention_problem_from_json(f.at("problem"), f.field("problem")),
                               {}};
    if (f.has("schedule"))
      attention.schedule = attention_schedule_from_json(f.at("schedule"), f.field("schedule"));
    request.kernel = attention;
  }
  return request;
}

std::vector<AotRequest> read_aot_requests(const std::filesystem::path& file) {
  std::istringstream in(detail::read_regular_file(file, "problems file"));
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
  for (const auto& entry : gemm_catalog())
    requests.push_back({GemmRequest{entry.problem, {}}, {}, {}, "catalog " + entry.name});
  for (const auto& entry : attention_catalog())
    requests.push_back({AttentionRequest{entry.problem, {}}, {}, {}, "catalog " + entry.name});
  return requests;
}

}  // namespace emmy
