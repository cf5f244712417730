#include "fleet/coordinator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/format.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {

double Coordinator::now_s() { return fw::unix_now_s(); }

nlohmann::json to_json(const RampEvent& e, double t0_unix_s) {
  nlohmann::json j = {{"kind", e.kind},
                      {"state", e.state},
                      {"effective_w", e.effective_w},
                      {"target_w", e.target_w},
                      {"correlation_id", e.correlation_id}};
  if (t0_unix_s > 0) {
    j["t_s"] = e.time_unix_s - t0_unix_s;
  } else {
    j["time_unix_s"] = e.time_unix_s;
  }
  return j;
}

Result<std::unique_ptr<Coordinator>> Coordinator::Start(EtcdClientOptions etcd,
                                                        CoordinatorOptions options) {
  FW_RETURN_IF_ERROR(check_name("site", options.site));
  if (options.id.empty()) return Status::InvalidArgument("coordinator: id must not be empty");
  if (options.lease_ttl_s < 2 || options.expiry_s <= 0 || options.refresh_s <= 0 ||
      options.refresh_s * 2 > options.expiry_s || options.campaign_timeout_s <= 0) {
    return Status::InvalidArgument(
        "coordinator: need lease_ttl_s >= 2, campaign_timeout_s > 0, 0 < 2*refresh_s <= "
        "expiry_s");
  }
  FW_ASSIGN_OR_RETURN(std::unique_ptr<Allocator> alloc, make_allocator(options.allocator));
  FW_ASSIGN_OR_RETURN(EtcdClient client, EtcdClient::Create(std::move(etcd)));
  auto c = std::unique_ptr<Coordinator>(new Coordinator(
      std::make_unique<EtcdClient>(std::move(client)), std::move(options), std::move(alloc)));
  WatchOptions w;
  w.key = site_prefix(c->options_.site);
  w.range_end = prefix_end(w.key);
  Coordinator* self = c.get();
  c->watch_ = EtcdWatch::Start(c->etcd_.get(), w,
                               [self](const std::vector<WatchEvent>& ev) { self->on_events(ev); });
  c->thread_ = std::thread([self] { self->run(); });
  return c;
}

namespace {

// The coordinator's round: its site loop, reclaim, pausing and tier window (default: tiers
// judged per event).
SiteRoundOptions site_round_options(const CoordinatorOptions& o) {
  SiteRoundOptions so;
  so.site_loop = o.site_loop;
  so.reclaim = o.site_loop_reclaim;
  so.pause_stagger_s = o.pause_stagger_s;
  so.tier_window = o.tier_window;
  so.resume_s = o.resume_s;
  return so;
}

}  // namespace

Coordinator::Coordinator(std::unique_ptr<EtcdClient> etcd, CoordinatorOptions options,
                         std::unique_ptr<Allocator> allocator)
    : etcd_(std::move(etcd)),
      options_(std::move(options)),
      allocator_(std::move(allocator)),
      site_round_(site_round_options(options_), *allocator_),
      start_gate_(options_.start_ramp_w_per_s),
      stop_gate_(options_.stop_ramp_w_per_s) {}

Coordinator::~Coordinator() { stop(resign_on_stop_); }

void Coordinator::stop(bool resign) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_.exchange(true)) return;
    resign_on_stop_ = resign;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watch_) watch_->cancel();
  if (keeper_) keeper_->stop();
  if (resign && leader_.load()) {
    (void)etcd_->resign(leader_key_);
    (void)etcd_->lease_revoke(leader_key_.lease);
  }
  leader_ = false;
}

CoordinatorStats Coordinator::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  CoordinatorStats s = stats_;
  s.leader = leader_.load();
  return s;
}

Result<ScheduleChange> Coordinator::schedule_grid(const std::string& group,
                                                  const std::vector<GridTarget>& events) {
  ScheduleChange out;
  auto stored = update_grid_schedule(*etcd_, options_.site,
                                     [&](const GridSchedule& current) -> Result<GridSchedule> {
                                       out = schedule_events(current, group, events, now_s());
                                       if (out.http_status != 200)
                                         return Status::InvalidArgument(out.error);
                                       return out.schedule;
                                     });
  if (!stored.ok() && out.http_status == 200) return stored.status();
  return out;
}

