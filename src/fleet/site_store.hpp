#pragma once
// Typed reads and writes of one site's keys (keys.hpp) through an EtcdClient.
//
// Contract: names are checked before anything is sent; records are encoded/decoded with the
// strict codecs of keys.hpp. Coordinator writes are fenced: each transaction compares the
// leader key's create revision, so a coordinator that lost its leadership writes nothing and
// learns it (Result false). etcd caps a transaction at 128 operations (--max-txn-ops), so
// write_assignments commits in batches of at most 128, each fenced; it stops at the first
// batch that fails the fence.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fleet/etcd_client.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

inline constexpr size_t kMaxTxnOps = 128;  // etcd's default --max-txn-ops

// The agent's registration, attached to its lease.
Status register_node(EtcdClient& etcd, std::string_view site, const NodeRecord& node,
                     int64_t lease);

struct NodeList {
  int64_t revision = 0;                     // store revision of the read (watch from +1)
  std::map<std::string, NodeRecord> nodes;  // by node name
  std::vector<Status> rejected;             // records that failed to decode, key named
};
Result<NodeList> list_nodes(EtcdClient& etcd, std::string_view site);

struct AssignmentList {
  int64_t revision = 0;
  std::map<std::string, Assignment> assignments;
  std::vector<Status> rejected;
};
Result<AssignmentList> list_assignments(EtcdClient& etcd, std::string_view site);
// NotFound if the node has no assignment.
Result<Assignment> read_assignment(EtcdClient& etcd, std::string_view site, std::string_view node);

// Writes assignments (node -> record) guarded by leader. true: all written; false: the fence
// failed (leadership lost) and batches from the failing one on were not written.
Result<bool> write_assignments(EtcdClient& etcd, std::string_view site, const LeaderKey& leader,
                               const std::map<std::string, Assignment>& assignments);

Status write_budget(EtcdClient& etcd, std::string_view site, const SiteBudget& budget);
Result<SiteBudget> read_budget(EtcdClient& etcd, std::string_view site);  // NotFound if unset
Status write_grid_target(EtcdClient& etcd, std::string_view site, const GridTarget& target);
Result<GridTarget> read_grid_target(EtcdClient& etcd, std::string_view site);
// The schedule (an empty one when the key is unset; a lone target reads as one event).
Result<GridSchedule> read_grid_schedule(EtcdClient& etcd, std::string_view site);
// Read, change, write: change(current) gives the schedule to store, or an error that is
// returned as it is; the write is a transaction that compares the key's mod revision with
// the one read (retried up to 5 times when another writer came between).
// Pipeline plans (keys.hpp plan_key): a job's plan as stored, and its key's mod revision.
struct StoredPlan {
  std::string job;
  std::string text;  // empty from list_plans(keys_only)
  int64_t mod_revision = 0;
};
// Checks the job name, the size (at most kMaxPlanBytes) and the plan itself
// (pipeline::parse_plan_json; InvalidArgument naming the field, prefixed "plan of job J"), then
// writes it; returns the write's store revision (the plan's mod revision).
Result<int64_t> write_plan(EtcdClient& etcd, std::string_view site, std::string_view job,
                           const std::string& text);
Result<StoredPlan> read_plan(EtcdClient& etcd, std::string_view site,
                             std::string_view job);  // NotFound if none
// Every plan of the site, by job name order; keys_only: without their text (one cheap read).
Result<std::vector<StoredPlan>> list_plans(EtcdClient& etcd, std::string_view site,
                                           bool keys_only = false);
// true: the job's plan was deleted; false: none was stored.
Result<bool> delete_plan(EtcdClient& etcd, std::string_view site, std::string_view job);

Result<GridSchedule> update_grid_schedule(
    EtcdClient& etcd, std::string_view site,
    const std::function<Result<GridSchedule>(const GridSchedule&)>& change);

}  // namespace fw::fleet
