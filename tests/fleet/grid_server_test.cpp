// The grid endpoint's auth on its write routes (src/fleet/grid_server.hpp, docs/fleet.md
// "Security"), now checked by the agent's gate (net/http_gate.hpp) when the request head is
// in: a caller without a control token is refused before its body is read (before, the grid
// server read the whole body, then said 401/403), every answer to a write is audited, and
// reads and /healthz behave as documented. A Coordinator on a real etcd (etcd_harness.hpp)
// stands behind the server; without etcd the tests skip, or fail under CI=true. The
// hostile-input cases (slowloris, oversized heads and bodies, caps) run against this server
// in tests/agent/server_limits_test.cpp (Servers/GateLimits.*/grid).

#include "fleet/grid_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../agent/raw_client.hpp"
#include "../require_tool.hpp"
#include "core/format.hpp"
#include "etcd_harness.hpp"
#include "fleet/coordinator.hpp"

namespace fw::fleet {
namespace {

using http_testing::Raw;
using http_testing::since_s;
using http_testing::status_of;
using Clock = std::chrono::steady_clock;

constexpr const char* kControlToken = "control-token-0123456789";
constexpr const char* kReadToken = "read-token-0123456789";

class GridServerAuth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::etcd_binary().empty()) return;
    auto c = testing::EtcdCluster::Start(1);
    if (c.ok()) cluster_ = std::move(c).value();
  }
  static void TearDownTestSuite() { cluster_.reset(); }
  void SetUp() override {
    FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
    ASSERT_TRUE(cluster_) << "etcd did not start";
    static int site = 0;
    CoordinatorOptions o;
    o.site = "grid" + std::to_string(site++);
    o.id = "a";
    o.lease_ttl_s = 2;
    o.campaign_timeout_s = 0.5;
    o.expiry_s = 4;
    o.refresh_s = 1;
    o.default_budget_w = 2000;
    o.tick_s = 0.05;
    auto c = Coordinator::Start(testing::fast_client_options(*cluster_), o);
    ASSERT_TRUE(c.ok()) << c.status().message();
    coord_ = std::move(c).value();
  }
  GridAuth tokens() {
    GridAuth a;
    a.lookup = [](std::string_view token) -> std::optional<std::pair<std::string, int>> {
      if (token == kControlToken) return std::make_pair("ops", kGridScopeControl);
      if (token == kReadToken) return std::make_pair("viewer", kGridScopeRead);
      return std::nullopt;
    };
    a.audit = [this](const GridAuth::Write& w) {
      std::lock_guard<std::mutex> lk(mu_);
      audit_.push_back(w);
    };
    return a;
  }
  std::vector<GridAuth::Write> audit() {
    std::lock_guard<std::mutex> lk(mu_);
    return audit_;
  }

  static std::unique_ptr<testing::EtcdCluster> cluster_;
  std::unique_ptr<Coordinator> coord_;
  std::mutex mu_;
  std::vector<GridAuth::Write> audit_;
};
std::unique_ptr<testing::EtcdCluster> GridServerAuth::cluster_;

// A write head announcing a megabyte it never sends: answered (and closed) at once, so the
// refusal came before any body byte was read.
std::string refused_unread(int port, const std::string& method, const std::string& path,
                           const char* token, double* took_s) {
  Raw c = Raw::tcp(port);
  std::string head = method + " " + path + " HTTP/1.1\r\nHost: x\r\n";
  if (token) head += std::string("Authorization: Bearer ") + token + "\r\n";
  if (!c.send(head + "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")) {
    return "";
  }
  const auto t0 = Clock::now();
  std::string r = c.read_until_close(4);
  *took_s = since_s(t0);
  if (!c.closed()) r += " (connection left open)";
  return r;
}

