#include "analysis/trace_analysis.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/format.hpp"

namespace fw {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string num(double v) { return format_g(v, 12); }

// One power series (a GPU or the node): period estimate, gaps, trapezoid energy, windows.
// Where a series reports a window shorter than its sample period.
struct PeriodReport {
  std::string error;                  // set once: the analysis stops
  std::vector<std::string> warnings;  // default windows left unjudged
  std::vector<double> warned_s;       // window lengths already warned about
};

class SeriesAcc {
 public:
  // with_curve: also windows on curve_windows_s; with_means: keep the window means at
  // oversub_window_s. name: the series, for messages.
  void init(const AnalysisOptions& o, double budget_w, bool with_curve = false,
            bool with_means = false, std::string name = "", PeriodReport* report = nullptr) {
    gap_factor_ = o.gap_factor;
    name_ = std::move(name);
    report_ = report;
    win_.clear();
    flag_.clear();
    for (double w : o.windows_s) add_window(w, budget_w, o.windows_given ? "--windows" : "");
    n_user_ = win_.size();
    n_curve_ = 0;
    if (with_curve) {
      for (double w : o.curve_windows_s) {
        add_window(w, budget_w, o.curve_windows_given ? "--curve-windows" : "");
      }
      n_curve_ = o.curve_windows_s.size();
    }
    has_means_ = with_means;
    if (with_means) {
      add_window(o.oversub_window_s, kInf, "--oversub-window-s");
      win_.back().keep_means(true);
    }
    on_.assign(win_.size(), 1);
    fast_from_s_ = kInf;
    fast_to_s_ = -kInf;
  }

  // REQUIRES: t greater than the previous t.
  __attribute__((always_inline)) void add(double t, double p) {
    if (samples_ == 0) t_first_ = t;
    ++samples_;
    t_last_ = t;
    if (p > peak_w_ || samples_ == 1) peak_w_ = p;
    if (period_s_ > 0) {
      feed(t, p);
      return;
    }
    probe_t_[nprobe_] = t;
    probe_p_[nprobe_] = p;
    if (++nprobe_ == kProbe) replay_probe();
  }

  void finish_into(SeriesSummary& s) {
    if (period_s_ <= 0 && nprobe_ > 0) replay_probe();
    if (has_prev_ && period_s_ > 0) {
      for (size_t i = 0; i < win_.size(); ++i) {
        if (on_[i]) win_[i].add(prev_t_, prev_p_, period_s_);
      }
    }
    s.samples = samples_;
    s.duration_s = samples_ > 0 ? t_last_ - t_first_ : 0;
    s.energy_j = energy_j_;
    s.energy_source = "trapezoid";
    s.mean_power_w = s.duration_s > 0 ? energy_j_ / s.duration_s : (samples_ ? peak_w_ : 0);
    s.peak_power_w = peak_w_;
    s.period_s = period_s_;
    s.gaps = gaps_;
    s.gap_s = gap_s_;
    s.windows.clear();
    s.curve.clear();
    for (size_t i = 0; i < n_user_; ++i) s.windows.push_back(win_[i].finish());
    for (size_t i = n_user_; i < n_user_ + n_curve_; ++i) s.curve.push_back(win_[i].finish());
    s.oversub_means.clear();
    if (has_means_) s.oversub_means = win_.back().means();
  }
  int64_t samples() const { return samples_; }

 private:
  static constexpr int kProbe = 65;  // 64 steps

  void add_window(double w, double budget_w, const char* flag) {
    win_.emplace_back(w, budget_w);
    flag_.push_back(flag);
  }

  // Once the period is known: windows shorter than it are an error (given) or left
  // unjudged with a warning (defaults).
  void check_windows_against_period() {
    for (size_t i = 0; i < win_.size(); ++i) {
      const double w = win_[i].window_s();
      if (w >= period_s_ * (1 - 1e-9)) continue;
      on_[i] = 0;
      if (report_ == nullptr) continue;
      if (*flag_[i] != '\0') {
        if (report_->error.empty()) {
          report_->error = std::string(flag_[i]) + ": window " + num(w) +
                           " s is shorter than the sample period " + num(period_s_) + " s of " +
                           name_ + " (a window must hold at least one sample)";
        }
      } else if (std::find(report_->warned_s.begin(), report_->warned_s.end(), w) ==
                 report_->warned_s.end()) {
        report_->warned_s.push_back(w);
        report_->warnings.push_back("default window " + num(w) +
                                    " s is shorter than the sample period " + num(period_s_) +
                                    " s of " + name_ + ": not judged (null)");
      }
    }
  }

