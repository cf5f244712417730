#include "fleet_sim/agent_node.hpp"

#include <cmath>

#include "agent/fleet_budget.hpp"
#include "agent/fleet_follower.hpp"
#include "runtime/sim_node_plant.hpp"

namespace fw::fleet {

// The SimNode as a Plant: a read advances it to the read's time under the caps in force (the
// job paused as the current budget says); a write sets its caps. Knobs are never reachable
// (no job channel), so none are written.
class AgentNode::Gpus : public Plant {
 public:
  explicit Gpus(SimNode& node) : node_(node) {}
  const PlantInfo& info() const override { return node_.info(); }
  Status read(double now_s, Snapshot& out) override {
    FW_RETURN_IF_ERROR(node_.advance(now_s, pause));
    out = node_.snapshot();
    return Status::Ok();
  }
  Status write(const Command& cmd) override {
    node_.set_caps(cmd.power_cap_w);
    return Status::Ok();
  }
  bool pause = false;

 private:
  SimNode& node_;
};

// The link's budget, as FleetFollower takes it from etcd (the caller publishes the record).
class AgentNode::Link : public agent::BudgetFollower {
 public:
  std::optional<agent::FleetBudget> follow(const NodePlant& plant, const Snapshot&,
                                           const std::vector<agent::RegisteredJob>&,
                                           const agent::FleetBudget& now) override {
    auto b = agent::budget_change(budget, agent::node_floor_w(plant.info()), now);
    changes += b.has_value();
    return b;
  }
  NodeBudget budget;
  int64_t changes = 0;
};

AgentNode::~AgentNode() = default;

int64_t AgentNode::budget_changes() const { return link_->changes; }

Result<std::unique_ptr<AgentNode>> AgentNode::start(SimNode& node, const agent::AgentConfig& cfg,
                                                    const NodeBudget& b) {
  std::unique_ptr<AgentNode> a(new AgentNode());
  a->cfg_ = cfg;
  a->cfg_.fleet = {};
  auto gpus = std::make_unique<Gpus>(node);
  a->gpus_ = gpus.get();
  a->plant_ = adopt_sim_plant(a->cfg_.plant, std::move(gpus), node.caps_w(), nullptr);
  a->link_ = std::make_unique<Link>();
  a->link_->budget = b;
  a->tick_ = std::make_unique<agent::AgentTick>(a->cfg_, *a->plant_, a->commands_, a->jobs_,
                                                a->link_.get());
  AgentNode* self = a.get();
  a->tick_->set_log([self](const std::string& line) {
    ++self->log_lines_;
    self->last_log_ = line;
  });
  // The agent relays the coordinator's pause; the node's simulated job obeys it.
  a->tick_->on_pause([self](bool paused) { self->gpus_->pause = paused; });
  Budget first;
  first.watts = std::max(b.watts, agent::node_floor_w(node.info()));
  first.scope = BudgetScope::kNode;
  first.window_s = std::isnan(cfg.window_s) ? 30 : cfg.window_s;
  FW_RETURN_IF_ERROR(a->tick_->start(first));
  return a;
}

Status AgentNode::step(double t_s, const NodeBudget& b) {
  link_->budget = b;
  tick_->tick(t_s);
  tick_->advance();
  const Snapshot& s = tick_->latest();
  if (!(std::abs(s.time_s - t_s) < 1e-6)) {
    return Status::Internal("AgentNode::step: the node read " + std::to_string(s.time_s) +
                            " s at tick time " + std::to_string(t_s) + " s");
  }
  return Status::Ok();
}

}  // namespace fw::fleet
