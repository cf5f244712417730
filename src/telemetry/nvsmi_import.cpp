#include "telemetry/nvsmi_import.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "telemetry/trace_reader_parse.hpp"

namespace fw {
namespace {

using trace_internal::fast_parse_double;

// Splits "power.draw [W]" into name "power.draw" and unit "W".
void split_header(std::string_view h, std::string_view& name, std::string_view& unit) {
  h = trim(h);
  const size_t b = h.find('[');
  if (b == std::string_view::npos) {
    name = h;
    unit = {};
    return;
  }
  name = trim(h.substr(0, b));
  const size_t e = h.find(']', b);
  unit = trim(h.substr(b + 1, e == std::string_view::npos ? h.npos : e - b - 1));
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads exactly n digits at s[pos]; advances pos.
bool digits(std::string_view s, size_t& pos, int n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned d = static_cast<unsigned>(s[pos + i] - '0');
    if (d >= 10) return false;
    v = v * 10 + static_cast<int>(d);
  }
  pos += n;
  out = v;
  return true;
}

struct Cols {
  int ts = -1, index = -1, power = -1, power_rank = 99, instant = -1, limit = -1, limit_rank = 99,
      sm_util = -1, mem_util = -1, clock = -1, temp = -1, energy = -1;
  double energy_scale = 1;  // to joules
};

class NvsmiSource : public TraceRowSource {
 public:
  NvsmiSource(std::unique_ptr<CsvReader> r, Cols c, const std::vector<int>& known)
      : r_(std::move(r)), c_(c), known_(known) {
    for (int g : known) {
      if (g < 0 || g > kMaxGpuIndex) continue;
      if (static_cast<size_t>(g) >= allowed_.size()) allowed_.resize(g + 1, 0);
      allowed_[g] = 1;
    }
    for (int v : {c.ts, c.index, c.power, c.instant, c.limit, c.sm_util, c.mem_util, c.clock,
                  c.temp, c.energy}) {
      min_fields_ = std::max(min_fields_, v + 1);
    }
  }

  // Reads up to max_rows rows ahead (for GPU-per-loop detection); returns the time steps
  // between consecutive rows (dropped rows included).
  Status prime(int max_rows, std::vector<double>& steps) {
    double prev = kUnset;
    while (static_cast<int>(pending_.size()) + missing_ < max_rows) {
      TraceRow row;
      int64_t pos = 0;
      const int k = read_row(row, pos);
      if (k < 0) return status_;
      if (k == 2) break;
      if (!std::isnan(prev)) steps.push_back(last_time_s_ - prev);
      prev = last_time_s_;
      if (k == 1) pending_.emplace_back(row, pos);
    }
    return Status::Ok();
  }
  void set_gpus_per_loop(int n) { per_loop_ = n; }
  bool units_in_cells() const { return units_in_cells_; }
  double t0_epoch_s() const { return t0_epoch_s_; }
  const std::string& t0_text() const { return t0_text_; }

  bool next(TraceRow& row) override {
    if (!status_.ok()) return false;
    if (!pending_.empty()) {
      row = pending_.front().first;
      const int64_t pos = pending_.front().second;
      pending_.pop_front();
      return assign_gpu(row, pos);
    }
    for (;;) {
      int64_t pos = 0;
      const int k = read_row(row, pos);
      if (k < 0 || k == 2) return false;
      if (k == 1) return assign_gpu(row, pos);
    }
  }
  const Status& status() const override { return status_; }
  int64_t missing_power_rows() const override { return missing_; }

