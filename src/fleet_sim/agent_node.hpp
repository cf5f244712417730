#pragma once
// AgentNode: a simulated node run by the node agent's own tick (agent/agent_tick.hpp), as
// `flexwatt agent` runs on a node that follows a coordinator: its controller (cfg.controller,
// the agent's default pid), its limit stages (the share guard among them) and its
// SafetyLimiter set the GPUs' caps from the node budget of the coordinator's assignment. The
// SimNode's GPUs are its plant, through the agent's simulator adapter
// (runtime/sim_node_plant.hpp adopt_sim_plant); no job channel (the node's jobs are the
// simulated ones, their knobs out of the agent's reach).
//
// Contract:
//  - start(node, cfg, b): `node` (must outlive it) at its start, its budget the link's `b`;
//    cfg.period_s is the tick (the caller's step), cfg.fleet unused.
//  - step(t_s, b): one agent tick at node time t_s = k * cfg.period_s (k = 0, 1, ...): the
//    link's budget b is taken by the agent's follow rule (agent/fleet_follower.hpp
//    budget_change: floor, deadband, source, pause), the node's job paused as the agent relays
//    b.pause (AgentTick::paused(), the same relay a real node's jobs hear); the tick's read
//    advances the node to t_s under the caps the previous tick wrote (SimNode::advance), the
//    controller decides, the limit chain and the limiter pass the command, the write sets the
//    node's caps for the next interval.
//  - the tick's log lines are counted (log_lines()), not printed (64 nodes would flood stderr);
//    the last is kept (last_log()).
// Not thread-safe; deterministic for a node seed.

#include <memory>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/agent_tick.hpp"
#include "agent/commands.hpp"
#include "agent/job_registry.hpp"
#include "core/status.hpp"
#include "fleet/node_link.hpp"
#include "fleet_sim/sim_node.hpp"
#include "runtime/node_plant.hpp"

namespace fw::fleet {

class AgentNode {
 public:
  static Result<std::unique_ptr<AgentNode>> start(SimNode& node, const agent::AgentConfig& cfg,
                                                  const NodeBudget& b);
  ~AgentNode();
  Status step(double t_s, const NodeBudget& b);

  const agent::AgentTick& tick() const { return *tick_; }
  int64_t budget_changes() const;  // budgets the follow rule put in force (each restarts)
  int64_t log_lines() const { return log_lines_; }
  const std::string& last_log() const { return last_log_; }

 private:
  class Gpus;
  class Link;
  AgentNode() = default;

  agent::AgentConfig cfg_;
  Gpus* gpus_ = nullptr;  // owned by plant_
  std::unique_ptr<NodePlant> plant_;
  agent::CommandQueue commands_;
  agent::JobRegistry jobs_;
  std::unique_ptr<Link> link_;
  std::unique_ptr<agent::AgentTick> tick_;
  int64_t log_lines_ = 0;
  std::string last_log_;
};

}  // namespace fw::fleet
