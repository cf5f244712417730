#include "analysis/power_series.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "core/csv.hpp"
#include "core/format.hpp"

namespace fw {

double PowerSeries::energy_j() const {
  double e = 0;
  for (size_t i = 1; i < time_s.size(); ++i) {
    e += 0.5 * (power_w[i] + power_w[i - 1]) * (time_s[i] - time_s[i - 1]);
  }
  return e;
}

double PowerSeries::peak_w() const {
  return power_w.empty() ? 0 : *std::max_element(power_w.begin(), power_w.end());
}

namespace {

constexpr size_t kMaxWarnings = 100;

// Appends a sample; a time equal to the last one replaces it (counted).
void push_sample(PowerSeries& s, double t, double p) {
  if (!s.time_s.empty() && t == s.time_s.back()) {
    s.power_w.back() = p;
    ++s.duplicates;
    return;
  }
  s.time_s.push_back(t);
  s.power_w.push_back(p);
}

// Node ticks from rows in time order across GPUs (trace_analysis.hpp's rule).
class NodeTicks {
 public:
  explicit NodeTicks(PowerSeries& out) : out_(out) {}

  void add(double t, int gpu, double p) {
    if (static_cast<size_t>(gpu) >= slot_.size()) slot_.resize(gpu + 1, -1);
    if (slot_[gpu] < 0) {
      slot_[gpu] = static_cast<int>(held_w_.size());
      held_w_.push_back(0);
      gpu_tick_.push_back(-1);
    }
    const int s = slot_[gpu];
    if (tick_ < 0) {
      tick_ = 0;
      tick_time_s_ = t;
    } else if (gpu_tick_[s] == tick_) {
      close();
      ++tick_;
      tick_time_s_ = t;
      tick_gpus_ = 0;
    }
    gpu_tick_[s] = tick_;
    ++tick_gpus_;
    held_w_[s] = p;
  }

  void close() {
    if (tick_ < 0) return;
    double sum = 0;
    for (size_t i = 0; i < held_w_.size(); ++i) sum += gpu_tick_[i] >= 0 ? held_w_[i] : 0.0;
    if (tick_gpus_ < static_cast<int>(held_w_.size())) ++out_.incomplete_ticks;
    push_sample(out_, tick_time_s_, sum);
  }

  int gpus() const { return static_cast<int>(held_w_.size()); }