Status Coordinator::put_grid_target(const GridTarget& target) {
  FW_ASSIGN_OR_RETURN(ScheduleChange c, schedule_grid(target.correlation_id, {target}));
  if (c.http_status != 200) return Status::InvalidArgument(c.error);
  return Status::Ok();
}

void Coordinator::on_events(const std::vector<WatchEvent>& events) {
  // Re-split on joins, leaves, job changes, budget, grid and off markers; a node's periodic
  // draw update alone waits for the next refresh.
  // Election keys (campaigns come and go every campaign_timeout_s) and the coordinator's own
  // assignment writes are not changes of the site.
  const std::string assign = assign_prefix(options_.site), nodes = nodes_prefix(options_.site),
                    election = election_name(options_.site);
  bool relevant = false;
  std::lock_guard<std::mutex> lk(jobs_mu_);
  for (const auto& e : events) {
    if (e.kv.key.rfind(assign, 0) == 0 || e.kv.key.rfind(election, 0) == 0) continue;
    if (e.kv.key.rfind(nodes, 0) != 0) {
      relevant = true;
      continue;
    }
    if (e.type == WatchEvent::Type::kDelete) {
      jobs_of_.erase(e.kv.key);
      relevant = true;
      continue;
    }
    std::string jobs;
    if (auto r = decode_node(e.kv.value, e.kv.key); r.ok()) {
      for (const auto& j : r->jobs) jobs += j.id + "/" + std::to_string(j.gpus) + ",";
    }
    auto it = jobs_of_.find(e.kv.key);
    if (it == jobs_of_.end() || it->second != jobs) {
      jobs_of_[e.kv.key] = jobs;
      relevant = true;
    }
  }
  if (!relevant) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (dirty_since_s_ < 0) dirty_since_s_ = now_s();
  }
  cv_.notify_all();
}

void Coordinator::lose_leadership() {
  leader_ = false;
  if (keeper_) keeper_->stop();
  keeper_.reset();
}

bool Coordinator::campaign() {
  if (!keeper_ || keeper_->lost()) {
    auto grant = etcd_->lease_grant(int64_t(std::ceil(options_.lease_ttl_s)));
    if (!grant.ok()) return false;
    keeper_ = LeaseKeeper::Start(etcd_.get(), *grant);
  }
  auto won = etcd_->campaign(election_name(options_.site), keeper_->id(), options_.id,
                             options_.campaign_timeout_s);
  if (!won.ok()) return false;
  leader_key_ = *won;
  leader_ = true;
  std::lock_guard<std::mutex> lk(mu_);
  stats_.leader_rev = won->rev;
  stats_.elections_won++;
  dirty_since_s_ = now_s();  // a follower's old change marks are moot: re-split from now
  won_at_s_ = dirty_since_s_;
  return true;
}

void Coordinator::run() {
  double last_round_s = 0, last_track_s = 0;
  while (!stop_.load()) {
    if (!leader_.load()) {
      if (!campaign()) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, std::chrono::milliseconds(int(options_.tick_s * 1000)),
                     [&] { return stop_.load(); });
      }
      continue;
    }
    if (keeper_->lost()) {
      lose_leadership();
      continue;
    }
    std::string reason;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(int(options_.tick_s * 1000)),
                   [&] { return stop_.load() || dirty_since_s_ >= 0; });
      if (stop_.load()) break;
      const double now = now_s();
      if (dirty_since_s_ >= 0) {
        reason = "change";
      } else if (now - last_round_s >= options_.refresh_s) {
        reason = "refresh";
      }
    }
    track_ramp(now_s());
    if (reason.empty() && ramp_pending_) {
      const double now = now_s();
      const double eff =
          std::min(effective_budget_w(last_in_.site_w, last_in_.grid, now),
                   effective_budget_w(last_in_.site_w, last_in_.grid, now + 2 * options_.tick_s));
      if (std::abs(eff - last_effective_w_) > 0.005 * std::max(last_effective_w_, 1.0)) {
        reason = "ramp";
      }
    }
    if (reason.empty() && options_.site_loop.enabled && last_in_.site_w > 0 &&
        now_s() - last_track_s >= options_.site_loop.period_s &&
        effective_budget_w(last_in_.site_w, last_in_.grid, now_s()) < last_in_.site_w) {
      reason = "track";
    }
    if (reason.empty()) continue;
    last_round_s = last_track_s = now_s();
    if (!round(reason)) lose_leadership();
  }
}

