#include "fleet/node_link.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/format.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {

double NodeLink::now_s() { return fw::unix_now_s(); }

Result<std::unique_ptr<NodeLink>> NodeLink::Start(EtcdClientOptions etcd, NodeLinkOptions options,
                                                  NodeRecord record) {
  FW_RETURN_IF_ERROR(check_name("site", options.site));
  FW_RETURN_IF_ERROR(check_name("node", options.node));
  if (record.node != options.node) {
    return Status::InvalidArgument("node link: record.node \"" + record.node +
                                   "\" differs from node \"" + options.node + "\"");
  }
  if (!(options.safe_share_w > 0)) {
    return Status::InvalidArgument("node link: safe_share_w must be > 0");
  }
  if (options.lease_ttl_s < 2) return Status::InvalidArgument("node link: lease_ttl_s >= 2");
  // Short per-call bounds: the link's thread must notice an unreachable etcd within a TTL.
  etcd.call_timeout_s = std::min(etcd.call_timeout_s, options.lease_ttl_s / 3);
  etcd.request_timeout_s = std::min(etcd.request_timeout_s, options.lease_ttl_s / 3);
  FW_ASSIGN_OR_RETURN(EtcdClient client, EtcdClient::Create(std::move(etcd)));
  record.safe_w = options.safe_share_w;
  auto link = std::unique_ptr<NodeLink>(new NodeLink(
      std::make_unique<EtcdClient>(std::move(client)), std::move(options), std::move(record)));
  // A fresh registration revokes an old "known off" marker of this node.
  (void)link->etcd_->erase(off_key(link->options_.site, link->options_.node));
  int64_t from = 0;
  if (auto r = link->etcd_->get(assign_key(link->options_.site, link->options_.node)); r.ok()) {
    from = r->revision + 1;
    link->store_rev_ = r->revision;
    if (!r->kvs.empty()) {
      link->applied_mod_rev_ = r->kvs[0].mod_revision;
      if (auto a = decode_assignment(r->kvs[0].value, r->kvs[0].key); a.ok()) {
        link->accept(*a, r->kvs[0].mod_revision);
      }
    }
  }
  link->start_watch(from);
  NodeLink* self = link.get();
  link->thread_ = std::thread([self] { self->run(); });
  return link;
}

NodeLink::NodeLink(std::unique_ptr<EtcdClient> etcd, NodeLinkOptions options, NodeRecord record)
    : etcd_(std::move(etcd)), options_(std::move(options)), record_(std::move(record)) {
  start_s_ = now_s();
}

NodeLink::~NodeLink() { halt(); }

void NodeLink::start_watch(int64_t start_revision) {
  WatchOptions w;
  w.key = assign_key(options_.site, options_.node);
  w.start_revision = start_revision;
  watch_ = EtcdWatch::Start(etcd_.get(), w, [this](const std::vector<WatchEvent>& events) {
    for (const auto& e : events) {
      if (e.type == WatchEvent::Type::kDelete) {
        std::lock_guard<std::mutex> lk(mu_);
        if (assignment_) fallback_reason_ = "deleted";
        assignment_.reset();
        continue;
      }
      if (auto a = decode_assignment(e.kv.value, e.kv.key); a.ok()) {
        accept(*a, e.kv.mod_revision);
      } else {
        refused_out_of_range_++;
      }
    }
  });
}

int64_t NodeLink::refresh_leader() {
  auto l = etcd_->leader(election_name(options_.site));
  std::lock_guard<std::mutex> lk(mu_);
  if (l.ok()) {
    leader_rev_ = l->create_revision;
  } else if (l.status().code() == StatusCode::kNotFound) {
    leader_rev_ = 0;
  }
  return leader_rev_;
}

