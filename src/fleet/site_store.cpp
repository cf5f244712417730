#include "fleet/site_store.hpp"

#include "fleet/etcd_json.hpp"
#include "pipeline/plan_file.hpp"

namespace fw::fleet {
namespace {

// The single value at key, NotFound if absent.
Result<KeyValue> get_one(EtcdClient& etcd, const std::string& key) {
  FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.get(key));
  if (r.kvs.empty()) return Status::NotFound(key + ": not set");
  return std::move(r.kvs.front());
}

}  // namespace

Status register_node(EtcdClient& etcd, std::string_view site, const NodeRecord& node,
                     int64_t lease) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_RETURN_IF_ERROR(check_name("node", node.node));
  if (lease == 0) return Status::InvalidArgument("register_node: a lease is required");
  return etcd.put(node_key(site, node.node), encode(node), lease).status();
}

Result<NodeList> list_nodes(EtcdClient& etcd, std::string_view site) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.get_prefix(nodes_prefix(site)));
  NodeList out;
  out.revision = r.revision;
  for (const auto& kv : r.kvs) {
    auto name = node_of_key(site, kv.key);
    auto rec = name.ok() ? decode_node(kv.value, kv.key) : Result<NodeRecord>(name.status());
    if (rec.ok() && rec->node != *name) {
      rec = Status::InvalidArgument(kv.key + ": node: \"" + rec->node + "\" differs from the key");
    }
    if (!rec.ok()) {
      out.rejected.push_back(rec.status());
      continue;
    }
    out.nodes.emplace(*name, std::move(rec).value());
  }
  return out;
}

Result<AssignmentList> list_assignments(EtcdClient& etcd, std::string_view site) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.get_prefix(assign_prefix(site)));
  AssignmentList out;
  out.revision = r.revision;
  for (const auto& kv : r.kvs) {
    auto name = node_of_key(site, kv.key);
    auto rec = name.ok() ? decode_assignment(kv.value, kv.key) : Result<Assignment>(name.status());
    if (!rec.ok()) {
      out.rejected.push_back(rec.status());
      continue;
    }
    out.assignments.emplace(*name, std::move(rec).value());
  }
  return out;
}

Result<Assignment> read_assignment(EtcdClient& etcd, std::string_view site, std::string_view node) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_RETURN_IF_ERROR(check_name("node", node));
  FW_ASSIGN_OR_RETURN(KeyValue kv, get_one(etcd, assign_key(site, node)));
  return decode_assignment(kv.value, kv.key);
}

Result<bool> write_assignments(EtcdClient& etcd, std::string_view site, const LeaderKey& leader,
                               const std::map<std::string, Assignment>& assignments) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  for (const auto& [node, a] : assignments) FW_RETURN_IF_ERROR(check_name("node", node));
  const std::vector<Compare> fence = {
      Compare::CreateRevision(leader.key, Compare::Op::kEqual, leader.rev)};
  std::vector<TxnOp> batch;
  auto flush = [&]() -> Result<bool> {
    if (batch.empty()) return true;
    FW_ASSIGN_OR_RETURN(TxnResponse t, etcd.txn(fence, batch));
    batch.clear();
    return t.succeeded;
  };
  for (const auto& [node, a] : assignments) {
    batch.push_back(TxnOp::Put(assign_key(site, node), encode(a)));
    if (batch.size() == kMaxTxnOps) {
      FW_ASSIGN_OR_RETURN(bool ok, flush());
      if (!ok) return false;
    }
  }
  return flush();
}

Status write_budget(EtcdClient& etcd, std::string_view site, const SiteBudget& budget) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  return etcd.put(budget_key(site), encode(budget)).status();
}

Result<SiteBudget> read_budget(EtcdClient& etcd, std::string_view site) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_ASSIGN_OR_RETURN(KeyValue kv, get_one(etcd, budget_key(site)));
  return decode_budget(kv.value, kv.key);
}

