#include "fleet/fleet_sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/text_file.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/node_link.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;

double unix_now() { return fw::unix_now_s(); }

constexpr double kGpuMinW = 200, kGpuMaxW = 700;

struct SimNode {
  std::string name;
  std::vector<double> demand_w;  // uncontrolled draw per GPU (base)
  double pfi = 1;                // of the node's job
  double phase = 0;
  enum class State { kPending, kActive, kLeft, kCrashed } state = State::kPending;
  std::vector<double> caps_w;  // last applied
  std::unique_ptr<NodeLink> link;
  double work = 0, work_uncontrolled = 0;  // integrated relative throughput
  double joined_unix_s = 0;
};

// One tick of the trace: site power and the effective budget it is judged against.
struct Row {
  double t, site, eff;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

struct WindowCount {
  int windows = 0, within = 0;
  double worst_excess = 0;  // largest mean over budget, as a fraction of the budget
};

// Tumbling 30 s windows (a window shorter than 30 s - 2 ticks at the end is left out).
WindowCount tumbling_windows(const std::vector<Row>& rows, double tick_s) {
  WindowCount c;
  for (size_t i = 0; i + 1 < rows.size();) {
    double ps = 0, es = 0;
    size_t j = i, n = 0;
    for (; j < rows.size() && rows[j].t < rows[i].t + 30; ++j, ++n) {
      ps += rows[j].site;
      es += rows[j].eff;
    }
    if (n > 0 && rows[j - 1].t - rows[i].t >= 30 - 2 * tick_s) {
      ++c.windows;
      c.within += ps <= es * (1 + 1e-9);
      c.worst_excess = std::max(c.worst_excess, ps / es - 1);
    }
    i = j;
  }
  return c;
}

// Sliding 30 s windows, one per tick: the share of time the site's 30 s mean is within.
// skip_t_s >= 0: windows holding the tick at that time are left out.
WindowCount sliding_windows(const std::vector<Row>& rows, double tick_s, double skip_t_s = -1) {
  WindowCount c;
  const size_t per_window = size_t(std::lround(30 / tick_s));
  for (size_t i = 0; i + per_window <= rows.size(); ++i) {
    if (skip_t_s >= 0 && rows[i].t <= skip_t_s && skip_t_s < rows[i + per_window - 1].t + tick_s)
      continue;
    double ps = 0, es = 0;
    for (size_t j = i; j < i + per_window; ++j) {
      ps += rows[j].site;
      es += rows[j].eff;
    }
    ++c.windows;
    c.within += ps <= es * (1 + 1e-9);  // float noise of 120 summed rows
    c.worst_excess = std::max(c.worst_excess, ps / es - 1);
  }
  return c;
}

// The scenario of fleet_sim.hpp in named steps: prepare_site, start_coordinators, then
// run_schedule (each tick: scenario events incl. node joins, the GPUs, one trace row), then
// collect_report and shutdown.
class FleetSim {
 public:
  explicit FleetSim(const FleetSimOptions& o) : o_(o) {}
  Status prepare_site();
  Status start_coordinators();
  Status run_schedule();
  Json collect_report();
  void shutdown();

 private:
  NodeRecord record_of(const SimNode& n, double draw_w, double t) const;
  Status join(SimNode& n);
  Status scenario_step(double t);
  void gpus_step(double t, double* site, int* active, int* on_safe, int* awaiting);
  void trace_row(double t, double site, int active, int on_safe, int awaiting);
  Json ramp_events_json() const;
  Json grid_reached_s() const;

