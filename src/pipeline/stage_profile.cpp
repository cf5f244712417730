#include "pipeline/stage_profile.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/csv.hpp"

namespace fw::pipeline {
namespace {

constexpr const char* kColumns[] = {"stage", "instruction", "frequency", "time", "energy"};

// Sorts, checks completeness and builds the profile from rows already checked one by one.
Result<StageProfile> assemble(std::vector<ProfileRow> rows, const std::string& where) {
  if (rows.empty()) return Status::InvalidArgument(where + ": no rows");
  int max_stage = 0;
  for (const auto& r : rows) max_stage = std::max(max_stage, r.stage);
  StageProfile p;
  p.source = where;
  p.stages.resize(static_cast<size_t>(max_stage) + 1);
  for (const auto& r : rows) {
    p.stages[r.stage][static_cast<int>(r.instr)].points.push_back(
        {r.freq_mhz, r.time_s, r.energy_j});
  }
  for (int s = 0; s <= max_stage; ++s) {
    for (int k = 0; k < 2; ++k) {
      auto& pts = p.stages[s][k].points;
      if (pts.empty()) {
        return Status::InvalidArgument(where + ": stage " + std::to_string(s) + " has no " +
                                       (k == 0 ? "forward" : "backward") +
                                       " rows (stages must be 0..N-1, each with both)");
      }
      std::sort(pts.begin(), pts.end(),
                [](const ClockPoint& a, const ClockPoint& b) { return a.freq_mhz > b.freq_mhz; });
    }
  }
  return p;
}

Status check_row(const ProfileRow& r, const std::string& where) {
  if (r.stage < 0) return Status::InvalidArgument(where + ": stage: negative");
  const std::pair<const char*, double> nums[] = {
      {"frequency", r.freq_mhz}, {"time", r.time_s}, {"energy", r.energy_j}};
  for (const auto& [name, v] : nums) {
    if (!std::isfinite(v) || v <= 0) {
      return Status::InvalidArgument(where + ": " + name + ": must be a positive number");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<StageProfile> make_stage_profile(const std::vector<ProfileRow>& rows,
                                        const std::string& where) {
  std::map<std::tuple<int, int, double>, int> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string w = where + ": row " + std::to_string(i + 1);
    Status st = check_row(rows[i], w);
    if (!st.ok()) return st;
    auto key = std::make_tuple(rows[i].stage, static_cast<int>(rows[i].instr), rows[i].freq_mhz);
    if (!seen.emplace(key, static_cast<int>(i)).second) {
      return Status::InvalidArgument(w + ": frequency: repeats a (stage, instruction, frequency)");
    }
  }
  return assemble(rows, where);
}

namespace {

// The rows of `r` (the file or text named `path`), checked as the contract says.
Result<StageProfile> parse_rows(CsvReader& r, const std::string& path) {
  if (!r.next()) {
    if (!r.status().ok()) return r.status();
    return Status::InvalidArgument(path +
                                   ": empty file (want a header: "
                                   "stage,instruction,frequency,time,energy)");
  }
  int col[5];
  for (int c = 0; c < 5; ++c) {
    col[c] = -1;
    for (size_t i = 0; i < r.fields().size(); ++i) {
      if (r.fields()[i] == kColumns[c]) col[c] = static_cast<int>(i);
    }
    if (col[c] < 0) {
      return Status::InvalidArgument(r.where() + ": " + kColumns[c] +
                                     ": column missing from the header (want "
                                     "stage,instruction,frequency,time,energy)");
    }
  }
  std::vector<ProfileRow> rows;
  std::map<std::tuple<int, int, double>, int64_t> seen;
  while (r.next()) {
    const auto& f = r.fields();
    const std::string w = r.where();
    auto field = [&](int c) -> std::string_view {
      return static_cast<size_t>(col[c]) < f.size() ? f[col[c]] : std::string_view();
    };
    ProfileRow row;
    int64_t stage = 0;
    if (!parse_int64(field(0), stage) || stage < 0 || stage > 1024) {
      return Status::InvalidArgument(w + ": stage: not a stage index 0..1024: '" +
                                     std::string(field(0)) + "'");
    }
    row.stage = static_cast<int>(stage);
    const std::string_view instr = field(1);
    if (instr == "forward") {
      row.instr = Instr::kForward;
    } else if (instr == "backward") {
      row.instr = Instr::kBackward;
    } else {
      return Status::InvalidArgument(w + ": instruction: '" + std::string(instr) +
                                     "' is not forward or backward");
    }
    double* dst[] = {&row.freq_mhz, &row.time_s, &row.energy_j};
    for (int c = 2; c < 5; ++c) {
      if (!parse_double(field(c), *dst[c - 2])) {
        return Status::InvalidArgument(w + ": " + kColumns[c] + ": not a number: '" +
                                       std::string(field(c)) + "'");
      }
      if (!std::isfinite(*dst[c - 2]) || *dst[c - 2] <= 0) {
        return Status::InvalidArgument(w + ": " + kColumns[c] + ": must be positive: '" +
                                       std::string(field(c)) + "'");
      }
    }
    auto key = std::make_tuple(row.stage, static_cast<int>(row.instr), row.freq_mhz);
    if (auto [it, fresh] = seen.emplace(key, r.line_number()); !fresh) {
      return Status::InvalidArgument(w + ": frequency: stage " + std::to_string(row.stage) + " " +
                                     std::string(instr) + " at " + std::string(field(2)) +
                                     " MHz repeats line " + std::to_string(it->second));
    }
    rows.push_back(row);
  }
  if (!r.status().ok()) return r.status();
  return assemble(std::move(rows), path);
}

}  // namespace

Result<StageProfile> read_stage_profile(const std::string& path) {
  auto reader = CsvReader::open(path);
  if (!reader.ok()) return reader.status();
  return parse_rows(**reader, path);
}

Result<StageProfile> parse_stage_profile(std::string_view text, const std::string& source) {
  auto reader = CsvReader::over(source, text, 1);
  return parse_rows(*reader, source);
}

}  // namespace fw::pipeline
