// The JSON gateway's quirks, decoded without a server (answers as etcd 3.4.23 sends them).

#include "fleet/etcd_json.hpp"

#include <gtest/gtest.h>

#include "fleet/base64.hpp"
#include "fleet/etcd_client.hpp"

namespace fw::fleet {
namespace {

Json parse(const char* s) { return Json::parse(s); }

TEST(EtcdJson, PrefixEnd) {
  EXPECT_EQ(prefix_end("/a/"), "/a0");
  EXPECT_EQ(prefix_end("ab"), "ac");
  EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(prefix_end(""), std::string(1, '\0'));
}

TEST(EtcdJson, Int64AsStringOrNumberAbsentIsZero) {
  const Json j = parse(R"({"a":"9223372036854775807","b":12,"c":"-3","e":"x1","f":1.5,"g":true})");
  EXPECT_EQ(*json_int64(j, "a"), INT64_MAX);  // beyond double precision: kept exact
  EXPECT_EQ(*json_int64(j, "b"), 12);
  EXPECT_EQ(*json_int64(j, "c"), -3);
  EXPECT_EQ(*json_int64(j, "d"), 0);
  auto e = json_int64(j, "e");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("e:"), std::string::npos);
  EXPECT_FALSE(json_int64(j, "f").ok());
  EXPECT_FALSE(json_int64(j, "g").ok());
  EXPECT_FALSE(*json_bool(j, "missing"));
  EXPECT_FALSE(json_bool(j, "b").ok());
}

TEST(EtcdJson, RangeWithOmittedFields) {
  auto empty = decode_range(parse(R"({"header":{"cluster_id":"1","revision":"7"}})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->revision, 7);
  EXPECT_TRUE(empty->kvs.empty());
  EXPECT_EQ(empty->count, 0);
  EXPECT_FALSE(empty->more);

  auto r = decode_range(parse(R"({"header":{"revision":"9"},"kvs":[{"key":"L2E=",
      "create_revision":"2","mod_revision":"9","version":"3","value":"eHk=","lease":"7587869"}],
      "count":"1"})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].key, "/a");
  EXPECT_EQ(r->kvs[0].value, "xy");
  EXPECT_EQ(r->kvs[0].create_revision, 2);
  EXPECT_EQ(r->kvs[0].mod_revision, 9);
  EXPECT_EQ(r->kvs[0].version, 3);
  EXPECT_EQ(r->kvs[0].lease, 7587869);

  // An empty value is omitted too.
  auto kv = decode_kv(parse(R"({"key":"L2E=","create_revision":"2"})"));
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->value, "");

  auto bad = decode_range(parse(R"({"kvs":[{"key":"L2E"}]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kvs[0]: key"), std::string::npos)
      << bad.status().message();
}

TEST(EtcdJson, TxnFailedHasNoSucceeded) {
  auto f = decode_txn(parse(R"({"header":{"revision":"3"},"responses":[{"response_range":
      {"header":{"revision":"3"},"kvs":[{"key":"YQ==","value":"MQ==","mod_revision":"2"}],
      "count":"1"}}]})"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->succeeded);
  ASSERT_EQ(f->responses.size(), 1u);
  EXPECT_EQ(f->responses[0].kind, TxnOp::Kind::kRange);
  EXPECT_EQ(f->responses[0].range.kvs.at(0).value, "1");

  auto s = decode_txn(parse(R"({"header":{"revision":"4"},"succeeded":true,"responses":[
      {"response_put":{"header":{"revision":"4"}}},{"response_delete_range":
      {"header":{"revision":"4"},"deleted":"2"}}]})"));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->succeeded);
  EXPECT_EQ(s->responses[0].kind, TxnOp::Kind::kPut);
  EXPECT_EQ(s->responses[1].deleted, 2);
}

