#include "telemetry/nvsmi_import.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>

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
  int ts = -1, index = -1, id = -1, id_rank = 99, power = -1, power_rank = 99, instant = -1,
      limit = -1, limit_rank = 99, sm_util = -1, mem_util = -1, clock = -1, temp = -1, energy = -1;
  std::string id_name;
};

// A power or energy column: header unit scale and whether its cells carry a unit.
struct UnitCol {
  int col = -1;
  bool energy = false;
  double header_scale = 1;
  int cells_have_unit = -1;  // −1 unknown, 0 no, 1 yes (from the first numeric cell)
  std::string name;
  int slot = 0;  // 0 power, 1 instant, 2 limit, 3 energy
};

enum class GpuBy { kIndex, kId, kLoop };

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

constexpr char kAddIndex[] =
    "add the index column (nvidia-smi --query-gpu=timestamp,index,power.draw,... "
    "--format=csv -lms 100)";

class NvsmiSource : public TraceRowSource {
 public:
  NvsmiSource(std::unique_ptr<CsvReader> r, Cols c, std::vector<UnitCol> units,
              const std::vector<int>& known)
      : r_(std::move(r)),
        header_line_(r_->line()),
        c_(std::move(c)),
        units_(std::move(units)),
        known_(known) {
    for (int g : known) {
      if (g < 0 || g > kMaxGpuIndex) continue;
      if (static_cast<size_t>(g) >= allowed_.size()) allowed_.resize(g + 1, 0);
      allowed_[g] = 1;
    }
    for (int v : {c_.ts, c_.index, c_.id, c_.power, c_.instant, c_.limit, c_.sm_util, c_.mem_util,
                  c_.clock, c_.temp, c_.energy}) {
      min_fields_ = std::max(min_fields_, v + 1);
    }
    by_ = c_.index >= 0 ? GpuBy::kIndex : (c_.id >= 0 ? GpuBy::kId : GpuBy::kLoop);
  }

  GpuBy gpu_by() const { return by_; }

