#include "agent/agent_tick.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agent/agent_log.hpp"
#include "core/format.hpp"

namespace fw::agent {
namespace {

// First calibration seed of calibrated controllers (static): eval's for its default seeds.
constexpr uint64_t kCalibrationSeed = 1000001;

}  // namespace

registry::ControllerEnv agent_controller_env(const AgentConfig& cfg, const NodePlant& plant,
                                             const PlantInfo& info, const BudgetSchedule& b,
                                             const BudgetFollower* fleet) {
  registry::ControllerEnv env;
  if (fleet) {
    env.fleet_plan = [fleet](const std::string& job) -> Result<registry::ControllerEnv::FleetPlan> {
      FW_ASSIGN_OR_RETURN(fleet::PublishedPlan p, fleet->published_plan(job));
      return registry::ControllerEnv::FleetPlan{std::move(p.text), p.mod_revision};
    };
  }
  env.info = info;
  env.budget = b;
  env.sample_period_s = cfg.period_s;
  // A plant with a model (sim): calibrate as `eval` does (the scenario's episode length,
  // eval's calibration seeds for its default evaluation seeds), so the agent runs eval's
  // episode for the same seed.
  const NodePlantDefaults& d = plant.defaults();
  env.duration_s = std::isnan(d.episode_s) ? 600 : d.episode_s;
  env.make_plant = d.model_plant;
  env.real_plant = !env.make_plant;
  env.policy_dirs = cfg.policy_dirs;  // ppo:PATH and the like: only files inside them
  env.calibration_seeds = {kCalibrationSeed, kCalibrationSeed + 1};
  env.limiter = cfg.limiter;
  env.smoothing = plant.smoothing_support();  // fixed at open: safe from the API's threads
  env.fill = plant.fill_support();  // as of the last refresh_jobs(): a job with a fill hook
  if (env.make_plant) {
    // On sim the scenario's jobs are fixed, but their knobs are in reach only while a job is
    // registered in their place (runtime/node_plant.hpp): the controller is prepared on the
    // knobs the simulated jobs have (the loop falls back with no_actuator until they are in
    // reach).
    const PlantInfo model = env.make_plant(cfg.plant.seed)->info();
    for (size_t j = 0; j < env.info.jobs.size() && j < model.jobs.size(); ++j) {
      env.info.jobs[j].knob_ranges = model.jobs[j].knob_ranges;
      env.info.jobs[j].default_knobs = model.jobs[j].default_knobs;
    }
  } else {
    // On a real node jobs register and leave while a controller runs: a knob no job exposes
    // now is not a reason to refuse it (the loop falls back with no_actuator until a job that
    // exposes it registers). Its range here is a placeholder; reset() sees the real jobs.
    for (JobInfo& j : env.info.jobs) {
      for (int k = 0; k < kNumKnobs; ++k) {
        if (j.knob_ranges[k].available) continue;
        j.knob_ranges[k] = {true, 1, 1, 1};
        j.default_knobs[k] = 1;
      }
    }
  }
  return env;
}

Result<Budget> initial_budget(const AgentConfig& cfg, const NodePlant& plant) {
  Budget b;
  b.window_s = std::isnan(cfg.window_s) ? 30.0 : cfg.window_s;
  const BudgetSchedule& dflt = plant.defaults().budget;
  if (!std::isnan(cfg.budget_w)) {
    b.watts = cfg.budget_w;
  } else if (cfg.fleet.enabled()) {
    b.watts = cfg.fleet.safe_share_w;  // until the first assignment
  } else if (!dflt.entries.empty()) {
    b = dflt.entries.front().budget;
    b.window_s = std::isnan(cfg.window_s) ? b.window_s : cfg.window_s;
  } else {
    b.watts = 0;
    for (const GpuInfo& g : plant.info().gpus) b.watts += g.max_cap_w;
  }
  if (!(b.watts > 0)) return Status::InvalidArgument("budget: no positive budget");
  return b;
}

Command safe_command(const AgentConfig& cfg, const PlantInfo& info, double node_w) {
  Command c;
  const double n = static_cast<double>(info.gpus.size());
  for (const GpuInfo& g : info.gpus) {
    double w = cfg.safe_cap_w;
    // The static safe share: the node budget split evenly, within the device's range.
    if (std::isnan(w)) w = node_w / std::max(1.0, n);
    c.power_cap_w.push_back(std::clamp(w, g.min_cap_w, g.max_cap_w));
  }
  for (const JobInfo& j : info.jobs) c.knobs.push_back(j.default_knobs);
  return c;
}

void AgentTick::log(const std::string& line) const {
  if (log_) {
    log_(line);
  } else {
    log_line(line);
  }
}

AgentTick::AgentTick(const AgentConfig& cfg, NodePlant& plant, CommandQueue& commands,
                     JobRegistry& jobs, BudgetFollower* fleet)
    : cfg_(cfg), plant_(plant), commands_(commands), jobs_(jobs), fleet_(fleet) {}

Status AgentTick::start(const Budget& b) {
  budget_.entries = {{0, b}};
  budget_state_.scope = std::string(scope_name(b.scope));
  budget_state_.source = "config";
  budget_state_.set_unix_s = unix_now_s();
  budget_state_.schedule = {{0, b.watts, b.window_s}};
  LoopConfig lc;
  lc.sample_period_s = cfg_.period_s;
  lc.history_s = std::max(300.0, 2 * cfg_.window_s);
  lc.open_ended = true;
  lc.track_metrics = false;  // windows: update_windows (a daemon's run has no end to judge)
  loop_ = std::make_unique<ControlLoop>(plant_, budget_, lc, cfg_.limiter);
  // Caps move only by the controller, the limiter or a restore, and only on GPUs a job runs
  // on; the fail-safe and the share guard are limits of the same chain (agent_stages.hpp).
  loop_->set_stages({&unlisted_stage_, &failsafe_stage_, &share_stage_});
  FW_RETURN_IF_ERROR(loop_->start());
  Status c = start_controller(cfg_.controller);
  if (!c.ok()) return Status(c.code(), "controller '" + cfg_.controller + "': " + c.message());
  return Status::Ok();
}

bool follows_fleet_plan(const std::string& spec) {
  auto p = parse_controller_spec(spec);
  return p.ok() && p->name == "plan" && p->positional == "fleet";
}

Result<std::unique_ptr<Controller>> AgentTick::registry_controller(const std::string& spec) {
  FW_ASSIGN_OR_RETURN(ControllerSpec parsed, parse_controller_spec(spec));
  FW_ASSIGN_OR_RETURN(
      registry::PreparedController prepared,
      registry::prepare_controller(
          parsed, agent_controller_env(cfg_, plant_, plant_.info(), budget_, fleet_)));
  return prepared.make(cfg_.plant.seed);
}

Status AgentTick::start_controller(const std::string& spec) {
  auto c = make_controller_ ? make_controller_(spec) : registry_controller(spec);
  if (!c.ok()) return c.status();
  std::unique_ptr<Controller> next = std::move(c).value();
  loop_->set_controllers({next.get()});
  Status s = loop_->reset_controllers();
  if (!s.ok()) {  // the composition is refused: the one in force stays
    if (controller_) {
      loop_->set_controllers({controller_.get()});
      (void)loop_->reset_controllers();
    } else {
      loop_->set_controllers({});
    }
    return s;
  }
  // The controller switched away from puts back the power smoothing it changed (no other
  // controller commands it; the caps are the next controller's to set).
  if (controller_) {
    Status r = plant_.restore_smoothing();
    if (!r.ok()) log("power smoothing restore on controller switch: " + r.message());
  }
  controller_ = std::move(next);
  controller_spec_ = spec;
  return Status::Ok();
}

void AgentTick::restart() {
  const LimiterStats& l = loop_->limiter().stats();
  limiter_base_["rejected"] += l.rejected;
  limiter_base_["clamped"] += l.clamped;
  limiter_base_["slew_limited"] += l.slew_limited;
  limiter_base_["dwell_held"] += l.dwell_held;
  limiter_base_["shield_steps"] += l.shield_steps;
  Status s = loop_->restart();  // the job set may have changed: controllers reset against it
  if (!s.ok()) log("episode restart: " + s.message());
  if (on_episode_) on_episode_(plant_.info(), budget_);
  episode_started_ = false;
}

std::map<std::string, int64_t> AgentTick::limiter_actions_total() const {
  const LimiterStats& l = loop_->limiter().stats();
  std::map<std::string, int64_t> out = {{"rejected", l.rejected},
                                        {"clamped", l.clamped},
                                        {"slew_limited", l.slew_limited},
                                        {"dwell_held", l.dwell_held},
                                        {"shield_steps", l.shield_steps}};
  for (auto& [k, v] : out) {
    auto it = limiter_base_.find(k);
    if (it != limiter_base_.end()) v += it->second;
  }
  return out;
}

void AgentTick::set_node_budget(double watts, const std::string& source, double t) {
  Budget nb;
  nb.watts = watts;
  nb.scope = BudgetScope::kNode;
  nb.window_s = budget_.at(t).window_s;
  budget_.entries = {{0, nb}};
  budget_state_.scope = std::string(scope_name(nb.scope));
  budget_state_.source = source;
  budget_state_.set_unix_s = unix_now_s();
  budget_state_.schedule = {{0, nb.watts, nb.window_s}};
  log("budget " + std::to_string(nb.watts) + " W by " + source);
  restart();
}

// Each tick: the coordinator's budget (or the fallback share) when it moved, as a PUT
// /v1/budget would (it overrides one).
void AgentTick::follow_fleet(double t) {
  if (!fleet_) return;
  FleetBudget now;
  now.watts = node_budget_w(t);
  now.source = budget_state_.source;
  now.pause = paused_;
  now.start_at_unix_s = start_at_unix_s_;
  now.stop_at_unix_s = stop_at_unix_s_;
  const std::vector<RegisteredJob> registered = jobs_.snapshot();  // one read per tick
  auto b = fleet_->follow(plant_, loop_->latest(), registered, now);
  if (b) {
    start_at_unix_s_ = b->start_at_unix_s;
    stop_at_unix_s_ = b->stop_at_unix_s;
  }
  if (b && b->pause != paused_) {
    // The jobs hear it through the channel (their knobs' answers: "pause"); the GPUs hold the
    // budget (the assignment's floor) as any other.
    paused_ = b->pause;
    log(std::string(paused_ ? "jobs paused" : "jobs resumed") + " by " + b->source);
    if (on_pause_) on_pause_(paused_);
  }
  for (const RegisteredJob& j : registered) {  // a job registered since included
    if (j.paused != paused_) jobs_.set_paused(j.id, paused_);
    if (j.start_at_unix_s != start_at_unix_s_) jobs_.set_start_at(j.id, start_at_unix_s_);
    if (j.stop_at_unix_s != stop_at_unix_s_) jobs_.set_stop_at(j.id, stop_at_unix_s_);
  }
  // A plan published through the coordinator changed: a `plan:fleet` controller is prepared
  // again on it (refused, e.g. the plan deleted or not for this plant: the one in force stays).
  if (const int64_t changes = fleet_->plan_changes(); changes != plan_changes_seen_) {
    plan_changes_seen_ = changes;
    if (follows_fleet_plan(controller_spec_)) {
      Status s = start_controller(controller_spec_);
      log(s.ok() ? "controller " + controller_spec_ + " prepared on the fleet's new plan"
                 : "controller " + controller_spec_ +
                       ": the fleet's plan changed, the one in force stays: " + s.message());
    }
  }
  const double now_w = node_budget_w(t);
  if (b && (b->source != budget_state_.source ||
            !(b->watts <= now_w + 0.5 && b->watts >= now_w - 1e-9))) {
    set_node_budget(b->watts, b->source, t);
  }
}

void AgentTick::apply_commands(double t) {
  for (AgentCommand& cmd : commands_.drain()) {
    if (auto* b = std::get_if<BudgetChange>(&cmd.what)) {
      BudgetScope scope = BudgetScope::kNode;
      scope_from_name(b->budget.scope, scope);
      BudgetSchedule next;
      for (const BudgetEntry& e : b->budget.schedule) {
        Budget bb{e.watts, scope, e.window_s};
        next.entries.push_back({next.entries.empty() ? 0.0 : t + e.after_s, bb});
      }
      if (next.entries.empty()) continue;
      budget_ = next;
      budget_state_ = b->budget;
      budget_state_.set_unix_s = cmd.time_unix_s;
      log("budget " + std::to_string(budget_.entries.front().budget.watts) + " W by " + cmd.who);
      restart();  // the limiter and observations judge the new budget from here
    } else if (auto* c = std::get_if<ControllerChange>(&cmd.what)) {
      Status s = start_controller(c->spec);
      log(s.ok() ? "controller " + c->spec + " by " + cmd.who
                 : "controller " + c->spec + " refused: " + s.message());
    }
    applied_seq_ = cmd.seq;
  }
}

FallbackReason AgentTick::check_failsafe(double t, const Status& read_status) const {
  const double stale_s = std::isnan(cfg_.stale_after_s) ? cfg_.period_s : cfg_.stale_after_s;
  if (!read_status.ok()) {
    if (t - last_good_read_s_ >= stale_s - 1e-9 || !episode_started_) {
      return FallbackReason::kStaleTelemetry;
    }
  }
  if (cfg_.job_silent_after_s > 0) {
    for (size_t j = 0; j < plant_.info().jobs.size(); ++j) {
      const double age = plant_.job_report_age_s(j);
      if (!std::isnan(age) && age > cfg_.job_silent_after_s) {
        return FallbackReason::kJobChannelSilent;
      }
    }
  }
  // A knob controller with no job exposing its knobs would leave the node's power to itself.
  if (controller_ && !controller_can_act()) return FallbackReason::kNoActuator;
  return FallbackReason::kNone;
}

bool AgentTick::controller_can_act() const {
  const ActuatorSet claims = controller_->claims();
  if (claims.test(kCapActuator)) return true;
  // A controller that claims no row of kActuatorTable commands only the unclaimable per-GPU
  // settings (kGpuSettingTable: stabilize's power smoothing): it acts where the plant applies
  // them (the registry refused it elsewhere).
  if (claims.none()) return plant_.smoothing_support().ok();
  for (const JobInfo& j : plant_.info().jobs) {
    for (int k = 0; k < kNumKnobs; ++k) {
      if (claims.test(static_cast<size_t>(k)) && j.knob_ranges[k].available) return true;
    }
  }
  return false;
}

double AgentTick::node_budget_w(double t) const {
  const Budget& b = budget_.at(t);
  if (b.scope == BudgetScope::kGpu) return b.watts * static_cast<double>(plant_.info().gpus.size());
  return b.watts;
}

double AgentTick::trailing_mean_w() const {
  if (trailing_.empty()) return kUnset;
  const TrailingSample& a = trailing_.front();
  const TrailingSample& b = trailing_.back();
  if (std::isfinite(a.energy_j) && std::isfinite(b.energy_j) && a.gpus == b.gpus && b.t > a.t &&
      b.energy_j >= a.energy_j) {
    return (b.energy_j - a.energy_j) / (b.t - a.t);
  }
  double sum = 0;
  for (const TrailingSample& p : trailing_) sum += p.power_w;
  return sum / static_cast<double>(trailing_.size());
}

// Tumbling windows of samples_per_window(window_s, period_s) ticks, as eval's WindowJudge
// counts them. Where every GPU reports an energy counter, a window's mean is the node energy
// between its first tick and the next window's first tick over that span (exact); else the
// mean of its power samples. A counter that goes backwards or a GPU set that changes restarts
// the window unjudged.
void AgentTick::update_windows(double t, double node_w, double node_j) {
  if (std::isnan(node_w)) return;
  const double win = budget_.at(t).window_s;
  const size_t gpus = loop_->latest().gpus.size();
  trailing_.push_back({t, node_w, node_j, gpus});
  while (!trailing_.empty() && trailing_.front().t < t - win - 1e-9) trailing_.pop_front();
  const int64_t n = WindowJudge::samples_per_window(win, cfg_.period_s);
  if (win != judged_window_s_) {
    tumbling_.reset(WindowJudge::Rule::kTumbling, 1, n);
    judged_window_s_ = win;
    window_samples_ = 0;
  }
  const bool energy = std::isfinite(node_j);
  if (energy != energy_window_ || gpus != window_gpus_ ||
      (energy && std::isfinite(window_start_j_) && node_j < window_start_j_)) {
    energy_window_ = energy;  // the source changed: start a window here
    window_gpus_ = gpus;
    window_start_s_ = t;
    window_start_j_ = node_j;
    window_samples_ = 0;
    tumbling_.reset(WindowJudge::Rule::kTumbling, 1, n);
  }
  if (energy) {
    if (window_samples_ >= n && t > window_start_s_) {
      ++windows_total_;
      const double mean_w = (node_j - window_start_j_) / (t - window_start_s_);
      if (mean_w > node_budget_w(t)) ++violations_total_;
      window_start_s_ = t;
      window_start_j_ = node_j;
      window_samples_ = 0;
    }
    ++window_samples_;
    return;
  }
  tumbling_.set(0, node_w / node_budget_w(t));
  if (tumbling_.advance()) {
    ++windows_total_;
    if (tumbling_.mean(0) > 1.0) ++violations_total_;
  }
}

void AgentTick::note_write_failure(double t, const Status& w) {
  ++write_failures_unlogged_;
  if (!std::isnan(write_logged_s_) && t - write_logged_s_ < kWriteLogInterval_s) return;
  std::string line = "write failed: " + w.message();
  if (std::isnan(write_logged_s_)) {
    line +=
        " (failed writes are counted in flexwatt_gpu_cap_write_failures_total and logged at "
        "most once a minute)";
  } else {
    line +=
        " (" + std::to_string(write_failures_unlogged_) + " failed writes since the last message)";
  }
  log(line);
  write_logged_s_ = t;
  write_failures_unlogged_ = 0;
}

void AgentTick::tick(double t) {
  apply_commands(t);
  follow_fleet(t);
  if (plant_.refresh_jobs()) {
    log("job set changed: " + std::to_string(plant_.info().jobs.size()) + " jobs");
    restart();
  }
  const Status read = loop_->sense();
  if (read.ok()) {
    last_good_read_s_ = t;
    episode_started_ = true;
  } else {
    log("read: " + read.message());
  }
  FallbackReason reason = check_failsafe(t, read);
  bool decided = false;
  if (reason == FallbackReason::kNone && read.ok() && controller_) {
    Result<bool> d = loop_->decide();
    if (d.ok()) {
      decided = d.value();
    } else {
      reason = FallbackReason::kControllerError;
      if (fallback_ != reason) log(controller_spec_ + ": " + d.status().message());
    }
  }
  bool fallback_ended = false;
  if (reason != FallbackReason::kNone) {
    if (reason != fallback_) {
      ++fallbacks_total_[reason];
      log("fallback to the safe setting: " + std::string(fallback_name(reason)));
    }
    fallback_ = reason;
  } else if (fallback_ != FallbackReason::kNone) {
    // The cause cleared: restart the episode so the limiter starts from the caps in force
    // (the safe setting); the controllers decide from the next tick.
    log("fallback over (" + std::string(fallback_name(fallback_)) + ")");
    fallback_ = FallbackReason::kNone;
    restart();
    fallback_ended = true;
  }
  // The limit chain (agent_stages.hpp), then the limiter and the write, by eval's write rule.
  failsafe_stage_.active = fallback_ != FallbackReason::kNone;
  if (failsafe_stage_.active)
    failsafe_stage_.safe = safe_command(cfg_, plant_.info(), node_budget_w(t));
  share_stage_.active = fleet_ != nullptr && read.ok();
  share_stage_.share_w = node_budget_w(t);
  // No write before the episode's first good read (nothing known to limit against: the
  // fail-safe is in force then), none in the tick a fallback ends (the controllers decide from
  // the next), none when read-only.
  if (!cfg_.read_only && !fallback_ended && episode_started_) {
    Status w = loop_->limit_and_act(decided);
    if (!w.ok()) note_write_failure(t, w);
  }
  double node_w = 0, node_j = 0;
  const std::vector<NodeGpu>& ids = plant_.node_gpus();
  const std::vector<GpuReading>& gpus = loop_->latest().gpus;
  for (size_t g = 0; g < gpus.size(); ++g) {
    node_w += gpus[g].power_w;
    // NaN unless every GPU has an energy counter
    node_j += g < ids.size() && ids[g].energy_counter ? gpus[g].energy_j : kUnset;
  }
  if (read.ok()) update_windows(t, node_w, node_j);
}

}  // namespace fw::agent