 private:
  // 1: a row, 0: a row dropped (missing power), 2: end of file, −1: error. position_out:
  // the row's 0-based position among data rows (dropped rows included).
  int read_row(TraceRow& row, int64_t& position_out) {
    if (!r_->next()) {
      status_ = r_->status();
      return status_.ok() ? 2 : -1;
    }
    const auto& f = r_->fields();
    if (static_cast<int>(f.size()) < min_fields_) {
      return fail("row", "expected at least " + std::to_string(min_fields_) + " fields, got " +
                             std::to_string(f.size()));
    }
    row.line = r_->line_number();
    row.reading = GpuReading();
    const int64_t position = position_++;
    double epoch_s;
    if (!parse_nvsmi_timestamp(f[c_.ts], epoch_s)) {
      return fail("timestamp", "not 'YYYY/MM/DD HH:MM:SS.fff': '" + std::string(f[c_.ts]) + "'");
    }
    if (std::isnan(t0_epoch_s_)) {
      t0_epoch_s_ = epoch_s;
      t0_text_ = std::string(f[c_.ts]);
    }
    row.time_s = epoch_s - t0_epoch_s_;
    last_time_s_ = row.time_s;
    if (c_.index >= 0) {
      int64_t g;
      if (!parse_int64(f[c_.index], g)) {
        return fail("index", "not an integer: '" + std::string(f[c_.index]) + "'");
      }
      if (g < 0 || g > kMaxGpuIndex) {
        return fail("index", "GPU index " + std::to_string(g) + " out of range");
      }
      row.reading.gpu = static_cast<int>(g);
    }
    position_out = position;
    // Cells.
    double p = kUnset;
    CellKind k = parse_nvsmi_cell(f[c_.power], p);
    if (k == CellKind::kBad) return fail(header_of(c_.power), bad_cell(f[c_.power]));
    if (position == 0 && k == CellKind::kNumber) {
      units_in_cells_ = f[c_.power].find(' ') != std::string_view::npos;
    }
    if (k == CellKind::kNumber) {
      if (std::isnan(p)) return fail(header_of(c_.power), "NaN");
      if (p < 0) return fail(header_of(c_.power), "negative (" + std::string(f[c_.power]) + ")");
      if (!std::isfinite(p)) return fail(header_of(c_.power), "infinite");
    }
    struct Opt {
      int col;
      double* dst;
      double scale;
    };
    GpuReading& rd = row.reading;
    const Opt opts[] = {
        {c_.instant, &rd.power_instant_w, 1},      {c_.limit, &rd.power_limit_w, 1},
        {c_.sm_util, &rd.sm_util, 0.01},           {c_.mem_util, &rd.mem_util, 0.01},
        {c_.clock, &rd.sm_clock_mhz, 1},           {c_.temp, &rd.temp_c, 1},
        {c_.energy, &rd.energy_j, c_.energy_scale}};
    for (const Opt& o : opts) {
      if (o.col < 0) continue;
      double v;
      const CellKind ck = parse_nvsmi_cell(f[o.col], v);
      if (ck == CellKind::kBad) return fail(header_of(o.col), bad_cell(f[o.col]));
      *o.dst = ck == CellKind::kNumber ? v * o.scale : kUnset;
    }
    if (k == CellKind::kMissing) {
      ++missing_;
      return 0;
    }
    rd.power_w = p;
    return 1;
  }

  // Without an index column, the GPU is the row's position in its query loop.
  bool assign_gpu(TraceRow& row, int64_t position) {
    if (c_.index < 0) row.reading.gpu = static_cast<int>(position % per_loop_);
    const int g = row.reading.gpu;
    if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
      std::string list;
      for (size_t i = 0; i < known_.size(); ++i) list += (i ? "," : "") + std::to_string(known_[i]);
      status_ = Status::InvalidArgument(r_->path() + ":" + std::to_string(row.line) +
                                        ": index: unknown GPU index " + std::to_string(g) +
                                        " (known: " + list + ")");
      return false;
    }
    return true;
  }

  std::string header_of(int col) const { return col == c_.power ? "power.draw" : "cell"; }
  static std::string bad_cell(std::string_view c) {
    return "not a number (or [N/A]): '" + std::string(c) + "'";
  }
  int fail(std::string_view field, const std::string& problem) {
    status_ = Status::InvalidArgument(r_->where() + ": " + std::string(field) + ": " + problem);
    return -1;
  }

  std::unique_ptr<CsvReader> r_;
  Cols c_;
  std::vector<char> allowed_;
  std::vector<int> known_;
  int min_fields_ = 0;
  std::deque<std::pair<TraceRow, int64_t>> pending_;  // rows read ahead, with positions
  int per_loop_ = 1;
  int64_t position_ = 0;
  double t0_epoch_s_ = kUnset;
  std::string t0_text_;
  double last_time_s_ = 0;
  bool units_in_cells_ = false;
  int64_t missing_ = 0;
  Status status_;
};

}  // namespace

bool is_nvsmi_header(const std::vector<std::string_view>& fields) {
  bool ts = false, power = false;
  for (std::string_view h : fields) {
    std::string_view name, unit;
    split_header(h, name, unit);
    if (name == "timestamp") ts = true;
    if (starts_with(name, "power.draw")) power = true;
  }
  return ts && power;
}

bool parse_nvsmi_timestamp(std::string_view s, double& epoch_s) {
  s = trim(s);
  size_t p = 0;
  int y, mo, d, h, mi, sec;
  if (!digits(s, p, 4, y) || p >= s.size() || (s[p] != '/' && s[p] != '-')) return false;
  ++p;
  if (!digits(s, p, 2, mo) || p >= s.size() || (s[p] != '/' && s[p] != '-')) return false;
  ++p;
  if (!digits(s, p, 2, d) || p >= s.size() || (s[p] != ' ' && s[p] != 'T')) return false;
  ++p;
  if (!digits(s, p, 2, h) || p >= s.size() || s[p] != ':') return false;
  ++p;
  if (!digits(s, p, 2, mi) || p >= s.size() || s[p] != ':') return false;
  ++p;
  if (!digits(s, p, 2, sec)) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  double frac = 0;
  if (p < s.size()) {
    if (s[p] != '.' || p + 1 >= s.size()) return false;
    double scale = 0.1;
    for (++p; p < s.size(); ++p) {
      const unsigned dd = static_cast<unsigned>(s[p] - '0');
      if (dd >= 10) return false;
      frac += dd * scale;
      scale *= 0.1;
    }
  }
  const int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  epoch_s = static_cast<double>(days * 86400 + h * 3600 + mi * 60 + sec) + frac;
  return true;
}

