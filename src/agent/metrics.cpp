#include "agent/metrics.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

namespace fw::agent {
namespace {

using Labels = std::initializer_list<std::pair<const char*, std::string>>;

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {  // integers in full (counters, Hz)
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string window_label(double window_s) { return number(window_s) + "s"; }

// Writes families: a family's HELP/TYPE once, then its samples.
class Writer {
 public:
  explicit Writer(std::string hostname) : host_(std::move(hostname)) {}
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
    name_ = name;
  }
  void sample(double v, Labels labels = {}) {
    if (std::isnan(v)) return;
    out_ += name_;
    out_ += '{';
    for (const auto& [k, val] : labels) {
      out_ += k;
      out_ += "=\"";
      out_ += escape_label_value(val);
      out_ += "\",";
    }
    out_ += "hostname=\"";
    out_ += escape_label_value(host_);
    out_ += "\"} ";
    out_ += number(v);
    out_ += '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string host_;
  std::string name_;
  std::string out_;
};

void gpu_families(Writer& w, const AgentState& s) {
  struct Field {
    const char* name;
    const char* type;
    const char* help;
    double (*get)(const GpuState&);
  };
  static const Field kFields[] = {
      {"flexwatt_gpu_power_watts", "gauge", "GPU power draw as read by the agent.",
       [](const GpuState& g) { return g.power_w; }},
      {"flexwatt_gpu_energy_joules_total", "counter", "GPU energy counter since boot.",
       [](const GpuState& g) { return g.energy_j; }},
      {"flexwatt_gpu_power_cap_watts", "gauge", "Enforced GPU power cap.",
       [](const GpuState& g) { return g.cap_w; }},
      {"flexwatt_gpu_power_cap_min_watts", "gauge", "Lowest settable GPU power cap.",
       [](const GpuState& g) { return g.cap_min_w; }},
      {"flexwatt_gpu_power_cap_max_watts", "gauge", "Highest settable GPU power cap.",
       [](const GpuState& g) { return g.cap_max_w; }},
      {"flexwatt_gpu_power_cap_default_watts", "gauge", "Default GPU power cap.",
       [](const GpuState& g) { return g.cap_default_w; }},
      {"flexwatt_gpu_sm_clock_hertz", "gauge", "GPU SM clock.",
       [](const GpuState& g) { return g.sm_clock_mhz * 1e6; }},
      {"flexwatt_gpu_sm_utilization_ratio", "gauge", "GPU SM utilisation (0..1).",
       [](const GpuState& g) { return g.sm_util; }},
      {"flexwatt_gpu_memory_utilization_ratio", "gauge", "GPU memory utilisation (0..1).",
       [](const GpuState& g) { return g.mem_util; }},
      {"flexwatt_gpu_temperature_celsius", "gauge", "GPU temperature.",
       [](const GpuState& g) { return g.temp_c; }},
      {"flexwatt_gpu_cap_write_failures_total", "counter",
       "Power-cap writes to the GPU that failed since the agent started.",
       [](const GpuState& g) { return static_cast<double>(g.cap_write_failures_total); }},
      {"flexwatt_gpu_persistence_mode_enabled", "gauge",
       "1 when the driver's persistence mode was on at start (off: caps are lost when the "
       "driver unloads).",
       [](const GpuState& g) { return g.persistence_mode; }},
  };
  for (const auto& f : kFields) {
    w.family(f.name, f.type, f.help);
    for (const auto& g : s.gpus) {
      w.sample(f.get(g),
               {{"gpu", std::to_string(g.index)}, {"UUID", g.uuid}, {"modelName", g.name}});
    }
  }
  // The throttle reasons, one 0/1 series per NVML bit (nvmlClocksEventReason*).
  struct Reason {
    const char* name;
    uint64_t bit;
  };
  static const Reason kReasons[] = {
      {"gpu_idle", 0x1},
      {"applications_clocks_setting", 0x2},
      {"sw_power_cap", 0x4},
      {"hw_slowdown", 0x8},
      {"sync_boost", 0x10},
      {"sw_thermal_slowdown", 0x20},
      {"hw_thermal_slowdown", 0x40},
      {"hw_power_brake_slowdown", 0x80},
      {"display_clock_setting", 0x100},
  };
  w.family("flexwatt_gpu_power_source_info", "gauge",
           "1 for the power reading the agent controls on and its averaging (source: "
           "nvml_field_power_average, nvmlDeviceGetPowerUsage, nvml_field_power_instant, "
           "sim:instant, sim:avg_1s; averaging: avg_1s, instant, unknown).");
  for (const auto& g : s.gpus) {
    if (g.power_source.empty()) continue;
    w.sample(1.0, {{"gpu", std::to_string(g.index)},
                   {"UUID", g.uuid},
                   {"modelName", g.name},
                   {"source", g.power_source},
                   {"averaging", g.power_averaging}});
  }
  w.family("flexwatt_gpus_lost", "gauge",
           "GPUs dropped from control because they fell off the bus (NVML_ERROR_GPU_IS_LOST); "
           "GET /v1/status lost_gpus names them.");
  w.sample(static_cast<double>(s.lost_gpus.size()), {});
  w.family("flexwatt_gpu_clocks_event_reason_active", "gauge",
           "1 while NVML reports this clocks-event (throttle) reason for the GPU.");
  for (const auto& g : s.gpus) {
    if (std::isnan(g.clock_event_reasons)) continue;
    const auto mask = static_cast<uint64_t>(g.clock_event_reasons);
    for (const auto& r : kReasons) {
      w.sample((mask & r.bit) != 0 ? 1.0 : 0.0, {{"gpu", std::to_string(g.index)},
                                                 {"UUID", g.uuid},
                                                 {"modelName", g.name},
                                                 {"reason", r.name}});
    }
  }
}

// dcgm-exporter's own names (the DCGM field, same labels and units) for the two fields
// operators ask for by default: a dashboard or alert written for dcgm-exporter reads them.
void dcgm_families(Writer& w, const AgentState& s) {
  struct Field {
    const char* name;
    const char* help;
    double GpuState::*value;
  };
  static const Field kFields[] = {
      {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
       "Enforced GPU power limit (W), as dcgm-exporter names it.", &GpuState::cap_w},
      {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
       "NVML clocks-event (throttle) reason bit mask, as dcgm-exporter names it.",
       &GpuState::clock_event_reasons},
  };
  for (const auto& f : kFields) {
    w.family(f.name, "gauge", f.help);
    for (const auto& g : s.gpus) {
      w.sample(g.*f.value,
               {{"gpu", std::to_string(g.index)}, {"UUID", g.uuid}, {"modelName", g.name}});
    }
  }
}

void budget_families(Writer& w, const AgentState& s) {
  w.family("flexwatt_node_power_watts", "gauge", "Node power (sum over GPUs).");
  w.sample(s.node_power_w);
  w.family("flexwatt_node_budget_watts", "gauge", "Power budget in force.");
  w.sample(s.budget.watts, {{"scope", s.budget.scope}});
  w.family("flexwatt_budget_window_seconds", "gauge", "Window that judges the budget in force.");
  w.sample(s.budget.window_s, {{"scope", s.budget.scope}});
  w.family("flexwatt_budget_window_mean_watts", "gauge", "Trailing mean node power by window.");
  for (const auto& win : s.windows) w.sample(win.mean_w, {{"window", window_label(win.window_s)}});
  w.family("flexwatt_budget_violations_total", "counter",
           "Windows judged over budget since the agent started, by window.");
  for (const auto& win : s.windows) {
    w.sample(static_cast<double>(win.violations_total), {{"window", window_label(win.window_s)}});
  }
  w.family("flexwatt_budget_windows_total", "counter",
           "Windows judged since the agent started, by window and what judged them (source: "
           "energy_counter, exact; power_samples, where a GPU has no energy counter).");
  for (const auto& win : s.windows) {
    w.sample(static_cast<double>(win.windows_total),
             {{"window", window_label(win.window_s)}, {"source", win.source}});
  }
  w.family("flexwatt_limiter_actions_total", "counter", "Safety limiter interventions by action.");
  for (const auto& [k, v] : s.limiter_actions_total) {
    w.sample(static_cast<double>(v), {{"action", k}});
  }
  w.family("flexwatt_fallbacks_total", "counter", "Fallbacks to the safe setting by reason.");
  for (const auto& [k, v] : s.fallbacks_total) w.sample(static_cast<double>(v), {{"reason", k}});
  w.family("flexwatt_fallback_active", "gauge", "1 while the safe setting is in force.");
  w.sample(s.fallback_reason.empty() ? 0.0 : 1.0);
}

void loop_families(Writer& w, const AgentState& s, double now_unix_s) {
  w.family("flexwatt_loop_period_seconds", "gauge", "Control loop tick period.");
  w.sample(s.loop.period_s);
  w.family("flexwatt_loop_ticks_total", "counter", "Control loop ticks.");
  w.sample(static_cast<double>(s.loop.ticks_total));
  w.family("flexwatt_loop_late_ticks_total", "counter", "Ticks that started after their deadline.");
  w.sample(static_cast<double>(s.loop.late_ticks_total));
  w.family("flexwatt_loop_lateness_seconds", "gauge", "Lateness of the last tick.");
  w.sample(s.loop.lateness_s);
  w.family("flexwatt_loop_lateness_max_seconds", "gauge", "Largest tick lateness seen.");
  w.sample(s.loop.lateness_max_s);
  w.family("flexwatt_state_age_seconds", "gauge", "Age of the published state at scrape time.");
  w.sample(s.version == 0 ? std::nan("") : now_unix_s - s.time_unix_s);
}

void job_families(Writer& w, const AgentState& s) {
  w.family("flexwatt_job_tokens_total", "counter", "Tokens a job reported (cumulative).");
  for (const auto& j : s.jobs) w.sample(j.tokens_total, {{"job_id", j.id}});
  w.family("flexwatt_job_steps_total", "counter", "Training steps a job reported (cumulative).");
  for (const auto& j : s.jobs) w.sample(j.steps_total, {{"job_id", j.id}});
  w.family("flexwatt_job_report_age_seconds", "gauge", "Seconds since a job last reported.");
  for (const auto& j : s.jobs) w.sample(j.last_report_age_s, {{"job_id", j.id}});
  w.family("flexwatt_job_knob_value", "gauge", "Workload knob value handed to a job.");
  for (const auto& j : s.jobs) {
    for (int k = 0; k < kNumKnobs; ++k) {
      w.sample(j.knobs[k], {{"job_id", j.id}, {"knob", std::string(kKnobNames[k])}});
    }
  }
  w.family("flexwatt_job_paused", "gauge", "1 while the site coordinator pauses the job.");
  for (const auto& j : s.jobs) w.sample(j.paused ? 1.0 : 0.0, {{"job_id", j.id}});
  auto gate_family = [&](const char* name, const char* help, double RegisteredJob::*gate) {
    w.family(name, "gauge", help);
    for (const auto& j : s.jobs) {
      if (j.*gate > 0) w.sample(j.*gate, {{"job_id", j.id}});
    }
  };
  gate_family("flexwatt_job_start_gate_unix_seconds",
              "The coordinator's start gate handed to a job (absent: none).",
              &RegisteredJob::start_at_unix_s);
  gate_family("flexwatt_job_stop_gate_unix_seconds",
              "The coordinator's stop gate handed to a job (absent: none).",
              &RegisteredJob::stop_at_unix_s);
  w.family("flexwatt_job_fill_watts", "gauge",
           "Fill target handed to a job's fill hook, per GPU (0: off).");
  for (const auto& j : s.jobs) {
    for (const auto& [gpu, watts] : j.fill_w) {
      w.sample(watts, {{"job_id", j.id}, {"gpu", std::to_string(gpu)}});
    }
  }
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_metrics(const AgentState& s, const std::string& version, double now_unix_s,
                           bool dcgm_names) {
  Writer w(s.hostname);
  w.family("flexwatt_build_info", "gauge", "Agent version (value is always 1).");
  w.sample(1.0, {{"version", version}});
  w.family("flexwatt_controller_info", "gauge", "Controller in force (value is always 1).");
  if (!s.controller.empty()) w.sample(1.0, {{"controller", s.controller}});
  gpu_families(w, s);
  if (dcgm_names) dcgm_families(w, s);
  budget_families(w, s);
  loop_families(w, s, now_unix_s);
  job_families(w, s);
  return w.take();
}

}  // namespace fw::agent