  void replay_probe() {
    std::array<double, kProbe> steps;
    int n = 0;
    for (int i = 1; i < nprobe_; ++i) {
      const double d = probe_t_[i] - probe_t_[i - 1];
      if (d > 0) steps[n++] = d;
    }
    if (n == 0) {
      period_s_ = 0;  // one sample: no period, windows stay empty
      return;
    }
    std::nth_element(steps.begin(), steps.begin() + n / 2, steps.begin() + n);
    period_s_ = steps[n / 2];
    if (n % 2 == 0) {  // the lower middle too: mean of the two middle steps
      const double upper = steps[n / 2];
      const double lower = *std::max_element(steps.begin(), steps.begin() + n / 2);
      period_s_ = 0.5 * (upper + lower);
    }
    check_windows_against_period();
    const int np = nprobe_;
    nprobe_ = 0;
    for (int i = 0; i < np; ++i) feed(probe_t_[i], probe_p_[i]);
  }

  // Inlined into every add (the hot path of analyze); the rare cases are out of line.
  __attribute__((always_inline)) void feed(double t, double p) {
    if (has_prev_) {
      const double dt = t - prev_t_;
      double hold = dt;
      if (dt > gap_factor_ * period_s_) hold = count_gap(dt);
      feed_windows(prev_t_, prev_p_, hold);
      energy_j_ += 0.5 * (prev_p_ + p) * dt;
    }
    has_prev_ = true;
    prev_t_ = t;
    prev_p_ = p;
  }

  // A step longer than gap_factor periods: counted as a gap; the sample is held one period.
  double count_gap(double dt) {
    ++gaps_;
    gap_s_ += dt - period_s_;
    return period_s_;
  }

  // Every fed window gets the sample; when it lies inside every open window (the common case)
  // one range test replaces one per window, with the same sums as add() (see windows.hpp).
  __attribute__((always_inline)) void feed_windows(double t, double p, double dt) {
    if (t >= fast_from_s_ && t + dt <= fast_to_s_) {
      const double e = p * dt;
      for (size_t i = 0; i < win_.size(); ++i) {
        if (on_[i]) win_[i].add_inside(e, dt);
      }
      return;
    }
    feed_windows_slow(t, p, dt);
  }

  __attribute__((noinline)) void feed_windows_slow(double t, double p, double dt) {
    fast_from_s_ = -kInf;
    fast_to_s_ = kInf;
    for (size_t i = 0; i < win_.size(); ++i) {
      if (!on_[i]) continue;
      win_[i].add(t, p, dt);
      if (!win_[i].started()) fast_from_s_ = kInf;
      fast_from_s_ = std::max(fast_from_s_, win_[i].fast_from_s());
      fast_to_s_ = std::min(fast_to_s_, win_[i].fast_to_s());
    }
  }

  double gap_factor_ = 1.5;
  double fast_from_s_ = kInf, fast_to_s_ = -kInf;  // the range every fed window takes as inside
  std::vector<WindowAccumulator> win_;             // user windows, curve windows, the means window
  std::vector<const char*> flag_;  // the flag that gave each window; "" for defaults
  std::vector<char> on_;           // 0: shorter than the period, not fed
  std::string name_;
  PeriodReport* report_ = nullptr;
  size_t n_user_ = 0, n_curve_ = 0;
  bool has_means_ = false;
  std::array<double, kProbe> probe_t_{}, probe_p_{};
  int nprobe_ = 0;
  double period_s_ = 0;
  bool has_prev_ = false;
  double prev_t_ = 0, prev_p_ = 0;
  int64_t samples_ = 0, gaps_ = 0;
  double gap_s_ = 0, energy_j_ = 0, peak_w_ = 0, t_first_ = 0, t_last_ = 0;
};

struct GpuState {
  int gpu = 0;
  SeriesAcc acc;
  double last_t = 0;
  int64_t rows = 0;
  int64_t duplicates = 0;
  double held_w = 0;       // latest power (node sum)
  int64_t tick = -1;       // last node tick this GPU reported in
  bool counter_ok = true;  // every row had a non-decreasing energy counter
  double first_energy_j = 0, last_energy_j = 0;
};

struct BufferedRow {
  double time_s, power_w, energy_j;
  int64_t line;
  int gpu;
};

}  // namespace

