#include "agent/node_agent.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "agent/commands.hpp"
#include "agent/fallback_reason.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/job_registry.hpp"
#include "agent/registry_channel.hpp"
#include "agent/server.hpp"
#include "agent/state_hub.hpp"
#include "control/stepper.hpp"
#include "control/window_judge.hpp"
#include "controllers/registry/controller_registry.hpp"
#include "core/format.hpp"
#include "core/version.hpp"
#include "fleet/node_link.hpp"
#include "runtime/node_lock.hpp"
#include "runtime/node_plant.hpp"
#include "runtime/restore_file.hpp"
#include "runtime/sd_notify.hpp"
#include "runtime/thread_priority.hpp"
#include "runtime/tick_loop.hpp"

namespace fw::agent {
namespace {

// First calibration seed of calibrated controllers (static): eval's for its default seeds.
constexpr uint64_t kCalibrationSeed = 1000001;

void log_line(const std::string& msg) { std::fprintf(stderr, "flexwatt agent: %s\n", msg.c_str()); }

// A restore file that cannot be read (truncated by a crash mid-write, edited by hand): the caps
// it saved are unknown, so neither a start nor --restore can go on by themselves. Names the way
// out; an I/O error (not a corrupt file) is returned as it is.
Status corrupt_restore_file_status(const Status& s) {
  if (s.code() != StatusCode::kInvalidArgument) return s;
  return Status::InvalidArgument(
      s.message() +
      "; the caps it saved are unknown. Check the GPUs' caps (nvidia-smi -q -d POWER), then run "
      "`flexwatt agent --config <this config> --restore --to-default` to set every managed GPU "
      "to its default power limit and remove the file");
}

// The highest N of the seg-N directories in `dir` (0 when none).
int last_trace_segment(const std::string& dir) {
  int last = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 10 || name.rfind("seg-", 0) != 0) continue;
    if (name.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    last = std::max(last, std::stoi(name.substr(4)));
  }
  return last;
}

}  // namespace

struct NodeAgent::Impl {
  explicit Impl(AgentConfig c) : cfg(std::move(c)), channel(jobs) {}

  AgentConfig cfg;
  ControllerMaker make_controller;
  std::unique_ptr<NodeLock> lock;
  JobRegistry jobs;
  RegistryChannel channel;
  StateHub hub;
  CommandQueue commands;
  std::unique_ptr<AgentServer> server;
  std::unique_ptr<NodePlant> plant;
  std::unique_ptr<Stepper> stepper;
  BudgetSchedule budget;
  BudgetState budget_state;
  std::unique_ptr<Controller> controller;
  std::string controller_spec;
  int64_t next_decision_tick = 0;
  bool saved = false, restored = false;
  // Fail-safe state.
  FallbackReason fallback = FallbackReason::kNone;
  std::map<FallbackReason, int64_t> fallbacks_total;
  double last_good_read_s = 0;
  bool episode_started = false;
  // Windows: trailing samples of node power over the budget window (the status' mean), and
  // the tumbling judgement of node power over the budget in force by the one window rule
  // (control/window_judge.hpp, as EpisodeMetrics judges an episode), restarted when the
  // window length changes.
  std::deque<std::pair<double, double>> trailing;
  WindowJudge tumbling;
  double judged_window_s = kUnset;
  int64_t violations_total = 0;
  LoopState loop_state;
  std::map<std::string, int64_t> limiter_base;
  int64_t write_failures = 0;
  uint64_t applied_seq = 0;
  // Trace rotation.
  std::unique_ptr<Recorder> recorder;
  int64_t recorder_ticks = 0;
  int segment = 0;
  // Closes the finished segment (flush, meta.json) and deletes the oldest one off the loop
  // thread, so a rotation costs the loop only the new segment's creation.
  std::thread trace_closer;
  std::string hostname;
  // What PUT /v1/controller validates against (HTTP threads): copied by the loop.
  std::mutex env_mu;
  PlantInfo env_info;
  BudgetSchedule env_budget;
  // Fleet (cfg.fleet enabled): the link to the coordinator, and this node's name there.
  std::unique_ptr<fleet::NodeLink> link;
  std::string fleet_node;

