#pragma once
// SimNode: one simulated node of a site (fleet-sim, the coordinator's live DR tests): a
// sim::Cluster built from a node scenario (every GPU of it is the node's), run in the node's
// own virtual time, with its uncapped twin beside it (the same cluster, same seed, never
// capped: the node's uncontrolled draw and throughput). Everything it reports is simulated.
//
// Contract:
//  - step(t_s, budget_w) applies the node budget as equal per-GPU caps, budget / GPUs clamped
//    to the GPUs' cap range (a budget below the floor puts every GPU at its minimum cap, as the
//    agent does), then advances both clusters to virtual time t_s (non-decreasing).
//  - set_caps(caps_w) sets per-GPU caps (NaN: unchanged), clamped to each GPU's range;
//    advance(t_s, pause) advances both clusters to t_s under the caps in force (the node's
//    agent: fleet_sim/agent_node.hpp); step() is set_caps of the equal split, then advance().
//  - step(t_s, budget_w, pause = true): the node's job is paused (keys.hpp Assignment pause):
//    its cluster does not advance (the job makes no progress and resumes where it stopped);
//    the node draws what its GPUs draw with no job started (an idle twin of the scenario, made
//    at the first pause, the job's start never reached); the uncapped twin runs on.
//  - power_w() / uncontrolled_w(): the mean GPU power of the node between the energy counters'
//    last steps at or before the previous and this step (they step every 100 ms; sensor power
//    where a GPU has none, or while no counter step has passed); tokens(): cumulative
//    trained tokens of the node's jobs, capped and uncapped.
//  - record(): the node's registration (NodeRecord) as an agent writes it: gpus, nameplate and
//    floor from the GPUs' cap range, draw, caps, uncontrolled draw (the grid baseline), one
//    job record per simulated job (its PFI if one was given).
//  - On the replay's plant (the CurveGpus constructor, curve_node.hpp): the node's GPUs draw
//    its job's measured cap curve instead of a sim::Cluster; the caps in force act as their
//    mean (the curve plant has one cap per node; the agent's fallback writes equal caps); the
//    snapshot has each GPU at the node's draw / GPUs, its cap and energy counter, and one job
//    (its progress: CurveGpus::tokens); a paused job draws 0 W (record: paused_draw_w 0);
//    set_run_offset puts the node's time 0 at that run time (dips on the run's clock).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "fleet/keys.hpp"
#include "fleet_sim/curve_node.hpp"
#include "sim/scenario.hpp"

namespace fw::fleet {

// A cluster owned by value: copying a SimNode copies its clusters' state (sim::Cluster is
// copyable; the probe below runs copies of one running node).
class ClusterBox {
 public:
  ClusterBox() = default;
  explicit ClusterBox(std::unique_ptr<sim::Cluster> c) : c_(std::move(c)) {}
  ClusterBox(const ClusterBox& o) : c_(o.c_ ? std::make_unique<sim::Cluster>(*o.c_) : nullptr) {}
  ClusterBox& operator=(const ClusterBox& o) {
    if (this != &o) c_ = o.c_ ? std::make_unique<sim::Cluster>(*o.c_) : nullptr;
    return *this;
  }
  ClusterBox(ClusterBox&&) = default;
  ClusterBox& operator=(ClusterBox&&) = default;
  sim::Cluster* operator->() const { return c_.get(); }
  sim::Cluster& operator*() const { return *c_; }
  explicit operator bool() const { return c_ != nullptr; }

 private:
  std::unique_ptr<sim::Cluster> c_;
};

class SimNode {
 public:
  // `scenario`: the node's scenario (its GPUs and jobs); `seed`: the node's run seed;
  // `pfi` > 0 is published with every job (0: none).
  SimNode(std::string name, const sim::Scenario& scenario, uint64_t seed, double pfi = 0);
  // A node on the replay's plant (its job's curve, noise and dips; curve_node.hpp).
  SimNode(std::string name, CurveGpus gpus, uint64_t seed);
  void set_run_offset(double s) {
    if (on_curve_) on_curve_->set_run_offset(s);
  }
  bool on_curve() const { return on_curve_.has_value(); }

  Status step(double t_s, double budget_w, bool pause = false);
  void set_caps(const std::vector<double>& caps_w);
  Status advance(double t_s, bool pause);
  // The GPUs' last reading (the idle twin's while paused) and the node's plant info.
  const Snapshot& snapshot() const { return paused_ && !on_curve_ ? snap_idle_ : snap_; }
  const PlantInfo& info() const { return on_curve_ ? curve_info_ : capped_->info(); }
  const std::vector<double>& caps_w() const { return caps_w_; }
  bool paused() const { return paused_; }
  double paused_s() const { return paused_s_; }  // virtual time spent paused