struct TraceAnalyzer::Impl {
  AnalysisOptions o;
  std::string path;
  bool sort_in_memory = false;
  std::vector<int> slot;  // GPU index → index in gpus, −1
  std::vector<GpuState> gpus;
  double max_time_s = -kInf;
  int64_t rows = 0, unsorted = 0, incomplete = 0;
  // Node tick in progress.
  int64_t tick = -1;
  double tick_time_s = 0;
  int tick_gpus = 0;
  SeriesAcc node;
  std::vector<SeriesAcc> job_acc;  // one per o.jobs
  std::vector<BufferedRow> buffer;
  PeriodReport period_report;

  // The budget the scope's windows are judged against; +inf (means only) when none was given.
  double judged_budget_w() const { return std::isnan(o.budget_w) ? kInf : o.budget_w; }
  double gpu_budget() const { return o.scope == BudgetScope::kGpu ? judged_budget_w() : kInf; }
  double job_budget() const { return o.scope == BudgetScope::kJob ? judged_budget_w() : kInf; }

  double held_of(int gpu) const {
    if (gpu < 0 || static_cast<size_t>(gpu) >= slot.size() || slot[gpu] < 0) return 0.0;
    const GpuState& g = gpus[slot[gpu]];
    return g.tick >= 0 ? g.held_w : 0.0;
  }

  void close_tick() {
    if (tick < 0) return;
    double sum = 0;
    for (const GpuState& g : gpus) sum += g.tick >= 0 ? g.held_w : 0.0;
    if (tick_gpus < static_cast<int>(gpus.size())) ++incomplete;
    node.add(tick_time_s, sum);
    for (size_t j = 0; j < job_acc.size(); ++j) {
      double js = 0;
      for (int gpu : o.jobs[j].gpus) js += held_of(gpu);
      job_acc[j].add(tick_time_s, js);
    }
  }

  // Adds a row already known to be in time order across GPUs.
  __attribute__((always_inline)) void process(double t, int gpu_index, double p, double e,
                                              GpuState& g) {
    if (g.tick == tick && tick >= 0) {
      close_tick();
      ++tick;
      tick_time_s = t;
      tick_gpus = 0;
    } else if (tick < 0) {
      tick = 0;
      tick_time_s = t;
    }
    g.tick = tick;
    ++tick_gpus;
    g.held_w = p;
    g.acc.add(t, p);
    if (g.counter_ok) {
      if (!std::isfinite(e) || (g.rows > 1 && e < g.last_energy_j)) {
        g.counter_ok = false;
      } else {
        if (g.rows == 1) g.first_energy_j = e;
        g.last_energy_j = e;
      }
    }
    (void)gpu_index;
  }

  GpuState& state_of(int gpu) {
    if (static_cast<size_t>(gpu) >= slot.size()) slot.resize(gpu + 1, -1);
    if (slot[gpu] < 0) {
      slot[gpu] = static_cast<int>(gpus.size());
      gpus.emplace_back();
      gpus.back().gpu = gpu;
      gpus.back().acc.init(o, gpu_budget(), o.scope == BudgetScope::kGpu, false,
                           "gpu" + std::to_string(gpu), &period_report);
    }
    return gpus[slot[gpu]];
  }
};

TraceAnalyzer::TraceAnalyzer(const AnalysisOptions& options, std::string rows_path,
                             bool sort_in_memory)
    : impl_(new Impl) {
  impl_->o = options;
  impl_->path = std::move(rows_path);
  impl_->sort_in_memory = sort_in_memory;
  impl_->node.init(options, options.scope == BudgetScope::kNode ? impl_->judged_budget_w() : kInf,
                   true, true, "node", &impl_->period_report);
  impl_->job_acc.resize(options.jobs.size());
  for (size_t j = 0; j < impl_->job_acc.size(); ++j) {
    impl_->job_acc[j].init(options, impl_->job_budget(), true, true, "job " + options.jobs[j].name,
                           &impl_->period_report);
  }
  impl_->slot.reserve(64);
  impl_->gpus.reserve(64);
}

TraceAnalyzer::~TraceAnalyzer() { delete impl_; }