  // Reads up to max_rows data rows ahead (GPU identification); returns the time steps
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
      if (k == 1) pending_.push_back({row, pos});
    }
    if (by_ == GpuBy::kId) number_ids();
    return Status::Ok();
  }
  void set_loop(const LoopFit& fit) { loop_ = fit; }
  bool units_in_cells() const { return !units_.empty() && units_.front().cells_have_unit == 1; }
  double t0_epoch_s() const { return t0_epoch_s_; }
  const std::string& t0_text() const { return t0_text_; }
  int ids_seen() const { return static_cast<int>(ids_.size()); }
  using TraceRowSource::warn;

  bool next(TraceRow& row) override {
    if (!status_.ok()) return false;
    if (!pending_.empty()) {
      row = pending_.front().row;
      const int64_t pos = pending_.front().position;
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
  struct Pending {
    TraceRow row;
    int64_t position;
  };

  // 1: a row, 0: a row dropped (missing power), 2: end of file, −1: error. position_out:
  // the row's 0-based position among data rows (dropped rows included).
  int read_row(TraceRow& row, int64_t& position_out) {
    do {
      if (!r_->next()) {
        status_ = r_->status();
        return status_.ok() ? 2 : -1;
      }
    } while (skip_non_data(*r_, header_line_));
    const auto& f = r_->fields();
    if (static_cast<int>(f.size()) < min_fields_) {
      return fail("row", "expected at least " + std::to_string(min_fields_) + " fields, got " +
                             std::to_string(f.size()));
    }
    row.line = r_->line_number();
    row.reading = GpuReading();
    double epoch_s;
    if (!parse_nvsmi_timestamp(f[c_.ts], epoch_s)) {
      return fail("timestamp", "not 'YYYY/MM/DD HH:MM:SS.fff' with a year in 1970..2200: '" +
                                   std::string(f[c_.ts]) + "'");
    }
    if (std::isnan(t0_epoch_s_)) {
      t0_epoch_s_ = epoch_s;
      t0_text_ = std::string(f[c_.ts]);
    }
    const double t = epoch_s - t0_epoch_s_;
    const int64_t position = position_++;
    if (by_ == GpuBy::kLoop && position > 0 && !check_cycle(position, t - last_time_s_)) return -1;
    row.time_s = t;
    last_time_s_ = t;
    if (by_ == GpuBy::kIndex) {
      int64_t g;
      if (!parse_int64(f[c_.index], g)) {
        return fail("index", "not an integer: '" + std::string(f[c_.index]) + "'");
      }
      if (g < 0 || g > kMaxGpuIndex) {
        return fail("index", "GPU index " + std::to_string(g) + " out of range");
      }
      row.reading.gpu = static_cast<int>(g);
    } else if (by_ == GpuBy::kId) {
      row.reading.gpu = id_number(trim(f[c_.id]));
      if (row.reading.gpu < 0) return -1;
    }
    position_out = position;
    GpuReading& rd = row.reading;
    double* const dst[] = {&rd.power_w, &rd.power_instant_w, &rd.cap_w, &rd.energy_j};
    double p = kUnset;
    for (UnitCol& u : units_) {
      double v;
      if (!unit_cell(u, f[u.col], v)) return -1;
      if (u.slot != 0) {  // the power itself: checked below, after its own messages
        const ReadingField rf = u.energy ? ReadingField::kEnergy : ReadingField::kPower;
        if (!in_sane_range(rf, v)) return fail(u.name, range_problem(rf, v));
      }
      if (u.slot == 0) {
        p = v;
      } else {
        *dst[u.slot] = v;
      }
    }
    struct Opt {
      int col;
      double* dst;
      double scale;
      ReadingField field;
      const char* name;
    };
    const Opt opts[] = {
        {c_.sm_util, &rd.sm_util, 0.01, ReadingField::kUtil, "utilization.gpu"},
        {c_.mem_util, &rd.mem_util, 0.01, ReadingField::kUtil, "utilization.memory"},
        {c_.clock, &rd.sm_clock_mhz, 1, ReadingField::kClock, "clocks.sm"},
        {c_.temp, &rd.temp_c, 1, ReadingField::kTemp, "temperature.gpu"}};
    for (const Opt& o : opts) {
      if (o.col < 0) continue;
      double v;
      const CellKind ck = parse_nvsmi_cell(f[o.col], v);
      if (ck == CellKind::kBad) return fail("cell", bad_cell(f[o.col]));
      *o.dst = ck == CellKind::kNumber ? v * o.scale : kUnset;
      if (!in_sane_range(o.field, *o.dst)) {
        return fail(o.name, range_problem(o.field, *o.dst));
      }
    }
    if (std::isnan(p)) {
      ++missing_;
      return 0;
    }
    if (p < 0) return fail(units_[0].name, "negative (" + std::string(f[units_[0].col]) + ")");
    if (!std::isfinite(p)) return fail(units_[0].name, "infinite");
    if (!in_sane_range(ReadingField::kPower, p)) {
      return fail(units_[0].name, range_problem(ReadingField::kPower, p));
    }
    rd.power_w = p;
    return 1;
  }

  // A power or energy cell: v in W or J, NaN when missing. False (status set) on a bad cell.
  bool unit_cell(UnitCol& u, std::string_view cell, double& v) {
    std::string_view unit;
    const CellKind k = parse_nvsmi_cell(cell, v, &unit);
    if (k == CellKind::kBad) return failed(u.name, bad_cell(cell));
    if (k == CellKind::kMissing) {
      v = kUnset;
      return true;
    }
    if (std::isnan(v)) return failed(u.name, "NaN");
    const int has = unit.empty() ? 0 : 1;
    if (u.cells_have_unit < 0) u.cells_have_unit = has;
    if (has != u.cells_have_unit) {
      return failed(u.name, has ? "cell has a unit where the column's other cells have none: '" +
                                      std::string(cell) + "'"
                                : "cell missing its unit where the column's other cells carry "
                                  "one (a line cut off?): '" +
                                      std::string(cell) + "'");
    }
    double scale = u.header_scale;
    if (has) {
      scale = nvsmi_unit_scale(unit, u.energy);
      if (std::isnan(scale)) {
        return failed(u.name, "unit '" + std::string(unit) + "' is not " +
                                  (u.energy ? "J, kJ or mJ" : "W, kW or mW"));
      }
    }
    v *= scale;
    return true;
  }

  // kLoop: every loop boundary should show a boundary-sized step; three missed in a row mean
  // the cycle changed (a GPU stopped reporting, rows lost), and rows would land on the wrong
  // GPUs.
  bool check_cycle(int64_t position, double step_s) {
    if (loop_.gpus < 2) return true;
    if ((position - loop_.phase) % loop_.gpus != 0) return true;
    if (step_s > loop_.threshold_s) {
      missed_ = 0;
      return true;
    }
    if (++missed_ < 3) return true;
    fail("timestamp",
         "the query-loop cycle changed: no boundary-sized step (> " + num3(loop_.threshold_s) +
             " s) where a loop of " + std::to_string(loop_.gpus) +
             " rows should start, three loops in a row (a GPU stopped reporting, or rows were "
             "lost); the GPUs cannot be told apart: " +
             kAddIndex);
    return false;
  }

  static std::string num3(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", v);
    return b;
  }

  // kId: number of an id (provisional, in order of first appearance, until number_ids()).
  int id_number(std::string_view id) {
    if (id.empty() || id.front() == '[') {
      fail(c_.id_name, "no GPU id: '" + std::string(id) + "'");
      return -1;
    }
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (ids_[i] == id) return id_number_[i];
    }
    if (static_cast<int>(ids_.size()) > kMaxGpuIndex) {
      fail(c_.id_name, "more than " + std::to_string(kMaxGpuIndex + 1) + " distinct GPU ids");
      return -1;
    }
    ids_.emplace_back(id);
    id_number_.push_back(static_cast<int>(id_number_.size()));
    if (numbered_) {
      warn(r_->where() + ": " + c_.id_name + ": GPU '" + std::string(id) +
           "' first seen after the first rows: numbered " + std::to_string(id_number_.back()));
    }
    return id_number_.back();
  }

  // Renumbers the ids seen so far in sorted order and the rows read ahead with them.
  void number_ids() {
    std::vector<size_t> order(ids_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids_[a] < ids_[b]; });
    std::vector<int> remap(ids_.size());
    for (size_t k = 0; k < order.size(); ++k) remap[order[k]] = static_cast<int>(k);
    for (Pending& p : pending_) p.row.reading.gpu = remap[p.row.reading.gpu];
    id_number_ = remap;
    numbered_ = true;
  }

  // GPU of a row without an index or id: its position in the query loop; then the known set.
  bool assign_gpu(TraceRow& row, int64_t position) {
    if (by_ == GpuBy::kLoop) {
      const int64_t n = std::max(1, loop_.gpus);
      row.reading.gpu = static_cast<int>(((position - loop_.phase) % n + n) % n);
    }
    const int g = row.reading.gpu;
    if (!allowed_.empty() && (static_cast<size_t>(g) >= allowed_.size() || !allowed_[g])) {
      status_ = Status::InvalidArgument(r_->path() + ":" + std::to_string(row.line) +
                                        ": index: unknown GPU index " + std::to_string(g) +
                                        " (known: " + join_ints(known_) + ")");
      return false;
    }
    return true;
  }

  static std::string bad_cell(std::string_view c) {
    return "not a number (or [N/A]): '" + std::string(c) + "'";
  }
  int fail(std::string_view field, const std::string& problem) {
    status_ = Status::InvalidArgument(r_->where() + ": " + std::string(field) + ": " + problem);
    return -1;
  }
  bool failed(std::string_view field, const std::string& problem) {
    fail(field, problem);
    return false;
  }

  std::unique_ptr<CsvReader> r_;
  std::string header_line_;
  Cols c_;
  std::vector<UnitCol> units_;
  GpuBy by_ = GpuBy::kIndex;
  std::vector<char> allowed_;
  std::vector<int> known_;
  int min_fields_ = 0;
  std::deque<Pending> pending_;  // rows read ahead, with positions
  LoopFit loop_{1, 0, 0};
  int missed_ = 0;
  std::vector<std::string> ids_;  // kId: distinct ids, in order of first appearance
  std::vector<int> id_number_;    // their GPU numbers
  bool numbered_ = false;
  int64_t position_ = 0;
  double t0_epoch_s_ = kUnset;
  std::string t0_text_;
  double last_time_s_ = 0;
  int64_t missing_ = 0;
  Status status_;
};

