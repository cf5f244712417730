#pragma once
// AgentState: what the node agent's loop publishes once per tick, and what the HTTP API,
// the SSE stream and /metrics serve. A plain value: the loop fills one, StateHub stores an
// immutable copy. SI units inside (W, J, s, 0..1, °C); clocks in MHz as in Snapshot.
//
// Contract for the publisher (the control path): every field is the state at the end of
// the tick; NaN means "not measured" (rendered as JSON null and omitted from /metrics);
// counters (*_total) never decrease during one agent run.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vocab/snapshot.hpp"

namespace fw::agent {

struct GpuState {
  int index = 0;                // NVML index (dcgm-exporter's `gpu` label)
  std::string uuid;             // "GPU-…" (dcgm-exporter's `UUID` label); may be empty
  std::string power_source;     // NodeGpu::power_source: the reading and its averaging
  std::string power_averaging;  // NodeGpu::power_averaging
  std::string name;             // model name (dcgm-exporter's `modelName` label)
  double power_w = kUnset;      // sensor reading
  double energy_j = kUnset;     // cumulative counter since boot; NaN without one
  double cap_w = kUnset;        // enforced power cap
  double cap_min_w = kUnset, cap_max_w = kUnset, cap_default_w = kUnset;  // constraints
  double sm_clock_mhz = kUnset;
  double sm_util = kUnset;   // 0..1
  double mem_util = kUnset;  // 0..1
  double temp_c = kUnset;
  // NVML clocks-event (throttle) reasons at the last read, the bit mask as a number
  // (nvmlClocksEventReason*: 0x4 SW power cap, 0x8 HW slowdown, ...); NaN: not read.
  double clock_event_reasons = kUnset;
  // Cap writes to this GPU that failed since the agent started (PowerCapActuator::set errors:
  // the loop's, the safe setting's, a restore's). 0 under read_only (nothing is written).
  int64_t cap_write_failures_total = 0;
  // The driver's persistence mode as found at start: 1 on, 0 off (limits are lost when the
  // driver unloads); NaN: not known (the library or device does not say; sim).
  double persistence_mode = kUnset;
  // Power smoothing in force as the agent last knew it (NodePlant::smoothing_in_force: found at
  // start, written and read back, or restored; no device read per tick); unset: not known (no
  // power smoothing on this GPU or in its driver, a read-only agent, the sim backend).
  struct Smoothing {
    bool enabled = false;
    int profile = -1;                 // the active preset profile the values belong to
    double floor_pct = kUnset;        // % of the TMP ceiling
    double ramp_up_w_per_s = kUnset;  // W/s
    double ramp_down_w_per_s = kUnset;
    double hysteresis_ms = kUnset;  // ramp-down hysteresis
  };
  std::optional<Smoothing> smoothing;
};

// One budget entry: watts judged on the mean over window_s.
struct BudgetEntry {
  double after_s = 0;  // start, seconds after the budget was set (0 for the first entry)
  double watts = 0;
  double window_s = 30;
};

struct BudgetState {
  std::string scope = "node";         // gpu | job | node | fleet
  std::string source = "config";      // config | api | coordinator | …
  double set_unix_s = 0;              // when the schedule took effect (wall clock)
  std::vector<BudgetEntry> schedule;  // sorted; schedule[0].after_s == 0; empty: no budget
  double watts = kUnset;              // in force now
  double window_s = kUnset;           // in force now
};

// Trailing mean and violations for one judging window.
struct WindowState {
  double window_s = 30;
  double mean_w = kUnset;        // trailing mean of node power over window_s
  int64_t violations_total = 0;  // windows judged over budget since start
  int64_t windows_total = 0;     // windows judged since start
  std::string source = {};       // AgentTick::window_source(): energy_counter | power_samples
};

struct LoopState {
  double period_s = 1.0;
  int64_t ticks_total = 0;
  int64_t late_ticks_total = 0;  // ticks that started after their deadline
  double lateness_s = 0;         // lateness of the last tick (>= 0)
  double lateness_max_s = 0;     // largest lateness seen
  // The plant's clock at this tick: seconds since the loop started (simulated seconds on the
  // sim backend, time_scale included). Counter rates (energy, tokens) are per these seconds.
  double plant_time_s = 0;
};

// What a job announces ahead of the meter with a progress report (POST /v1/jobs/{id}/progress;
// the JobReading fields of the same names, vocab/snapshot.hpp), read by `stabilize`. NaN:
// not announced (unknown).
struct JobAnnouncements {
  double starts_in_s = kUnset;          // its processes start in this many s (scheduled start)
  double ends_in_s = kUnset;            // its processes exit in this many s (scheduled end)
  double checkpoint_in_iters = kUnset;  // the next checkpoint follows the all-reduce of this
                                        // many more iterations (whole, >= 1; 1: the one under way)
  double checkpoint_s = kUnset;         // that checkpoint's announced length, s
  double step_age_s = kUnset;           // its iteration under way began this many s ago
};

// A job registered with the agent (JobRegistry), as the agent last knew it. The simulator's
// mutable job state is sim::WorkloadState.
struct RegisteredJob {
  std::string id;
  std::string name;
  std::string kind;
  std::string phase = "idle";  // Phase name (vocab/snapshot.hpp)
  double tokens_total = 0;
  double steps_total = 0;
  KnobValues knobs = kNoKnobs;  // in force (as last handed to the job)
  uint64_t knob_version = 0;
  double last_report_age_s = kUnset;  // seconds since the job last reported
  // The last report's announcements as of now (JobRegistry ages them: age_announcements()).
  JobAnnouncements announced;
  // Power Flexibility Index (docs/flexibility.md): from the job's registration ("registration")
  // or a completed `flexwatt sweep --agent` ("sweep", PUT /v1/jobs/{id}/pfi); NaN: unknown.
  double pfi = kUnset;
  std::string pfi_source;
  // The job's client runs a fill workload when told (registered with "fill": true); fill_w is
  // what the loop last handed it per GPU (NVML index -> W; 0: off), sent with its knobs.
  bool fill = false;
  std::map<int, double> fill_w;
  // The coordinator's assignment pauses the node's jobs (AgentTick::paused()): the job should
  // stop training (hold its state) until this is false again; sent with its knobs.
  bool paused = false;
  // The coordinator's start gate (unix s; 0: none): a job that announced its start should not
  // start training before it (docs/fleet.md "Staggered starts"); sent with its knobs.
  double start_at_unix_s = 0;
  // The coordinator's stop gate (unix s; 0: none): a job that announced its end should train on
  // (or run its fill) until it, then stop (docs/fleet.md "Staggered stops"); sent with its knobs.
  double stop_at_unix_s = 0;
};

// A job as the loop controls it (the plant's job j): on hardware a registered job (or "node"
// with none), on the sim backend the scenario's simulated job, registered or not.
struct PlantJobState {
  std::string name;
  std::vector<std::string> knobs;  // the knobs the controllers can reach now
  double tokens_total = kUnset;    // the plant's reading (the simulator's on sim)
  double steps_total = kUnset;
};

struct AgentState {
  uint64_t version = 0;  // set by StateHub::publish (1, 2, …); 0: nothing published yet
  double time_unix_s = 0;
  std::string hostname;
  std::string backend;     // nvml | fake-nvml | sim:SCENARIO (the config's)
  std::string controller;  // controller spec in force, as written ("pid:kp=0.5")
  bool read_only = false;  // the agent writes no cap or knob (config read_only)
  std::vector<GpuState> gpus;
  // GPUs dropped from control because they fell off the bus (NodePlant::lost_gpus).
  struct LostGpu {
    int index = 0;
    std::string uuid, reason;
  };
  std::vector<LostGpu> lost_gpus;
  double node_power_w = kUnset;  // sum over GPUs (or a node meter)
  BudgetState budget;
  std::vector<WindowState> windows;
  std::map<std::string, int64_t> limiter_actions_total;  // by action: clamped, slew_limited…
  std::map<std::string, int64_t> fallbacks_total;        // by reason: stale_telemetry, …
  std::string fallback_reason;  // non-empty while the safe setting is in force
  LoopState loop;
  std::vector<RegisteredJob> jobs;  // JobRegistry::snapshot() taken at this tick
  std::vector<PlantJobState> plant_jobs;
  uint64_t applied_command_seq = 0;  // last API command the loop has applied
};

// JSON of the state as served by GET /v1/status and each SSE event (NaN -> null).
nlohmann::json to_json(const AgentState& s);
nlohmann::json to_json(const RegisteredJob& j);
// Knobs as {"gen_concurrency": 32, …}: only the knobs that are set.
nlohmann::json knobs_json(const KnobValues& k);
// A job's fill targets as {"<NVML index>": W, ...} ({} when none).
nlohmann::json fill_json(const RegisteredJob& j);

}  // namespace fw::agent
