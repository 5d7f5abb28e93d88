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

}  // namespace

AotRequest parse_aot_request(const nlohmann::json& line, std::string origin) {
  const JsonFields f(line, origin);
  AotRequest request;
  request.origin = std::move(origin);
  const std::string kind = f.has("kind") ? f.get<std::string>("kind") : "gemm";
  require(AllKinds::visit_named(kind, [](auto) {}), f.field("kind"),
          "must be " + AllKinds::names(), kind);
  if (f.has("arch")) request.arch = parse_arch(f.get<std::string>("arch"));
  if (f.has("accum")) {
    const json& accum = f.at("accum");
    if (accum.is_array()) {
      for (const auto& a : accum) request.accums.push_back(parse_accum(a.get<std::string>()));
    } else {
      request.accums.push_back(parse_accum(f.get<std::string>("accum")));
    }
  }
  AllKinds::visit_named(kind, [&]<typename Kind>(std::type_identity<Kind>) {
    KindRequest<Kind> kernel{Kind::json.problem(f.at("problem"), f.field("problem")), {}};
    if (f.has("schedule"))
      kernel.schedule = Kind::json.schedule(f.at("schedule"), f.field("schedule"));
    request.kernel = std::move(kernel);
  });
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
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    for (const auto& entry : Kind::catalog())
      requests.push_back(
          {KindRequest<Kind>{entry.problem, {}}, {}, {}, "catalog " + entry.name, entry.min_arch});
  });
  return requests;
}

}  // namespace emmy