  const FleetSimOptions& o_;
  EtcdClientOptions eo_;
  std::unique_ptr<EtcdClient> admin_;
  std::vector<SimNode> nodes_;
  std::vector<std::unique_ptr<Coordinator>> coords_;
  std::ofstream trace_;
  int extra_ = 1;
  double site_w_ = 0, safe_w_ = 0, current_site_w_ = 0, t0_ = 0, D_ = 0;
  std::optional<GridTarget> grid_;
  // Scenario progress.
  bool budget_done_ = false, leave_done_ = false, crash_done_ = false, rejoin_done_ = false,
       grid_done_ = false, coord_crash_done_ = false;
  int crashed_coord_ = -1;
  double crash_at_ = -1, takeover_s_ = -1, budget_step_t_s_ = -1;
  // Tick timing: ticks that started more than a tick late, and the worst lateness.
  int64_t late_ticks_ = 0, safe_ticks_ = 0;
  double max_lateness_s_ = 0;
  std::vector<Row> rows_;
};

NodeRecord FleetSim::record_of(const SimNode& n, double draw_w, double t) const {
  NodeRecord r;
  r.node = n.name;
  r.gpus = o_.gpus_per_node;
  r.nameplate_w = kGpuMaxW * o_.gpus_per_node;
  r.min_w = kGpuMinW * o_.gpus_per_node;
  r.draw_w = draw_w;
  for (double c : n.caps_w) r.cap_w += c;
  for (double d : n.demand_w) r.uncontrolled_w += d;
  r.jobs.push_back({"job-" + n.name, o_.gpus_per_node, draw_w, 1.0 / n.pfi, 0, 0});
  set_job_pfi(r, {{"job-" + n.name, n.pfi}});  // as an agent publishes its jobs' PFI
  r.time_unix_s = t;
  return r;
}

Status FleetSim::join(SimNode& n) {
  NodeLinkOptions lo{o_.site, n.name, safe_w_, o_.node_lease_ttl_s};
  FW_ASSIGN_OR_RETURN(n.link, NodeLink::Start(eo_, lo, record_of(n, 0, unix_now())));
  n.state = SimNode::State::kActive;
  n.joined_unix_s = unix_now();
  return Status::Ok();
}

// The simulated nodes and their jobs, the site budget (written to etcd) and a cleared grid
// target.
Status FleetSim::prepare_site() {
  std::error_code ec;
  std::filesystem::create_directories(o_.out_dir, ec);
  trace_.open(o_.out_dir + "/trace.csv");
  if (!trace_) return Status::IoError(o_.out_dir + "/trace.csv: cannot write");
  trace_.precision(10);
  trace_ << "t_s,site_w,budget_w,effective_w,active,on_safe_share,awaiting_first,held,leader,"
            "ramp_state,keys_written,txns,node_puts\n";
  Rng rng(o_.seed);
  extra_ = std::max(1, o_.nodes / 8);
  nodes_.resize(size_t(o_.nodes + extra_));
  double uncontrolled_w = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    SimNode& n = nodes_[i];
    n.name = "node-" + std::to_string(i);
    const double base = 520 + 160 * rng.uniform();
    for (int g = 0; g < o_.gpus_per_node; ++g)
      n.demand_w.push_back(base * (0.97 + 0.06 * rng.uniform()));
    n.caps_w.assign(o_.gpus_per_node, kGpuMaxW);
    const double u = rng.uniform();
    n.pfi = o_.job_pfi.empty() ? 1.1 + 3.9 * u : o_.job_pfi[i];
    n.phase = 6.283 * rng.uniform();
    if (int(i) < o_.nodes)
      for (double d : n.demand_w) uncontrolled_w += d;
  }
  site_w_ = current_site_w_ = o_.budget_fraction * uncontrolled_w;
  safe_w_ = site_w_ / double(nodes_.size());
  eo_.endpoints = o_.etcd;
  eo_.request_timeout_s = 2;
  eo_.call_timeout_s = 4;
  // The operator's writes are retried patiently: a loaded machine can stall etcd for seconds.
  EtcdClientOptions patient = eo_;
  patient.call_timeout_s = 30;
  patient.max_attempts = 20;
  FW_ASSIGN_OR_RETURN(EtcdClient admin, EtcdClient::Create(patient));
  admin_ = std::make_unique<EtcdClient>(std::move(admin));
  FW_RETURN_IF_ERROR(write_budget(*admin_, o_.site, {site_w_, 30, "operator", unix_now()}));
  (void)admin_->erase(grid_target_key(o_.site));
  return Status::Ok();
}

Status FleetSim::start_coordinators() {
  for (const char* id : {"coord-a", "coord-b"}) {
    CoordinatorOptions co;
    co.site = o_.site;
    co.id = id;
    co.allocator = o_.allocator;
    co.lease_ttl_s = o_.lease_ttl_s;
    co.expiry_s = o_.expiry_s;
    co.refresh_s = o_.refresh_s;
    co.default_budget_w = site_w_;
    co.campaign_timeout_s = 0.5;
    FW_ASSIGN_OR_RETURN(auto c, Coordinator::Start(eo_, co));
    coords_.push_back(std::move(c));
  }
  return Status::Ok();
}

