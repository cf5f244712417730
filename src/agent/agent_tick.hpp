#pragma once
// AgentTick: one tick of the node agent's control path, the same ControlLoop as `eval`
// (control/control_loop.hpp: its decision schedule, merge, claims and SafetyLimiter) driven
// phase by phase, with the agent's own work between the phases. Each tick at plant time t:
//   1. drain the CommandQueue (a budget schedule, a controller spec); take the coordinator's
//      budget (a BudgetFollower: FleetFollower, when following; fleet-sim's link in
//      fleet_sim/agent_node.hpp); re-read the plant's job set. A new budget or job set
//      restarts the episode (ControlLoop::restart: limiter, history, controllers);
//   2. ControlLoop::sense();
//   3. fail safe: a failed read older than stale_after_s (or before any good one), a job whose
//      channel went quiet, a knob controller with no job exposing its knobs (a controller that
//      claims no cap and no knob — stabilize, which commands power smoothing — acts where the
//      plant applies power smoothing), or a controller
//      that throws in ControlLoop::decide() puts the static safe setting in force this tick
//      (every GPU at safe_cap_w, else the node budget split evenly, in range; default knobs),
//      written unlimited, until the cause clears; then the episode restarts and the controllers
//      decide from the next tick;
//   4. otherwise ControlLoop::decide(); following a coordinator, the share guard
//      (clamp_caps_to_share) every tick; caps of GPUs no job lists are left out; then
//      ControlLoop::act() (limiter, write);
//   5. windows: the trailing mean of node power over the budget's window, and the tumbling
//      judgement by the one window rule (control/window_judge.hpp, as EpisodeMetrics judges an
//      episode), restarted when the window length changes.
// A controller switch (a ControllerChange applied) puts back the power smoothing the previous
// controller changed (NodePlant::restore_smoothing); the fail-safe leaves it as written (its
// caps bound the power).
// A failed write (the safe setting's or the controller's) is counted (write_failures(); per GPU:
// the plant's PowerCapActuator::write_failures) and logged when it first fails, then at most
// once every kWriteLogInterval_s of plant time, with the count since the last line.
// advance() moves to the next tick (also for a deadline the driver skipped). read_only: nothing
// is ever written (sense, decide, serve). The loop thread only; never throws.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/agent_stages.hpp"
#include "agent/agent_state.hpp"
#include "agent/commands.hpp"
#include "agent/fallback_reason.hpp"
#include "agent/fleet_follower.hpp"
#include "agent/job_registry.hpp"
#include "control/control_loop.hpp"
#include "control/window_judge.hpp"
#include "registry/controller_registry.hpp"
#include "runtime/node_plant.hpp"

namespace fw::agent {

// Builds a controller from a spec for the plant's current info (the registry by default;
// tests inject failing ones).
using ControllerMaker = std::function<Result<std::unique_ptr<Controller>>(const std::string& spec)>;

// What a controller is prepared against on this node: the plant's `info` and budget `b`, the
// plant's defaults (a scenario's episode length and model plant: calibrated as `eval` does),
// cfg's policy directories and limiter; following a coordinator (`fleet`, may be null), the
// plans it publishes (`plan:fleet`). Pure: safe from any thread.
registry::ControllerEnv agent_controller_env(const AgentConfig& cfg, const NodePlant& plant,
                                             const PlantInfo& info, const BudgetSchedule& b,
                                             const BudgetFollower* fleet = nullptr);

// The node budget the agent starts with: cfg.budget_w; else, following a coordinator, the safe
// share (until the first assignment); else the plant's default schedule's first entry; else
// the GPUs' maximum caps summed. window_s: cfg's, else the schedule's, else 30 s.
// InvalidArgument when it is not positive.
Result<Budget> initial_budget(const AgentConfig& cfg, const NodePlant& plant);

// The static safe setting for a node budget of `node_w`: every GPU at safe_cap_w, else node_w
// split evenly, within the device's range; every job at its default knobs.
Command safe_command(const AgentConfig& cfg, const PlantInfo& info, double node_w);

// The spec names the plan the coordinator publishes (`plan:fleet`, options aside): the tick
// prepares it again when that plan changes.
bool follows_fleet_plan(const std::string& spec);

inline constexpr double kWriteLogInterval_s = 60;

class AgentTick {
 public:
  // `plant`, `commands`, `jobs` and `fleet` (may be null) must outlive the tick.
  AgentTick(const AgentConfig& cfg, NodePlant& plant, CommandQueue& commands, JobRegistry& jobs,
            BudgetFollower* fleet);

