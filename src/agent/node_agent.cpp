#include "agent/node_agent.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "agent/agent_log.hpp"
#include "agent/fleet_follower.hpp"
#include "agent/registry_channel.hpp"
#include "agent/server.hpp"
#include "agent/state_publisher.hpp"
#include "agent/trace_rotation.hpp"
#include "runtime/realtime_driver.hpp"
#include "runtime/sd_notify.hpp"
#include "runtime/thread_priority.hpp"
#include "runtime/tick_schedule.hpp"

namespace fw::agent {
namespace {

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string();
}

}  // namespace

// Declaration order is teardown order reversed: the server (readers of hub, commands, jobs)
// goes first, the lifecycle (the plant every other part points at) last.
struct NodeAgent::Impl {
  explicit Impl(AgentConfig c)
      : cfg(std::move(c)),
        hostname(host_name()),
        channel(jobs),
        life(cfg),
        publisher(hub, jobs, hostname, cfg.plant.backend, cfg.read_only) {}

  AgentConfig cfg;
  std::string hostname;
  ControllerMaker make_controller;
  JobRegistry jobs;
  RegistryChannel channel;
  StateHub hub;
  CommandQueue commands;
  NodeLifecycle life;
  StatePublisher publisher;
  std::unique_ptr<FleetFollower> fleet;
  std::unique_ptr<AgentTick> tick;
  std::unique_ptr<TraceRotation> trace;
  std::unique_ptr<AgentServer> server;
  LoopState loop_state;

  Status start_server();
  void publish(double t) { publisher.publish(t, life.plant(), tick.get(), loop_state); }
};

NodeAgent::NodeAgent(AgentConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}

NodeAgent::~NodeAgent() {
  if (impl_->life.saved() && !impl_->life.restored()) (void)shutdown();  // logged; file stays
  if (impl_->server) impl_->server->stop();
}

void NodeAgent::set_controller_maker(ControllerMaker m) { impl_->make_controller = std::move(m); }

StateHub& NodeAgent::hub() { return impl_->hub; }
CommandQueue& NodeAgent::commands() { return impl_->commands; }
JobRegistry& NodeAgent::jobs() { return impl_->jobs; }

int NodeAgent::tcp_port() const { return impl_->server ? impl_->server->tcp_port() : -1; }

Status NodeAgent::Impl::start_server() {
  // Following a coordinator, an agent without tokens refuses writes unless told otherwise.
  if (cfg.fleet.enabled() && cfg.server.token_file.empty() &&
      !cfg.fleet.allow_unauthenticated_writes) {
    cfg.server.anonymous_read_only = true;
  }
  server = std::make_unique<AgentServer>(cfg.server, hub, commands, jobs);
  server->set_controller_validator([this](const std::string& spec) -> Status {
    auto p = parse_controller_spec(spec);
    if (!p.ok()) return p.status();
    if (make_controller) return Status::Ok();
    const auto [info, budget] = publisher.env();
    return registry::prepare_controller(
               p.value(), agent_controller_env(cfg, life.plant(), info, budget, fleet.get()))
        .status();
  });
  return server->start();
}

