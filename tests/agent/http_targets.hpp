#pragma once
// The two servers that run on net::GatedServer (src/net/http_gate.hpp), as the hostile-input
// tests (server_limits_test.cpp) drive them: the node agent's API (AgentServer) and the
// coordinator's grid endpoint (GridServer, with a Coordinator on a real etcd:
// tests/fleet/etcd_harness.hpp; without etcd its cases skip, or fail under CI=true). Each
// offers a write route that needs a control token, a read route that needs a read token and
// an open one, takes the same limits, and says what it audited and applied.

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../fleet/etcd_harness.hpp"
#include "agent/server.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/grid_server.hpp"
#include "raw_client.hpp"
#include "server_fixture.hpp"
#include "test_state.hpp"

namespace fw::agent::testing {

using http_testing::bearer;
using http_testing::count_of;
using http_testing::Raw;
using http_testing::since_s;
using http_testing::status_of;

// The limits a case sets; the rest stay each server's own.
struct TargetLimits {
  int threads = 8;
  double idle_timeout_s = 5;
  double head_timeout_s = 5;
  int max_connections = 256;
  int max_connections_per_client = 64;
  size_t max_body_bytes = 4096;
};

// One audit line, as either server records it.
struct AuditEntry {
  std::string who, remote, body;
  int status = 0;
};

class HttpTarget {
 public:
  virtual ~HttpTarget() = default;
  // Starts (again, after a stop) with these limits; the test fails (or skips) otherwise.
  virtual void start(const TargetLimits& limits) = 0;
  virtual void stop() = 0;
  virtual int port() const = 0;
  // A write that needs a control token, a valid small body for it and its answer.
  virtual std::string write_method() const = 0;
  virtual std::string write_path() const = 0;
  virtual std::string write_body() const = 0;
  virtual int write_ok() const = 0;
  virtual std::string read_path() const = 0;    // GET, needs a read token
  virtual std::string open_path() const = 0;    // GET, no token
  virtual std::string stream_path() const = 0;  // GET, read token, answer never ends; or ""
  virtual size_t writes_applied() = 0;          // accepted writes so far
  virtual std::vector<AuditEntry> audit() = 0;  // after stop()
};

class AgentTarget : public HttpTarget {
 public:
  AgentTarget() {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("fw_gate_agent_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    token_file_ = (dir_ / "tokens").string();
    std::ofstream(token_file_) << "ops control " << kControl << "\ngrafana read " << kRead << "\n";
    std::filesystem::permissions(
        token_file_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    hub_.publish(sample_state());
  }
  ~AgentTarget() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void start(const TargetLimits& l) override {
    server_.reset();
    ServerConfig cfg;
    cfg.tcp_port = 0;
    cfg.token_file = token_file_;
    cfg.audit_log_path = (dir_ / "audit.jsonl").string();
    cfg.max_wait_s = 5;
    cfg.threads = l.threads;
    cfg.idle_timeout_s = l.idle_timeout_s;
    cfg.head_timeout_s = l.head_timeout_s;
    cfg.max_connections = l.max_connections;
    cfg.max_connections_per_client = l.max_connections_per_client;
    cfg.max_body_bytes = l.max_body_bytes;
    server_ = std::make_unique<AgentServer>(cfg, hub_, commands_, jobs_);
    Status st = server_->start();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  void stop() override {
    if (server_) server_->stop();
  }
  int port() const override { return server_->tcp_port(); }
  std::string write_method() const override { return "PUT"; }
  std::string write_path() const override { return "/v1/budget"; }
  std::string write_body() const override { return R"({"watts": 600})"; }
  int write_ok() const override { return 202; }
  std::string read_path() const override { return "/v1/status"; }
  std::string open_path() const override { return "/healthz"; }
  std::string stream_path() const override { return "/v1/stream"; }
  size_t writes_applied() override { return commands_.pending(); }
  std::vector<AuditEntry> audit() override {
    std::vector<AuditEntry> out;
    std::ifstream in(dir_ / "audit.jsonl");
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l);
      out.push_back(
          {j.value("who", ""), j.value("remote", ""), j.value("body", ""), j.value("status", 0)});
    }
    return out;
  }

 private:
  std::filesystem::path dir_;
  std::string token_file_;
  StateHub hub_;
  CommandQueue commands_;
  JobRegistry jobs_;
  std::unique_ptr<AgentServer> server_;
};

class GridTarget : public HttpTarget {
 public:
  ~GridTarget() override { stop(); }  // before the audit lines its callback appends to
  void start(const TargetLimits& l) override {
    stop();
    FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
    ASSERT_TRUE(etcd()) << "etcd did not start";
    if (!coordinator_) {
      static int site = 0;
      fleet::CoordinatorOptions o;
      o.site = "gate" + std::to_string(site++);
      o.id = "a";
      o.lease_ttl_s = 2;
      o.campaign_timeout_s = 0.5;
      o.expiry_s = 4;
      o.refresh_s = 1;
      o.default_budget_w = 2000;
      o.tick_s = 0.05;
      auto c = fleet::Coordinator::Start(fleet::testing::fast_client_options(*etcd()), o);
      ASSERT_TRUE(c.ok()) << c.status().message();
      coordinator_ = std::move(c).value();
    }
    fleet::GridAuth auth;
    auth.lookup = [](std::string_view token) -> std::optional<std::pair<std::string, int>> {
      if (token == kControl) return std::make_pair("ops", fleet::kGridScopeControl);
      if (token == kRead) return std::make_pair("grafana", fleet::kGridScopeRead);
      return std::nullopt;
    };
    auth.audit = [this](const fleet::GridAuth::Write& w) {
      std::lock_guard<std::mutex> lk(mu_);
      audit_.push_back({w.who, w.remote, w.body, w.status});
    };
    net::ConnectionLimits lim = fleet::grid_connection_limits();
    lim.threads = l.threads;
    lim.idle_timeout_s = l.idle_timeout_s;
    lim.head_timeout_s = l.head_timeout_s;
    lim.max_connections = l.max_connections;
    lim.max_connections_per_client = l.max_connections_per_client;
    lim.max_body_bytes = l.max_body_bytes;
    auto g = fleet::GridServer::Start(coordinator_.get(), "127.0.0.1", 0, 0, 1.0, auth, lim);
    ASSERT_TRUE(g.ok()) << g.status().message();
    server_ = std::move(g).value();
  }
  void stop() override {
    if (server_) {
      applied_ += static_cast<size_t>(server_->writes_accepted());
      server_->stop();
      server_.reset();
    }
  }
  int port() const override { return server_->port(); }
  std::string write_method() const override { return "PUT"; }
  std::string write_path() const override { return "/v1/grid/target"; }
  std::string write_body() const override { return R"({"value":500,"correlation_id":"cut"})"; }
  int write_ok() const override { return 200; }
  std::string read_path() const override { return "/v1/grid/status"; }
  std::string open_path() const override { return "/healthz"; }
  std::string stream_path() const override { return ""; }
  size_t writes_applied() override {
    return applied_ + (server_ ? static_cast<size_t>(server_->writes_accepted()) : 0);
  }
  std::vector<AuditEntry> audit() override {
    std::lock_guard<std::mutex> lk(mu_);
    return audit_;
  }

 private:
  // One etcd member for every grid case of the process (started on first use).
  static fleet::testing::EtcdCluster* etcd() {
    static std::unique_ptr<fleet::testing::EtcdCluster> cluster = [] {
      auto c = fleet::testing::EtcdCluster::Start(1);
      return c.ok() ? std::move(c).value() : nullptr;
    }();
    return cluster.get();
  }
  std::unique_ptr<fleet::Coordinator> coordinator_;
  std::unique_ptr<fleet::GridServer> server_;
  size_t applied_ = 0;
  std::mutex mu_;
  std::vector<AuditEntry> audit_;
};

}  // namespace fw::agent::testing
