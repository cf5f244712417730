#include "pipeline/gpu_samples.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/csv.hpp"

namespace fw::pipeline {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kCols[] = {"time_s",   "gpu",           "power_w",
                                 "energy_j", "power_limit_w", "sm_clock_mhz"};

Status read_csv(const std::string& path, std::vector<GpuSample>& out) {
  FW_ASSIGN_OR_RETURN(auto reader, CsvReader::open(path));
  CsvReader& r = *reader;
  if (!r.next()) {
    if (!r.status().ok()) return r.status();
    return Status::InvalidArgument(path + ": empty file (want the trace's gpus.csv header)");
  }
  int col[6];
  for (int c = 0; c < 6; ++c) {
    col[c] = -1;
    for (size_t i = 0; i < r.fields().size(); ++i) {
      if (r.fields()[i] == kCols[c]) col[c] = static_cast<int>(i);
    }
    if (col[c] < 0) {
      return Status::InvalidArgument(r.where() + ": " + kCols[c] +
                                     ": column missing from the header (want the agent "
                                     "trace's gpus.csv)");
    }
  }
  while (r.next()) {
    const auto& f = r.fields();
    auto cell = [&](int c) -> std::string_view {
      return static_cast<size_t>(col[c]) < f.size() ? f[col[c]] : std::string_view();
    };
    GpuSample s;
    int64_t gpu = 0;
    if (!parse_double(cell(0), s.time_s) || !std::isfinite(s.time_s)) {
      return Status::InvalidArgument(r.where() + ": time_s: not a number: '" +
                                     std::string(cell(0)) + "'");
    }
    if (!parse_int64(cell(1), gpu) || gpu < 0 || gpu > (1 << 20)) {
      return Status::InvalidArgument(r.where() + ": gpu: not a GPU index: '" +
                                     std::string(cell(1)) + "'");
    }
    s.gpu = static_cast<int>(gpu);
    double* dst[] = {&s.power_w, &s.energy_j, &s.cap_w, &s.sm_clock_mhz};
    for (int c = 2; c < 6; ++c) {
      if (cell(c).empty()) {
        *dst[c - 2] = kNaN;
      } else if (!parse_double(cell(c), *dst[c - 2]) || !std::isfinite(*dst[c - 2])) {
        return Status::InvalidArgument(r.where() + ": " + kCols[c] + ": not a number: '" +
                                       std::string(cell(c)) + "'");
      }
    }
    out.push_back(s);
  }
  return r.status();
}

double meta_start(const std::filesystem::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return kNaN;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return kNaN;
  auto it = j.find("start_unix_s");
  return it != j.end() && it->is_number() ? it->get<double>() : kNaN;
}

}  // namespace

Result<GpuTrace> read_gpu_samples(const std::string& path) {
  namespace fs = std::filesystem;
  GpuTrace t;
  t.source = path;
  t.start_unix_s = kNaN;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    FW_RETURN_IF_ERROR(read_csv(path, t.samples));
    t.start_unix_s = meta_start(fs::path(path).parent_path());
    return t;
  }
  if (fs::exists(fs::path(path) / "gpus.csv", ec)) {
    FW_RETURN_IF_ERROR(read_csv((fs::path(path) / "gpus.csv").string(), t.samples));
    t.start_unix_s = meta_start(path);
    return t;
  }
  std::vector<fs::path> segs;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.is_directory() && e.path().filename().string().rfind("seg-", 0) == 0 &&
        fs::exists(e.path() / "gpus.csv")) {
      segs.push_back(e.path());
    }
  }
  if (segs.empty()) {
    return Status::InvalidArgument(path + ": no gpus.csv here nor in seg-*/ (want an agent trace)");
  }
  std::sort(segs.begin(), segs.end());
  for (const auto& s : segs) FW_RETURN_IF_ERROR(read_csv((s / "gpus.csv").string(), t.samples));
  t.start_unix_s = meta_start(segs.front());
  return t;
}

Status write_gpu_samples(const std::string& path, const std::vector<GpuSample>& samples) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::InvalidArgument(path + ": cannot write");
  out << "time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c\n";
  char line[256];
  for (const auto& s : samples) {
    std::snprintf(line, sizeof line, "%.3f,%d,%.3f,%.3f,%.1f,,,%.0f,\n", s.time_s, s.gpu, s.power_w,
                  s.energy_j, s.cap_w, s.sm_clock_mhz);
    out << line;
  }
  out.flush();
  if (!out) return Status::InvalidArgument(path + ": write failed");
  return Status::Ok();
}

}  // namespace fw::pipeline