 private:
  PowerSeries& out_;
  std::vector<int> slot_;
  std::vector<double> held_w_;
  std::vector<int64_t> gpu_tick_;
  int64_t tick_ = -1;
  double tick_time_s_ = 0;
  int tick_gpus_ = 0;
};

struct BufferedRow {
  double time_s, power_w;
  int gpu;
};

// One pass over a trace. Streaming (sort false) stops at the first row out of time order
// across GPUs (returns false with *unsorted set); sorting mode buffers every row and sorts.
Result<bool> read_node_pass(const std::string& path, const TraceReaderOptions& ro, bool sort,
                            PowerSeries& out) {
  TraceReaderOptions o = ro;
  o.fields = 0;  // power only
  FW_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::open(path, o));
  out.format = std::string(trace_format_name(reader->format()));
  out.jobs_path = reader->jobs_path();
  const std::string& rows_path = reader->rows_path();
  std::vector<double> last_t;  // per GPU index; NaN before its first row
  double max_t = -INFINITY;
  int64_t dups = 0, unsorted = 0;
  NodeTicks ticks(out);
  std::vector<BufferedRow> buffer;
  TraceRowBatch b;
  while (reader->next_batch(b)) {
    for (size_t i = 0; i < b.n; ++i) {
      const double t = b.time_s[i];
      const int g = b.gpu[i];
      if (static_cast<size_t>(g) >= last_t.size()) last_t.resize(g + 1, std::nan(""));
      if (!std::isnan(last_t[g])) {
        if (t < last_t[g]) {
          return Status::InvalidArgument(rows_path + ":" + std::to_string(b.line_base + b.line[i]) +
                                         ": time_s: goes backwards for GPU " + std::to_string(g) +
                                         " (" + format_g(t, 10) + " after " +
                                         format_g(last_t[g], 10) + ")");
        }
        if (t == last_t[g]) {
          ++dups;
          continue;
        }
      }
      last_t[g] = t;
      if (t < max_t) {
        if (!sort) return false;
        ++unsorted;
      } else {
        max_t = t;
      }
      if (sort) {
        buffer.push_back({t, b.power_w[i], g});
      } else {
        ticks.add(t, g, b.power_w[i]);
      }
    }
  }
  FW_RETURN_IF_ERROR(reader->status());
  if (sort) {
    std::stable_sort(buffer.begin(), buffer.end(), [](const BufferedRow& a, const BufferedRow& c) {
      return a.time_s < c.time_s;
    });
    for (const BufferedRow& r : buffer) ticks.add(r.time_s, r.gpu, r.power_w);
  }
  ticks.close();
  out.gpus = ticks.gpus();
  out.duplicates += dups;
  out.unsorted_rows = unsorted;
  const auto& w = reader->warnings();
  out.warnings.assign(w.begin(), w.begin() + std::min(w.size(), kMaxWarnings));
  return true;
}

bool is_site_header(const std::vector<std::string_view>& f) {
  bool t = false, p = false, g = false;
  for (std::string_view c : f) {
    t |= c == "time_s";
    p |= c == "power_w";
    g |= c == "gpu";
  }
  return t && p && !g;
}

// Long by design: the whole site CSV format, row checks included.
Result<PowerSeries> read_site_csv(std::unique_ptr<CsvReader> r, PowerSeries s) {
  s.format = "site-csv";
  s.series = "site";
  int tc = -1, pc = -1;
  for (size_t i = 0; i < r->fields().size(); ++i) {
    if (r->fields()[i] == "time_s" && tc < 0) tc = static_cast<int>(i);
    if (r->fields()[i] == "power_w" && pc < 0) pc = static_cast<int>(i);
  }
  const size_t need = static_cast<size_t>(std::max(tc, pc)) + 1;
  while (r->next()) {
    const auto& f = r->fields();
    if (r->unterminated()) {  // a log still being written: its partial last line
      if (s.warnings.size() < kMaxWarnings) {
        s.warnings.push_back(r->where() + ": unterminated last line dropped");
      }
      break;
    }
    if (f.size() < need) return Status::InvalidArgument(r->where() + ": row: too few fields");
    double t, p;
    if (!parse_double(f[tc], t) || !std::isfinite(t) || std::fabs(t) > kMaxTraceTimeS) {
      return Status::InvalidArgument(r->where() + ": time_s: not a finite time: '" +
                                     std::string(f[tc]) + "'");
    }
    if (!parse_double(f[pc], p)) {
      return Status::InvalidArgument(r->where() + ": power_w: not a number: '" +
                                     std::string(f[pc]) + "'");
    }
    if (!std::isfinite(p)) {
      return Status::InvalidArgument(r->where() + ": power_w: not finite: '" + std::string(f[pc]) +
                                     "'");
    }
    if (p < 0)
      return Status::InvalidArgument(r->where() + ": power_w: negative (" + format_g(p) + ")");
    if (!s.time_s.empty() && t <= s.time_s.back()) {
      return Status::InvalidArgument(r->where() + ": time_s: not after the previous row (" +
                                     format_g(t, 10) + " after " + format_g(s.time_s.back(), 10) +
                                     ")");
    }
    s.time_s.push_back(t);
    s.power_w.push_back(p);
  }
  FW_RETURN_IF_ERROR(r->status());
  return s;
}

}  // namespace