// The timeline of fleet_sim.hpp; the staggered joins of the first nodes included.
Status FleetSim::scenario_step(double t) {
  for (int i = 0; i < o_.nodes; ++i) {
    if (nodes_[i].state == SimNode::State::kPending && t >= 0.05 * D_ * i / o_.nodes) {
      FW_RETURN_IF_ERROR(join(nodes_[i]));
    }
  }
  if (!budget_done_ && t >= 0.15 * D_) {
    current_site_w_ = 0.9 * site_w_;
    budget_step_t_s_ = t;
    FW_RETURN_IF_ERROR(
        write_budget(*admin_, o_.site, {current_site_w_, 30, "operator", unix_now()}));
    budget_done_ = true;
  }
  if (!leave_done_ && t >= 0.25 * D_) {
    for (int i = 0; i < extra_; ++i) {
      nodes_[i].link->leave(true);
      nodes_[i].state = SimNode::State::kLeft;
    }
    leave_done_ = true;
  }
  if (!crash_done_ && t >= 0.30 * D_) {
    nodes_[extra_].link->crash();
    nodes_[extra_].state = SimNode::State::kCrashed;
    crash_done_ = true;
  }
  if (!rejoin_done_ && t >= 0.35 * D_) {
    for (size_t i = o_.nodes; i < nodes_.size(); ++i) FW_RETURN_IF_ERROR(join(nodes_[i]));
    rejoin_done_ = true;
  }
  if (!grid_done_ && t >= 0.40 * D_) {
    GridTarget g;
    g.value_w = 0.7 * current_site_w_;
    g.start_unix_s = t0_ + 0.45 * D_;
    g.end_unix_s = t0_ + 0.90 * D_;
    g.ramp_w_per_s = 0.3 * current_site_w_ / (0.05 * D_);
    g.correlation_id = "sim-grid-1";
    FW_RETURN_IF_ERROR(write_grid_target(*admin_, o_.site, g));  // as the grid adapter does
    grid_ = g;
    grid_done_ = true;
  }
  if (!coord_crash_done_ && t >= 0.60 * D_) {
    for (size_t c = 0; c < coords_.size(); ++c) {
      if (coords_[c]->leader()) crashed_coord_ = int(c);
    }
    if (crashed_coord_ >= 0) coords_[crashed_coord_]->stop(false);
    crash_at_ = unix_now();
    coord_crash_done_ = true;
  }
  if (crash_at_ > 0 && takeover_s_ < 0 && coords_[1 - std::max(crashed_coord_, 0)]->leader()) {
    takeover_s_ = unix_now() - crash_at_;
  }
  return Status::Ok();
}

// Applies each active node's budget to its GPUs, integrates throughput and reports the draw.
void FleetSim::gpus_step(double t, double* site, int* active, int* on_safe, int* awaiting) {
  for (auto& n : nodes_) {
    if (n.state == SimNode::State::kPending || n.state == SimNode::State::kLeft) continue;
    double draw = 0;
    const double wobble = 1 + 0.04 * std::sin(0.05 * t + n.phase);
    if (n.state == SimNode::State::kActive) {
      const NodeBudget b = n.link->budget();
      // A job starts on a joining node once the node has its first assignment (or after an
      // expiry without one, on its safe share): until then its GPUs idle (not counted).
      if (b.awaiting_first && unix_now() - n.joined_unix_s < o_.expiry_s) {
        ++*awaiting;
        continue;
      }
      *on_safe += b.source == NodeBudget::Source::kSafeShare;
      const double cap = std::clamp(b.watts / o_.gpus_per_node, kGpuMinW, kGpuMaxW);
      std::fill(n.caps_w.begin(), n.caps_w.end(), cap);
      ++*active;
    }
    for (int g = 0; g < o_.gpus_per_node; ++g) {
      const double d = n.demand_w[g] * wobble, p = std::min(d, n.caps_w[g]);
      draw += p;
      n.work += std::max(0.0, 1 - (1 - p / d) / n.pfi) * o_.tick_s / o_.gpus_per_node;
      n.work_uncontrolled += o_.tick_s / o_.gpus_per_node;
    }
    *site += draw;
    if (n.state == SimNode::State::kActive) n.link->update(record_of(n, draw, unix_now()));
  }
}

