#include "telemetry/trace_reader.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/csv.hpp"
#include "telemetry/nvsmi_import.hpp"
#include "telemetry/trace_reader_parse.hpp"

namespace fw {
namespace {

using trace_internal::fast_parse_double;
using trace_internal::fast_parse_int;

std::string fmt_num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

Status bad(const CsvReader& r, std::string_view field, const std::string& problem) {
  return Status::InvalidArgument(r.where() + ": " + std::string(field) + ": " + problem);
}

// Set of allowed GPU indices; empty = any.
std::vector<char> allowed_table(const std::vector<int>& gpus) {
  std::vector<char> t;
  for (int g : gpus) {
    if (g < 0 || g > kMaxGpuIndex) continue;
    if (static_cast<size_t>(g) >= t.size()) t.resize(g + 1, 0);
    t[g] = 1;
  }
  return t;
}

std::string list_str(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// The flexwatt gpus.csv format, columns by header name.
class FlexwattSource : public TraceRowSource {
 public:
  FlexwattSource(std::unique_ptr<CsvReader> r, std::vector<int> cols, unsigned fields,
                 const std::vector<int>& known)
      : r_(std::move(r)), header_line_(r_->line()), allowed_(allowed_table(known)), known_(known) {
    // cols: time, gpu, power, energy, limit, sm_util, mem_util, clock, temp (−1 = absent)
    for (int i = 0; i < 3; ++i) col_[i] = cols[i];
    static constexpr unsigned kBits[] = {
        0,         0, 0, kFieldEnergy, kFieldPowerLimit, kFieldSmUtil, kFieldMemUtil, kFieldSmClock,
        kFieldTemp};
    static constexpr const char* kNames[] = {
        "", "", "", "energy_j", "power_limit_w", "sm_util", "mem_util", "sm_clock_mhz", "temp_c"};
    static constexpr double GpuReading::*kMembers[] = {nullptr,
                                                       nullptr,
                                                       nullptr,
                                                       &GpuReading::energy_j,
                                                       &GpuReading::power_limit_w,
                                                       &GpuReading::sm_util,
                                                       &GpuReading::mem_util,
                                                       &GpuReading::sm_clock_mhz,
                                                       &GpuReading::temp_c};
    for (int i = 3; i < 9; ++i) {
      if (cols[i] >= 0 && (fields & kBits[i])) {
        optional_[n_optional_++] = {cols[i], kMembers[i], kNames[i]};
      } else {
        unset_[n_unset_++] = kMembers[i];
      }
    }
    for (int c : cols) min_fields_ = std::max(min_fields_, c + 1);
  }

  bool next(TraceRow& row) override {
    if (!status_.ok()) return false;
    do {
      if (!r_->next()) {
        status_ = r_->status();
        return false;
      }
    } while (skip_non_data(*r_, header_line_));
    const std::vector<std::string_view>& f = r_->fields();
    if (static_cast<int>(f.size()) < min_fields_) {
      return fail(bad(*r_, "row",
                      "expected at least " + std::to_string(min_fields_) + " fields, got " +
                          std::to_string(f.size())));
    }
    row.line = r_->line_number();
    // Rows of one tick repeat the same time text: parse it once per tick.
    const std::string_view tc = f[col_[0]];
    if (tc.size() == time_text_len_ && tc.size() <= sizeof time_text_ &&
        std::memcmp(tc.data(), time_text_, tc.size()) == 0) {
      row.time_s = time_value_;
    } else {
      if (!fast_parse_double(tc, row.time_s) || !std::isfinite(row.time_s)) {
        time_text_len_ = 0;
        return fail(bad(*r_, "time_s", "not a finite number: '" + std::string(tc) + "'"));
      }
      if (std::fabs(row.time_s) > kMaxTraceTimeS) {
        time_text_len_ = 0;
        return fail(
            bad(*r_, "time_s", "'" + std::string(tc) + "' is beyond the sane range of +-1e10 s"));
      }
      if (tc.size() <= sizeof time_text_) {
        std::memcpy(time_text_, tc.data(), tc.size());
        time_text_len_ = tc.size();
        time_value_ = row.time_s;
      }
    }
    int64_t g;
    if (!fast_parse_int(f[col_[1]], g)) {
      return fail(bad(*r_, "gpu", "not an integer: '" + std::string(f[col_[1]]) + "'"));
    }
    if (g < 0 || g > kMaxGpuIndex) {
      return fail(
          bad(*r_, "gpu",
              "index " + std::to_string(g) + " out of range 0.." + std::to_string(kMaxGpuIndex)));
    }
    if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
      return fail(
          bad(*r_, "gpu",
              "unknown GPU index " + std::to_string(g) + " (known: " + list_str(known_) + ")"));
    }
    GpuReading& rd = row.reading;
    rd.gpu = static_cast<int>(g);
    double p;
    std::string_view pc = f[col_[2]];
    if (!fast_parse_double(pc, p)) {
      return fail(bad(*r_, "power_w", "not a number: '" + std::string(pc) + "'"));
    }
    if (std::isnan(p)) return fail(bad(*r_, "power_w", "NaN"));
    if (p < 0) return fail(bad(*r_, "power_w", "negative (" + std::string(pc) + ")"));
    if (!std::isfinite(p)) return fail(bad(*r_, "power_w", "infinite"));
    rd.power_w = p;
    rd.power_instant_w = kUnset;
    for (int i = 0; i < n_unset_; ++i) rd.*unset_[i] = kUnset;
    for (int i = 0; i < n_optional_; ++i) {
      const Optional& o = optional_[i];
      std::string_view c = f[o.col];
      if (c.empty()) {
        rd.*o.member = kUnset;
      } else if (!fast_parse_double(c, rd.*o.member)) {
        return fail(bad(*r_, o.name, "not a number: '" + std::string(c) + "'"));
      }
    }
    return true;
  }
  const Status& status() const override { return status_; }

 private:
  bool fail(Status s) {
    status_ = std::move(s);
    return false;
  }
  struct Optional {
    int col;
    double GpuReading::*member;
    const char* name;
  };
  std::unique_ptr<CsvReader> r_;
  std::string header_line_;
  int col_[3];
  Optional optional_[6];
  int n_optional_ = 0;
  double GpuReading::*unset_[6];
  int n_unset_ = 0;
  int min_fields_ = 0;
  char time_text_[32];
  size_t time_text_len_ = 0;
  double time_value_ = 0;
  std::vector<char> allowed_;
  std::vector<int> known_;
  Status status_;
};

}  // namespace

bool TraceRowSource::skip_non_data(const CsvReader& r, std::string_view header_line) {
  if (r.unterminated()) {
    warn(r.where() +
         ": partial last line dropped (no newline at its end: a log still being written?)");
    return true;
  }
  if (r.line().size() == header_line.size() && r.line() == header_line) {
    warn(r.where() + ": repeated header line skipped (logging restarted and appended?)");
    return true;
  }
  return false;
}

std::string_view trace_format_name(TraceFormat f) {
  switch (f) {
    case TraceFormat::kFlexwattDir:
      return "flexwatt trace directory";
    case TraceFormat::kFlexwattCsv:
      return "flexwatt gpus.csv";
    case TraceFormat::kNvidiaSmi:
      return "nvidia-smi csv log";
  }
  return "?";
}

Result<std::vector<int>> gpus_from_meta(const nlohmann::json& meta, const std::string& where) {
  std::vector<int> out;
  if (!meta.is_object() || !meta.contains("gpus")) return out;
  const nlohmann::json& g = meta["gpus"];
  if (!g.is_array()) return Status::InvalidArgument(where + ": gpus: expected an array");
  for (const auto& e : g) {
    if (e.is_number_integer()) {
      out.push_back(e.get<int>());
    } else if (e.is_object() && e.contains("index") && e["index"].is_number_integer()) {
      out.push_back(e["index"].get<int>());
    } else {
      return Status::InvalidArgument(where + ": gpus: expected integers or objects with \"index\"");
    }
  }
  return out;
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path,
                                                       const TraceReaderOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::unique_ptr<TraceReader> t(new TraceReader());
  std::vector<int> known = options.gpus;
  if (fs::is_directory(path, ec)) {
    t->format_ = TraceFormat::kFlexwattDir;
    t->rows_path_ = (fs::path(path) / "gpus.csv").string();
    if (!fs::exists(t->rows_path_, ec)) return Status::NotFound(t->rows_path_ + ": no such file");
    const std::string jobs = (fs::path(path) / "jobs.csv").string();
    if (fs::exists(jobs, ec)) t->jobs_path_ = jobs;
    const std::string meta = (fs::path(path) / "meta.json").string();
    if (fs::exists(meta, ec)) {
      std::ifstream in(meta);
      try {
        t->meta_ = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        return Status::InvalidArgument(meta + ": not valid JSON: " + e.what());
      }
      if (!t->meta_.is_object()) {
        return Status::InvalidArgument(meta + ": expected a JSON object, got " +
                                       std::string(t->meta_.type_name()));
      }
      FW_ASSIGN_OR_RETURN(std::vector<int> from_meta, gpus_from_meta(t->meta_, meta));
      if (known.empty()) known = from_meta;
    }
  } else {
    if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file or directory");
    t->rows_path_ = path;
  }
  for (int g : known) {
    if (g < 0 || g > kMaxGpuIndex) {
      return Status::InvalidArgument("gpu index " + std::to_string(g) + " out of range 0.." +
                                     std::to_string(kMaxGpuIndex));
    }
  }

  FW_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> r, CsvReader::open(t->rows_path_));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(t->rows_path_ + ":1: empty file (expected a header row)");
  }
  std::vector<std::string> header(r->fields().begin(), r->fields().end());
  if (is_nvsmi_header(r->fields())) {
    if (t->format_ == TraceFormat::kFlexwattDir) {
      return Status::InvalidArgument(r->where() +
                                     ": header: an nvidia-smi log cannot be a trace's gpus.csv");
    }
    t->format_ = TraceFormat::kNvidiaSmi;
    FW_ASSIGN_OR_RETURN(t->source_,
                        open_nvsmi_source(std::move(r), header, options, known, t->meta_));
    return t;
  }
  static constexpr const char* kCols[] = {"time_s",   "gpu",           "power_w",
                                          "energy_j", "power_limit_w", "sm_util",
                                          "mem_util", "sm_clock_mhz",  "temp_c"};
  std::vector<int> cols(9, -1);
  for (size_t i = 0; i < header.size(); ++i) {
    for (int c = 0; c < 9; ++c) {
      if (header[i] == kCols[c] && cols[c] < 0) cols[c] = static_cast<int>(i);
    }
  }
  if (cols[0] < 0 || cols[1] < 0 || cols[2] < 0) {
    std::string missing;
    for (int c = 0; c < 3; ++c) {
      if (cols[c] < 0) missing += (missing.empty() ? "" : ", ") + std::string(kCols[c]);
    }
    return Status::InvalidArgument(
        r->where() + ": header: not a flexwatt trace (missing " + missing +
        ") nor an nvidia-smi log (needs timestamp and power.draw); got '" + std::string(r->line()) +
        "'");
  }
  t->source_ = std::make_unique<FlexwattSource>(std::move(r), cols, options.fields, known);
  return t;
}