__attribute__((always_inline)) inline bool TraceAnalyzer::add_one(double t, int gpu, double power_w,
                                                                  double energy_j, int64_t line) {
  Impl& m = *impl_;
  GpuState* g;
  if (static_cast<size_t>(gpu) < m.slot.size() && m.slot[gpu] >= 0) {
    g = &m.gpus[m.slot[gpu]];
  } else {
    g = &m.state_of(gpu);
  }
  ++m.rows;
  if (g->rows > 0) {
    if (t < g->last_t) {
      status_ = Status::InvalidArgument(m.path + ":" + std::to_string(line) +
                                        ": time_s: goes backwards for GPU " + std::to_string(gpu) +
                                        " (" + num(t) + " after " + num(g->last_t) + ")");
      return false;
    }
    if (t == g->last_t) {
      ++g->duplicates;
      return true;
    }
  }
  ++g->rows;
  g->last_t = t;
  if (t < m.max_time_s) {
    ++m.unsorted;
    if (!m.sort_in_memory) {
      needs_sort_ = true;
      unsorted_line_ = line;
      return false;
    }
  } else {
    m.max_time_s = t;
  }
  if (m.sort_in_memory) {
    m.buffer.push_back({t, power_w, energy_j, line, gpu});
    return true;
  }
  m.process(t, gpu, power_w, energy_j, *g);
  if (!m.period_report.error.empty()) {
    status_ = Status::InvalidArgument(m.period_report.error);
    return false;
  }
  return true;
}

bool TraceAnalyzer::add_batch(const TraceRowBatch& b) {
  for (size_t i = 0; i < b.n; ++i) {
    const double e = b.energy_j != nullptr ? b.energy_j[i] : kUnset;
    if (!add_one(b.time_s[i], b.gpu[i], b.power_w[i], e, b.line_base + b.line[i])) return false;
  }
  return true;
}