  Status open_plant_and_restore();
  Status start_fleet();
  void follow_fleet(double t);
  Status setup_budget();
  Status start_controller(const std::string& spec);
  void begin_episode();
  void apply_commands(double t);
  void tick(double t);
  Command safe_command() const;
  FallbackReason check_failsafe(double t, const Status& read_status);
  bool controller_can_act() const;
  void drop_unlisted_gpus(Command& request) const;
  void update_windows(double t, double node_w);
  double node_budget_w(double t) const;  // the budget in force, summed over the node
  void publish(double t);
  Status restore_caps();  // once; keeps the restore file when it fails
  void rotate_trace();
  Result<std::unique_ptr<Controller>> registry_controller(const std::string& spec);
  // What a controller is prepared against: this node's plant `info` and budget `b`. Safe from
  // any thread (reads only what open() fixed).
  registry::ControllerEnv controller_env(const PlantInfo& info, const BudgetSchedule& b) const;
};

NodeAgent::NodeAgent(AgentConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) impl_->hostname = buf;
}

NodeAgent::~NodeAgent() {
  if (impl_->saved && !impl_->restored) (void)shutdown();  // logged; the file stays
  if (impl_->server) impl_->server->stop();
  if (impl_->trace_closer.joinable()) impl_->trace_closer.join();
}

void NodeAgent::set_controller_maker(ControllerMaker m) { impl_->make_controller = std::move(m); }

StateHub& NodeAgent::hub() { return impl_->hub; }
CommandQueue& NodeAgent::commands() { return impl_->commands; }
JobRegistry& NodeAgent::jobs() { return impl_->jobs; }

int NodeAgent::tcp_port() const { return impl_->server ? impl_->server->tcp_port() : -1; }

Status NodeAgent::Impl::open_plant_and_restore() {
  auto p = NodePlant::open(cfg.plant, &channel);
  if (!p.ok()) return p.status();
  plant = std::move(p).value();
  if (cfg.read_only) return Status::Ok();  // nothing will be written: nothing to save
  auto leftover = read_restore_file(cfg.restore_file);
  if (!leftover.ok()) return corrupt_restore_file_status(leftover.status());
  if (leftover.value()) {
    const RestoreRecord& r = *leftover.value();
    log_line("restore file " + cfg.restore_file + " left by pid " + std::to_string(r.pid) +
             " (unclean exit): restoring " + std::to_string(r.caps.size()) + " caps");
    Status s = fw::restore_caps(plant->caps(), r.caps);
    if (!s.ok()) return Status(s.code(), "restoring the caps of the previous run: " + s.message());
    FW_RETURN_IF_ERROR(remove_restore_file(cfg.restore_file));
  }
  // Save before any write: the caps found now are what every exit path puts back, and what
  // GPUs no controller sets are held at.
  FW_RETURN_IF_ERROR(plant->caps().save());
  plant->adopt_caps_in_force();
  RestoreRecord rec{static_cast<int>(::getpid()), cfg.plant.backend, unix_now_s(),
                    plant->caps().saved()};
  FW_RETURN_IF_ERROR(write_restore_file(cfg.restore_file, rec));
  saved = true;
  return Status::Ok();
}

Status NodeAgent::Impl::setup_budget() {
  Budget b;
  b.window_s = std::isnan(cfg.window_s) ? 30.0 : cfg.window_s;
  if (!std::isnan(cfg.budget_w)) {
    b.watts = cfg.budget_w;
  } else if (cfg.fleet.enabled()) {
    b.watts = cfg.fleet.safe_share_w;  // until the first assignment
  } else if (!plant->scenario_budget().entries.empty()) {
    b = plant->scenario_budget().entries.front().budget;
    b.window_s = std::isnan(cfg.window_s) ? b.window_s : cfg.window_s;
  } else {
    b.watts = 0;
    for (const GpuInfo& g : plant->info().gpus) b.watts += g.max_cap_w;
  }
  budget.entries = {{0, b}};
  budget_state.scope = std::string(scope_name(b.scope));
  budget_state.source = "config";
  budget_state.set_unix_s = unix_now_s();
  budget_state.schedule = {{0, b.watts, b.window_s}};
  return b.watts > 0 ? Status::Ok() : Status::InvalidArgument("budget: no positive budget");
}

Result<std::unique_ptr<Controller>> NodeAgent::Impl::registry_controller(const std::string& spec) {
  FW_ASSIGN_OR_RETURN(ControllerSpec parsed, parse_controller_spec(spec));
  FW_ASSIGN_OR_RETURN(registry::PreparedController prepared,
                      registry::prepare_controller(parsed, controller_env(plant->info(), budget)));
  return prepared.make(cfg.plant.seed);
}