Result<PowerSeries> load_power_series(const std::string& path, const TraceReaderOptions& ro) {
  if (path == "-" || path == "/dev/stdin") {
    return Status::InvalidArgument(
        "standard input is not accepted here (the format is detected from the header first): "
        "save the trace to a file");
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file or directory");
  PowerSeries s;
  s.path = path;
  if (!fs::is_directory(path, ec)) {
    FW_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> r, CsvReader::open(path));
    if (!r->next()) {
      FW_RETURN_IF_ERROR(r->status());
      return Status::InvalidArgument(path + ":1: empty file (expected a header row)");
    }
    if (is_site_header(r->fields())) {
      FW_ASSIGN_OR_RETURN(s, read_site_csv(std::move(r), std::move(s)));
      if (s.time_s.size() < 2) {
        return Status::InvalidArgument(path + ": fewer than 2 samples after the header");
      }
      return s;
    }
  }
  s.series = "node";
  FW_ASSIGN_OR_RETURN(bool complete, read_node_pass(path, ro, false, s));
  if (!complete) {  // rows out of time order across GPUs: read again, sorting in memory
    PowerSeries fresh;
    fresh.path = path;
    fresh.series = "node";
    s = std::move(fresh);
    FW_ASSIGN_OR_RETURN(complete, read_node_pass(path, ro, true, s));
  }
  if (s.time_s.size() < 2) {
    return Status::InvalidArgument(path + ": fewer than 2 node samples (ticks) in the trace");
  }
  return s;
}

Result<UniformSeries> resample_uniform(const PowerSeries& s) {
  const size_t n = s.time_s.size();
  if (n < 2 || s.power_w.size() != n) {
    return Status::InvalidArgument(s.path + ": fewer than 2 samples");
  }
  std::vector<double> steps(n - 1);
  for (size_t i = 1; i < n; ++i) steps[i - 1] = s.time_s[i] - s.time_s[i - 1];
  std::vector<double> sorted = steps;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  UniformSeries u;
  // Rounded to 12 significant digits: steps of decimal times (0.1, 0.2, ...) differ from the
  // true period by a few ulps.
  u.period_s = std::stod(format_g(sorted[sorted.size() / 2], 12));
  u.t0_s = s.time_s.front();
  if (!(u.period_s > 0)) return Status::InvalidArgument(s.path + ": median sample step is 0");
  const double span = s.time_s.back() - u.t0_s;
  const double points = std::floor(span / u.period_s + 1e-9) + 1;
  if (points > static_cast<double>(kMaxGridPoints)) {
    return Status::InvalidArgument(s.path + ": a uniform grid of the median step (" +
                                   format_g(u.period_s) + " s) over " + format_g(span) +
                                   " s would need " + format_g(points) + " points (at most " +
                                   format_g(static_cast<double>(kMaxGridPoints)) + ")");
  }
  u.uniform_input = true;
  for (double st : steps) {
    u.max_step_s = std::max(u.max_step_s, st);
    if (std::fabs(st - u.period_s) > 1e-3 * u.period_s) u.uniform_input = false;
    if (st > 1.5 * u.period_s) {
      ++u.gaps;
      u.gap_s += st - u.period_s;
    }
  }
  const size_t m = static_cast<size_t>(points);
  if (u.uniform_input && m == n) {  // the samples are the grid (times within 0.1 % of a step)
    u.power_w = s.power_w;
    return u;
  }
  u.power_w.resize(m);
  size_t j = 0;  // s.time_s[j] <= t < s.time_s[j + 1]
  for (size_t k = 0; k < m; ++k) {
    const double t = u.time_at(k);
    while (j + 2 < n && s.time_s[j + 1] <= t) ++j;
    const double ta = s.time_s[j], tb = s.time_s[j + 1];
    if (t <= ta) {
      u.power_w[k] = s.power_w[j];
    } else if (t >= tb) {
      u.power_w[k] = s.power_w[j + 1];
    } else {
      const double a = (t - ta) / (tb - ta);
      u.power_w[k] = s.power_w[j] + a * (s.power_w[j + 1] - s.power_w[j]);
    }
  }
  return u;
}

}  // namespace fw
