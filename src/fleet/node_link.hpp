#pragma once
// NodeLink: a node agent's side of the fleet (the agent calls it; it touches no GPU).
//
// Calls for the agent:
//   auto link = NodeLink::Start(etcd_options, {site, node, safe_share_w, ...}, record);
//   each control period:  link->update(record)         // draw, caps, jobs (put under lease)
//                         NodeBudget b = link->budget(); // apply b.watts as the node budget
//   on clean exit:        link->leave(true)  // GPUs idle at floor: the coordinator frees
//                                            // the share at once; false: hold it (unknown)
//
// Contract:
//  - Registration: the record is put at /flexwatt/<site>/nodes/<node> under the link's own
//    lease (lease_ttl_s), renewed every ttl/3 by the link's thread; a lost lease (expired,
//    revoked, or etcd unreachable for a TTL) is replaced by a fresh one and the record put
//    again (the coordinator holds the node's share back meanwhile).
//  - Assignment: read once, then followed by a watch, and read again every ttl/3 (the poll
//    catches what a watch misses: a watch left waiting for a revision an emptied or restored
//    etcd will only reach later, a watch ended by compaction; a store revision that went
//    back restarts the watch).
//  - Fencing (accept): an assignment is taken only if its revision equals the create
//    revision of the site's current leader key (the election's leader, read from etcd when
//    the revision differs from the one known). The leader key is recreated with every
//    leadership, so the token resets with the cluster: after etcd is rebuilt empty or
//    restored from a snapshot, the new leader's assignments are taken without a restart; a
//    deposed leader's late write, or a put with an invented revision, is refused
//    (refused_not_leader). Out of range, refused too (refused_out_of_range): watts above
//    the node's nameplate, or an expiry more than max_assignment_s ahead.
//    A writer that can read the leader key can still forge a matching revision: against
//    that, etcd's own authentication is the guard (docs/fleet.md, "Security").
//  - budget(now): the assignment's watts while now < its expiry (0 W included: the agent
//    then holds its GPUs at their minimum caps); an expired assignment is forgotten. Then
//    (expired, deleted, etcd unreachable) the fallback min(safe_share_w, the safe_w the
//    coordinator last published), which keeps the site within budget if every node falls
//    back at once. Before the first assignment arrives a joiner holds its floor
//    (min(safe_share_w, record.min_w), the sum of its GPUs' minimum caps): the coordinator may
//    have given every watt away already, and a joiner's first assignment comes from what is
//    free. Source kSafeShare, awaiting_first = true, reason "awaiting_first_assignment".
//  - Plans (keys.hpp plan_key): with the assignment, every ttl/3, the link reads which plans
//    the site stores (keys only) and fetches those of the record's jobs that are new or
//    changed; plan(job) gives the one last read, plan_changes() counts every change seen (a
//    plan stored, replaced or deleted). A read that fails keeps what was read before.
//  - Thread-safe; budget() and plan() never block on etcd.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fleet/etcd_client.hpp"
#include "fleet/etcd_watch.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

struct NodeLinkOptions {
  std::string site;
  std::string node;
  double safe_share_w = 0;  // configured static safe share, > 0
  double lease_ttl_s = 5;   // registration lease (>= 2)
  // An assignment expiring further ahead than this is out of range (a coordinator writes
  // expiry_s ahead, at most 600 s by its config).
  double max_assignment_s = 600;
};

struct NodeBudget {
  enum class Source { kAssignment, kSafeShare };
  double watts = 0;
  Source source = Source::kSafeShare;
  int64_t revision = 0;       // of the assignment in force (0: none)
  double expires_unix_s = 0;  // of the assignment in force
  std::string
      reason;  // assignment's reason, or "expired" / "deleted" / "awaiting_first_assignment"
  bool awaiting_first = false;  // no assignment received yet since Start
  bool pause = false;           // the assignment in force says pause (keys.hpp Assignment)
  double start_at_unix_s = 0;   // its start gate (keys.hpp Assignment; 0: none)
  double stop_at_unix_s = 0;    // its stop gate (keys.hpp Assignment; 0: none)
};

