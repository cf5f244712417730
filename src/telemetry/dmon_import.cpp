#include "telemetry/dmon_import.hpp"

#include <cmath>
#include <string>

namespace fw {
namespace {

// Splits a line on spaces and tabs (no allocation once out has grown).
void split_ws(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
}

bool is_number(std::string_view s, double& v) { return parse_double(s, v) && std::isfinite(v); }

// Tokens of a header line after the time column (when any): true when it starts with
// "#Entity" or "#" "Entity"; names receives the field names.
bool header_names(const std::vector<std::string_view>& tok, size_t first,
                  std::vector<std::string>* names) {
  if (tok.size() <= first) return false;
  size_t k;
  if (tok[first] == "#Entity") {
    k = first + 1;
  } else if (tok[first] == "#" && tok.size() > first + 1 && tok[first + 1] == "Entity") {
    k = first + 2;
  } else {
    return false;
  }
  if (names != nullptr) names->assign(tok.begin() + static_cast<ptrdiff_t>(k), tok.end());
  return true;
}

class DmonSource : public TraceRowSource {
 public:
  DmonSource(std::unique_ptr<CsvReader> r, bool time_column, double period_s,
             std::vector<std::string> names, int power, int energy, const std::vector<int>& known)
      : r_(std::move(r)),
        time_column_(time_column),
        period_s_(period_s),
        names_(std::move(names)),
        power_(power),
        energy_(energy),
        known_(known) {
    for (int g : known) {
      if (g < 0 || g > kMaxGpuIndex) continue;
      if (static_cast<size_t>(g) >= allowed_.size()) allowed_.resize(g + 1, 0);
      allowed_[g] = 1;
    }
  }

  bool next(TraceRow& row) override {
    while (status_.ok()) {
      if (!r_->next()) {
        status_ = r_->status();
        return false;
      }
      if (r_->unterminated()) {
        warn(r_->where() +
             ": partial last line dropped (no newline at its end: a log still being written?)");
        continue;
      }
      const int k = read_row(row);
      if (k == 1) return true;
    }
    return false;
  }
  const Status& status() const override { return status_; }
  int64_t missing_power_rows() const override { return missing_; }
  double first_time_s() const { return t_first_; }

 private:
  int fail(const std::string& field, const std::string& problem) {
    status_ = Status::InvalidArgument(r_->where() + ": " + field + ": " + problem);
    return -1;
  }

  // 1: a row; 0: a line skipped (header, ID line, missing power); −1: error.
  int read_row(TraceRow& row) {
    split_ws(r_->line(), tok_);
    const size_t first = time_column_ ? 1 : 0;
    if (tok_.size() <= first) return fail("row", "no entity column");
    std::vector<std::string>& again = scratch_;
    if (header_names(tok_, first, &again)) {
      if (again != names_) return fail("header", "names other fields than the first header");
      return 0;
    }
    if (tok_[first] == "ID") return 0;
    if (tok_[first] != "GPU") {
      return fail("entity", "'" + std::string(tok_[first]) +
                                "': only GPU rows are imported (dcgmi dmon -i or -g with GPUs)");
    }
    const size_t want = first + 2 + names_.size();
    if (tok_.size() != want) {
      return fail("row", "expected the entity and " + std::to_string(names_.size()) +
                             " values, got " + std::to_string(tok_.size()) + " columns");
    }
    double t = 0;
    if (time_column_) {
      if (!is_number(tok_[0], t) || std::fabs(t) > kMaxTraceTimeS) {
        return fail("time", "not a Unix time in seconds: '" + std::string(tok_[0]) + "'");
      }
    }
    int64_t g;
    if (!parse_int64(tok_[first + 1], g) || g < 0 || g > kMaxGpuIndex) {
      return fail("gpu", "not a GPU index 0.." + std::to_string(kMaxGpuIndex) + ": '" +
                             std::string(tok_[first + 1]) + "'");
    }
    if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
      return fail("gpu", "unknown GPU index " + std::to_string(g));
    }
    // Time of the row.
    if (time_column_) {
      if (rows_ == 0) t_first_ = t;
      if (rows_ > 0 && t < t_last_) {
        return fail("time", "goes backwards (" + std::string(tok_[0]) + ")");
      }
      t_last_ = t;
      row.time_s = t - t_first_;
    } else {
      if (static_cast<size_t>(g) >= in_sample_.size()) in_sample_.resize(g + 1, -1);
      if (in_sample_[g] == sample_) ++sample_;
      in_sample_[g] = sample_;
      row.time_s = static_cast<double>(sample_) * period_s_;
    }
    ++rows_;
    const std::string_view pc = tok_[first + 2 + power_];
    double p;
    if (pc.substr(0, 3) == "N/A") {
      ++missing_;
      return 0;
    }
    if (!is_number(pc, p) || p < 0) {
      return fail("POWER", "not a non-negative number of watts: '" + std::string(pc) + "'");
    }
    if (!in_sane_range(ReadingField::kPower, p)) {
      return fail("POWER", range_problem(ReadingField::kPower, p));
    }
    double e = kUnset;
    if (energy_ >= 0) {
      const std::string_view ec = tok_[first + 2 + energy_];
      if (ec.substr(0, 3) != "N/A") {
        if (!is_number(ec, e) || e < 0) {
          return fail("TOTEC", "not a non-negative number of mJ: '" + std::string(ec) + "'");
        }
        e /= 1000.0;
        if (!in_sane_range(ReadingField::kEnergy, e)) {
          return fail("TOTEC", range_problem(ReadingField::kEnergy, e));
        }
      }
    }
    row.line = r_->line_number();
    GpuReading& rd = row.reading;
    rd = GpuReading{};
    rd.gpu = static_cast<int>(g);
    rd.power_w = p;
    rd.energy_j = e;
    return 1;
  }

