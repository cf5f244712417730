#include "fleet/fleet_sim.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "core/rng.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/node_link.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr double kGpuMinW = 200, kGpuMaxW = 700;

struct SimNode {
  std::string name;
  std::vector<double> demand_w;  // uncontrolled draw per GPU (base)
  double elasticity = 0.5;
  double phase = 0;
  enum class State { kPending, kActive, kLeft, kCrashed } state = State::kPending;
  std::vector<double> caps_w;  // last applied
  std::unique_ptr<NodeLink> link;
  double work = 0, work_uncontrolled = 0;  // integrated relative throughput
  double joined_unix_s = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

}  // namespace

Result<Json> run_fleet_sim(const FleetSimOptions& o) {
  if (o.nodes < 2 || o.gpus_per_node < 1 || o.duration_s < 20 || o.tick_s <= 0) {
    return Status::InvalidArgument("fleet-sim: need nodes >= 2, gpus >= 1, duration_s >= 20");
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  std::ofstream trace(o.out_dir + "/trace.csv");
  if (!trace) return Status::IoError(o.out_dir + "/trace.csv: cannot write");
  trace << "t_s,site_w,budget_w,effective_w,active,on_safe_share,held,leader,keys_written,"
           "txns,node_puts\n";

  Rng rng(o.seed);
  const int extra = std::max(1, o.nodes / 8);
  std::vector<SimNode> nodes(o.nodes + extra);
  double uncontrolled_w = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    SimNode& n = nodes[i];
    n.name = "node-" + std::to_string(i);
    const double base = 520 + 160 * rng.uniform();
    for (int g = 0; g < o.gpus_per_node; ++g)
      n.demand_w.push_back(base * (0.97 + 0.06 * rng.uniform()));
    n.caps_w.assign(o.gpus_per_node, kGpuMaxW);
    n.elasticity = 0.2 + 0.7 * rng.uniform();
    n.phase = 6.283 * rng.uniform();
    if (int(i) < o.nodes)
      for (double d : n.demand_w) uncontrolled_w += d;
  }
  const double site_w = o.budget_fraction * uncontrolled_w;
  const double safe_w = site_w / double(nodes.size());

  EtcdClientOptions eo;
  eo.endpoints = o.etcd;
  eo.request_timeout_s = 2;
  eo.call_timeout_s = 4;
  FW_ASSIGN_OR_RETURN(EtcdClient admin, EtcdClient::Create(eo));
  SiteBudget sb{site_w, 30, "operator", unix_now()};
  FW_RETURN_IF_ERROR(write_budget(admin, o.site, sb));
  (void)admin.erase(grid_target_key(o.site));

  std::vector<std::unique_ptr<Coordinator>> coords;
  for (const char* id : {"coord-a", "coord-b"}) {
    CoordinatorOptions co;
    co.site = o.site;
    co.id = id;
    co.allocator = o.allocator;
    co.lease_ttl_s = o.lease_ttl_s;
    co.expiry_s = o.expiry_s;
    co.refresh_s = o.refresh_s;
    co.default_budget_w = site_w;
    co.campaign_timeout_s = 0.5;
    FW_ASSIGN_OR_RETURN(auto c, Coordinator::Start(eo, co));
    coords.push_back(std::move(c));
  }

  auto record_of = [&](const SimNode& n, double draw_w, double t) {
    NodeRecord r;
    r.node = n.name;
    r.gpus = o.gpus_per_node;
    r.nameplate_w = kGpuMaxW * o.gpus_per_node;
    r.min_w = kGpuMinW * o.gpus_per_node;
    r.draw_w = draw_w;
    for (double c : n.caps_w) r.cap_w += c;
    for (double d : n.demand_w) r.uncontrolled_w += d;
    r.jobs.push_back({"job-" + n.name, o.gpus_per_node, draw_w, n.elasticity, n.elasticity, 0});
    r.time_unix_s = t;
    return r;
  };
  auto join = [&](SimNode& n) -> Status {
    NodeLinkOptions lo{o.site, n.name, safe_w, o.node_lease_ttl_s};
    FW_ASSIGN_OR_RETURN(n.link, NodeLink::Start(eo, lo, record_of(n, 0, unix_now())));
    n.state = SimNode::State::kActive;
    n.joined_unix_s = unix_now();
    return Status::Ok();
  };

  const double D = o.duration_s, t0 = unix_now();
  double current_site_w = site_w, takeover_s = -1, crash_at = -1;
  std::optional<GridTarget> grid;
  std::vector<double> join_latency_s;
  bool budget_done = false, leave_done = false, crash_done = false, rejoin_done = false,
       grid_done = false, coord_crash_done = false;
  int crashed_coord = -1;
  struct Row {
    double t, site, eff;
  };
  std::vector<Row> rows;
  for (int64_t k = 0;; ++k) {
    const double t = k * o.tick_s;
    if (t > D) break;
    const double wake = t0 + t;
    if (double w = wake - unix_now(); w > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(w));
    // ---- scenario ----
    for (int i = 0; i < o.nodes; ++i) {
      if (nodes[i].state == SimNode::State::kPending && t >= 0.05 * D * i / o.nodes) {
        FW_RETURN_IF_ERROR(join(nodes[i]));
      }
    }
    if (!budget_done && t >= 0.15 * D) {
      current_site_w = 0.9 * site_w;
      SiteBudget b{current_site_w, 30, "operator", unix_now()};
      FW_RETURN_IF_ERROR(write_budget(admin, o.site, b));
      budget_done = true;
    }
    if (!leave_done && t >= 0.25 * D) {
      for (int i = 0; i < extra; ++i) {
        nodes[i].link->leave(true);
        nodes[i].state = SimNode::State::kLeft;
      }
      leave_done = true;
    }
    if (!crash_done && t >= 0.30 * D) {
      nodes[extra].link->crash();
      nodes[extra].state = SimNode::State::kCrashed;
      crash_done = true;
    }
    if (!rejoin_done && t >= 0.35 * D) {
      for (size_t i = o.nodes; i < nodes.size(); ++i) FW_RETURN_IF_ERROR(join(nodes[i]));
      rejoin_done = true;
    }
    if (!grid_done && t >= 0.40 * D) {
      GridTarget g;
      g.value_w = 0.7 * current_site_w;
      g.start_unix_s = t0 + 0.45 * D;
      g.end_unix_s = t0 + 0.90 * D;
      g.ramp_w_per_s = 0.3 * current_site_w / (0.05 * D);
      g.correlation_id = "sim-grid-1";
      FW_RETURN_IF_ERROR(coords[0]->put_grid_target(g));
      grid = g;
      grid_done = true;
    }
    if (!coord_crash_done && t >= 0.60 * D) {
      for (size_t c = 0; c < coords.size(); ++c) {
        if (coords[c]->leader()) crashed_coord = int(c);
      }
      if (crashed_coord >= 0) coords[crashed_coord]->stop(false);
      crash_at = unix_now();
      coord_crash_done = true;
    }
    if (crash_at > 0 && takeover_s < 0 && coords[1 - std::max(crashed_coord, 0)]->leader()) {
      takeover_s = unix_now() - crash_at;
    }
    // ---- GPUs ----
    double site = 0;
    int active = 0, on_safe = 0;
    for (auto& n : nodes) {
      if (n.state == SimNode::State::kPending || n.state == SimNode::State::kLeft) continue;
      double draw = 0;
      const double wobble = 1 + 0.04 * std::sin(0.05 * t + n.phase);
      // A job starts on a joining node once the node has its first assignment (or after an
      // expiry without one, on its safe share): until then its GPUs idle (not counted).
      if (n.state == SimNode::State::kActive && n.link->first_assignment_latency_s() < 0 &&
          unix_now() - n.joined_unix_s < o.expiry_s) {
        continue;
      }
      if (n.state == SimNode::State::kActive) {
        const NodeBudget b = n.link->budget();
        on_safe += b.source == NodeBudget::Source::kSafeShare;
        const double cap = std::clamp(b.watts / o.gpus_per_node, kGpuMinW, kGpuMaxW);
        std::fill(n.caps_w.begin(), n.caps_w.end(), cap);
        ++active;
      }
      for (int g = 0; g < o.gpus_per_node; ++g) {
        const double d = n.demand_w[g] * wobble, p = std::min(d, n.caps_w[g]);
        draw += p;
        n.work += std::pow(p / d, n.elasticity) * o.tick_s / o.gpus_per_node;
        n.work_uncontrolled += o.tick_s / o.gpus_per_node;
      }
      site += draw;
      if (n.state == SimNode::State::kActive) n.link->update(record_of(n, draw, unix_now()));
    }
    const double eff = effective_budget_w(current_site_w, grid, unix_now());
    int64_t keys = 0, txns = 0, puts = 0, held = 0;
    std::string leader = "none";
    for (size_t c = 0; c < coords.size(); ++c) {
      const CoordinatorStats st = coords[c]->stats();
      keys += st.keys_written;
      txns += st.txns;
      if (st.leader) {
        leader = c == 0 ? "coord-a" : "coord-b";
        held = int64_t(st.last_plan.held.size());
      }
    }
    for (const auto& n : nodes) puts += n.link ? n.link->puts() : 0;
    rows.push_back({t, site, eff});
    trace << t << ',' << site << ',' << current_site_w << ',' << eff << ',' << active << ','
          << on_safe << ',' << held << ',' << leader << ',' << keys << ',' << txns << ',' << puts
          << '\n';
  }
  // ---- report ----
  int windows = 0, within = 0;
  double worst = 0;
  for (size_t i = 0; i + 1 < rows.size();) {
    double ps = 0, es = 0;
    size_t j = i, n = 0;
    for (; j < rows.size() && rows[j].t < rows[i].t + 30; ++j, ++n) {
      ps += rows[j].site;
      es += rows[j].eff;
    }
    if (n > 0 && rows[j - 1].t - rows[i].t >= 30 - 2 * o.tick_s) {
      ++windows;
      within += ps <= es * (1 + 1e-9);
      worst = std::max(worst, ps / es - 1);
    }
    i = j;
  }
  // Sliding 30 s windows, one per tick: the share of time the site's 30 s mean is within.
  int sliding = 0, sliding_within = 0;
  const size_t per_window = size_t(std::lround(30 / o.tick_s));
  for (size_t i = 0; i + per_window <= rows.size(); ++i) {
    double ps = 0, es = 0;
    for (size_t j = i; j < i + per_window; ++j) {
      ps += rows[j].site;
      es += rows[j].eff;
    }
    ++sliding;
    sliding_within += ps <= es * (1 + 1e-9);  // float noise of 120 summed rows
  }
  std::vector<double> realloc;
  int64_t keys = 0, txns = 0, puts = 0;
  for (auto& c : coords) {
    const CoordinatorStats st = c->stats();
    realloc.insert(realloc.end(), st.latencies_s.begin(), st.latencies_s.end());
    keys += st.keys_written;
    txns += st.txns;
  }
  Json jobs = Json::object();
  double retained = 0;
  int counted = 0;
  for (auto& n : nodes) {
    if (n.link) {
      if (double l = n.link->first_assignment_latency_s(); l >= 0) join_latency_s.push_back(l);
      puts += n.link->puts();
    }
    if (n.work_uncontrolled > 0) {
      jobs["job-" + n.name] = n.work / n.work_uncontrolled;
      retained += n.work / n.work_uncontrolled;
      ++counted;
    }
  }
  const double elapsed = unix_now() - t0;
  Json report = {
      {"nodes", o.nodes},
      {"extra_nodes_joining", extra},
      {"gpus_per_node", o.gpus_per_node},
      {"duration_s", D},
      {"allocator", o.allocator},
      {"site_budget_w", site_w},
      {"windows_30s", windows},
      {"windows_30s_within_budget", within},
      {"windows_30s_within_fraction", windows ? double(within) / windows : 0.0},
      {"worst_window_excess_fraction", worst},
      {"sliding_windows_30s_within_fraction", sliding ? double(sliding_within) / sliding : 0.0},
      {"realloc_latency_s",
       {{"count", realloc.size()},
        {"p50", percentile(realloc, 0.5)},
        {"p99", percentile(realloc, 0.99)}}},
      {"join_latency_s",
       {{"p50", percentile(join_latency_s, 0.5)}, {"p99", percentile(join_latency_s, 0.99)}}},
      {"coordinator_takeover_s", takeover_s},
      {"etcd_writes_per_s",
       {{"assignment_keys", keys / elapsed},
        {"coordinator_txns", txns / elapsed},
        {"node_registrations", puts / elapsed}}},
      {"throughput_retained_mean", counted ? retained / counted : 0.0},
      {"job_throughput_relative", jobs}};
  for (auto& n : nodes) {
    if (n.link && n.state == SimNode::State::kActive) n.link->leave(false);
  }
  for (auto& c : coords) c->stop(true);
  std::ofstream(o.out_dir + "/report.json") << report.dump(2) << "\n";
  return report;
}

}  // namespace fw::fleet