Status write_grid_target(EtcdClient& etcd, std::string_view site, const GridTarget& target) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  return etcd.put(grid_target_key(site), encode(target)).status();
}

Result<GridTarget> read_grid_target(EtcdClient& etcd, std::string_view site) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_ASSIGN_OR_RETURN(KeyValue kv, get_one(etcd, grid_target_key(site)));
  return decode_grid_target(kv.value, kv.key);
}

Result<GridSchedule> read_grid_schedule(EtcdClient& etcd, std::string_view site) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.get(grid_target_key(site)));
  if (r.kvs.empty()) return GridSchedule();
  return decode_grid_schedule(r.kvs[0].value, r.kvs[0].key);
}

Result<GridSchedule> update_grid_schedule(
    EtcdClient& etcd, std::string_view site,
    const std::function<Result<GridSchedule>(const GridSchedule&)>& change) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  const std::string key = grid_target_key(site);
  for (int attempt = 0; attempt < 5; ++attempt) {
    FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.get(key));
    GridSchedule current;
    int64_t mod = 0;
    if (!r.kvs.empty()) {
      mod = r.kvs[0].mod_revision;
      // An undecodable value is replaced (the error would otherwise pin the site).
      if (auto d = decode_grid_schedule(r.kvs[0].value, key); d.ok()) current = *d;
    }
    FW_ASSIGN_OR_RETURN(GridSchedule next, change(current));
    const Compare same =
        mod == 0 ? Compare::Absent(key) : Compare::ModRevision(key, Compare::Op::kEqual, mod);
    FW_ASSIGN_OR_RETURN(TxnResponse t, etcd.txn({same}, {TxnOp::Put(key, encode(next))}));
    if (t.succeeded) return next;
  }
  return Status::Unavailable(key + ": changed by another writer 5 times; try again");
}

Result<int64_t> write_plan(EtcdClient& etcd, std::string_view site, std::string_view job,
                           const std::string& text) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_RETURN_IF_ERROR(check_name("job", job));
  const std::string where = "plan of job " + std::string(job);
  if (text.size() > kMaxPlanBytes) {
    return Status::InvalidArgument(where + ": " + std::to_string(text.size()) +
                                   " bytes, more than " + std::to_string(kMaxPlanBytes));
  }
  FW_RETURN_IF_ERROR(pipeline::parse_plan_json(text, where).status());
  FW_ASSIGN_OR_RETURN(PutResponse r, etcd.put(plan_key(site, job), text));
  return r.revision;
}

Result<StoredPlan> read_plan(EtcdClient& etcd, std::string_view site, std::string_view job) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_RETURN_IF_ERROR(check_name("job", job));
  FW_ASSIGN_OR_RETURN(KeyValue kv, get_one(etcd, plan_key(site, job)));
  return StoredPlan{std::string(job), std::move(kv.value), kv.mod_revision};
}

Result<std::vector<StoredPlan>> list_plans(EtcdClient& etcd, std::string_view site,
                                           bool keys_only) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  RangeRequest q;
  q.key = plans_prefix(site);
  q.range_end = prefix_end(q.key);
  q.keys_only = keys_only;
  FW_ASSIGN_OR_RETURN(RangeResponse r, etcd.range(q));
  std::vector<StoredPlan> out;
  for (KeyValue& kv : r.kvs) {
    out.push_back({kv.key.substr(q.key.size()), std::move(kv.value), kv.mod_revision});
  }
  return out;
}

Result<bool> delete_plan(EtcdClient& etcd, std::string_view site, std::string_view job) {
  FW_RETURN_IF_ERROR(check_name("site", site));
  FW_RETURN_IF_ERROR(check_name("job", job));
  FW_ASSIGN_OR_RETURN(DeleteResponse r, etcd.erase(plan_key(site, job)));
  return r.deleted > 0;
}

}  // namespace fw::fleet