  void set_controller_maker(ControllerMaker m) { make_controller_ = std::move(m); }
  // Where the tick's log lines go (default: agent_log.hpp log_line, stderr).
  void set_log(std::function<void(const std::string&)> f) { log_ = std::move(f); }
  // Following a coordinator: whether its assignment pauses the node's jobs (relayed to every
  // registered job, each tick: JobRegistry::set_paused). on_pause is called on each change
  // (fleet-sim's node stops its simulated job).
  bool paused() const { return paused_; }
  // Following a coordinator: its start gate for the node's jobs that announced a start (unix s;
  // 0: none), relayed to every registered job (JobRegistry::set_start_at) each tick.
  double start_at_unix_s() const { return start_at_unix_s_; }
  // Likewise its stop gate for the jobs that announced an end (JobRegistry::set_stop_at).
  double stop_at_unix_s() const { return stop_at_unix_s_; }
  void on_pause(std::function<void(bool)> f) { on_pause_ = std::move(f); }
  // Sets the starting budget and the controller (cfg.controller); starts the loop.
  Status start(const Budget& b);
  void tick(double t);
  void advance() { loop_->advance(); }
  // Restarts the episode (the budget or job set changed; at the run's start).
  void restart();

  const std::string& controller_spec() const { return controller_spec_; }
  const BudgetSchedule& budget() const { return budget_; }
  const BudgetState& budget_state() const { return budget_state_; }
  double node_budget_w(double t) const;  // the budget in force, summed over the node
  const Snapshot& latest() const { return loop_->latest(); }
  FallbackReason fallback() const { return fallback_; }
  const std::map<FallbackReason, int64_t>& fallbacks_total() const { return fallbacks_total_; }
  // The trailing mean of node power over the window in force (NaN: no sample yet): the energy
  // counters' difference over the window where every GPU has a counter, else the mean of the
  // power samples.
  double trailing_mean_w() const;
  int64_t violations_total() const { return violations_total_; }
  int64_t windows_total() const { return windows_total_; }
  // What judges the windows now: "energy_counter" (exact: node energy over the window's span,
  // so a sample that aliases a periodic step cannot bias it) or "power_samples" (the mean of
  // the samples, where a GPU has no energy counter).
  const char* window_source() const { return energy_window_ ? "energy_counter" : "power_samples"; }
  // The limiter's counters, monotonic over the run (the limiter restarts with each episode).
  std::map<std::string, int64_t> limiter_actions_total() const;
  int64_t write_failures() const { return loop_->write_failures(); }
  uint64_t applied_command_seq() const { return applied_seq_; }
  void set_recorder(Recorder* r) { loop_->set_recorder(r); }
  // Called with the plant's info and budget each time an episode starts (what PUT
  // /v1/controller validates against).
  void on_episode(std::function<void(const PlantInfo&, const BudgetSchedule&)> f) {
    on_episode_ = std::move(f);
  }

 private:
  Status start_controller(const std::string& spec);
  Result<std::unique_ptr<Controller>> registry_controller(const std::string& spec);
  void apply_commands(double t);
  void follow_fleet(double t);
  void set_node_budget(double watts, const std::string& source, double t);
  FallbackReason check_failsafe(double t, const Status& read_status) const;
  bool controller_can_act() const;
  void update_windows(double t, double node_w, double node_j);
  void note_write_failure(double t, const Status& w);
  void log(const std::string& line) const;

  const AgentConfig& cfg_;
  NodePlant& plant_;
  CommandQueue& commands_;
  JobRegistry& jobs_;
  BudgetFollower* fleet_;
  int64_t plan_changes_seen_ = 0;  // fleet_->plan_changes() as last acted on
  ControllerMaker make_controller_;
  std::function<void(const std::string&)> log_;
  std::function<void(bool)> on_pause_;
  bool paused_ = false;
  double start_at_unix_s_ = 0;
  double stop_at_unix_s_ = 0;
  BudgetSchedule budget_;  // the loop judges this object; replaced in place
  BudgetState budget_state_;
  std::unique_ptr<ControlLoop> loop_;
  std::unique_ptr<Controller> controller_;
  std::string controller_spec_;
  std::function<void(const PlantInfo&, const BudgetSchedule&)> on_episode_;
  // Fail safe.
  FallbackReason fallback_ = FallbackReason::kNone;
  std::map<FallbackReason, int64_t> fallbacks_total_;
  double last_good_read_s_ = 0;
  bool episode_started_ = false;
  // The limit chain before the limiter (agent/agent_stages.hpp), in this order.
  UnlistedGpusStage unlisted_stage_;
  FailSafeStage failsafe_stage_;
  ShareGuardStage share_stage_;
  // Write failures' log: plant time of the last line (NaN: none yet), failures since then.
  double write_logged_s_ = kUnset;
  int64_t write_failures_unlogged_ = 0;
  // Windows.
  struct TrailingSample {
    double t, power_w, energy_j;  // energy_j: node total, NaN without counters
    size_t gpus;
  };
  std::deque<TrailingSample> trailing_;
  WindowJudge tumbling_;
  double judged_window_s_ = kUnset;
  int64_t violations_total_ = 0;
  int64_t windows_total_ = 0;
  // Tumbling windows over the energy counters: start time, node energy, GPU count, samples in.
  bool energy_window_ = false;
  double window_start_s_ = kUnset, window_start_j_ = kUnset;
  size_t window_gpus_ = 0;
  int64_t window_samples_ = 0;
  std::map<std::string, int64_t> limiter_base_;
  uint64_t applied_seq_ = 0;
};

}  // namespace fw::agent