bool NodeLink::accept(const Assignment& a, int64_t mod_revision) {
  const double now = now_s();
  double nameplate_w = 0;
  int64_t leader = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Watch and poll both deliver: a write no newer than the one applied is not taken (an
    // older value read by the poll must not undo a newer one the watch delivered).
    if (mod_revision <= applied_key_rev_) return true;
    nameplate_w = record_.nameplate_w;
    leader = leader_rev_;
  }
  if ((nameplate_w > 0 && a.watts > nameplate_w + 1e-6) ||
      a.expires_unix_s > now + options_.max_assignment_s) {
    refused_out_of_range_++;
    return false;
  }
  if (a.revision != leader) leader = refresh_leader();  // a new leader, or not a leader's
  if (a.revision != leader) {
    refused_not_leader_++;
    return false;
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (mod_revision <= applied_key_rev_) return true;  // a newer one came meanwhile
  applied_key_rev_ = mod_revision;
  assignment_ = a;
  if (a.safe_w > 0) published_safe_w_ = a.safe_w;
  if (first_assignment_s_ < 0) first_assignment_s_ = now_s();
  return true;
}

void NodeLink::poll_assignment() {
  {  // an expired assignment is forgotten: nothing of it outlives its expiry
    std::lock_guard<std::mutex> lk(mu_);
    if (assignment_ && now_s() >= assignment_->expires_unix_s) {
      assignment_.reset();
      fallback_reason_ = "expired";
    }
  }
  auto r = etcd_->get(assign_key(options_.site, options_.node));
  if (!r.ok()) return;
  const bool went_back = r->revision < store_rev_;  // emptied, or restored from a snapshot
  store_rev_ = r->revision;
  if (went_back || !watch_ || watch_->ended()) {
    if (watch_) watch_->cancel();
    if (went_back) {  // revisions start over: the applied one's no longer orders anything
      std::lock_guard<std::mutex> lk(mu_);
      applied_key_rev_ = 0;
    }
    start_watch(r->revision + 1);
    watch_restarts_++;
    applied_mod_rev_ = 0;
  }
  if (r->kvs.empty() || r->kvs[0].mod_revision == applied_mod_rev_) return;
  applied_mod_rev_ = r->kvs[0].mod_revision;
  if (auto a = decode_assignment(r->kvs[0].value, r->kvs[0].key); a.ok()) {
    accept(*a, r->kvs[0].mod_revision);
  } else {
    refused_out_of_range_++;
  }
}

void NodeLink::update(const NodeRecord& record) {
  std::lock_guard<std::mutex> lk(mu_);
  const double safe = record_.safe_w;
  record_ = record;
  record_.node = options_.node;
  record_.safe_w = safe;
  record_dirty_ = true;
}

NodeBudget NodeLink::budget(double now_unix_s) const {
  std::lock_guard<std::mutex> lk(mu_);
  NodeBudget b;
  if (assignment_ && now_unix_s < assignment_->expires_unix_s) {
    b.watts = assignment_->watts;
    b.source = NodeBudget::Source::kAssignment;
    b.revision = assignment_->revision;
    b.expires_unix_s = assignment_->expires_unix_s;
    b.reason = assignment_->reason;
    b.pause = assignment_->pause;
    b.start_at_unix_s = assignment_->start_at_unix_s;
    b.stop_at_unix_s = assignment_->stop_at_unix_s;
    return b;
  }
  b.source = NodeBudget::Source::kSafeShare;
  b.awaiting_first = first_assignment_s_ < 0;
  if (b.awaiting_first) {  // a joiner holds its floor until its share comes from what is free
    b.watts =
        record_.min_w > 0 ? std::min(options_.safe_share_w, record_.min_w) : options_.safe_share_w;
    b.reason = "awaiting_first_assignment";
    return b;
  }
  b.watts = published_safe_w_ > 0 ? std::min(options_.safe_share_w, published_safe_w_)
                                  : options_.safe_share_w;
  b.reason = assignment_ ? "expired" : fallback_reason_;
  return b;
}

NodeBudget NodeLink::budget() const { return budget(now_s()); }

double NodeLink::first_assignment_latency_s() const {
  std::lock_guard<std::mutex> lk(mu_);
  return first_assignment_s_ < 0 ? -1 : first_assignment_s_ - start_s_;
}

std::optional<PublishedPlan> NodeLink::plan(const std::string& job) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = plans_.find(job);
  if (it == plans_.end()) return std::nullopt;
  return it->second;
}

