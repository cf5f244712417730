// net::GatedServer itself (src/net/http_gate.hpp), the server under the agent's API and the
// grid endpoint: what it takes from cpp-httplib (two protected members, checked at compile
// time; no listener of httplib's), its own sockets, and its admission as a server configures
// it. The hostile-input cases run through both servers in server_limits_test.cpp.

#include "net/http_gate.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "raw_client.hpp"

namespace fw::net {
namespace {

using http_testing::count_of;
using http_testing::Raw;
using http_testing::since_s;
using http_testing::status_of;
using Clock = std::chrono::steady_clock;

// Nobody reaches httplib's listen()/bind_to_port() through a GatedServer (a private base),
// so no socket is served around the gate; and a cpp-httplib other than the one checked stops
// the build (http_gate.cpp static_asserts it with this function).
TEST(HttpGate, IsAPrivateHttplibServerOfACheckedVersion) {
  static_assert(!std::is_convertible_v<GatedServer*, httplib::Server*>);
  static_assert(std::is_base_of_v<httplib::Server, GatedServer>);
  static_assert(httplib_verified(CPPHTTPLIB_VERSION));
  EXPECT_TRUE(httplib_verified("0.11.4"));
  EXPECT_FALSE(httplib_verified("0.11.3"));
  EXPECT_FALSE(httplib_verified("0.12.0"));
  EXPECT_FALSE(httplib_verified(""));
}

HttpPolicy tokens_policy(std::atomic<int>* answers = nullptr) {
  HttpPolicy p;
  p.authenticate = [](const httplib::Request& req) -> std::optional<Caller> {
    const std::string h = req.get_header_value("Authorization");
    if (h == "Bearer read-token") return Caller{"viewer", kScopeRead};
    if (h == "Bearer control-token") return Caller{"ops", kScopeControl};
    return std::nullopt;
  };
  p.not_found_message = "not here";
  if (answers) p.on_answer = [answers](const auto&, const auto&) { ++*answers; };
  return p;
}

// Admission runs before the body and before any handler: a refused caller's handler never
// runs, its body is not read, and every answer passes the server's hook once.
TEST(HttpGate, RoutesCarryTheirScopeAndRefusalsSkipTheHandler) {
  std::atomic<int> answers{0}, writes{0};
  ConnectionLimits lim;
  lim.threads = 2;
  lim.max_body_bytes = 1024;
  GatedServer s(lim, tokens_policy(&answers));
  s.route("GET", "/open", kScopeNone,
          [](const auto&, auto& res) { res.set_content("hi", "text/plain"); });
  s.route("PUT", "/write", kScopeControl, [&](const auto& req, auto& res) {
    ++writes;
    res.set_content(req.body, "text/plain");
  });
  ASSERT_TRUE(s.bind_tcp("127.0.0.1", 0));
  ASSERT_GT(s.bound_port(), 0);
  ASSERT_TRUE(s.start_serving());
  const int port = s.bound_port();
  {
    Raw c = Raw::tcp(port);
    ASSERT_TRUE(
        c.send("PUT /write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer read-token\r\n"
               "Content-Length: 100\r\n\r\n"));
    std::string r = c.read_until_close(4);
    EXPECT_EQ(status_of(r), 403) << r;
    EXPECT_NE(r.find("'read' is below the 'control'"), std::string::npos) << r;
    EXPECT_TRUE(c.closed());
  }
  {
    Raw c = Raw::tcp(port);
    ASSERT_TRUE(c.send("PUT /write HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nno"));
    std::string r = c.read_response(4);
    EXPECT_EQ(status_of(r), 401) << r;
    EXPECT_NE(r.find("WWW-Authenticate: Bearer"), std::string::npos) << r;
  }
  EXPECT_EQ(writes.load(), 0);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5, 0);
  c.set_bearer_token_auth("control-token");
  auto ok = c.Put("/write", "yes", "text/plain");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "yes");
  EXPECT_EQ(writes.load(), 1);
  auto open = httplib::Client("127.0.0.1", port).Get("/open");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->status, 200);
  auto missing = c.Get("/elsewhere");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("not here"), std::string::npos) << missing->body;
  s.shutdown();
  EXPECT_EQ(answers.load(), 5);
}