// Long by design: closes every series in one pass over the accumulated state; the steps share
// locals.
Result<TraceSummary> TraceAnalyzer::finish() {
  Impl& m = *impl_;
  if (!status_.ok()) return status_;
  if (m.rows == 0) return Status::InvalidArgument(m.path + ": no data rows after the header");
  if (m.sort_in_memory) {
    std::stable_sort(
        m.buffer.begin(), m.buffer.end(),
        [](const BufferedRow& a, const BufferedRow& b) { return a.time_s < b.time_s; });
    // Replay through fresh per-GPU state (duplicates were already dropped).
    std::vector<int64_t> dups;
    for (GpuState& g : m.gpus) dups.push_back(g.duplicates);
    for (size_t i = 0; i < m.gpus.size(); ++i) {
      GpuState fresh;
      fresh.gpu = m.gpus[i].gpu;
      fresh.duplicates = dups[i];
      fresh.acc.init(m.o, m.gpu_budget(), m.o.scope == BudgetScope::kGpu, false,
                     "gpu" + std::to_string(fresh.gpu), &m.period_report);
      m.gpus[i] = std::move(fresh);
    }
    for (const BufferedRow& r : m.buffer) {
      GpuState& g = m.gpus[m.slot[r.gpu]];
      ++g.rows;
      g.last_t = r.time_s;
      m.process(r.time_s, r.gpu, r.power_w, r.energy_j, g);
    }
    std::vector<BufferedRow>().swap(m.buffer);
  }
  m.close_tick();
  if (!m.period_report.error.empty()) return Status::InvalidArgument(m.period_report.error);

  TraceSummary out;
  out.rows = m.rows;
  out.unsorted_rows = m.unsorted;
  out.incomplete_ticks = m.incomplete;
  out.sorted_in_memory = m.sort_in_memory;
  std::vector<GpuState*> order;
  for (GpuState& g : m.gpus) order.push_back(&g);
  std::sort(order.begin(), order.end(),
            [](const GpuState* a, const GpuState* b) { return a->gpu < b->gpu; });
  const double n_gpus = static_cast<double>(order.size());
  int n_counter = 0;
  double energy_sum = 0, mean_sum = 0;
  for (GpuState* g : order) {
    SeriesSummary s;
    g->acc.finish_into(s);
    s.gpu = g->gpu;
    s.name = "gpu" + std::to_string(g->gpu);
    s.duplicates = g->duplicates;
    if (g->counter_ok && g->rows >= 2) {
      s.energy_j = g->last_energy_j - g->first_energy_j;
      s.energy_source = "counter";
      if (s.duration_s > 0) s.mean_power_w = s.energy_j / s.duration_s;
      ++n_counter;
    }
    s.budget_w = m.o.scope == BudgetScope::kGpu ? m.o.budget_w : kUnset;
    s.nameplate_w = m.o.nameplate_w;
    energy_sum += s.energy_j;
    mean_sum += s.mean_power_w;
    out.duplicates += s.duplicates;
    out.gpus.push_back(std::move(s));
  }
  SeriesSummary& node = out.node;
  m.node.finish_into(node);
  node.gpu = -1;
  node.name = "node";
  node.duplicates = out.duplicates;
  node.energy_j = energy_sum;
  node.mean_power_w = node.duration_s > 0 ? energy_sum / node.duration_s : mean_sum;
  node.energy_source = n_counter == static_cast<int>(order.size())
                           ? "counter"
                           : (n_counter == 0 ? "trapezoid" : "mixed");
  node.budget_w = m.o.scope == BudgetScope::kNode ? m.o.budget_w : kUnset;
  node.nameplate_w = m.o.nameplate_w * n_gpus;
  node.gpu_count = static_cast<int>(order.size());
  for (size_t j = 0; j < m.job_acc.size(); ++j) {
    SeriesSummary js;
    m.job_acc[j].finish_into(js);
    js.gpu = -1;
    js.name = m.o.jobs[j].name;
    js.gpu_count = static_cast<int>(m.o.jobs[j].gpus.size());
    // Energy and mean from the job's GPUs, as for the node.
    double e = 0, mean = 0;
    int found = 0, counters = 0;
    for (int gpu : m.o.jobs[j].gpus) {
      for (const SeriesSummary& g : out.gpus) {
        if (g.gpu != gpu) continue;
        e += g.energy_j;
        mean += g.mean_power_w;
        ++found;
        if (g.energy_source == "counter") ++counters;
      }
    }
    js.energy_j = e;
    js.mean_power_w = js.duration_s > 0 ? e / js.duration_s : mean;
    js.energy_source =
        counters == found && found > 0 ? "counter" : (counters == 0 ? "trapezoid" : "mixed");
    js.budget_w = m.o.scope == BudgetScope::kJob ? m.o.budget_w : kUnset;
    js.nameplate_w = m.o.nameplate_w * static_cast<double>(m.o.jobs[j].gpus.size());
    out.jobs.push_back(std::move(js));
  }
  if (!m.period_report.error.empty()) return Status::InvalidArgument(m.period_report.error);
  out.warnings = m.period_report.warnings;
  out.warning_count = static_cast<int64_t>(out.warnings.size());
  return out;
}

double SeriesSummary::peak_share_of_nameplate(size_t i) const {
  if (i >= windows.size()) return kUnset;
  return peak_share(windows[i], nameplate_w);
}

double peak_share(const WindowStats& w, double nameplate_w) {
  if (!(nameplate_w > 0) || w.windows == 0) return kUnset;
  return w.peak_mean_w / nameplate_w;
}

Result<std::vector<JobGpus>> jobs_from_meta(const nlohmann::json& meta, const std::string& where) {
  std::vector<JobGpus> out;
  if (!meta.is_object()) return out;
  const nlohmann::json* jobs = nullptr;
  std::string field = "jobs";
  if (meta.contains("jobs")) {
    jobs = &meta["jobs"];
  } else if (meta.contains("scenario") && meta["scenario"].is_object() &&
             meta["scenario"].contains("jobs")) {
    jobs = &meta["scenario"]["jobs"];
    field = "scenario.jobs";
  }
  if (jobs == nullptr) return out;
  auto bad = [&](size_t i, const std::string& what) {
    return Status::InvalidArgument(where + ": " + field + "[" + std::to_string(i) + "]: " + what);
  };
  if (!jobs->is_array()) return Status::InvalidArgument(where + ": " + field + ": not an array");
  for (size_t i = 0; i < jobs->size(); ++i) {
    const nlohmann::json& j = (*jobs)[i];
    if (!j.is_object()) return bad(i, "not an object");
    if (!j.contains("gpus")) return std::vector<JobGpus>{};  // names only: no mapping
    JobGpus g;
    g.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>()
                                                         : "job" + std::to_string(i);
    if (!j["gpus"].is_array() || j["gpus"].empty()) return bad(i, "gpus: not a list of indices");
    for (const auto& x : j["gpus"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > kMaxGpuIndex) {
        return bad(i, "gpus: not a GPU index: " + x.dump());
      }
      g.gpus.push_back(x.get<int>());
    }
    out.push_back(std::move(g));
  }
  return out;
}