TEST_F(GridServerAuth, WriteRoutesRefuseCallersBeforeTheirBody) {
  auto g = GridServer::Start(coord_.get(), "127.0.0.1", 0, 0, 1.0, tokens());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int port = (*g)->port();
  struct Case {
    const char* token;
    int status;
    const char* who;
  };
  const std::vector<Case> cases = {{nullptr, 401, "unauthenticated"},
                                   {"guess-guess-guess-guess", 401, "unauthenticated"},
                                   {kReadToken, 403, "viewer"}};
  const std::vector<std::pair<std::string, std::string>> writes = {
      {"PUT", "/v1/grid/target"}, {"POST", "/v1/grid/openadr/event"}};
  for (const auto& [method, path] : writes) {
    for (const Case& k : cases) {
      double took = 0;
      const std::string r = refused_unread(port, method, path, k.token, &took);
      EXPECT_EQ(status_of(r), k.status) << method << " " << path << ": " << r;
      EXPECT_EQ(r.find("(connection left open)"), std::string::npos) << method << " " << path;
      EXPECT_LT(took, 2.0) << method << " " << path << ": waited for the body";
      if (k.status == 401) {
        EXPECT_NE(r.find("WWW-Authenticate: Bearer"), std::string::npos) << r;
      }
    }
  }
  EXPECT_EQ((*g)->writes_accepted(), 0);
  EXPECT_EQ((*g)->writes_refused(), 6);
  // A control token writes, on both routes.
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(5, 0);
  http.set_bearer_token_auth(kControlToken);
  auto put =
      http.Put("/v1/grid/target", R"({"value":500,"correlation_id":"cut"})", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  const std::string start = std::to_string(static_cast<int64_t>(unix_now_s()) + 60);
  auto adr = http.Post("/v1/grid/openadr/event",
                       R"({"id":"ev-1","payloadDescriptors":[{"payloadType":)"
                       R"("IMPORT_CAPACITY_LIMIT","units":"W"}],"intervals":[{"id":0,)"
                       R"("intervalPeriod":{"start":)" +
                           start +
                           R"(,"duration":"PT60S"},"payloads":[{"type":)"
                           R"("IMPORT_CAPACITY_LIMIT","values":[900]}]}]})",
                       "application/json");
  ASSERT_TRUE(adr);
  EXPECT_EQ(adr->status, 200) << adr->body;
  EXPECT_EQ((*g)->writes_accepted(), 2);
  (*g)->stop();
  const auto lines = audit();
  ASSERT_EQ(lines.size(), 8u);
  for (size_t i = 0; i < 6; ++i) {
    const Case& k = cases[i % 3];
    EXPECT_EQ(lines[i].who, k.who) << i;
    EXPECT_EQ(lines[i].status, k.status) << i;
    EXPECT_EQ(lines[i].path, writes[i / 3].second) << i;
    EXPECT_EQ(lines[i].remote.rfind("127.0.0.1:", 0), 0u) << lines[i].remote;
    EXPECT_TRUE(lines[i].body.empty()) << i << ": kept what a refused caller sent";
  }
  EXPECT_EQ(lines[6].who, "ops");
  EXPECT_EQ(lines[6].status, 200);
  EXPECT_EQ(lines[6].body, R"({"value":500,"correlation_id":"cut"})");
  EXPECT_EQ(lines[7].path, "/v1/grid/openadr/event");
  EXPECT_EQ(lines[7].status, 200);
}

// Reads need a read token where tokens are configured; /healthz needs none.
TEST_F(GridServerAuth, ReadsNeedAReadTokenAndHealthzNone) {
  auto g = GridServer::Start(coord_.get(), "127.0.0.1", 0, 0, 1.0, tokens());
  ASSERT_TRUE(g.ok()) << g.status().message();
  httplib::Client http("127.0.0.1", (*g)->port());
  http.set_read_timeout(5, 0);
  for (const char* path : {"/v1/grid/status", "/v1/grid/report", "/site"}) {
    auto none = http.Get(path);
    ASSERT_TRUE(none) << path;
    EXPECT_EQ(none->status, 401) << path;
  }
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_NE(health->body.find("\"ok\":true"), std::string::npos) << health->body;
  httplib::Headers read = {{"Authorization", std::string("Bearer ") + kReadToken}};
  for (const char* path : {"/v1/grid/status", "/v1/grid/report", "/site"}) {
    auto r = http.Get(path, read);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << ": " << r->body.substr(0, 200);
  }
  EXPECT_TRUE(audit().empty()) << "reads are not audited";
}

// GET /metrics (read scope): the site's figures of /v1/grid/status for Prometheus, the
// shortfall among them (issue 45: the shortfall said in a metric too).
TEST_F(GridServerAuth, MetricsGiveTheStatusFiguresToAReadToken) {
  auto g = GridServer::Start(coord_.get(), "127.0.0.1", 0, 0, 1.0, tokens());
  ASSERT_TRUE(g.ok()) << g.status().message();
  httplib::Client http("127.0.0.1", (*g)->port());
  http.set_read_timeout(5, 0);
  auto none = http.Get("/metrics");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  httplib::Headers read = {{"Authorization", std::string("Bearer ") + kReadToken}};
  // The leader's first round (its budget) before the figures are compared.
  for (int i = 0; i < 100 && !(coord_->stats().last_plan.site_w > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto m = http.Get("/metrics", read);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200) << m->body;
  auto st = http.Get("/v1/grid/status", read);
  ASSERT_TRUE(st);
  const auto status = nlohmann::json::parse(st->body);
  // value NAME: the sample of NAME in the exposition (NaN when absent).
  auto value = [&](const std::string& name) {
    const std::string key = "\n" + name + "{site=\"";
    const size_t at = m->body.find(key);
    if (at == std::string::npos) return std::nan("");
    const size_t sp = m->body.find("} ", at);
    return std::stod(m->body.substr(sp + 2));
  };
  EXPECT_DOUBLE_EQ(value("flexwatt_site_budget_watts"), status["site_w"].get<double>());
  EXPECT_DOUBLE_EQ(value("flexwatt_site_budget_watts"), 2000);  // the site's default budget
  const double shortfall = value("flexwatt_site_shortfall_watts");
  ASSERT_FALSE(std::isnan(shortfall)) << m->body;
  EXPECT_NEAR(shortfall, status["shortfall_w"].get<double>(), 1e-6);
  EXPECT_FALSE(std::isnan(value("flexwatt_coordinator_leader"))) << m->body;
  EXPECT_NE(m->body.find("# TYPE flexwatt_site_shortfall_watts gauge"), std::string::npos);
}

// Without a token file: reads are open, writes refused (401, naming token_file) before their
// body unless allow_unauthenticated_writes (loopback only), and then audited as anonymous.
TEST_F(GridServerAuth, WithoutATokenFileWritesNeedTheLoopbackSwitch) {
  GridAuth none;
  none.audit = [this](const GridAuth::Write& w) {
    std::lock_guard<std::mutex> lk(mu_);
    audit_.push_back(w);
  };
  auto g = GridServer::Start(coord_.get(), "127.0.0.1", 0, 0, 1.0, none);
  ASSERT_TRUE(g.ok()) << g.status().message();
  double took = 0;
  const std::string r = refused_unread((*g)->port(), "PUT", "/v1/grid/target", nullptr, &took);
  EXPECT_EQ(status_of(r), 401) << r;
  EXPECT_NE(r.find("configure token_file"), std::string::npos) << r;
  EXPECT_LT(took, 2.0);
  httplib::Client http("127.0.0.1", (*g)->port());
  http.set_read_timeout(5, 0);
  auto status = http.Get("/v1/grid/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  (*g)->stop();
  GridAuth open = none;
  open.allow_unauthenticated_writes = true;
  auto w = GridServer::Start(coord_.get(), "127.0.0.1", 0, 0, 1.0, open);
  ASSERT_TRUE(w.ok()) << w.status().message();
  httplib::Client http2("127.0.0.1", (*w)->port());
  http2.set_read_timeout(5, 0);
  auto put =
      http2.Put("/v1/grid/target", R"({"value":700,"correlation_id":"x"})", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  (*w)->stop();
  const auto lines = audit();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].who, "unauthenticated");
  EXPECT_EQ(lines[0].status, 401);
  EXPECT_EQ(lines[1].who, "anonymous");
  EXPECT_EQ(lines[1].status, 200);
  open.allow_unauthenticated_writes = true;
  auto wide = GridServer::Start(coord_.get(), "0.0.0.0", 0, 0, 1.0, open);
  EXPECT_FALSE(wide.ok());
}

}  // namespace
}  // namespace fw::fleet