void Coordinator::track_ramp(double now) {
  if (last_in_.site_w <= 0) return;  // no round yet
  const RampState next = ramp_state(last_in_.site_w, last_in_.grid, now);
  if (!ramp_seen_) {
    ramp_seen_ = true;
    ramp_state_ = next;
    std::lock_guard<std::mutex> lk(mu_);
    stats_.ramp_state = ramp_state_name(next);
    return;
  }
  if (next == ramp_state_) return;
  const RampState prev = ramp_state_;
  ramp_state_ = next;
  const bool moving = next == RampState::kRampingDown || next == RampState::kRampingUp;
  const bool was_moving = prev == RampState::kRampingDown || prev == RampState::kRampingUp;
  RampEvent e;
  e.time_unix_s = now;
  e.state = ramp_state_name(next);
  e.effective_w = effective_budget_w(last_in_.site_w, last_in_.grid, now);
  // The event that moves the budget now; on the way back up, the one that just ended.
  const GridTarget* ev = binding_event(last_in_.site_w, last_in_.grid, now);
  if (!ev) ev = binding_event(last_in_.site_w, last_in_.grid, now - options_.tick_s);
  if (ev) last_event_ = *ev;
  const double target_w = last_event_.value_w ? *last_event_.value_w : 0;
  e.target_w =
      next == RampState::kRampingDown || next == RampState::kHolding ? target_w : last_in_.site_w;
  e.correlation_id = last_event_.correlation_id;
  std::vector<RampEvent> out;
  if (was_moving) {
    e.kind = "ramp_end";
    out.push_back(e);
  }
  if (next == RampState::kHolding) {
    e.kind = "target_reached";
    out.push_back(e);
  }
  if (moving) {
    e.kind = "ramp_start";
    out.push_back(e);
  }
  std::lock_guard<std::mutex> lk(mu_);
  stats_.ramp_state = e.state;
  for (auto& x : out) {
    if (stats_.ramp_events.size() >= 1000) stats_.ramp_events.erase(stats_.ramp_events.begin());
    stats_.ramp_events.push_back(std::move(x));
  }
}

Result<bool> Coordinator::fenced(const std::vector<TxnOp>& ops) {
  const std::vector<Compare> fence = {
      Compare::CreateRevision(leader_key_.key, Compare::Op::kEqual, leader_key_.rev)};
  for (size_t i = 0; i < ops.size(); i += kMaxTxnOps) {
    std::vector<TxnOp> batch(ops.begin() + i, ops.begin() + std::min(ops.size(), i + kMaxTxnOps));
    FW_ASSIGN_OR_RETURN(TxnResponse t, etcd_->txn(fence, batch));
    std::lock_guard<std::mutex> lk(mu_);
    stats_.txns++;
    if (!t.succeeded) {
      stats_.fenced_refusals++;
      return false;
    }
    stats_.keys_written += int64_t(batch.size());
  }
  return true;
}

// A gate's slots on the live records (start_gate.hpp): one request per job that announces (its
// record's `at` > 0; its earliest announcement over its nodes; its power, `load`, summed over
// them), and per node the latest slot of its announcing jobs (none while the gate is off).
static std::map<std::string, double> gate_slots(const PlanInput& in, StartGate& gate,
                                                double (*at)(const JobRecord&),
                                                double (*load)(const NodeRecord&,
                                                               const JobRecord&)) {
  std::map<std::string, StartRequest> by_job;
  for (const auto& [node, r] : in.live) {
    for (const JobRecord& j : r.jobs) {
      if (!(at(j) > 0)) continue;
      auto [it, fresh] = by_job.try_emplace(j.id, StartRequest{j.id, at(j), 0});
      if (!fresh) it->second.announced_unix_s = std::min(it->second.announced_unix_s, at(j));
      it->second.rise_w += load(r, j);
    }
  }
  std::vector<StartRequest> req;
  for (const auto& [id, r] : by_job) req.push_back(r);
  const std::map<std::string, double> slot = gate.plan(req, in.now_unix_s);
  std::map<std::string, double> out;
  if (!(gate.ramp_w_per_s() > 0)) return out;
  for (const auto& [node, r] : in.live) {
    for (const JobRecord& j : r.jobs) {
      auto s = slot.find(j.id);
      if (s != slot.end() && at(j) > 0) out[node] = std::max(out[node], s->second);
    }
  }
  return out;
}