Status validate(const AnalysisOptions& o) {
  if (!std::isnan(o.budget_w) && (!(o.budget_w > 0) || !std::isfinite(o.budget_w))) {
    return Status::InvalidArgument("--budget-w: must be a positive number of watts (got " +
                                   num(o.budget_w) + ")");
  }
  if (o.scope == BudgetScope::kFleet) {
    return Status::InvalidArgument("--scope: expected gpu, node or job, got 'fleet'");
  }
  if (o.windows_s.empty()) return Status::InvalidArgument("--windows: no window given");
  if (o.windows_s.size() > kMaxWindowLengths || o.curve_windows_s.size() > kMaxWindowLengths) {
    return Status::InvalidArgument(
        std::string(o.windows_s.size() > kMaxWindowLengths ? "--windows" : "--curve-windows") +
        ": at most " + std::to_string(kMaxWindowLengths) + " window lengths");
  }
  for (double w : o.windows_s) {
    if (!(w > 0) || !std::isfinite(w)) {
      return Status::InvalidArgument("--windows: each window must be > 0 s (got " + num(w) + ")");
    }
  }
  if (!std::isnan(o.nameplate_w) && !(o.nameplate_w >= 1 && o.nameplate_w <= kMaxGpuPowerW)) {
    return Status::InvalidArgument("--nameplate-w: must be 1..5000 W of one GPU (got " +
                                   num(o.nameplate_w) + ")");
  }
  for (const auto* list : {&o.windows_s, &o.curve_windows_s}) {
    for (size_t i = 0; i < list->size(); ++i) {
      if (std::find(list->begin(), list->begin() + i, (*list)[i]) != list->begin() + i) {
        return Status::InvalidArgument(
            std::string(list == &o.windows_s ? "--windows" : "--curve-windows") + ": " +
            num((*list)[i]) + " s is listed twice");
      }
    }
  }
  if (!(o.gap_factor > 1)) return Status::InvalidArgument("gap factor must be > 1");
  for (double w : o.curve_windows_s) {
    if (!(w > 0) || !std::isfinite(w)) {
      return Status::InvalidArgument("--curve-windows: each window must be > 0 s (got " + num(w) +
                                     ")");
    }
  }
  if (!(o.oversub_window_s > 0) || !std::isfinite(o.oversub_window_s)) {
    return Status::InvalidArgument("--oversub-window-s: must be > 0 (got " +
                                   num(o.oversub_window_s) + ")");
  }
  return Status::Ok();
}