TEST(EtcdJson, KeepaliveWithoutTtlIsLeaseLost) {
  auto ok = decode_keepalive(parse(R"({"result":{"header":{},"ID":"7587869","TTL":"10"}})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->ttl_s, 10);
  auto dead = decode_keepalive(parse(R"({"result":{"header":{"revision":"5"},"ID":"7587869"}})"));
  EXPECT_EQ(dead.status().code(), StatusCode::kNotFound);
  EXPECT_NE(dead.status().message().find("7587869 lost"), std::string::npos);
  auto zero = decode_keepalive(parse(R"({"result":{"ID":"1","TTL":"0"}})"));
  EXPECT_EQ(zero.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(decode_keepalive(parse(R"({"error":{"code":14}})")).ok());

  auto g = decode_lease_grant(parse(R"({"header":{},"ID":"7587869","TTL":"2"})"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->id, 7587869);
  EXPECT_EQ(g->ttl_s, 2);
}

TEST(EtcdJson, RequestsEncodeBase64AndInt64Strings) {
  const Json p = encode_put("/k", std::string("\0v", 2), 42, true);
  EXPECT_EQ(p["key"], base64_encode("/k"));
  EXPECT_EQ(p["value"], "AHY=");
  EXPECT_EQ(p["lease"], "42");
  EXPECT_EQ(p["prev_kv"], true);
  EXPECT_FALSE(encode_put("/k", "v", 0, false).contains("lease"));

  const Json t =
      encode_txn({Compare::Absent("/k"), Compare::Value("/k", Compare::Op::kNotEqual, "x")},
                 {TxnOp::Put("/k", "v")}, {TxnOp::Get("/p/", prefix_end("/p/"))});
  EXPECT_EQ(t["compare"][0]["target"], "CREATE");
  EXPECT_EQ(t["compare"][0]["create_revision"], "0");
  EXPECT_EQ(t["compare"][0]["result"], "EQUAL");
  EXPECT_EQ(t["compare"][1]["target"], "VALUE");
  EXPECT_EQ(t["compare"][1]["result"], "NOT_EQUAL");
  EXPECT_EQ(t["compare"][1]["value"], "eA==");
  EXPECT_TRUE(t["success"][0].contains("request_put"));
  EXPECT_EQ(t["failure"][0]["request_range"]["range_end"], base64_encode("/p0"));

  const Json w = encode_watch_create("/a", "/b", 17, true);
  EXPECT_EQ(w["create_request"]["start_revision"], "17");
  EXPECT_FALSE(
      encode_watch_create("/a", "", 0, false)["create_request"].contains("start_revision"));

  const Json l = encode_leader({"/e", "/e/694d77", 12, 0x694d77});
  EXPECT_EQ(l["rev"], "12");
  EXPECT_EQ(l["lease"], std::to_string(0x694d77));
}

TEST(EtcdJson, LeaderKey) {
  auto k = decode_leader_key(parse(R"({"header":{},"leader":{"name":"L2U=",
      "key":"L2UvNjk0ZDc3","rev":"12","lease":"6900599"}})"));
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->name, "/e");
  EXPECT_EQ(k->key, "/e/694d77");
  EXPECT_EQ(k->rev, 12);
  EXPECT_EQ(k->lease, 6900599);
  EXPECT_FALSE(decode_leader_key(parse(R"({"header":{}})")).ok());
}

TEST(EtcdJson, WatchLines) {
  auto created = decode_watch_line(R"({"result":{"header":{"revision":"2"},"created":true}})");
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(created->created);
  EXPECT_EQ(created->revision, 2);

  // PUT events carry no "type" (the enum's zero); DELETE does.
  auto ev = decode_watch_line(R"({"result":{"header":{"revision":"4"},"events":[
      {"kv":{"key":"YQ==","create_revision":"3","mod_revision":"3","version":"1","value":"MQ=="}},
      {"type":"DELETE","kv":{"key":"YQ==","mod_revision":"4"},
       "prev_kv":{"key":"YQ==","mod_revision":"3","value":"MQ=="}}]}})");
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  ASSERT_EQ(ev->events.size(), 2u);
  EXPECT_EQ(ev->events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(ev->events[0].kv.value, "1");
  EXPECT_EQ(ev->events[1].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(ev->events[1].kv.mod_revision, 4);
  ASSERT_TRUE(ev->events[1].prev_kv.has_value());
  EXPECT_EQ(ev->events[1].prev_kv->value, "1");

  auto compacted = decode_watch_line(
      R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"2"}})");
  ASSERT_TRUE(compacted.ok());
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 2);

  auto err = decode_watch_line(R"({"error":{"grpc_code":14,"http_code":503,
      "message":"etcdserver: no leader","http_status":"Service Unavailable"}})");
  EXPECT_EQ(err.status().code(), StatusCode::kUnavailable);  // a cluster without quorum
  EXPECT_FALSE(decode_watch_line("not json").ok());
  EXPECT_FALSE(decode_watch_line(R"({"result":{"events":[{"type":"BOGUS","kv":{}}]}})").ok());
}