// q-quantile (0..1) of v (reordered).
double quantile(std::vector<double>& v, double q) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

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
  if (y < 1970 || y > 2200) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  double frac = 0;
  if (p < s.size()) {
    if (s[p] != '.' || p + 1 >= s.size() || s.size() - p > 10) return false;
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

CellKind parse_nvsmi_cell(std::string_view cell, double& out, std::string_view* unit) {
  cell = trim(cell);
  if (unit) *unit = {};
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
    const std::string_view u = trim(cell.substr(sp));
    for (char ch : u) {
      const bool ok =
          (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '%' || ch == '/';
      if (!ok) return CellKind::kBad;
    }
    if (unit) *unit = u;
  }
  return CellKind::kNumber;
}

double nvsmi_unit_scale(std::string_view unit, bool energy) {
  const char base = energy ? 'J' : 'W';
  if (unit.size() == 1 && unit[0] == base) return 1;
  if (unit.size() == 2 && unit[1] == base) {
    if (unit[0] == 'k') return 1e3;
    if (unit[0] == 'm') return 1e-3;
  }
  return kUnset;
}

LoopFit fit_query_loop(const std::vector<double>& steps, int fixed_gpus, int max_gpus) {
  const int m = static_cast<int>(steps.size());
  std::vector<double> bnd, inner;
  const int lo = fixed_gpus > 0 ? fixed_gpus : 2;
  const int hi = fixed_gpus > 0 ? fixed_gpus : max_gpus;
  for (int n = std::max(lo, 2); n <= hi && 2 * n <= m; ++n) {
    LoopFit best;
    double best_margin = 0;
    for (int phase = 0; phase < n; ++phase) {
      bnd.clear();
      inner.clear();
      // steps[i] lies between rows i and i+1; row i+1 starts a loop when (i+1−phase) % n == 0.
      for (int i = 0; i < m; ++i) {
        (((i + 1 - phase) % n + n) % n == 0 ? bnd : inner).push_back(steps[i]);
      }
      if (bnd.size() < 2 || inner.empty()) continue;
      const double b = quantile(bnd, 0.05), w = quantile(inner, 0.95);
      if (b > 2 * w && b > 0 && b - w > best_margin) {
        best_margin = b - w;
        best = {n, phase, 0.5 * (b + w)};
      }
    }
    if (best.gpus > 0) return best;
  }
  if (fixed_gpus > 1) return {};
  // One GPU: no loop structure and regular steps (the 10th percentile above half the median).
  if (m == 0) return {1, 0, 0};
  std::vector<double> all = steps;
  const double med = quantile(all, 0.5), q10 = quantile(all, 0.1);
  if (med > 0 && q10 > 0.5 * med) return {1, 0, 0};
  return {};
}

int detect_gpus_per_loop(const std::vector<double>& steps, int max_gpus) {
  return fit_query_loop(steps, 0, max_gpus).gpus;
}

namespace {

// Loop fit for a log without index or id: detected, or given and checked against the data.
Result<LoopFit> loop_for(const std::vector<double>& steps, int given, const std::string& path,
                         NvsmiSource& src) {
  const LoopFit free = fit_query_loop(steps);
  if (given <= 0) {
    if (free.gpus > 0) return free;
    return Status::InvalidArgument(
        path +
        ": GPUs cannot be told apart: no index, pci.bus_id or uuid column, and the timestamps "
        "show no consistent query-loop cycle; " +
        kAddIndex);
  }
  if (free.gpus > 0 && free.gpus != given) {
    return Status::InvalidArgument("--nvsmi-gpus " + std::to_string(given) + ": " + path +
                                   " shows " + std::to_string(free.gpus) +
                                   " rows per query loop in its timestamps");
  }
  if (free.gpus == given) return free;
  const LoopFit fixed = fit_query_loop(steps, given);
  if (fixed.gpus == given) return fixed;
  if (static_cast<int>(steps.size()) < 2 * given) {
    src.warn(path + ": --nvsmi-gpus " + std::to_string(given) +
             ": too few rows to check it against the timestamps; taken as given");
    return LoopFit{given, 0, std::numeric_limits<double>::infinity()};
  }
  return Status::InvalidArgument("--nvsmi-gpus " + std::to_string(given) + ": " + path +
                                 " shows no query loop of " + std::to_string(given) +
                                 " rows in its timestamps; " + kAddIndex);
}

}  // namespace

namespace {

// Maps the header's columns (c) and the power/energy columns with their header units (units,
// the power column first). `where` is "path:1" for messages.
// Long by design: one branch per recognised nvidia-smi column name and unit.
Status map_columns(const std::vector<std::string>& header, const std::string& where, Cols& c,
                   std::vector<UnitCol>& units) {
  std::string power_name, instant_name, limit_name;
  double power_scale = 1, instant_scale = 1, limit_scale = 1, energy_scale = 1;
  std::string energy_name;
  std::string bad_unit;
  auto header_scale = [&](std::string_view unit, bool energy, std::string_view name) {
    if (unit.empty()) return 1.0;
    const double k = nvsmi_unit_scale(unit, energy);
    if (std::isnan(k) && bad_unit.empty()) {
      bad_unit = std::string(name) + ": header unit [" + std::string(unit) + "] is not " +
                 (energy ? "J, kJ or mJ" : "W, kW or mW");
    }
    return k;
  };
  for (size_t i = 0; i < header.size(); ++i) {
    std::string_view name, unit;
    split_header(header[i], name, unit);
    const int col = static_cast<int>(i);
    if (name == "timestamp") {
      c.ts = col;
    } else if (name == "index") {
      c.index = col;
    } else if (name == "pci.bus_id" || name == "uuid") {
      const int rank = name == "pci.bus_id" ? 0 : 1;
      if (rank < c.id_rank) {
        c.id = col;
        c.id_rank = rank;
        c.id_name = std::string(name);
      }
    } else if (name == "power.draw" || name == "power.draw.average") {
      const int rank = name == "power.draw" ? 0 : 1;
      if (rank < c.power_rank) {
        c.power = col;
        c.power_rank = rank;
        power_name = std::string(name);
        power_scale = header_scale(unit, false, name);
      }
    } else if (name == "power.draw.instant") {
      c.instant = col;
      instant_name = std::string(name);
      instant_scale = header_scale(unit, false, name);
    } else if (name == "enforced.power.limit" || name == "power.limit") {
      const int rank = name == "enforced.power.limit" ? 0 : 1;
      if (rank < c.limit_rank) {
        c.limit = col;
        c.limit_rank = rank;
        limit_name = std::string(name);
        limit_scale = header_scale(unit, false, name);
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
      energy_name = std::string(name);
      energy_scale = header_scale(unit, true, name);
    }
  }
  if (c.power < 0 && c.instant >= 0) {  // only the instant field was logged
    c.power = c.instant;
    power_name = instant_name;
    power_scale = instant_scale;
    c.instant = -1;
  }
  if (c.ts < 0 || c.power < 0) {
    return Status::InvalidArgument(where +
                                   ": header: nvidia-smi log needs timestamp and power.draw");
  }
  if (!bad_unit.empty()) return Status::InvalidArgument(where + ": " + bad_unit);
  units.push_back({c.power, false, power_scale, -1, power_name, 0});
  if (c.instant >= 0) units.push_back({c.instant, false, instant_scale, -1, instant_name, 1});
  if (c.limit >= 0) units.push_back({c.limit, false, limit_scale, -1, limit_name, 2});
  if (c.energy >= 0) units.push_back({c.energy, true, energy_scale, -1, energy_name, 3});
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TraceRowSource>> open_nvsmi_source(std::unique_ptr<CsvReader> reader,
                                                          const std::vector<std::string>& header,
                                                          const TraceReaderOptions& options,
                                                          const std::vector<int>& known_gpus,
                                                          nlohmann::json& meta) {
  Cols c;
  std::vector<UnitCol> units;
  FW_RETURN_IF_ERROR(map_columns(header, reader->where(), c, units));
  const std::string path = reader->path();
  const int given = options.nvsmi_gpus_per_tick;
  if (given < 0 || given > kMaxGpusPerLoop) {
    return Status::InvalidArgument("--nvsmi-gpus: must be 0 (detect) or 1.." +
                                   std::to_string(kMaxGpusPerLoop) + " (got " +
                                   std::to_string(given) + ")");
  }
  auto src = std::make_unique<NvsmiSource>(std::move(reader), c, units, known_gpus);
  std::vector<double> steps;
  FW_RETURN_IF_ERROR(src->prime(4096, steps));
  meta["format"] = "nvidia-smi-csv";
  meta["index_column"] = c.index >= 0;
  if (src->gpu_by() == GpuBy::kLoop) {
    FW_ASSIGN_OR_RETURN(LoopFit fit, loop_for(steps, given, path, *src));
    src->set_loop(fit);
    meta["gpu_identification"] = "timestamp cycle";
    meta["gpus_per_tick"] = fit.gpus;
    meta["gpus_per_tick_source"] = given > 0 ? "given" : "detected";
    meta["loop_phase_rows"] = fit.phase;
  } else {
    meta["gpu_identification"] = src->gpu_by() == GpuBy::kIndex ? "index" : c.id_name;
    if (given > 0) {
      src->warn(path + ": --nvsmi-gpus ignored: the log names its GPUs (" +
                std::string(src->gpu_by() == GpuBy::kIndex ? "index" : c.id_name) + " column)");
    }
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