namespace {

// meta.json facts, strictly: a field that is present must have its documented shape.
Status read_meta_facts(const nlohmann::json& meta, const std::string& where, TraceSummary& s) {
  if (meta.is_null()) return Status::Ok();
  if (!meta.is_object()) return Status::InvalidArgument(where + ": expected a JSON object");
  auto bad = [&](const char* field, const std::string& what) {
    return Status::InvalidArgument(where + ": " + field + ": " + what);
  };
  if (meta.contains("simulated")) {
    if (!meta["simulated"].is_boolean()) return bad("simulated", "expected true or false");
    s.simulated = meta["simulated"].get<bool>();
  }
  if (meta.contains("producer")) {
    if (!meta["producer"].is_string()) return bad("producer", "expected a string");
    if (meta["producer"].get<std::string>().find("simulated") != std::string::npos) {
      s.simulated = true;
    }
  }
  if (meta.contains("gpu_models")) {
    if (!meta["gpu_models"].is_array()) return bad("gpu_models", "expected an array of strings");
    for (const auto& m : meta["gpu_models"]) {
      if (!m.is_string()) return bad("gpu_models", "expected an array of strings");
      s.gpu_models.push_back(m.get<std::string>());
    }
  }
  if (meta.contains("nameplate_w")) {
    const nlohmann::json& n = meta["nameplate_w"];
    if (!n.is_number() || !(n.get<double>() > 0) || !std::isfinite(n.get<double>())) {
      return bad("nameplate_w", "expected a positive number of watts, got " + n.dump());
    }
    s.meta_nameplate_w = n.get<double>();
  }
  return Status::Ok();
}

// Every job's GPUs are in the trace, and no GPU is in two jobs.
Status check_jobs(const std::vector<JobGpus>& jobs, const TraceSummary& s,
                  const std::string& where) {
  std::vector<int> owner(kMaxGpuIndex + 1, -1);
  std::string have;
  for (const SeriesSummary& g : s.gpus) have += (have.empty() ? "" : ",") + std::to_string(g.gpu);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (int gpu : jobs[j].gpus) {
      const bool known = std::any_of(s.gpus.begin(), s.gpus.end(),
                                     [&](const SeriesSummary& g) { return g.gpu == gpu; });
      const std::string job = "job '" + jobs[j].name + "'";
      if (!known) {
        return Status::InvalidArgument(where + ": " + job + ": GPU " + std::to_string(gpu) +
                                       " is not in the trace (its GPUs: " + have + ")");
      }
      if (owner[gpu] >= 0 && owner[gpu] != static_cast<int>(j)) {
        return Status::InvalidArgument(where + ": " + job + ": GPU " + std::to_string(gpu) +
                                       " is also in job '" + jobs[owner[gpu]].name + "'");
      }
      owner[gpu] = static_cast<int>(j);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TraceSummary> analyze_trace(const std::string& path, const AnalysisOptions& options,
                                   const TraceReaderOptions& reader_options) {
  FW_RETURN_IF_ERROR(validate(options));
  TraceReaderOptions ro = reader_options;
  ro.fields = kFieldEnergy;  // the analysis needs power (always read) and energy only
  for (bool sort_in_memory : {false, true}) {
    FW_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::open(path, ro));
    AnalysisOptions o = options;
    const std::string meta_where = path + "/meta.json";
    std::string jobs_where = "job map";
    if (o.jobs.empty()) {
      FW_ASSIGN_OR_RETURN(o.jobs, jobs_from_meta(reader->meta(), meta_where));
      jobs_where = meta_where;
    }
    if (o.scope == BudgetScope::kJob && o.jobs.empty()) {
      return Status::InvalidArgument(
          "--scope job: the trace has no job->GPU map (meta.json \"jobs\" or "
          "\"scenario.jobs\", each with \"gpus\")");
    }
    TraceAnalyzer an(o, reader->rows_path(), sort_in_memory);
    TraceRowBatch batch;
    bool restart = false;
    while (reader->next_batch(batch)) {
      if (!an.add_batch(batch)) {
        if (an.needs_sort()) {
          restart = true;
          break;
        }
        return an.status();
      }
    }
    if (restart) {
      // The sorting pass reads the input again: a pipe (or any stream) cannot be.
      std::error_code ec;
      if (!std::filesystem::is_regular_file(reader->rows_path(), ec)) {
        return Status::InvalidArgument(
            reader->rows_path() + ":" + std::to_string(an.unsorted_line()) +
            ": time_s: rows out of time order; sorting them needs a second read of the input, "
            "which a pipe or stream does not allow: save it to a file and analyze that");
      }
      continue;
    }
    FW_RETURN_IF_ERROR(reader->status());
    FW_ASSIGN_OR_RETURN(TraceSummary s, an.finish());
    s.format = std::string(trace_format_name(reader->format()));
    s.missing_power_rows = reader->missing_power_rows();
    FW_RETURN_IF_ERROR(check_jobs(o.jobs, s, jobs_where));
    if (reader->format() == TraceFormat::kFlexwattDir) {
      FW_RETURN_IF_ERROR(read_meta_facts(reader->meta(), meta_where, s));
    }
    std::vector<std::string> w = reader->warnings();
    w.insert(w.end(), s.warnings.begin(), s.warnings.end());
    s.warning_count += reader->warning_count();
    s.warnings = std::move(w);
    if (!reader->jobs_path().empty()) {
      FW_ASSIGN_OR_RETURN(s.tokens, read_job_tokens(reader->jobs_path()));
      if (s.tokens && s.node.energy_j > 0) s.tokens_per_mwh = *s.tokens / (s.node.energy_j / 3.6e9);
    }
    return s;
  }
  return Status::Internal("analyze_trace: sorting pass did not finish");
}

}  // namespace fw
