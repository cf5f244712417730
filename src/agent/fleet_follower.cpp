#include "agent/fleet_follower.hpp"

#include <cmath>
#include <map>

#include "agent/fleet_budget.hpp"
#include "core/format.hpp"

namespace fw::agent {

Result<std::unique_ptr<FleetFollower>> FleetFollower::start(const AgentFleetConfig& cfg,
                                                            const std::string& hostname,
                                                            const PlantInfo& info) {
  auto f = std::make_unique<FleetFollower>();
  f->node_ = cfg.node.empty() ? hostname : cfg.node;
  f->configured_curve_ = node_draw_curve(cfg.draw_curve, static_cast<int>(info.gpus.size()));
  f->measured_ = std::make_unique<MeasuredDrawCurve>(node_floor_w(info), [&] {
    double w = 0;
    for (const auto& g : info.gpus) w += g.max_cap_w;
    return w;
  }());
  fleet::EtcdClientOptions etcd;
  etcd.endpoints = cfg.etcd;
  etcd.security = cfg.etcd_security;
  fleet::NodeLinkOptions o;
  o.site = cfg.site;
  o.node = f->node_;
  o.safe_share_w = cfg.safe_share_w;
  o.lease_ttl_s = cfg.lease_ttl_s;
  auto l = fleet::NodeLink::Start(etcd, o, fleet_record(f->node_, info, {}, unix_now_s()));
  if (!l.ok()) return Status(l.status().code(), "fleet: " + l.status().message());
  f->link_ = std::move(l).value();
  std::fprintf(stderr, "flexwatt agent: fleet: node %s of site %s\n", f->node_.c_str(),
               o.site.c_str());
  return f;
}

std::optional<FleetBudget> FleetFollower::follow(const NodePlant& plant, const Snapshot& latest,
                                                 const std::vector<RegisteredJob>& registered,
                                                 const FleetBudget& now) {
  if (!link_) return std::nullopt;
  std::map<std::string, double> job_pfi;
  for (size_t j = 0; j < plant.info().jobs.size(); ++j) {
    for (const RegisteredJob& js : registered) {
      if (js.id == plant.job_id(j) && std::isfinite(js.pfi)) {
        job_pfi[plant.info().jobs[j].name] = js.pfi;
      }
    }
  }
  fleet::NodeRecord rec = fleet_record(node_, plant.info(), latest, unix_now_s(), job_pfi);
  if (!configured_curve_.empty()) {
    rec.draw_curve = configured_curve_;
  } else if (measured_) {
    if (now.watts > 0) measured_->add(now.watts, rec.draw_w);
    rec.draw_curve = measured_->curve();
  }
  link_->update(rec);
  return budget_change(link_->budget(), node_floor_w(plant.info()), now);
}

std::optional<FleetBudget> budget_change(const fleet::NodeBudget& b, double floor_w,
                                         const FleetBudget& now) {
  FleetBudget out;
  out.watts = std::max(b.watts, floor_w);
  out.source = b.source == fleet::NodeBudget::Source::kAssignment ? "coordinator"
               : b.awaiting_first ? "coordinator_awaiting_assignment"
                                  : "coordinator_safe_share";
  // Only an assignment pauses; a fallback share never does (the job runs on its safe share).
  out.pause = b.pause && b.source == fleet::NodeBudget::Source::kAssignment;
  out.start_at_unix_s = b.source == fleet::NodeBudget::Source::kAssignment ? b.start_at_unix_s : 0;
  out.stop_at_unix_s = b.source == fleet::NodeBudget::Source::kAssignment ? b.stop_at_unix_s : 0;
  if (out.source == now.source && out.pause == now.pause &&
      out.start_at_unix_s == now.start_at_unix_s && out.stop_at_unix_s == now.stop_at_unix_s &&
      out.watts <= now.watts + 0.5 && out.watts >= now.watts - 1e-9) {
    return std::nullopt;
  }
  return out;
}

Result<fleet::PublishedPlan> FleetFollower::published_plan(const std::string& job) const {
  auto p = link_ ? link_->plan(job) : std::nullopt;
  if (!p) {
    return Status::NotFound("job " + job + ": no plan published for it (PUT /v1/plans/" + job +
                            " on the coordinator; the node reads plans every lease_ttl_s / 3)");
  }
  return *p;
}

void FleetFollower::leave() {
  if (!link_) return;
  link_->leave(false);
  link_.reset();
}

}  // namespace fw::agent