CellKind parse_nvsmi_cell(std::string_view cell, double& out) {
  cell = trim(cell);
  if (cell.empty() || cell.front() == '[' || cell == "N/A" || cell == "Not Supported" ||
      cell == "Unknown Error") {
    out = kUnset;
    return CellKind::kMissing;
  }
  const size_t sp = cell.find(' ');
  std::string_view num = sp == std::string_view::npos ? cell : cell.substr(0, sp);
  if (!fast_parse_double(num, out)) return CellKind::kBad;
  if (sp != std::string_view::npos) {
    // The rest must be one unit word (letters, '%', '/').
    for (char ch : trim(cell.substr(sp))) {
      const bool ok =
          (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '%' || ch == '/';
      if (!ok) return CellKind::kBad;
    }
  }
  return CellKind::kNumber;
}

int detect_gpus_per_loop(const std::vector<double>& steps, int max_gpus) {
  int best = 1;
  double best_score = 0, best_boundary = 0;
  const int m = static_cast<int>(steps.size());
  for (int n = 2; n <= max_gpus && 2 * n <= m + 1; ++n) {
    double sb = 0, si = 0;
    int nb = 0, ni = 0;
    for (int i = 0; i < m; ++i) {
      if ((i + 1) % n == 0) {
        sb += steps[i];
        ++nb;
      } else {
        si += steps[i];
        ++ni;
      }
    }
    if (nb == 0 || ni == 0) continue;
    const double mb = sb / nb, mi = si / ni;
    const double score = mb - mi;
    if (score > best_score) {
      best_score = score;
      best_boundary = mb;
      best = n;
    }
  }
  // Loop structure only when the steps inside a loop are small next to those between loops.
  if (best > 1 && best_score < 0.5 * best_boundary) return 1;
  return best;
}

Result<std::unique_ptr<TraceRowSource>> open_nvsmi_source(std::unique_ptr<CsvReader> reader,
                                                          const std::vector<std::string>& header,
                                                          const TraceReaderOptions& options,
                                                          const std::vector<int>& known_gpus,
                                                          nlohmann::json& meta) {
  Cols c;
  for (size_t i = 0; i < header.size(); ++i) {
    std::string_view name, unit;
    split_header(header[i], name, unit);
    const int col = static_cast<int>(i);
    if (name == "timestamp") {
      c.ts = col;
    } else if (name == "index") {
      c.index = col;
    } else if (name == "power.draw" || name == "power.draw.average") {
      const int rank = name == "power.draw" ? 0 : 1;
      if (rank < c.power_rank) {
        c.power = col;
        c.power_rank = rank;
      }
    } else if (name == "power.draw.instant") {
      c.instant = col;
    } else if (name == "enforced.power.limit" || name == "power.limit") {
      const int rank = name == "enforced.power.limit" ? 0 : 1;
      if (rank < c.limit_rank) {
        c.limit = col;
        c.limit_rank = rank;
      }
    } else if (name == "utilization.gpu") {
      c.sm_util = col;
    } else if (name == "utilization.memory") {
      c.mem_util = col;
    } else if (name == "clocks.sm" || name == "clocks.current.sm") {
      c.clock = col;
    } else if (name == "temperature.gpu") {
      c.temp = col;
    } else if (starts_with(name, "energy") || starts_with(name, "total_energy")) {
      c.energy = col;
      c.energy_scale = unit == "mJ" ? 1e-3 : (unit == "kJ" ? 1e3 : 1.0);
    }
  }
  if (c.power < 0) c.power = c.instant;  // only the instant field was logged
  if (c.ts < 0 || c.power < 0) {
    return Status::InvalidArgument(reader->where() +
                                   ": header: nvidia-smi log needs timestamp and power.draw");
  }
  auto src = std::make_unique<NvsmiSource>(std::move(reader), c, known_gpus);
  int per_loop = 1;
  if (c.index < 0) {
    if (options.nvsmi_gpus_per_tick > 0) {
      per_loop = options.nvsmi_gpus_per_tick;
    } else {
      std::vector<double> steps;
      FW_RETURN_IF_ERROR(src->prime(4096, steps));
      per_loop = detect_gpus_per_loop(steps);
    }
  } else {
    std::vector<double> steps;
    FW_RETURN_IF_ERROR(src->prime(1, steps));  // learn units and start time
  }
  src->set_gpus_per_loop(per_loop);
  meta["format"] = "nvidia-smi-csv";
  meta["index_column"] = c.index >= 0;
  if (c.index < 0) {
    meta["gpus_per_tick"] = per_loop;
    meta["gpus_per_tick_source"] = options.nvsmi_gpus_per_tick > 0 ? "given" : "detected";
  }
  meta["units_in_cells"] = src->units_in_cells();
  if (!std::isnan(src->t0_epoch_s())) {
    meta["start_timestamp"] = src->t0_text();
    meta["start_epoch_s"] = src->t0_epoch_s();
    meta["start_epoch_note"] = "timestamp read as UTC (the log gives no zone)";
  }
  return std::unique_ptr<TraceRowSource>(std::move(src));
}

}  // namespace fw