// The start gate: a job's rise is each node's share of its nameplate for the job's GPUs less
// what the job draws there now.
std::map<std::string, double> Coordinator::start_slots(const PlanInput& in) {
  return gate_slots(
      in, start_gate_, [](const JobRecord& j) { return j.starts_at_unix_s; },
      [](const NodeRecord& r, const JobRecord& j) {
        const double per_gpu = r.gpus > 0 ? r.nameplate_w / r.gpus : 0;
        return std::max(0.0, per_gpu * j.gpus - j.draw_w);
      });
}

// The stop gate (the same rule on announced ends): a job's fall is what it draws now.
std::map<std::string, double> Coordinator::stop_slots(const PlanInput& in) {
  return gate_slots(
      in, stop_gate_, [](const JobRecord& j) { return j.ends_at_unix_s; },
      [](const NodeRecord&, const JobRecord& j) { return std::max(0.0, j.draw_w); });
}

bool Coordinator::round(const std::string& reason) {
  double since;
  {
    std::lock_guard<std::mutex> lk(mu_);
    since = dirty_since_s_;
    dirty_since_s_ = -1;
  }
  const std::string& site = options_.site;
  auto nodes = list_nodes(*etcd_, site);
  auto assigned = list_assignments(*etcd_, site);
  auto off = etcd_->get_prefix(off_prefix(site));
  auto joins = etcd_->get_prefix(join_prefix(site));
  if (!nodes.ok() || !assigned.ok() || !off.ok() || !joins.ok()) {
    std::lock_guard<std::mutex> lk(mu_);
    if (dirty_since_s_ < 0) dirty_since_s_ = since;  // retry next tick
    return true;
  }
  PlanInput in;
  in.now_unix_s = now_s();
  in.site_w = options_.default_budget_w;
  if (auto b = read_budget(*etcd_, site); b.ok()) in.site_w = b->watts;
  if (auto g = read_grid_schedule(*etcd_, site); g.ok()) in.grid = *g;
  in.live = nodes->nodes;
  in.expiry_s = options_.expiry_s;
  // Nodes this leader has not assigned yet may apply an earlier leader's assignment until it
  // expires (split_plan.hpp "settling").
  in.settle_until_unix_s = won_at_s_ + options_.expiry_s;
  in.leader_rev = leader_key_.rev;
  // Room for a joiner at its floor: the largest floor of the nodes seen (split_plan.hpp).
  for (const auto& [node, r] : nodes->nodes) {
    in.joiner_reserve_w = std::max(in.joiner_reserve_w, r.min_w);
  }
  in.lookahead_s = round_lookahead_s(options_.tick_s, in.site_w, in.grid);
  in.assigned = assigned->assignments;
  for (const auto& kv : off->kvs) {
    if (auto n = node_of_key(site, kv.key); n.ok()) in.off.insert(*n);
  }
  // Pending joiners (split_plan.hpp "joiner"); a marker that does not decode counts as the
  // largest floor seen. Markers of nodes this leader has assigned are deleted below.
  std::vector<std::string> joined;
  for (const auto& kv : joins->kvs) {
    auto n = node_of_key(site, kv.key);
    if (!n.ok()) continue;
    if (in.live.count(*n)) {
      auto a = in.assigned.find(*n);
      if (a != in.assigned.end() && a->second.revision == leader_key_.rev) joined.push_back(*n);
      continue;
    }
    auto m = decode_join(kv.value, kv.key);
    in.pending[*n] = m.ok() ? m->min_w : in.joiner_reserve_w;
  }
  const SiteRoundResult res = site_round_.plan(in);
  const Plan& plan = res.plan;
  const double power = res.measured_w, baseline = res.baseline_w;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (res.ramp_limited) stats_.ramp_limit_w_per_s = res.ramp_limit_w_per_s;
    if (options_.site_loop.enabled) {
      stats_.split_max_fall_w_per_s = site_round_.loop().max_fall_w_per_s();
      stats_.split_max_rise_w_per_s = site_round_.loop().max_rise_w_per_s();
    }
    stats_.holdable_target_w = res.holdable.holdable_w;
    stats_.site_floor_w = res.holdable.floor_w;
    stats_.shortfall_w = res.shortfall_w;
    stats_.shortfall_event = res.shortfall_event;
  }
  if (in.site_w <= 0) return true;

  const std::map<std::string, double> start_at = start_slots(in);
  const std::map<std::string, double> stop_at = stop_slots(in);
  std::vector<TxnOp> down, up;
  for (const auto& [node, w] : plan.watts) {
    Assignment a;
    a.watts = w;
    a.revision = leader_key_.rev;
    a.expires_unix_s = in.now_unix_s + options_.expiry_s;
    a.reason = reason;
    a.safe_w = plan.safe_w.at(node);
    a.reserve_w = plan.reserve_w.at(node);
    a.pause = plan.paused_nodes.count(node) > 0;
    if (auto s = start_at.find(node); s != start_at.end()) a.start_at_unix_s = s->second;
    if (auto s = stop_at.find(node); s != stop_at.end()) a.stop_at_unix_s = s->second;
    auto prev = in.assigned.find(node);
    // A pause lowers (its floor); a resume raises.
    const bool raise = prev == in.assigned.end() || w > prev->second.watts + 1e-6 ||
                       (prev->second.pause && !a.pause);
    (raise ? up : down).push_back(TxnOp::Put(assign_key(site, node), encode(a)));
  }
  for (const auto& node : plan.freed) {
    down.push_back(TxnOp::Delete(assign_key(site, node)));
    down.push_back(TxnOp::Delete(off_key(site, node)));
  }
  for (const auto& node : joined) down.push_back(TxnOp::Delete(join_key(site, node)));
  for (const auto* ops : {&down, &up}) {
    auto ok = fenced(*ops);
    if (ok.ok() && !*ok) return false;
    if (!ok.ok()) {
      std::lock_guard<std::mutex> lk(mu_);
      if (dirty_since_s_ < 0) dirty_since_s_ = since >= 0 ? since : now_s();
      return true;
    }
  }
  const double t_done = now_s();
  // A ramp in progress or due before the next refresh: checked every tick until it is over.
  last_in_.site_w = in.site_w;
  last_in_.grid = in.grid;
  last_effective_w_ = plan.effective_w;
  ramp_pending_ = false;
  for (double dt = options_.tick_s; dt <= options_.refresh_s + 1e-9; dt += options_.tick_s) {
    ramp_pending_ |= std::abs(effective_budget_w(in.site_w, in.grid, t_done + dt) -
                              plan.effective_w) > 0.005 * std::max(plan.effective_w, 1.0);
  }
  std::lock_guard<std::mutex> lk(mu_);
  stats_.rounds++;
  stats_.last_plan = plan;
  stats_.last_power_w = power;
  stats_.last_baseline_w = baseline;
  stats_.last_split_w = plan.split_w;
  stats_.site_loop_margin_w = site_round_.loop().margin_w();
  stats_.site_loop_integral_w = site_round_.loop().integral_w();
  stats_.site_loop_dip = site_round_.loop().dip();
  stats_.site_loop_excess_w = site_round_.loop().excess_w();
  stats_.site_loop_steady_excess_w = site_round_.loop().steady_excess_w();
  stats_.paused_jobs.assign(plan.paused_jobs.begin(), plan.paused_jobs.end());
  stats_.pause_changes += plan.pause_changed;
  if (since >= 0) {
    if (stats_.latencies_s.size() >= 10000) stats_.latencies_s.erase(stats_.latencies_s.begin());
    stats_.latencies_s.push_back(t_done - since);
  }
  return true;
}

}  // namespace fw::fleet
