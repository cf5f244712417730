#pragma once
// FleetFollower: a node agent's link to the fleet coordinator (cfg.fleet enabled), one job:
// report the node each tick and say what node budget the coordinator's assignment (or the
// fallback share) puts in force.
//   start(): registers through fleet::NodeLink (node name: cfg.fleet.node, else the host name).
//   follow(): reports the node (its GPUs, draw, each plant job's PFI as its channel job declared
//     it, finite only) and returns the budget to put in force, or nothing when the one in force
//     stands: a lower budget is taken at once; a raise waits until it is above 0.5 W (the only
//     deadband); a change of source (assignment, awaiting the first, safe share) always
//     counts. Below the node's floor (a 0 W target) the floor: every GPU at its minimum cap.
//   The record carries a draw curve (the coordinator's site-loop feed-forward): cfg.draw_curve
//     (the job's sweep) when configured, else the curve the node measured (MeasuredDrawCurve
//     of the budget in force against the node's draw, once it has two points).
//   leave(): drops the registration (the share is held back: the restored caps may draw).
// The loop thread only.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.hpp"
#include "agent/agent_state.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/job_registry.hpp"
#include "core/status.hpp"
#include "fleet/node_link.hpp"
#include "runtime/node_plant.hpp"

namespace fw::agent {

// A budget the coordinator puts in force: watts on the node, and where it came from
// (coordinator | coordinator_awaiting_assignment | coordinator_safe_share).
struct FleetBudget {
  double watts = 0;
  std::string source;
  // The assignment pauses the node's jobs (keys.hpp Assignment::pause): the agent relays it to
  // every job on the node (AgentTick::paused()) and holds the GPUs at `watts` (the floor).
  bool pause = false;
  // The coordinator's start gate for the node's jobs that announced a start (keys.hpp
  // Assignment::start_at_unix_s; 0: none): relayed to every job on the node.
  double start_at_unix_s = 0;
  // Its stop gate for the node's jobs that announced an end (Assignment::stop_at_unix_s; 0:
  // none): relayed to every job on the node.
  double stop_at_unix_s = 0;
};

// The budget a link's `b` puts in force on a node whose budget in force is `now` (its watts,
// source, pause and gates), by the rule above (floor, deadband, source change; a change of
// pause or of a gate always counts); nothing when it stands.
std::optional<FleetBudget> budget_change(const fleet::NodeBudget& b, double floor_w,
                                         const FleetBudget& now);

// Where a following node's budget comes from, as AgentTick asks each tick: FleetFollower (the
// coordinator through etcd) or a simulated site's node (fleet_sim/agent_node.hpp). follow():
// `now` is the budget in force (watts, source, pause, gates); returns the budget to put
// in force, nothing when it stands.
class BudgetFollower {
 public:
  virtual ~BudgetFollower() = default;
  virtual std::optional<FleetBudget> follow(const NodePlant& plant, const Snapshot& latest,
                                            const std::vector<RegisteredJob>& registered,
                                            const FleetBudget& now) = 0;
  // The plan published through the coordinator for a job (fleet/node_link.hpp plan(): as last
  // read; `plan:fleet`), NotFound when none; plan_changes() counts the changes seen. Safe from
  // any thread.
  virtual Result<fleet::PublishedPlan> published_plan(const std::string& job) const {
    return Status::NotFound("job " + job + ": no plan published for it");
  }
  virtual int64_t plan_changes() const { return 0; }
};

class FleetFollower : public BudgetFollower {
 public:
  static Result<std::unique_ptr<FleetFollower>> start(const AgentFleetConfig& cfg,
                                                      const std::string& hostname,
                                                      const PlantInfo& info);
  std::optional<FleetBudget> follow(const NodePlant& plant, const Snapshot& latest,
                                    const std::vector<RegisteredJob>& registered,
                                    const FleetBudget& now) override;
  Result<fleet::PublishedPlan> published_plan(const std::string& job) const override;
  int64_t plan_changes() const override { return link_ ? link_->plan_changes() : 0; }
  void leave();

 private:
  std::unique_ptr<fleet::NodeLink> link_;
  std::string node_;
  std::vector<std::pair<double, double>> configured_curve_;  // per node (scaled)
  std::unique_ptr<MeasuredDrawCurve> measured_;
};

}  // namespace fw::agent