void NodeLink::poll_plans() {
  std::map<std::string, int64_t> held;  // job -> mod revision of the plan read
  std::vector<std::string> jobs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const JobRecord& j : record_.jobs) jobs.push_back(j.id);
    for (const auto& [job, p] : plans_) held[job] = p.mod_revision;
  }
  if (jobs.empty() && held.empty()) return;
  auto stored = list_plans(*etcd_, options_.site, /*keys_only=*/true);
  if (!stored.ok()) return;  // kept as read before
  std::map<std::string, int64_t> now;
  for (const StoredPlan& p : *stored) now[p.job] = p.mod_revision;
  std::map<std::string, std::optional<PublishedPlan>> changes;  // nullopt: gone
  for (const std::string& job : jobs) {
    auto n = now.find(job);
    auto h = held.find(job);
    if (n == now.end()) {
      if (h != held.end()) changes[job] = std::nullopt;
    } else if (h == held.end() || h->second != n->second) {
      auto p = read_plan(*etcd_, options_.site, job);
      if (p.ok()) {
        changes[job] = PublishedPlan{std::move(p->text), p->mod_revision};
      } else if (p.status().code() == StatusCode::kNotFound && h != held.end()) {
        changes[job] = std::nullopt;
      }
    }
  }
  for (const auto& [job, rev] : held) {  // a job that left the record: forget its plan
    if (std::find(jobs.begin(), jobs.end(), job) == jobs.end()) changes[job] = std::nullopt;
  }
  if (changes.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& [job, p] : changes) {
    if (p) {
      plans_[job] = std::move(*p);
    } else {
      plans_.erase(job);
    }
  }
  plan_changes_ += static_cast<int64_t>(changes.size());
}

void NodeLink::maintain(double* last_ok_s) {
  poll_assignment();
  poll_plans();
  const double now = now_s();
  int64_t lease = lease_.load();
  if (lease != 0) {
    auto k = etcd_->lease_keepalive(lease, options_.lease_ttl_s / 3);
    if (k.ok()) {
      *last_ok_s = now;
    } else if (k.status().code() == StatusCode::kNotFound ||
               now - *last_ok_s > options_.lease_ttl_s) {
      lease = 0;  // dead, or presumed expired: start over under a new lease
      lease_ = 0;
      registered_ = false;
    }
  }
  if (lease == 0) {
    auto g = etcd_->lease_grant(int64_t(std::ceil(options_.lease_ttl_s)));
    if (!g.ok()) return;
    lease = g->id;
    lease_ = lease;
    leases_granted_++;
    *last_ok_s = now;
    std::lock_guard<std::mutex> lk(mu_);
    record_dirty_ = true;
  }
  NodeRecord rec;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!record_dirty_ && registered_.load()) return;
    rec = record_;
    record_dirty_ = false;
  }
  if (register_node(*etcd_, options_.site, rec, lease).ok()) {
    registered_ = true;
    puts_++;
  } else {
    std::lock_guard<std::mutex> lk(mu_);
    record_dirty_ = true;
  }
}

void NodeLink::run() {
  double last_ok_s = now_s();
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    lk.unlock();
    maintain(&last_ok_s);
    lk.lock();
    cv_.wait_for(lk, std::chrono::milliseconds(int(options_.lease_ttl_s / 3 * 1000)),
                 [&] { return stop_; });
  }
}

void NodeLink::halt() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watch_) watch_->cancel();
}

void NodeLink::crash() { halt(); }

void NodeLink::leave(bool off) {
  halt();
  if (off) {
    (void)etcd_->put(off_key(options_.site, options_.node),
                     nlohmann::json{{"time_unix_s", now_s()}}.dump());
  }
  if (const int64_t l = lease_.exchange(0); l != 0) (void)etcd_->lease_revoke(l);
  registered_ = false;
}

}  // namespace fw::fleet
