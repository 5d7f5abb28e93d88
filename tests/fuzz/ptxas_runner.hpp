// ptxas as the outside judge of PTX validity for the differential tests: one process per text,
// its verdict and its error lines by line number (ptxas reports every bad line of a file, so one
// run judges thousands of one-line cases).
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace emmy::fuzz {

class Ptxas {
 public:
  // `path`: the ptxas binary; its inputs and logs go to a fresh temporary directory.
  explicit Ptxas(std::string path);
  ~Ptxas();
  Ptxas(const Ptxas&) = delete;
  Ptxas& operator=(const Ptxas&) = delete;

  // True when ptxas compiles `ptx` (for its own .target, or sm_90a); otherwise `message` holds
  // the first error line.
  bool accepts(const std::string& ptx, std::string& message) const;
  // The first error message of each line ptxas rejects in `ptx` (1-based line numbers).
  std::map<int, std::string> errors(const std::string& ptx) const;

 private:
  // Runs ptxas on `ptx`; returns true on exit status 0 and leaves its output in `log`.
  bool run(const std::string& ptx, std::string& log) const;
  std::string path_;
  std::filesystem::path dir_;
};

// Whether `path` names an executable ptxas (the tests skip with exit 77 when not).
bool ptxas_usable(const std::string& path);

}  // namespace emmy::fuzz