void FleetSim::trace_row(double t, double site, int active, int on_safe, int awaiting) {
  const double eff = effective_budget_w(current_site_w_, grid_, unix_now());
  int64_t keys = 0, txns = 0, puts = 0, held = 0;
  std::string leader = "none", ramp = "idle";
  for (size_t c = 0; c < coords_.size(); ++c) {
    const CoordinatorStats st = coords_[c]->stats();
    keys += st.keys_written;
    txns += st.txns;
    if (st.leader) {
      leader = c == 0 ? "coord-a" : "coord-b";
      held = int64_t(st.last_plan.held.size());
      ramp = st.ramp_state;
    }
  }
  for (const auto& n : nodes_) puts += n.link ? n.link->puts() : 0;
  rows_.push_back({t, site, eff});
  trace_ << t << ',' << site << ',' << current_site_w_ << ',' << eff << ',' << active << ','
         << on_safe << ',' << awaiting << ',' << held << ',' << leader << ',' << ramp << ',' << keys
         << ',' << txns << ',' << puts << '\n';
}

Status FleetSim::run_schedule() {
  D_ = o_.duration_s;
  t0_ = unix_now();
  for (int64_t k = 0;; ++k) {
    const double t = double(k) * o_.tick_s;
    if (t > D_) break;
    const double wait = t0_ + t - unix_now();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    late_ticks_ += -wait > o_.tick_s;
    max_lateness_s_ = std::max(max_lateness_s_, -wait);
    FW_RETURN_IF_ERROR(scenario_step(t));
    double site = 0;
    int active = 0, on_safe = 0, awaiting = 0;
    gpus_step(t, &site, &active, &on_safe, &awaiting);
    safe_ticks_ += on_safe > 0;
    trace_row(t, site, active, on_safe, awaiting);
  }
  return Status::Ok();
}

// Both coordinators' ramp events, oldest first, times relative to the run's start.
Json FleetSim::ramp_events_json() const {
  std::vector<RampEvent> ramps;
  for (const auto& c : coords_) {
    const CoordinatorStats st = c->stats();
    ramps.insert(ramps.end(), st.ramp_events.begin(), st.ramp_events.end());
  }
  std::sort(ramps.begin(), ramps.end(),
            [](const RampEvent& a, const RampEvent& b) { return a.time_unix_s < b.time_unix_s; });
  Json out = Json::array();
  for (const auto& e : ramps) out.push_back(to_json(e, t0_));
  return out;
}

// The site's measured power against the grid target: the first tick at or below it after the
// grid event was sent, relative to the target's start (negative: early, the coordinator plans
// ahead of the ramp); null when never reached.
Json FleetSim::grid_reached_s() const {
  if (!grid_ || !grid_->value_w) return nullptr;
  for (const Row& r : rows_) {
    // Holding, every node is capped below its draw: site power equals the target up to the
    // float noise of summed caps.
    if (r.t >= 0.40 * D_ && r.site <= *grid_->value_w * (1 + 1e-9))
      return r.t - (grid_->start_unix_s - t0_);
  }
  return nullptr;
}