  const std::string& name() const { return name_; }
  uint64_t seed() const { return seed_; }
  int gpus() const { return static_cast<int>(min_cap_w_.size()); }
  double min_w() const;
  double nameplate_w() const;
  double power_w() const { return power_w_; }
  double uncontrolled_w() const { return uncontrolled_w_; }
  double cap_w() const;  // sum of the caps in force
  double tokens() const { return tokens_; }
  double tokens_uncontrolled() const { return tokens_free_; }
  double pfi() const { return pfi_; }
  NodeRecord record(double time_unix_s) const;
  // The draw curve the node publishes in its record (keys.hpp NodeRecord::draw_curve).
  void set_draw_curve(std::vector<std::pair<double, double>> curve) { curve_ = std::move(curve); }
  // The throughput curve it publishes (keys.hpp NodeRecord::throughput_curve).
  void set_throughput_curve(std::vector<std::pair<double, double>> curve) {
    tput_curve_ = std::move(curve);
  }
  // Its jobs' records (keys.hpp JobRecord): the job id all nodes of one site job share
  // (default: "<node>.<sim job>"), tier and pausable.
  // The start its jobs announce in its record (JobRecord::starts_at_unix_s; 0: none).
  void set_starts_at(double unix_s) { starts_at_unix_s_ = unix_s; }
  double starts_at() const { return starts_at_unix_s_; }
  // The end its jobs announce in its record (JobRecord::ends_at_unix_s; 0: none).
  void set_ends_at(double unix_s) { ends_at_unix_s_ = unix_s; }
  double ends_at() const { return ends_at_unix_s_; }
  // The node's jobs end for good (their processes exit): from the next advance the node draws
  // what its GPUs draw with no job (the idle twin, as while paused; not counted in paused_s()).
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }
  void set_job(std::string id, double tier_min, bool pausable) {
    job_id_ = std::move(id);
    tier_min_ = tier_min;
    pausable_ = pausable;
  }

 private:
  struct Meter {
    std::vector<double> energy_j;
    double t_s = 0;
  };
  static double mean_power(const Snapshot& s, Meter& m, double t_s, double counter_period_s);
  void fill_curve_snapshot();

  std::string name_;
  std::vector<std::string> job_names_;
  ClusterBox capped_, free_, idle_;    // copied with the node
  std::optional<CurveGpus> on_curve_;  // the replay's plant instead of the clusters
  PlantInfo curve_info_;
  sim::Scenario idle_scenario_;
  uint64_t seed_ = 0;
  bool paused_ = false;
  double paused_s_ = 0;
  Snapshot snap_idle_;
  Meter meter_idle_;
  std::string job_id_;
  double tier_min_ = 0;
  bool pausable_ = false;
  double starts_at_unix_s_ = 0, ends_at_unix_s_ = 0;
  bool stopped_ = false;
  std::vector<std::pair<double, double>> tput_curve_;
  std::vector<double> min_cap_w_, max_cap_w_, caps_w_;
  Snapshot snap_, snap_free_;
  Meter meter_, meter_free_;
  double power_w_ = 0, uncontrolled_w_ = 0, tokens_ = 0, tokens_free_ = 0, pfi_ = 0;
  double t_s_ = 0, counter_period_s_ = 0.1;
  std::vector<std::pair<double, double>> curve_;
};

// A node job's cap sweep on the simulator: a node of `scenario` (seed `seed`) run uncapped for
// warm_s of virtual time (its job's running state), then, from a copy of that state per budget,
// at each of `points` node budgets evenly from its floor to its nameplate for settle_s then
// measure_s. Per budget: the mean draw over the measured span and the tokens trained there
// relative to the uncapped twin. warm_s = 0: a fresh node per budget, its job started at 0
// (its first seconds are not the running state: the curve reads the live run off).
struct DrawCurvePoint {
  double budget_w = 0, draw_w = 0, throughput_rel = 0;
};
Result<std::vector<DrawCurvePoint>> probe_draw_curve(const sim::Scenario& scenario, uint64_t seed,
                                                     int points = 9, double settle_s = 20,
                                                     double measure_s = 171, double tick_s = 0.25,
                                                     double warm_s = 0);

}  // namespace fw::fleet