registry::ControllerEnv NodeAgent::Impl::controller_env(const PlantInfo& info,
                                                        const BudgetSchedule& b) const {
  registry::ControllerEnv env;
  env.info = info;
  env.budget = b;
  env.sample_period_s = cfg.period_s;
  // sim: calibrate as `eval` does (the scenario's episode length, eval's calibration seeds for
  // its default evaluation seeds), so the agent runs eval's episode for the same seed.
  env.duration_s = std::isnan(plant->scenario_duration_s()) ? 600 : plant->scenario_duration_s();
  env.make_plant = plant->sim_factory();
  env.real_plant = !env.make_plant;
  env.policy_dirs = cfg.policy_dirs;  // ppo:PATH and the like: only files inside them
  env.calibration_seeds = {kCalibrationSeed, kCalibrationSeed + 1};
  env.limiter = cfg.limiter;
  if (env.real_plant) {
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

Status NodeAgent::Impl::start_controller(const std::string& spec) {
  auto c = make_controller ? make_controller(spec) : registry_controller(spec);
  if (!c.ok()) return c.status();
  controller = std::move(c).value();
  controller->reset(plant->info());
  controller_spec = spec;
  next_decision_tick = stepper ? stepper->tick() : 0;
  return Status::Ok();
}

Status NodeAgent::start() {
  Impl& m = *impl_;
  for (const std::string& f : {m.cfg.lock_file, m.cfg.restore_file}) {
    std::error_code ec;  // a missing /run/flexwatt is created; a failure shows up just below
    std::filesystem::create_directories(std::filesystem::path(f).parent_path(), ec);
  }
  auto lock = NodeLock::acquire(m.cfg.lock_file);
  if (!lock.ok()) return lock.status();
  m.lock = std::move(lock).value();
  FW_RETURN_IF_ERROR(m.open_plant_and_restore());
  FW_RETURN_IF_ERROR(m.setup_budget());
  FW_RETURN_IF_ERROR(m.start_fleet());
  m.stepper =
      std::make_unique<Stepper>(m.cfg.period_s, std::max(300.0, 2 * m.cfg.window_s), m.cfg.limiter);
  Status c = m.start_controller(m.cfg.controller);
  if (!c.ok()) return Status(c.code(), "controller '" + m.cfg.controller + "': " + c.message());
  m.env_info = m.plant->info();
  m.env_budget = m.budget;
  if (!m.plant->simulated()) {  // sim: channel jobs mirror the scenario's, whatever they list
    std::vector<int> indices;
    for (const NodeGpu& g : m.plant->node_gpus()) indices.push_back(g.index);
    m.jobs.set_gpu_indices(std::move(indices));
  }
  // Following a coordinator, an agent without tokens refuses writes unless told otherwise.
  if (m.cfg.fleet.enabled() && m.cfg.server.token_file.empty() &&
      !m.cfg.fleet.allow_unauthenticated_writes) {
    m.cfg.server.anonymous_read_only = true;
  }
  m.server = std::make_unique<AgentServer>(m.cfg.server, m.hub, m.commands, m.jobs);
  m.server->set_controller_validator([&m](const std::string& spec) -> Status {
    auto p = parse_controller_spec(spec);
    if (!p.ok()) return p.status();
    if (m.make_controller) return Status::Ok();
    PlantInfo info;
    BudgetSchedule budget;
    {
      std::lock_guard<std::mutex> lock(m.env_mu);
      info = m.env_info;
      budget = m.env_budget;
    }
    return registry::prepare_controller(p.value(), m.controller_env(info, budget)).status();
  });
  FW_RETURN_IF_ERROR(m.server->start());
  if (!m.cfg.trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(m.cfg.trace_dir, ec);
    m.segment = last_trace_segment(m.cfg.trace_dir);  // a restart continues, never overwrites
    m.rotate_trace();
  }
  m.publish(0);
  return Status::Ok();
}

void NodeAgent::Impl::rotate_trace() {
  std::unique_ptr<Recorder> done = std::move(recorder);
  const nlohmann::json meta = {{"producer", "flexwatt agent"},
                               {"controller", controller_spec},
                               {"backend", cfg.plant.backend}};
  char name[32];
  std::snprintf(name, sizeof name, "seg-%06d", ++segment);
  auto r = Recorder::create(cfg.trace_dir + "/" + name, TraceWriterOptions::real_time());
  if (r.ok()) {
    recorder = std::move(r).value();
  } else {
    log_line("trace: " + r.status().message());
  }
  recorder_ticks = 0;
  std::string doomed;
  if (segment > cfg.trace_keep) {
    std::snprintf(name, sizeof name, "seg-%06d", segment - cfg.trace_keep);
    doomed = cfg.trace_dir + "/" + name;
  }
  if (trace_closer.joinable()) trace_closer.join();  // the previous rotation's: long done
  trace_closer = std::thread([done = std::move(done), meta, doomed] {
    if (done) {
      Status s = done->close(meta);
      if (!s.ok()) log_line("trace: " + s.message());
    }
    std::error_code ec;
    if (!doomed.empty()) std::filesystem::remove_all(doomed, ec);
  });
}

void NodeAgent::Impl::begin_episode() {
  const LimiterStats& l = stepper->limiter().stats();
  limiter_base["rejected"] += l.rejected;
  limiter_base["clamped"] += l.clamped;
  limiter_base["slew_limited"] += l.slew_limited;
  limiter_base["dwell_held"] += l.dwell_held;
  limiter_base["shield_steps"] += l.shield_steps;
  int64_t tick = stepper->tick();
  stepper->begin(*plant, &budget, 0, tick);
  stepper->set_recorder(recorder.get());
  if (controller) controller->reset(plant->info());  // the job set may have changed
  {
    std::lock_guard<std::mutex> lock(env_mu);
    env_info = plant->info();
    env_budget = budget;
  }
  episode_started = false;
  next_decision_tick = tick;
}

Command NodeAgent::Impl::safe_command() const {
  Command c;
  const PlantInfo& info = plant->info();
  const double n = static_cast<double>(info.gpus.size());
  for (const GpuInfo& g : info.gpus) {
    double w = cfg.safe_cap_w;
    // The static safe share: the node budget split evenly, within the device's range.
    if (std::isnan(w)) w = node_budget_w(stepper->time_s()) / std::max(1.0, n);
    c.power_cap_w.push_back(std::clamp(w, g.min_cap_w, g.max_cap_w));
  }
  for (const JobInfo& j : info.jobs) c.knobs.push_back(j.default_knobs);
  return c;
}

}  // namespace fw::agent

namespace fw::agent {

Status NodeAgent::Impl::start_fleet() {
  if (!cfg.fleet.enabled()) return Status::Ok();
  fleet_node = cfg.fleet.node.empty() ? hostname : cfg.fleet.node;
  fleet::EtcdClientOptions etcd;
  etcd.endpoints = cfg.fleet.etcd;
  fleet::NodeLinkOptions o;
  o.site = cfg.fleet.site;
  o.node = fleet_node;
  o.safe_share_w = cfg.fleet.safe_share_w;
  o.lease_ttl_s = cfg.fleet.lease_ttl_s;
  auto l =
      fleet::NodeLink::Start(etcd, o, fleet_record(fleet_node, plant->info(), {}, unix_now_s()));
  if (!l.ok()) return Status(l.status().code(), "fleet: " + l.status().message());
  link = std::move(l).value();
  log_line("fleet: node " + fleet_node + " of site " + o.site);
  return Status::Ok();
}

// Each tick: report the node, and take the coordinator's budget (or the fallback share) when
// it moved by more than 0.5 W, as a PUT /v1/budget would (it overrides one).
void NodeAgent::Impl::follow_fleet(double t) {
  if (!link) return;
  // Each plant job's PFI, as its channel job declared or a sweep measured it (finite only).
  std::map<std::string, double> job_pfi;
  const std::vector<RegisteredJob> registered = jobs.snapshot();
  for (size_t j = 0; j < plant->info().jobs.size(); ++j) {
    for (const RegisteredJob& js : registered) {
      if (js.id == plant->job_id(j) && std::isfinite(js.pfi)) {
        job_pfi[plant->info().jobs[j].name] = js.pfi;
      }
    }
  }
  link->update(fleet_record(fleet_node, plant->info(), stepper->latest(), unix_now_s(), job_pfi));
  const fleet::NodeBudget b = link->budget();
  // Below the floor (a 0 W target): the floor, every GPU at its minimum cap. A lower budget is
  // taken at once; a raise waits until it is above 0.5 W (the only deadband).
  const double watts = std::max(b.watts, node_floor_w(plant->info()));
  const std::string source = b.source == fleet::NodeBudget::Source::kAssignment ? "coordinator"
                             : b.awaiting_first ? "coordinator_awaiting_assignment"
                                                : "coordinator_safe_share";
  const double now_w = node_budget_w(t);
  if (source == budget_state.source && watts <= now_w + 0.5 && watts >= now_w - 1e-9) return;
  Budget nb;
  nb.watts = watts;
  nb.scope = BudgetScope::kNode;
  nb.window_s = budget.at(t).window_s;
  budget.entries = {{0, nb}};
  budget_state.scope = std::string(scope_name(nb.scope));
  budget_state.source = source;
  budget_state.set_unix_s = unix_now_s();
  budget_state.schedule = {{0, nb.watts, nb.window_s}};
  log_line("budget " + std::to_string(nb.watts) + " W by " + budget_state.source);
  begin_episode();
}

void NodeAgent::Impl::apply_commands(double t) {
  for (AgentCommand& cmd : commands.drain()) {
    if (auto* b = std::get_if<BudgetChange>(&cmd.what)) {
      BudgetScope scope = BudgetScope::kNode;
      scope_from_name(b->budget.scope, scope);
      BudgetSchedule next;
      for (const BudgetEntry& e : b->budget.schedule) {
        Budget bb{e.watts, scope, e.window_s};
        next.entries.push_back({next.entries.empty() ? 0.0 : t + e.after_s, bb});
      }
      if (next.entries.empty()) continue;
      budget = next;
      budget_state = b->budget;
      budget_state.set_unix_s = cmd.time_unix_s;
      log_line("budget " + std::to_string(budget.entries.front().budget.watts) + " W by " +
               cmd.who);
      begin_episode();  // the limiter and observations judge the new budget from here
    } else if (auto* c = std::get_if<ControllerChange>(&cmd.what)) {
      Status s = start_controller(c->spec);
      log_line(s.ok() ? "controller " + c->spec + " by " + cmd.who
                      : "controller " + c->spec + " refused: " + s.message());
    }
    applied_seq = cmd.seq;
  }
}

}  // namespace fw::agent

namespace fw::agent {

FallbackReason NodeAgent::Impl::check_failsafe(double t, const Status& read_status) {
  const double stale_s = std::isnan(cfg.stale_after_s) ? cfg.period_s : cfg.stale_after_s;
  if (!read_status.ok()) {
    if (t - last_good_read_s >= stale_s - 1e-9 || !episode_started) {
      return FallbackReason::kStaleTelemetry;
    }
  }
  if (cfg.job_silent_after_s > 0) {
    for (size_t j = 0; j < plant->info().jobs.size(); ++j) {
      double age = plant->job_report_age_s(j);
      if (!std::isnan(age) && age > cfg.job_silent_after_s) {
        return FallbackReason::kJobChannelSilent;
      }
    }
  }
  // A knob controller with no job exposing its knobs would leave the node's power to itself.
  if (controller && !controller_can_act()) return FallbackReason::kNoActuator;
  return FallbackReason::kNone;
}

bool NodeAgent::Impl::controller_can_act() const {
  const ActuatorSet claims = controller->claims();
  if (claims.test(kCapActuator)) return true;
  for (const JobInfo& j : plant->info().jobs) {
    for (int k = 0; k < kNumKnobs; ++k) {
      if (claims.test(static_cast<size_t>(k)) && j.knob_ranges[k].available) return true;
    }
  }
  return false;
}

// Caps move only by the controller, the limiter or a restore, and only on GPUs a job runs on:
// a GPU no job lists keeps the cap in force (the controller's last, or the one found).
void NodeAgent::Impl::drop_unlisted_gpus(Command& request) const {
  const PlantInfo& info = plant->info();
  for (size_t g = 0; g < request.power_cap_w.size(); ++g) {
    bool listed = false;
    for (const JobInfo& j : info.jobs) {
      listed =
          listed || std::find(j.gpus.begin(), j.gpus.end(), static_cast<int>(g)) != j.gpus.end();
    }
    if (!listed) request.power_cap_w[g] = kUnset;
  }
}

double NodeAgent::Impl::node_budget_w(double t) const {
  const Budget& b = budget.at(t);
  if (b.scope == BudgetScope::kGpu) return b.watts * static_cast<double>(plant->info().gpus.size());
  return b.watts;
}

void NodeAgent::Impl::update_windows(double t, double node_w) {
  if (std::isnan(node_w)) return;
  const double win = budget.at(t).window_s;
  trailing.emplace_back(t, node_w);
  while (!trailing.empty() && trailing.front().first <= t - win) trailing.pop_front();
  if (win != judged_window_s) {
    tumbling.reset(WindowJudge::Rule::kTumbling, 1,
                   WindowJudge::samples_per_window(win, cfg.period_s));
    judged_window_s = win;
  }
  tumbling.set(0, node_w / node_budget_w(t));
  if (tumbling.advance() && tumbling.mean(0) > 1.0) ++violations_total;
}

void NodeAgent::Impl::tick(double t) {
  apply_commands(t);
  follow_fleet(t);
  if (plant->refresh_jobs()) {
    log_line("job set changed: " + std::to_string(plant->info().jobs.size()) + " jobs");
    begin_episode();
  }
  Status read = stepper->sense();
  if (read.ok()) {
    last_good_read_s = t;
    episode_started = true;
  } else {
    log_line("read: " + read.message());
  }
  FallbackReason reason = check_failsafe(t, read);
  Command request;
  bool decide = false;
  if (reason == FallbackReason::kNone && read.ok() && controller &&
      stepper->tick() >= next_decision_tick) {
    try {
      request = controller->update(stepper->observation());
      decide = true;
    } catch (const std::exception& e) {
      reason = FallbackReason::kControllerError;
      if (fallback != reason) {  // logged once per fallback, not every retry
        log_line(std::string("controller ") + controller_spec + " failed: " + e.what());
      }
    }
    next_decision_tick = stepper->tick() + ticks_per_period(controller->period_s(), cfg.period_s);
  }
  if (reason != FallbackReason::kNone) {
    if (reason != fallback) {
      ++fallbacks_total[reason];
      log_line("fallback to the safe setting: " + std::string(fallback_name(reason)));
    }
    fallback = reason;
    next_decision_tick = stepper->tick();  // decide again as soon as the cause clears
    if (episode_started && !cfg.read_only) {
      Status w = plant->write(safe_command());
      if (!w.ok()) ++write_failures;
    }
  } else if (fallback != FallbackReason::kNone) {
    // The cause cleared: restart the episode so the limiter starts from the caps in force
    // (the safe setting), and decide from the next tick.
    log_line("fallback over (" + std::string(fallback_name(fallback)) + ")");
    fallback = FallbackReason::kNone;
    begin_episode();
    next_decision_tick = stepper->tick() + 1;
  } else {
    // Following a coordinator, caps never sum above the node's share (share guard), checked
    // every tick so a lowered share is in force before the controller's next decision.
    if (link && read.ok() && !cfg.read_only &&
        clamp_caps_to_share(request, plant->info(), stepper->latest(), node_budget_w(t))) {
      decide = true;
    }
    if (decide && !cfg.read_only) {
      drop_unlisted_gpus(request);
      Status w = stepper->act(request);
      if (!w.ok()) {
        ++write_failures;
        log_line("write: " + w.message());
      }
    }
  }
  double node_w = 0;
  for (const GpuReading& g : stepper->latest().gpus) node_w += g.power_w;
  if (read.ok()) update_windows(t, node_w);
}

}  // namespace fw::agent

namespace fw::agent {

void NodeAgent::Impl::publish(double t) {
  AgentState s;
  s.time_unix_s = unix_now_s();
  s.hostname = hostname;
  s.controller = controller_spec;
  s.read_only = cfg.read_only;
  const Snapshot& snap = stepper ? stepper->latest() : Snapshot{};
  double node_w = 0;
  bool any = false;
  const auto& ids = plant->node_gpus();
  for (size_t g = 0; g < ids.size(); ++g) {
    GpuState gs;
    gs.index = ids[g].index;
    gs.uuid = ids[g].uuid;
    gs.name = ids[g].name;
    CapConstraints c = plant->caps().constraints(plant->caps().gpus()[g]);
    gs.cap_min_w = c.min_w;
    gs.cap_max_w = c.max_w;
    gs.cap_default_w = c.default_w;
    if (g < snap.gpus.size()) {
      const GpuReading& r = snap.gpus[g];
      gs.power_w = r.power_w;
      gs.energy_j = r.energy_j;
      gs.cap_w = r.cap_w;
      gs.sm_clock_mhz = r.sm_clock_mhz;
      gs.sm_util = r.sm_util;
      gs.mem_util = r.mem_util;
      gs.temp_c = r.temp_c;
      gs.clock_event_reasons = plant->clock_event_reasons(g);
      if (!std::isnan(r.power_w)) {
        node_w += r.power_w;
        any = true;
      }
    }
    s.gpus.push_back(gs);
  }
  s.node_power_w = any ? node_w : kUnset;
  s.budget = budget_state;
  const Budget& now = budget.at(t);
  s.budget.watts = now.watts;
  s.budget.window_s = now.window_s;
  WindowState w;
  w.window_s = now.window_s;
  if (!trailing.empty()) {
    double sum = 0;
    for (const auto& p : trailing) sum += p.second;
    w.mean_w = sum / static_cast<double>(trailing.size());
  }
  w.violations_total = violations_total;
  s.windows.push_back(w);
  if (stepper) {
    const LimiterStats& l = stepper->limiter().stats();
    s.limiter_actions_total = {{"rejected", l.rejected},
                               {"clamped", l.clamped},
                               {"slew_limited", l.slew_limited},
                               {"dwell_held", l.dwell_held},
                               {"shield_steps", l.shield_steps}};
    // The limiter restarts with each episode; keep the counters monotonic over the run.
    for (auto& [k, v] : s.limiter_actions_total) v += limiter_base[k];
  }
  for (FallbackReason r : kFallbackReasons) {
    auto it = fallbacks_total.find(r);
    s.fallbacks_total[std::string(fallback_name(r))] = it == fallbacks_total.end() ? 0 : it->second;
  }
  s.fallback_reason = std::string(fallback_name(fallback));
  s.loop = loop_state;
  s.jobs = jobs.snapshot();
  if (plant->simulated()) {
    // sim: a registered job mirrors simulated job j, and its progress is the simulated job's
    // (the client's reports keep it alive), so throughput follows the caps as on hardware.
    for (size_t j = 0; j < snap.jobs.size(); ++j) {
      for (RegisteredJob& js : s.jobs) {
        if (js.id != plant->job_id(j)) continue;
        js.tokens_total = snap.jobs[j].tokens_total;
        js.steps_total = snap.jobs[j].steps_total;
      }
    }
  }
  s.applied_command_seq = applied_seq;
  hub.publish(std::move(s));
}

AgentRunSummary NodeAgent::run(Clock& clock, const std::function<bool()>& stop_requested) {
  Impl& m = *impl_;
  AgentRunSummary sum;
  int64_t planned = m.cfg.duration_s > 0 ? TickSchedule::ticks_in(m.cfg.duration_s, m.cfg.period_s)
                                         : INT64_MAX / 2;
  // sim time_scale: the loop runs on simulated seconds (a stop is still seen within 50 ms).
  const double scale = m.cfg.plant.time_scale;
  ScaledClock scaled(clock, scale);
  Clock& loop_clock = scale == 1 ? clock : scaled;
  TickLoop loop(loop_clock, m.cfg.period_s, planned, stop_requested, 0.05 * scale);
  const double wd_s = sd_watchdog_interval_s();
  double last_wd = -1e9;
  if (m.cfg.loop_priority > 0) {
    Status rt = set_thread_realtime(m.cfg.loop_priority);
    log_line(rt.ok() ? "loop thread at SCHED_RR priority " + std::to_string(m.cfg.loop_priority)
                     : "loop thread stays at normal priority: " + rt.message());
  }
  sd_notify_send("READY=1\nSTATUS=controlling " + m.cfg.plant.backend);
  m.begin_episode();
  int64_t missed_seen = 0;
  // One tick at the stepper's time, taken at loop time now_s.
  auto take_tick = [&m](double now_s) {
    const double t = m.stepper->time_s();
    const double late = std::max(0.0, now_s - t);
    m.loop_state.period_s = m.cfg.period_s;
    ++m.loop_state.ticks_total;
    if (late > 0.25 * m.cfg.period_s) ++m.loop_state.late_ticks_total;
    m.loop_state.lateness_s = late;
    m.loop_state.lateness_max_s = std::max(m.loop_state.lateness_max_s, late);
    m.loop_state.plant_time_s = t;
    m.tick(t);
    if (m.recorder && ++m.recorder_ticks >= m.cfg.trace_rotate_ticks) {
      m.rotate_trace();
      m.stepper->set_recorder(m.recorder.get());
    }
    m.publish(t);
    m.stepper->advance();
  };
  while (loop.wait_next()) {
    int64_t skipped = loop.missed() - missed_seen;
    missed_seen = loop.missed();
    for (int64_t i = 0; i < skipped; ++i) {
      if (m.plant->simulated()) {
        // sim: the simulated time is not the wall's, so a missed deadline is caught up (taken
        // late) rather than skipped: a loaded machine changes the timing, not the episode.
        take_tick(loop.tick_now_s());
        ++sum.caught_up_ticks;
      } else {
        // Hardware: keep the plant's time on the wall clock; the deadline is skipped.
        m.stepper->advance();
      }
    }
    take_tick(loop.tick_now_s());
    if (wd_s > 0 && clock.now_s() - last_wd >= wd_s) {
      sd_notify_send("WATCHDOG=1");
      last_wd = clock.now_s();
    }
    loop.complete();
  }
  if (m.cfg.loop_priority > 0) (void)set_thread_realtime(0);  // the caller's thread, as it was
  sum.ticks = m.loop_state.ticks_total;
  sum.late_ticks = m.loop_state.late_ticks_total;
  sum.missed_ticks = loop.missed();
  sum.max_lateness_s = m.loop_state.lateness_max_s;
  for (const auto& [k, v] : m.fallbacks_total) sum.fallbacks += v;
  sum.write_failures = m.write_failures;
  return sum;
}

// The caps go back first, before anything that could fail or hang (the HTTP server's teardown,
// etcd, the trace's last flush): an exit that goes wrong after this point leaves the node as
// it was found.
Status NodeAgent::shutdown() {
  Impl& m = *impl_;
  sd_notify_send("STOPPING=1");
  Status restored = m.restore_caps();
  if (m.server) m.server->stop();
  if (m.link) {  // the share is held back: the restored caps may draw
    m.link->leave(false);
    m.link.reset();
  }
  if (m.trace_closer.joinable()) m.trace_closer.join();
  if (m.recorder) {
    (void)m.recorder->close({{"producer", "flexwatt agent"},
                             {"controller", m.controller_spec},
                             {"backend", m.cfg.plant.backend}});
    m.recorder.reset();
  }
  return restored;
}

Status NodeAgent::Impl::restore_caps() {
  if (!saved || restored) return Status::Ok();
  restored = true;
  Status s = plant->caps().restore();
  if (!s.ok()) {
    log_line("restore failed (the restore file is kept for --restore): " + s.message());
    return s;
  }
  log_line("caps restored");
  return remove_restore_file(cfg.restore_file);
}

Status restore_from_file(const AgentConfig& cfg, std::string* what, const RestoreOptions& opt) {
  std::error_code ec;  // no /run/flexwatt yet (a fresh boot): the lock's directory is created
  std::filesystem::create_directories(std::filesystem::path(cfg.lock_file).parent_path(), ec);
  auto lock = NodeLock::acquire(cfg.lock_file, opt.lock_wait_s);
  if (!lock.ok()) return lock.status();
  auto rec = read_restore_file(cfg.restore_file);
  if (!rec.ok() && !opt.to_default) return corrupt_restore_file_status(rec.status());
  if (rec.ok() && !rec.value() && !opt.to_default) {
    if (what) *what = "nothing to restore (" + cfg.restore_file + " absent)";
    return Status::Ok();
  }
  auto plant = NodePlant::open(cfg.plant, nullptr);
  if (!plant.ok()) return plant.status();
  PowerCapActuator& caps = plant.value()->caps();
  if (opt.to_default) {
    std::vector<SavedCap> defaults;
    for (int g : caps.gpus()) defaults.push_back({g, caps.constraints(g).default_w});
    FW_RETURN_IF_ERROR(restore_caps(caps, defaults));
    if (what) {
      *what = "set " + std::to_string(defaults.size()) + " GPUs to their default power limit" +
              (rec.ok() && !rec.value() ? "" : "; removed " + cfg.restore_file);
    }
    return remove_restore_file(cfg.restore_file);
  }
  FW_RETURN_IF_ERROR(restore_caps(caps, rec.value()->caps));
  if (what) {
    *what = "restored " + std::to_string(rec.value()->caps.size()) + " caps saved by pid " +
            std::to_string(rec.value()->pid);
  }
  return remove_restore_file(cfg.restore_file);
}

}  // namespace fw::agent