Status NodeAgent::start() {
  Impl& m = *impl_;
  FW_RETURN_IF_ERROR(m.life.acquire());
  FW_RETURN_IF_ERROR(m.life.open_plant(&m.channel));
  NodePlant& plant = m.life.plant();
  FW_ASSIGN_OR_RETURN(const Budget budget, initial_budget(m.cfg, plant));
  const double share_w = budget.scope == BudgetScope::kGpu
                             ? budget.watts * static_cast<double>(plant.info().gpus.size())
                             : budget.watts;
  FW_RETURN_IF_ERROR(m.life.take_caps(share_w));
  if (m.cfg.fleet.enabled()) {
    FW_ASSIGN_OR_RETURN(m.fleet, FleetFollower::start(m.cfg.fleet, m.hostname, plant.info()));
  }
  m.tick = std::make_unique<AgentTick>(m.cfg, plant, m.commands, m.jobs, m.fleet.get());
  m.tick->set_controller_maker(m.make_controller);
  m.tick->on_episode(
      [&m](const PlantInfo& info, const BudgetSchedule& b) { m.publisher.set_env(info, b); });
  FW_RETURN_IF_ERROR(m.tick->start(budget));
  m.publisher.set_env(plant.info(), m.tick->budget());
  std::vector<int> indices = plant.job_gpu_indices();
  if (!indices.empty()) m.jobs.set_gpu_indices(std::move(indices));
  std::vector<JobRegistry::GpuId> ids;
  for (const NodeGpu& g : plant.node_gpus()) ids.push_back({g.uuid, g.index});
  m.jobs.set_gpu_ids(std::move(ids));
  // A job's announcements hold as long as the job counts as reporting.
  m.jobs.set_announcement_stale_after_s(m.cfg.job_silent_after_s > 0 ? m.cfg.job_silent_after_s
                                                                     : kDefaultAnnouncementStaleS);
  FW_RETURN_IF_ERROR(m.start_server());
  if (!m.cfg.trace_dir.empty()) {
    m.trace = std::make_unique<TraceRotation>(
        m.cfg.trace_dir, m.cfg.trace_rotate_ticks, m.cfg.trace_keep, [&m]() -> nlohmann::json {
          return {{"producer", "flexwatt agent"},
                  {"controller", m.tick ? m.tick->controller_spec() : std::string()},
                  {"backend", m.cfg.plant.backend}};
        });
    m.trace->open();
    m.tick->set_recorder(m.trace->recorder());
  }
  m.publish(0);
  return Status::Ok();
}

AgentRunSummary NodeAgent::run(Clock& clock, const std::function<bool()>& stop_requested) {
  Impl& m = *impl_;
  RealTimeOptions opt;
  opt.period_s = m.cfg.period_s;
  if (m.cfg.duration_s > 0)
    opt.num_ticks = TickSchedule::ticks_in(m.cfg.duration_s, m.cfg.period_s);
  opt.time_scale = m.cfg.plant.time_scale;  // sim: the loop runs on simulated seconds
  opt.missed = m.life.plant().missed_deadlines();
  opt.watchdog_s = sd_watchdog_interval_s();
  if (m.cfg.loop_priority > 0) {
    Status rt = set_thread_realtime(m.cfg.loop_priority);
    log_line(rt.ok() ? "loop thread at SCHED_RR priority " + std::to_string(m.cfg.loop_priority)
                     : "loop thread stays at normal priority: " + rt.message());
  }
  sd_notify_send("READY=1\nSTATUS=controlling " + m.cfg.plant.backend);
  m.tick->restart();
  m.loop_state.period_s = m.cfg.period_s;
  auto on_tick = [&m](const RealTimeStats& st) {
    m.loop_state.ticks_total = st.ticks;
    m.loop_state.late_ticks_total = st.late_ticks;
    m.loop_state.lateness_s = st.lateness_s;
    m.loop_state.lateness_max_s = st.lateness_max_s;
    m.loop_state.plant_time_s = st.plant_time_s;
    m.tick->tick(st.plant_time_s);
    if (m.trace && m.trace->tick()) m.tick->set_recorder(m.trace->recorder());
    m.publish(st.plant_time_s);
    m.tick->advance();
  };
  const RealTimeStats st =
      RealTimeDriver(opt).run(clock, stop_requested, on_tick, [&m] { m.tick->advance(); });
  if (m.cfg.loop_priority > 0) (void)set_thread_realtime(0);  // the caller's thread, as it was
  AgentRunSummary sum;
  sum.ticks = st.ticks;
  sum.late_ticks = st.late_ticks;
  sum.missed_ticks = st.missed;
  sum.caught_up_ticks = st.caught_up;
  sum.max_lateness_s = st.lateness_max_s;
  for (const auto& [k, v] : m.tick->fallbacks_total()) sum.fallbacks += v;
  sum.write_failures = m.tick->write_failures();
  return sum;
}

// The caps go back first, before anything that could fail or hang (the HTTP server's teardown,
// etcd, the trace's last flush): an exit that goes wrong after this point leaves the node as
// it was found.
Status NodeAgent::shutdown() {
  Impl& m = *impl_;
  sd_notify_send("STOPPING=1");
  Status restored = m.life.restore();
  if (m.server) m.server->stop();
  if (m.fleet) {  // the share is held back: the restored caps may draw
    m.fleet->leave();
    m.fleet.reset();
  }
  if (m.trace) {
    m.trace->close();
    m.trace.reset();
  }
  return restored;
}

}  // namespace fw::agent
