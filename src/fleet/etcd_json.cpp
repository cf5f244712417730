#include "fleet/etcd_json.hpp"

#include <charconv>

#include "fleet/base64.hpp"

namespace fw::fleet {

// ---- factories of etcd_types.hpp ----

Compare Compare::Version(std::string key, Op op, int64_t version) {
  return {std::move(key), Target::kVersion, op, version, {}};
}
Compare Compare::CreateRevision(std::string key, Op op, int64_t rev) {
  return {std::move(key), Target::kCreate, op, rev, {}};
}
Compare Compare::ModRevision(std::string key, Op op, int64_t rev) {
  return {std::move(key), Target::kMod, op, rev, {}};
}
Compare Compare::Value(std::string key, Op op, std::string value) {
  return {std::move(key), Target::kValue, op, 0, std::move(value)};
}
Compare Compare::Lease(std::string key, Op op, int64_t lease) {
  return {std::move(key), Target::kLease, op, lease, {}};
}
TxnOp TxnOp::Put(std::string key, std::string value, int64_t lease) {
  return {Kind::kPut, std::move(key), std::move(value), lease, {}};
}
TxnOp TxnOp::Get(std::string key, std::string range_end) {
  return {Kind::kRange, std::move(key), {}, 0, std::move(range_end)};
}
TxnOp TxnOp::Delete(std::string key, std::string range_end) {
  return {Kind::kDelete, std::move(key), {}, 0, std::move(range_end)};
}

// ---- scalar fields ----

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = end.back();
    if (static_cast<unsigned char>(last) < 0xFF) {
      last = static_cast<char>(static_cast<unsigned char>(last) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

Result<int64_t> json_int64(const Json& obj, const char* field) {
  if (!obj.is_object()) return Status::InvalidArgument(std::string(field) + ": not in an object");
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return int64_t{0};
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return v;
    return Status::InvalidArgument(std::string(field) + ": not an int64: \"" + s + "\"");
  }
  return Status::InvalidArgument(std::string(field) + ": not an int64 (" + it->type_name() + ")");
}

Result<bool> json_bool(const Json& obj, const char* field) {
  if (!obj.is_object()) return Status::InvalidArgument(std::string(field) + ": not in an object");
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  return Status::InvalidArgument(std::string(field) + ": not a boolean (" + it->type_name() + ")");
}

Result<std::string> json_bytes(const Json& obj, const char* field) {
  if (!obj.is_object()) return Status::InvalidArgument(std::string(field) + ": not in an object");
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return Status::InvalidArgument(std::string(field) + ": not a base64 string (" +
                                   it->type_name() + ")");
  }
  auto r = base64_decode(it->get_ref<const std::string&>());
  if (!r.ok()) return r.status().with_context(field);
  return r;
}

// ---- requests ----

namespace {

const char* target_name(Compare::Target t) {
  switch (t) {
    case Compare::Target::kVersion:
      return "VERSION";
    case Compare::Target::kCreate:
      return "CREATE";
    case Compare::Target::kMod:
      return "MOD";
    case Compare::Target::kValue:
      return "VALUE";
    case Compare::Target::kLease:
      return "LEASE";
  }
  return "VERSION";
}

const char* op_name(Compare::Op op) {
  switch (op) {
    case Compare::Op::kEqual:
      return "EQUAL";
    case Compare::Op::kGreater:
      return "GREATER";
    case Compare::Op::kLess:
      return "LESS";
    case Compare::Op::kNotEqual:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

// int64 sent as a string: JSON numbers lose precision above 2^53 in some parsers.
std::string i64(int64_t v) { return std::to_string(v); }

}  // namespace

Json encode_range(const RangeRequest& r) {
  Json j = {{"key", base64_encode(r.key)}};
  if (!r.range_end.empty()) j["range_end"] = base64_encode(r.range_end);
  if (r.revision != 0) j["revision"] = i64(r.revision);
  if (r.limit != 0) j["limit"] = i64(r.limit);
  if (r.keys_only) j["keys_only"] = true;
  if (r.count_only) j["count_only"] = true;
  return j;
}

Json encode_put(std::string_view key, std::string_view value, int64_t lease, bool prev_kv) {
  Json j = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) j["lease"] = i64(lease);
  if (prev_kv) j["prev_kv"] = true;
  return j;
}

Json encode_delete(std::string_view key, std::string_view range_end, bool prev_kv) {
  Json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  if (prev_kv) j["prev_kv"] = true;
  return j;
}

Json encode_compare(const Compare& c) {
  Json j = {
      {"key", base64_encode(c.key)}, {"target", target_name(c.target)}, {"result", op_name(c.op)}};
  switch (c.target) {
    case Compare::Target::kVersion:
      j["version"] = i64(c.number);
      break;
    case Compare::Target::kCreate:
      j["create_revision"] = i64(c.number);
      break;
    case Compare::Target::kMod:
      j["mod_revision"] = i64(c.number);
      break;
    case Compare::Target::kValue:
      j["value"] = base64_encode(c.value);
      break;
    case Compare::Target::kLease:
      j["lease"] = i64(c.number);
      break;
  }
  return j;
}

Json encode_txn_op(const TxnOp& op) {
  switch (op.kind) {
    case TxnOp::Kind::kPut:
      return {{"request_put", encode_put(op.key, op.value, op.lease, false)}};
    case TxnOp::Kind::kRange: {
      RangeRequest r;
      r.key = op.key;
      r.range_end = op.range_end;
      return {{"request_range", encode_range(r)}};
    }
    case TxnOp::Kind::kDelete:
      return {{"request_delete_range", encode_delete(op.key, op.range_end, false)}};
  }
  return Json::object();
}

Json encode_txn(const std::vector<Compare>& compare, const std::vector<TxnOp>& success,
                const std::vector<TxnOp>& failure) {
  Json j = Json::object();
  Json c = Json::array(), s = Json::array(), f = Json::array();
  for (const auto& x : compare) c.push_back(encode_compare(x));
  for (const auto& x : success) s.push_back(encode_txn_op(x));
  for (const auto& x : failure) f.push_back(encode_txn_op(x));
  if (!c.empty()) j["compare"] = std::move(c);
  if (!s.empty()) j["success"] = std::move(s);
  if (!f.empty()) j["failure"] = std::move(f);
  return j;
}

Json encode_leader(const LeaderKey& l) {
  return {{"name", base64_encode(l.name)},
          {"key", base64_encode(l.key)},
          {"rev", i64(l.rev)},
          {"lease", i64(l.lease)}};
}

Json encode_watch_create(std::string_view key, std::string_view range_end, int64_t start_revision,
                         bool prev_kv) {
  Json c = {{"key", base64_encode(key)}};
  if (!range_end.empty()) c["range_end"] = base64_encode(range_end);
  if (start_revision > 0) c["start_revision"] = i64(start_revision);
  if (prev_kv) c["prev_kv"] = true;
  return {{"create_request", std::move(c)}};
}

// ---- responses ----

Result<KeyValue> decode_kv(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("kv: not an object");
  KeyValue kv;
  FW_ASSIGN_OR_RETURN(kv.key, json_bytes(j, "key"));
  FW_ASSIGN_OR_RETURN(kv.value, json_bytes(j, "value"));
  FW_ASSIGN_OR_RETURN(kv.create_revision, json_int64(j, "create_revision"));
  FW_ASSIGN_OR_RETURN(kv.mod_revision, json_int64(j, "mod_revision"));
  FW_ASSIGN_OR_RETURN(kv.version, json_int64(j, "version"));
  FW_ASSIGN_OR_RETURN(kv.lease, json_int64(j, "lease"));
  return kv;
}

Result<int64_t> decode_header_revision(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("response: not an object");
  auto it = j.find("header");
  if (it == j.end()) return int64_t{0};
  auto r = json_int64(*it, "revision");
  if (!r.ok()) return r.status().with_context("header");
  return r;
}

namespace {

Result<std::vector<KeyValue>> decode_kv_list(const Json& j, const char* field) {
  std::vector<KeyValue> out;
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return Status::InvalidArgument(std::string(field) + ": not an array");
  for (size_t i = 0; i < it->size(); ++i) {
    auto kv = decode_kv((*it)[i]);
    if (!kv.ok())
      return kv.status().with_context(std::string(field) + "[" + std::to_string(i) + "]");
    out.push_back(std::move(kv).value());
  }
  return out;
}

}  // namespace

Result<RangeResponse> decode_range(const Json& j) {
  RangeResponse r;
  FW_ASSIGN_OR_RETURN(r.revision, decode_header_revision(j));
  FW_ASSIGN_OR_RETURN(r.kvs, decode_kv_list(j, "kvs"));
  FW_ASSIGN_OR_RETURN(r.count, json_int64(j, "count"));
  FW_ASSIGN_OR_RETURN(r.more, json_bool(j, "more"));
  return r;
}

Result<PutResponse> decode_put(const Json& j) {
  PutResponse r;
  FW_ASSIGN_OR_RETURN(r.revision, decode_header_revision(j));
  auto it = j.find("prev_kv");
  if (it != j.end() && !it->is_null()) {
    auto kv = decode_kv(*it);
    if (!kv.ok()) return kv.status().with_context("prev_kv");
    r.prev_kv = std::move(kv).value();
  }
  return r;
}

Result<DeleteResponse> decode_delete(const Json& j) {
  DeleteResponse r;
  FW_ASSIGN_OR_RETURN(r.revision, decode_header_revision(j));
  FW_ASSIGN_OR_RETURN(r.deleted, json_int64(j, "deleted"));
  FW_ASSIGN_OR_RETURN(r.prev_kvs, decode_kv_list(j, "prev_kvs"));
  return r;
}

Result<TxnResponse> decode_txn(const Json& j) {
  TxnResponse r;
  FW_ASSIGN_OR_RETURN(r.revision, decode_header_revision(j));
  FW_ASSIGN_OR_RETURN(r.succeeded, json_bool(j, "succeeded"));
  auto it = j.find("responses");
  if (it == j.end() || it->is_null()) return r;
  if (!it->is_array()) return Status::InvalidArgument("responses: not an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& op = (*it)[i];
    const std::string where = "responses[" + std::to_string(i) + "]";
    TxnOpResponse o;
    if (!op.is_object()) return Status::InvalidArgument(where + ": not an object");
    if (auto f = op.find("response_range"); f != op.end()) {
      o.kind = TxnOp::Kind::kRange;
      auto rr = decode_range(*f);
      if (!rr.ok()) return rr.status().with_context(where + ".response_range");
      o.range = std::move(rr).value();
    } else if (auto f = op.find("response_delete_range"); f != op.end()) {
      o.kind = TxnOp::Kind::kDelete;
      auto d = json_int64(*f, "deleted");
      if (!d.ok()) return d.status().with_context(where + ".response_delete_range");
      o.deleted = *d;
    } else if (op.contains("response_put")) {
      o.kind = TxnOp::Kind::kPut;
    } else {
      return Status::InvalidArgument(where + ": unknown response kind");
    }
    r.responses.push_back(std::move(o));
  }
  return r;
}

Result<LeaseGrant> decode_lease_grant(const Json& j) {
  LeaseGrant g;
  FW_ASSIGN_OR_RETURN(g.id, json_int64(j, "ID"));
  FW_ASSIGN_OR_RETURN(g.ttl_s, json_int64(j, "TTL"));
  if (j.contains("error") && j["error"].is_string() && !j["error"].get<std::string>().empty()) {
    return Status::Unavailable("lease grant: " + j["error"].get<std::string>());
  }
  if (g.id == 0 || g.ttl_s <= 0) return Status::Internal("lease grant: no ID or TTL in answer");
  return g;
}

Result<LeaseGrant> decode_keepalive(const Json& j) {
  if (!j.is_object() || !j.contains("result")) {
    return Status::InvalidArgument("keepalive: no \"result\" in answer");
  }
  const Json& r = j["result"];
  LeaseGrant g;
  FW_ASSIGN_OR_RETURN(g.id, json_int64(r, "ID"));
  FW_ASSIGN_OR_RETURN(g.ttl_s, json_int64(r, "TTL"));
  if (g.ttl_s <= 0) return Status::NotFound("lease " + std::to_string(g.id) + " lost");
  return g;
}

Result<LeaderKey> decode_leader_key(const Json& j) {
  if (!j.is_object() || !j.contains("leader") || !j["leader"].is_object()) {
    return Status::InvalidArgument("leader: missing");
  }
  const Json& l = j["leader"];
  LeaderKey k;
  FW_ASSIGN_OR_RETURN(k.name, json_bytes(l, "name"));
  FW_ASSIGN_OR_RETURN(k.key, json_bytes(l, "key"));
  FW_ASSIGN_OR_RETURN(k.rev, json_int64(l, "rev"));
  FW_ASSIGN_OR_RETURN(k.lease, json_int64(l, "lease"));
  if (k.key.empty() || k.rev == 0) return Status::InvalidArgument("leader: no key or rev");
  return k;
}

Result<WatchResponse> decode_watch_line(std::string_view line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("watch: not a JSON object: " + std::string(line.substr(0, 200)));
  }
  if (auto e = j.find("error"); e != j.end()) {
    return status_from_error(0, e->is_object() ? e->dump() : j.dump());
  }
  auto it = j.find("result");
  if (it == j.end() || !it->is_object()) return Status::InvalidArgument("watch: no \"result\"");
  const Json& r = *it;
  WatchResponse w;
  FW_ASSIGN_OR_RETURN(w.revision, decode_header_revision(r));
  FW_ASSIGN_OR_RETURN(w.created, json_bool(r, "created"));
  FW_ASSIGN_OR_RETURN(w.canceled, json_bool(r, "canceled"));
  FW_ASSIGN_OR_RETURN(w.compact_revision, json_int64(r, "compact_revision"));
  if (auto c = r.find("cancel_reason"); c != r.end() && c->is_string()) w.cancel_reason = *c;
  auto ev = r.find("events");
  if (ev == r.end() || ev->is_null()) return w;
  if (!ev->is_array()) return Status::InvalidArgument("watch: events: not an array");
  for (size_t i = 0; i < ev->size(); ++i) {
    const Json& e = (*ev)[i];
    const std::string where = "events[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::InvalidArgument(where + ": not an object");
    WatchEvent out;
    auto t = e.find("type");  // absent for PUT (the zero of the enum)
    if (t != e.end() && *t == "DELETE") {
      out.type = WatchEvent::Type::kDelete;
    } else if (t != e.end() && *t != "PUT") {
      return Status::InvalidArgument(where + ".type: unknown " + t->dump());
    }
    auto kv = decode_kv(e.value("kv", Json::object()));
    if (!kv.ok()) return kv.status().with_context(where + ".kv");
    out.kv = std::move(kv).value();
    if (auto p = e.find("prev_kv"); p != e.end() && !p->is_null()) {
      auto pk = decode_kv(*p);
      if (!pk.ok()) return pk.status().with_context(where + ".prev_kv");
      out.prev_kv = std::move(pk).value();
    }
    w.events.push_back(std::move(out));
  }
  return w;
}

Status status_from_error(int http_status, std::string_view body) {
  Json j = Json::parse(body, nullptr, false);
  std::string msg;
  int64_t code = 0;
  if (!j.is_discarded() && j.is_object()) {
    if (auto m = j.find("message"); m != j.end() && m->is_string()) msg = *m;
    if (auto e = j.find("error"); msg.empty() && e != j.end() && e->is_string()) msg = *e;
    if (auto c = j.find("code"); c != j.end() && c->is_number_integer()) code = *c;
    if (auto c = j.find("grpc_code"); c != j.end() && c->is_number_integer()) code = *c;
  }
  if (msg.empty()) msg = std::string(body.substr(0, 200));
  const std::string text =
      "etcd: " + msg + (http_status ? " (HTTP " + std::to_string(http_status) + ")" : "");
  // gRPC codes: 3 invalid argument, 5 not found, 7 permission, 9 failed precondition,
  // 4 deadline, 8 exhausted, 10 aborted, 14 unavailable. etcd reports "lease not found" and
  // the election's "no leader" / "not leader" with code 2 (unknown), so the message decides
  // those; "etcdserver: no leader" (cluster without quorum) stays unavailable.
  if (msg.find("not found") != std::string::npos || msg.find("election: ") != std::string::npos) {
    return Status::NotFound(text);
  }
  // etcd auth: no token sent to a cluster with auth on ("user name is empty", code 3), a
  // wrong user or password (code 3), a user without the permission (code 7).
  if (msg.find("user name is empty") != std::string::npos) {
    return Status::PermissionDenied(text + "; etcd has auth enabled: configure etcd_auth");
  }
  if (msg.find("authentication failed") != std::string::npos) {
    return Status::PermissionDenied(text);
  }
  switch (code) {
    case 3:
      return Status::InvalidArgument(text);
    case 5:
      return Status::NotFound(text);
    case 7:
    case 16:
      return Status::PermissionDenied(text);
    case 4:
    case 8:
    case 10:
    case 14:
      return Status::Unavailable(text);
    default:
      break;
  }
  if (http_status >= 500 || http_status == 0) return Status::Unavailable(text);
  if (http_status >= 400) return Status::InvalidArgument(text);
  return Status::Internal(text);
}

bool LineSplitter::next(std::string* line) {
  while (true) {
    const size_t nl = buf_.find('\n', pos_);
    if (nl == std::string::npos) {
      if (pos_ > 0) {  // compact what has been consumed
        buf_.erase(0, pos_);
        pos_ = 0;
      }
      return false;
    }
    line->assign(buf_, pos_, nl - pos_);
    pos_ = nl + 1;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    if (!line->empty()) return true;  // skip blank lines
  }
}

}  // namespace fw::fleet