// Content providers (the agent's SSE stream) run while the gate serves: httplib reads its
// protected svr_sock_ as "running" (INVALID_SOCKET: the stream ends at once, with no chunk),
// and shutdown() ends them.
TEST(HttpGate, StreamsRunUntilShutdown) {
  ConnectionLimits lim;
  lim.threads = 2;
  GatedServer s(lim, tokens_policy());
  std::atomic<int> ticks{0};
  s.route("GET", "/stream", kScopeNone, [&](const auto&, auto& res) {
    res.set_chunked_content_provider("text/plain", [&](size_t, httplib::DataSink& sink) {
      ++ticks;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return sink.write("tick\n", 5);
    });
  });
  ASSERT_TRUE(s.bind_tcp("127.0.0.1", 0));
  ASSERT_TRUE(s.start_serving());
  Raw c = Raw::tcp(s.bound_port());
  ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string got;
  for (auto t0 = Clock::now(); count_of(got, "tick") < 5 && since_s(t0) < 4;) {
    got += c.read_until_close(0.1);
  }
  EXPECT_GE(count_of(got, "tick"), 5u) << got;
  auto t0 = Clock::now();
  s.shutdown();
  EXPECT_LT(since_s(t0), 2.0);
  c.read_until_close(2);
  EXPECT_TRUE(c.closed());
  const int after = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ticks.load(), after) << "the provider ran on after shutdown()";
}

// The gate binds its own socket: SO_REUSEADDR, not httplib's SO_REUSEPORT, so a port another
// server listens on is refused rather than shared (two agents on one port split the clients).
TEST(HttpGate, APortInUseIsRefusedNotShared) {
  GatedServer a(ConnectionLimits{}, tokens_policy());
  ASSERT_TRUE(a.bind_tcp("127.0.0.1", 0));
  GatedServer b(ConnectionLimits{}, tokens_policy());
  EXPECT_FALSE(b.bind_tcp("127.0.0.1", a.bound_port()));
  EXPECT_EQ(b.bound_port(), -1);
  EXPECT_FALSE(b.start_serving()) << "started without a socket";
  // A server bound but never started closes its socket: the port is free again.
  const int port = a.bound_port();
  a.shutdown();
  GatedServer c(ConnectionLimits{}, tokens_policy());
  EXPECT_TRUE(c.bind_tcp("127.0.0.1", port));
}

// A client may connect between the bind and start_serving() (the socket listens from the
// bind): its request waits in the backlog and is served once the server starts. (The poller
// used to start before the workers existed and could hand them this connection first: a race
// under TSan, a null dereference otherwise.)
TEST(HttpGate, AConnectionWaitingInTheBacklogIsServedAtStart) {
  ConnectionLimits lim;
  lim.threads = 1;
  GatedServer s(lim, tokens_policy());
  s.route("GET", "/open", kScopeNone,
          [](const auto&, auto& res) { res.set_content("hi", "text/plain"); });
  ASSERT_TRUE(s.bind_tcp("127.0.0.1", 0));
  std::vector<Raw> early;
  for (int i = 0; i < 4; ++i) {
    early.push_back(Raw::tcp(s.bound_port()));
    ASSERT_TRUE(early.back().send("GET /open HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  ASSERT_TRUE(s.start_serving());
  for (auto& c : early) EXPECT_EQ(status_of(c.read_response(4)), 200);
}

// On a Unix socket the handlers see the connection as such, and the per-client key is the
// peer's uid.
TEST(HttpGate, UnixSocketConnectionsSayUnix) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fw_gate_" + std::to_string(::getpid()) + ".sock"))
          .string();
  std::filesystem::remove(path);
  GatedServer s(ConnectionLimits{}, tokens_policy());
  s.route("GET", "/who", kScopeNone, [](const auto&, auto& res) {
    const ServedConnection* c = current_connection();
    res.set_content(c && c->is_unix() ? c->remote() : "?", "text/plain");
  });
  ASSERT_TRUE(s.bind_unix(path));
  ASSERT_TRUE(s.start_serving());
  Raw u = Raw::unix_socket(path);
  ASSERT_TRUE(u.send("GET /who HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string r = u.read_response(4);
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(r.substr(r.size() - 4), "unix") << r;
  s.shutdown();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fw::net