TEST(EtcdJson, ErrorBodiesMapToStatusCodes) {
  EXPECT_EQ(
      status_from_error(400, R"({"error":"illegal base64 data at input byte 4","code":3})").code(),
      StatusCode::kInvalidArgument);
  const Status lease =
      status_from_error(500, R"({"error":"etcdserver: requested lease not found","code":2})");
  EXPECT_EQ(lease.code(), StatusCode::kNotFound);
  EXPECT_NE(lease.message().find("requested lease not found"), std::string::npos);
  EXPECT_EQ(status_from_error(200, R"({"error":"election: not leader","code":2})").code(),
            StatusCode::kNotFound);
  EXPECT_EQ(status_from_error(503, R"({"error":"etcdserver: leader changed","code":14})").code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(status_from_error(502, "Bad Gateway").code(), StatusCode::kUnavailable);
}

TEST(EtcdJson, LineSplitterHandlesArbitraryChunks) {
  const std::string stream = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n{\"d\"";
  for (size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    LineSplitter s;
    std::vector<std::string> lines;
    std::string line;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      s.feed(std::string_view(stream).substr(i, chunk));
      while (s.next(&line)) lines.push_back(line);
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"})) << chunk;
    EXPECT_EQ(s.pending(), 4u);
  }
}

TEST(EtcdClientOptions, EndpointsAndBackoff) {
  EXPECT_EQ(parse_endpoint("http://127.0.0.1:2379/")->port, 2379);
  EXPECT_EQ(parse_endpoint("10.0.0.1:23790")->host, "10.0.0.1");
  ASSERT_TRUE(parse_endpoint("https://h:1").ok());  // TLS (etcd_secure_live_test.cpp)
  EXPECT_TRUE(parse_endpoint("https://h:1")->tls);
  EXPECT_FALSE(parse_endpoint("http://h:1")->tls);
  EXPECT_FALSE(parse_endpoint("h").ok());
  EXPECT_FALSE(parse_endpoint("h:0").ok());
  EXPECT_FALSE(parse_endpoint("h:99999").ok());
  EXPECT_FALSE(EtcdClient::Create({}).ok());
  EtcdClientOptions bad;
  bad.endpoints = {"h:1", "nope"};
  EXPECT_FALSE(EtcdClient::Create(bad).ok());

  EtcdClientOptions o;
  o.endpoints = {"h:1"};
  o.backoff_initial_s = 0.1;
  o.backoff_max_s = 0.8;
  o.seed = 3;
  auto a = EtcdClient::Create(o), b = EtcdClient::Create(o);
  for (int i = 0; i < 12; ++i) {
    const double cap = std::min(0.8, 0.1 * (1 << std::min(i, 10)));
    const double d = a->backoff_s(i);
    EXPECT_GE(d, 0.5 * cap) << i;
    EXPECT_LT(d, cap) << i;
    EXPECT_EQ(d, b->backoff_s(i)) << "same seed, same delays";
  }
  o.seed = 4;
  auto c = EtcdClient::Create(o);
  EXPECT_NE(a->backoff_s(0), c->backoff_s(0));
}

TEST(EtcdClientOptions, UnreachableEndpointFailsWithUnavailable) {
  EtcdClientOptions o;
  o.endpoints = {"127.0.0.1:1"};  // nothing listens on port 1
  o.max_attempts = 2;
  o.backoff_initial_s = 0.001;
  auto c = EtcdClient::Create(o);
  auto r = c->get("/k");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("127.0.0.1:1/v3/kv/range"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace fw::fleet