Json FleetSim::collect_report() {
  const WindowCount tumbling = tumbling_windows(rows_, o_.tick_s);
  const WindowCount sliding = sliding_windows(rows_, o_.tick_s);
  // The operator's budget step is not announced: the site cannot follow it before the round
  // that hears of it, so the windows holding its tick are also counted apart.
  const WindowCount unannounced =
      sliding_windows(rows_, o_.tick_s, budget_step_t_s_ >= 0 ? budget_step_t_s_ : -1);
  std::vector<double> realloc, join_latency_s;
  // Signs of a machine too loaded for the scenario: leases renewed too late (a node re-granted
  // one, a coordinator elected more than twice) and ticks with nodes on their safe share.
  int64_t keys = 0, txns = 0, puts = 0, elections = 0, regranted = 0;
  for (auto& c : coords_) {
    const CoordinatorStats st = c->stats();
    realloc.insert(realloc.end(), st.latencies_s.begin(), st.latencies_s.end());
    keys += st.keys_written;
    txns += st.txns;
    elections += st.elections_won;
  }
  Json jobs = Json::object();
  double retained = 0;
  int counted = 0;
  for (auto& n : nodes_) {
    if (n.link) {
      if (double l = n.link->first_assignment_latency_s(); l >= 0) join_latency_s.push_back(l);
      puts += n.link->puts();
      regranted += std::max(0, n.link->leases_granted() - 1);
    }
    if (n.work_uncontrolled > 0) {
      jobs["job-" + n.name] = {{"pfi", n.pfi}, {"throughput", n.work / n.work_uncontrolled}};
      retained += n.work / n.work_uncontrolled;
      ++counted;
    }
  }
  const double elapsed = unix_now() - t0_;
  Json report = {
      {"nodes", o_.nodes},
      {"extra_nodes_joining", extra_},
      {"gpus_per_node", o_.gpus_per_node},
      {"duration_s", D_},
      {"allocator", o_.allocator},
      {"site_budget_w", site_w_},
      {"windows_30s", tumbling.windows},
      {"windows_30s_within_budget", tumbling.within},
      {"windows_30s_within_fraction",
       tumbling.windows ? double(tumbling.within) / tumbling.windows : 0.0},
      {"worst_window_excess_fraction", tumbling.worst_excess},
      {"sliding_windows_30s_within_fraction",
       sliding.windows ? double(sliding.within) / sliding.windows : 0.0},
      {"sliding_worst_excess_fraction", sliding.worst_excess},
      {"sliding_windows_30s_within_fraction_without_budget_step",
       unannounced.windows ? double(unannounced.within) / unannounced.windows : 0.0},
      {"realloc_latency_s",
       {{"count", realloc.size()},
        {"p50", percentile(realloc, 0.5)},
        {"p99", percentile(realloc, 0.99)}}},
      {"join_latency_s",
       {{"p50", percentile(join_latency_s, 0.5)}, {"p99", percentile(join_latency_s, 0.99)}}},
      {"coordinator_takeover_s", takeover_s_},
      {"etcd_writes_per_s",
       {{"assignment_keys", double(keys) / elapsed},
        {"coordinator_txns", double(txns) / elapsed},
        {"node_registrations", double(puts) / elapsed}}},
      {"ticks", rows_.size()},
      {"late_ticks", late_ticks_},
      {"ticks_with_nodes_on_safe_share", safe_ticks_},
      {"node_leases_regranted", regranted},
      {"elections_won", elections},
      {"max_tick_lateness_s", max_lateness_s_},
      {"ramp_events", ramp_events_json()},
      {"grid_target_reached_by_site_s", grid_reached_s()},
      {"throughput_retained_mean", counted ? retained / counted : 0.0},
      {"job_throughput_relative", jobs}};
  return report;
}

void FleetSim::shutdown() {
  for (auto& n : nodes_) {
    if (n.link && n.state == SimNode::State::kActive) n.link->leave(false);
  }
  for (auto& c : coords_) c->stop(true);
}

}  // namespace

int fleet_sim_jobs(const FleetSimOptions& o) { return o.nodes + std::max(1, o.nodes / 8); }

Result<Json> run_fleet_sim(const FleetSimOptions& o) {
  if (o.nodes < 2 || o.gpus_per_node < 1 || o.duration_s < 20 || o.tick_s <= 0) {
    return Status::InvalidArgument("fleet-sim: need nodes >= 2, gpus >= 1, duration_s >= 20");
  }
  if (!o.job_pfi.empty()) {
    if (int(o.job_pfi.size()) != fleet_sim_jobs(o)) {
      return Status::InvalidArgument("fleet-sim: job_pfi: need one PFI per simulated job (" +
                                     std::to_string(fleet_sim_jobs(o)) + ")");
    }
    for (double p : o.job_pfi) {
      if (!std::isfinite(p) || !(p > 0))
        return Status::InvalidArgument("fleet-sim: job_pfi: must be > 0");
    }
  }
  FleetSim sim(o);
  Status s = sim.prepare_site();
  if (s.ok()) s = sim.start_coordinators();
  if (s.ok()) s = sim.run_schedule();
  if (!s.ok()) {
    sim.shutdown();
    return s;
  }
  Json report = sim.collect_report();
  sim.shutdown();
  FW_RETURN_IF_ERROR(write_text_file(o.out_dir + "/report.json", report.dump(2) + "\n"));
  return report;
}

}  // namespace fw::fleet
