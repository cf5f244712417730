#include "cli/flag_checks.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include "core/csv.hpp"
#include "core/text_file.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::cli {

CLI::Validator finite_in(double lo, double hi, bool lo_open) {
  const std::string range = fmt::format("{}{:g}, {:g}]", lo_open ? "(" : "[", lo, hi);
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& s) -> std::string {
        const char* b = s.c_str();
        char* e = nullptr;
        errno = 0;
        const double v = std::strtod(b, &e);
        const bool number = e != b && *e == '\0' && errno != ERANGE;
        const bool in = number && std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
        return in ? std::string() : "must be a finite number in " + range + ", got '" + s + "'";
      },
      "finite, in " + range);
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        bool ok = !s.empty() && s.size() <= 19;
        for (char c : s) ok = ok && c >= '0' && c <= '9';
        if (ok) {
          const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
          ok = v <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max());
        }
        return ok ? std::string()
                  : "must be a non-negative integer (at most 2^63 - 1), got '" + s + "'";
      },
      "integer >= 0");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) return path + " is a directory, not a file";
        const Status st = check_writable_parent(path);
        return st.ok() ? std::string() : st.message();
      },
      "file");
}

void add_quiet_flag(CLI::App& app, bool& quiet) {
  app.add_flag("--quiet", quiet, "no progress line on stderr (shown only on a terminal)");
}

void add_wide_flag(CLI::App& app, bool& wide) {
  app.add_flag("--wide", wide, "tables with every column, wider than 120 characters");
}

Status parse_gpu_indices(const std::string& list, std::vector<int>& out) {
  std::vector<double> g;
  FW_RETURN_IF_ERROR(parse_double_list(list, "--gpus", g));
  for (double v : g) {
    if (v < 0 || v != std::floor(v) || v > kMaxGpuIndex) {
      return Status::InvalidArgument("--gpus: not a GPU index: " + std::to_string(v));
    }
    out.push_back(static_cast<int>(v));
  }
  return Status::Ok();
}

}  // namespace fw::cli