// A job's plan as the link last read it (keys.hpp plan_key).
struct PublishedPlan {
  std::string text;
  int64_t mod_revision = 0;
};

class NodeLink {
 public:
  // Registers the node (record.node must equal options.node) and starts following its
  // assignment. Fails only on bad options or record; an unreachable etcd is retried.
  static Result<std::unique_ptr<NodeLink>> Start(EtcdClientOptions etcd, NodeLinkOptions options,
                                                 NodeRecord record);
  ~NodeLink();
  NodeLink(const NodeLink&) = delete;
  NodeLink& operator=(const NodeLink&) = delete;

  // New measurements; put at the next renewal tick (at most every ttl/3 s), not blocking.
  void update(const NodeRecord& record);
  NodeBudget budget(double now_unix_s) const;
  NodeBudget budget() const;
  // The plan stored for one of the record's jobs, as last read (nothing: none stored, or not
  // read yet); plan_changes(): how many plan changes the link has seen (a counter to compare).
  std::optional<PublishedPlan> plan(const std::string& job) const;
  int64_t plan_changes() const { return plan_changes_.load(); }
  // Stops the link and revokes its lease. off: also writes the node's off marker.
  void leave(bool off);
  // Stops renewals without revoking (as if the process died; for tests and the simulator).
  void crash();

  bool registered() const { return registered_.load(); }
  int64_t lease() const { return lease_.load(); }
  int leases_granted() const { return leases_granted_.load(); }
  int64_t puts() const { return puts_.load(); }  // registrations written (etcd writes)
  // Assignments refused: revision not the current leader's; out of range (see Contract).
  int64_t refused_not_leader() const { return refused_not_leader_.load(); }
  int64_t refused_out_of_range() const { return refused_out_of_range_.load(); }
  int watch_restarts() const { return watch_restarts_.load(); }
  // Seconds from Start to the first assignment received (-1: none yet).
  double first_assignment_latency_s() const;
  const NodeLinkOptions& options() const { return options_; }

 private:
  NodeLink(std::unique_ptr<EtcdClient> etcd, NodeLinkOptions options, NodeRecord record);
  void run();
  void maintain(double* last_ok_s);
  // Fencing and range checks, then takes a (the value of the key's mod_revision, ignored
  // unless newer than the one applied); false when refused (counted).
  bool accept(const Assignment& a, int64_t mod_revision);
  // The create revision of the site's leader key now (0: no leader; unchanged on an error).
  int64_t refresh_leader();
  // Reads the assignment key: takes a new value, expires the applied one, restarts the
  // watch when it ended or the store's revision went back.
  void poll_assignment();
  void start_watch(int64_t start_revision);
  // Reads the site's plan keys; fetches the record's jobs' plans that changed (Contract).
  void poll_plans();
  void halt();
  static double now_s();

  std::unique_ptr<EtcdClient> etcd_;
  NodeLinkOptions options_;
  std::unique_ptr<EtcdWatch> watch_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  NodeRecord record_;
  bool record_dirty_ = true;
  std::optional<Assignment> assignment_;
  std::string fallback_reason_ = "awaiting_first_assignment";
  int64_t leader_rev_ = 0;       // create revision of the leader key last read
  int64_t applied_key_rev_ = 0;  // mod revision of the assignment key's value applied
  double published_safe_w_ = 0;
  double start_s_ = 0, first_assignment_s_ = -1;
  bool stop_ = false;
  std::map<std::string, PublishedPlan> plans_;  // by job: the record's jobs' plans as read

  std::atomic<bool> registered_{false};
  std::atomic<int64_t> lease_{0};
  std::atomic<int> leases_granted_{0};
  std::atomic<int64_t> puts_{0};
  std::atomic<int64_t> refused_not_leader_{0}, refused_out_of_range_{0};
  std::atomic<int> watch_restarts_{0};
  std::atomic<int64_t> plan_changes_{0};
  int64_t store_rev_ = 0;        // link thread only: store revision of the last poll
  int64_t applied_mod_rev_ = 0;  // link thread only: mod revision of the last key polled
  std::thread thread_;
};

}  // namespace fw::fleet
