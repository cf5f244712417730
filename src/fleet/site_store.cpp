#include "fleet/site_store.hpp"

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

}  // namespace fw::fleet