Result<std::optional<double>> read_job_tokens(const std::string& path) {
  FW_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> r, CsvReader::open(path));
  if (!r->next()) {
    FW_RETURN_IF_ERROR(r->status());
    return Status::InvalidArgument(path + ":1: empty file (expected a header row)");
  }
  int job_col = -1, tok_col = -1;
  for (size_t i = 0; i < r->fields().size(); ++i) {
    if (r->fields()[i] == "job") job_col = static_cast<int>(i);
    if (r->fields()[i] == "tokens_total") tok_col = static_cast<int>(i);
  }
  if (tok_col < 0) return std::optional<double>();
  if (job_col < 0) return Status::InvalidArgument(r->where() + ": header: no 'job' column");
  std::map<int64_t, std::pair<double, double>> first_last;
  while (r->next()) {
    const auto& f = r->fields();
    if (static_cast<int>(f.size()) <= std::max(job_col, tok_col)) {
      return Status::InvalidArgument(r->where() + ": row: too few fields");
    }
    int64_t job;
    if (!parse_int64(f[job_col], job)) {
      return Status::InvalidArgument(r->where() + ": job: not an integer: '" +
                                     std::string(f[job_col]) + "'");
    }
    if (f[tok_col].empty()) continue;
    double tok;
    if (!parse_double(f[tok_col], tok) || !std::isfinite(tok)) {
      return Status::InvalidArgument(r->where() + ": tokens_total: not a finite number: '" +
                                     std::string(f[tok_col]) + "'");
    }
    auto [it, inserted] = first_last.try_emplace(job, tok, tok);
    if (!inserted) {
      if (tok < it->second.second) {
        return Status::InvalidArgument(r->where() + ": tokens_total: decreases for job " +
                                       std::to_string(job) + " (" + fmt_num(tok) + " after " +
                                       fmt_num(it->second.second) + ")");
      }
      it->second.second = tok;
    }
  }
  FW_RETURN_IF_ERROR(r->status());
  if (first_last.empty()) return std::optional<double>();
  double sum = 0;
  for (const auto& [job, fl] : first_last) sum += fl.second - fl.first;
  return std::optional<double>(sum);
}

}  // namespace fw
