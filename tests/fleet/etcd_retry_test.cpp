// Retry, failover and timeout rules of EtcdClient against a scripted fake gateway (no etcd).

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "fleet/etcd_client.hpp"

namespace fw::fleet {
namespace {

// An HTTP server on a free loopback port, stopped and joined by the destructor.
class FakeGateway {
 public:
  explicit FakeGateway(const std::function<void(httplib::Server&)>& routes) {
    server_.set_tcp_nodelay(true);  // as etcd (Go sets TCP_NODELAY on every connection)
    routes(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakeGateway() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

EtcdClient client_for(std::vector<std::string> endpoints) {
  EtcdClientOptions o;
  o.endpoints = std::move(endpoints);
  o.request_timeout_s = 0.3;
  o.max_attempts = 4;
  o.backoff_initial_s = 0.001;
  o.backoff_max_s = 0.004;
  return std::move(EtcdClient::Create(o)).value();
}

constexpr const char* kRange =
    R"({"header":{"revision":"5"},"kvs":[{"key":"YQ==","value":"MQ=="}],"count":"1"})";

TEST(EtcdRetry, UnavailableAnswersAreRetried) {
  std::atomic<int> calls{0};
  FakeGateway gw([&](httplib::Server& s) {
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      if (calls.fetch_add(1) < 2) {
        res.status = 503;
        res.set_content(R"({"error":"etcdserver: leader changed","code":14})", "application/json");
      } else {
        res.set_content(kRange, "application/json");
      }
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  auto r = c.get("a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->kvs.at(0).value, "1");
  EXPECT_EQ(calls.load(), 3);
}

TEST(EtcdRetry, BadRequestIsNotRetried) {
  std::atomic<int> calls{0};
  FakeGateway gw([&](httplib::Server& s) {
    s.Post("/v3/kv/put", [&](const httplib::Request&, httplib::Response& res) {
      calls.fetch_add(1);
      res.status = 400;
      res.set_content(R"({"error":"illegal base64 data at input byte 0","code":3})",
                      "application/json");
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  auto r = c.put("a", "1");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("illegal base64"), std::string::npos);
  EXPECT_EQ(calls.load(), 1);
}

TEST(EtcdRetry, TxnThatMayHaveBeenAppliedIsNotRetriedButRangeIs) {
  std::atomic<int> txns{0}, ranges{0};
  FakeGateway gw([&](httplib::Server& s) {
    auto slow = [](httplib::Response& res) {  // answers after the client's 0.3 s timeout
      std::this_thread::sleep_for(std::chrono::milliseconds(450));
      res.set_content(R"({"header":{"revision":"5"},"succeeded":true})", "application/json");
    };
    s.Post("/v3/kv/txn", [&](const httplib::Request&, httplib::Response& res) {
      txns.fetch_add(1);
      slow(res);
    });
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      if (ranges.fetch_add(1) == 0) return slow(res);
      res.set_content(kRange, "application/json");
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  auto t = c.txn({Compare::Absent("a")}, {TxnOp::Put("a", "1")});
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(txns.load(), 1);
  auto r = c.get("a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(ranges.load(), 2);
}

TEST(EtcdRetry, FailsOverToTheNextMemberAndRemembersIt) {
  std::atomic<int> calls_a{0}, calls_b{0};
  FakeGateway a([&](httplib::Server& s) {
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      calls_a.fetch_add(1);
      res.status = 503;
      res.set_content(R"({"error":"etcdserver: no leader","code":14})", "application/json");
    });
  });
  FakeGateway b([&](httplib::Server& s) {
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      calls_b.fetch_add(1);
      res.set_content(kRange, "application/json");
    });
  });
  EtcdClient c = client_for({a.endpoint(), b.endpoint()});
  ASSERT_TRUE(c.get("a").ok());
  EXPECT_EQ(calls_a.load(), 1);
  EXPECT_EQ(c.preferred_endpoint(), 1u);
  ASSERT_TRUE(c.get("a").ok());  // starts on b now
  EXPECT_EQ(calls_a.load(), 1);
  EXPECT_EQ(calls_b.load(), 2);
}

TEST(EtcdRetry, CallTimeoutBoundsAllAttempts) {
  std::atomic<int> calls{0};
  FakeGateway gw([&](httplib::Server& s) {
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      calls.fetch_add(1);
      res.status = 503;
      res.set_content(R"({"error":"etcdserver: request timed out","code":14})", "application/json");
    });
  });
  EtcdClientOptions o;
  o.endpoints = {gw.endpoint()};
  o.max_attempts = 100;
  o.backoff_initial_s = 0.05;
  o.backoff_max_s = 0.05;
  o.call_timeout_s = 0.2;
  auto c = EtcdClient::Create(o);
  auto r = c->get("a");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_LE(calls.load(), 8);  // 0.2 s of pauses of 25-50 ms each, not 100 attempts
  EXPECT_GE(calls.load(), 2);
}

// Noticed in issue 45's fleet runs: every request opened its own TCP connection (keep-alive
// off), so three 64-node runs left about 22,000 sockets in TIME-WAIT. Calls one after another
// now reuse one connection per member.
TEST(EtcdRetry, CallsOneAfterAnotherReuseOneConnection) {
  std::mutex mu;
  std::set<int> ports;
  FakeGateway gw([&](httplib::Server& s) {
    s.set_keep_alive_max_count(100);  // as etcd (Go's server): no limit within the test
    s.Post("/v3/kv/range", [&](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lk(mu);
        ports.insert(req.remote_port);
      }
      res.set_content(kRange, "application/json");
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.get("a").ok());
  std::lock_guard<std::mutex> lk(mu);
  EXPECT_EQ(ports.size(), 1u) << "connections opened for 20 calls";
}

// A connection the member closed (its keep-alive limit, a restart) is not an error: the next
// call opens another.
TEST(EtcdRetry, AConnectionTheMemberClosedIsReplaced) {
  std::atomic<int> calls{0};
  FakeGateway gw([&](httplib::Server& s) {
    s.set_keep_alive_max_count(1);  // the server closes every connection after one answer
    s.Post("/v3/kv/put", [&](const httplib::Request&, httplib::Response& res) {
      calls.fetch_add(1);
      res.set_content(R"({"header":{"revision":"7"}})", "application/json");
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  for (int i = 0; i < 5; ++i) {
    auto r = c.put("k", "v");
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().message();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(calls.load(), 5);  // each sent once: none needed a retry
}

// Calls from several threads at once each get a connection of their own (none is shared).
TEST(EtcdRetry, ConcurrentCallsDoNotShareAConnection) {
  std::atomic<int> in_flight{0}, most{0};
  FakeGateway gw([&](httplib::Server& s) {
    s.Post("/v3/kv/range", [&](const httplib::Request&, httplib::Response& res) {
      const int now = in_flight.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      in_flight.fetch_sub(1);
      res.set_content(kRange, "application/json");
    });
  });
  EtcdClient c = client_for({gw.endpoint()});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) ok += c.get("a").ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 12);
  EXPECT_GE(most.load(), 2);  // they ran side by side
}

}  // namespace
}  // namespace fw::fleet