  std::unique_ptr<CsvReader> r_;
  bool time_column_;
  double period_s_;
  std::vector<std::string> names_, scratch_;
  int power_, energy_;
  std::vector<int> known_;
  std::vector<char> allowed_;
  std::vector<std::string_view> tok_;
  std::vector<int64_t> in_sample_;  // per GPU: the sample it last reported in
  int64_t sample_ = 0, rows_ = 0, missing_ = 0;
  double t_first_ = 0, t_last_ = 0;
  Status status_;
};

}  // namespace

bool is_dmon_header(std::string_view line) {
  std::vector<std::string_view> tok;
  split_ws(line, tok);
  double t;
  return header_names(tok, 0, nullptr) ||
         (!tok.empty() && is_number(tok[0], t) && header_names(tok, 1, nullptr));
}

Result<std::unique_ptr<TraceRowSource>> open_dmon_source(std::unique_ptr<CsvReader> reader,
                                                         const TraceReaderOptions& options,
                                                         const std::vector<int>& known_gpus,
                                                         nlohmann::json& meta) {
  std::vector<std::string_view> tok;
  split_ws(reader->line(), tok);
  const bool time_column = !header_names(tok, 0, nullptr);
  std::vector<std::string> names;
  header_names(tok, time_column ? 1 : 0, &names);
  int power = -1, energy = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "POWER" && power < 0) power = static_cast<int>(i);
    if (names[i] == "TOTEC" && energy < 0) energy = static_cast<int>(i);
  }
  const std::string where = reader->where();
  if (power < 0) {
    return Status::InvalidArgument(where +
                                   ": header: dcgmi dmon output without a POWER column (field "
                                   "155): monitor it with dcgmi dmon -e 155[,156]");
  }
  FW_RETURN_IF_ERROR(validate(options));
  const double period = options.dmon_period_s;
  if (!time_column && std::isnan(period)) {
    return Status::InvalidArgument(
        where +
        ": header: dcgmi dmon output has no timestamps: give --dmon-period-s (dmon's -d delay "
        "in seconds, 1 when -d was not given), or log each line with a leading Unix time");
  }
  if (time_column && !std::isnan(period)) {
    return Status::InvalidArgument(where +
                                   ": header: --dmon-period-s given but the log has a time "
                                   "column: give one source of time only");
  }
  auto src = std::make_unique<DmonSource>(std::move(reader), time_column, period, names, power,
                                          energy, known_gpus);
  meta["format"] = "dcgmi-dmon";
  meta["fields"] = names;
  meta["time_source"] = time_column ? "time column" : "dmon period";
  if (!time_column) meta["dmon_period_s"] = period;
  meta["energy_column"] = energy >= 0;
  return std::unique_ptr<TraceRowSource>(std::move(src));
}

}  // namespace fw
