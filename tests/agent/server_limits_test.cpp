// Request and connection limits of the agent's HTTP API (docs/agent-api.md "Limits"), driven
// with raw sockets on 127.0.0.x: what a misbehaving or hostile client sends, which httplib's
// client would not. Time bounds are generous (a loaded 2-core machine); every read is bounded.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "server_fixture.hpp"
#include "test_state.hpp"

namespace fw::agent {
namespace {

using nlohmann::json;
using testing::kControl;
using testing::kRead;
using Clock = std::chrono::steady_clock;

double since_s(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One raw client connection. Reads are bounded by the deadline given to each call.
class Raw {
 public:
  // TCP to 127.0.0.1:port from the source address `src` (any 127.x.y.z works on Linux).
  static Raw tcp(int port, const char* src = "127.0.0.1") {
    Raw r;
    r.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, src, &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (::bind(r.fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        ::connect(r.fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      r.reset();
    }
    return r;
  }
  static Raw unix_socket(const std::string& path) {
    Raw r;
    r.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(r.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) r.reset();
    return r;
  }
  Raw() = default;
  Raw(Raw&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Raw& operator=(Raw&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Raw() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return fd_ >= 0; }
  bool send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything that arrives until the peer closes (EOF or reset) or `within_s` passes;
  // closed() tells which.
  std::string read_until_close(double within_s) {
    std::string out;
    closed_ = false;
    auto end = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(within_s));
    while (Clock::now() < end) {
      if (!wait_readable(end)) break;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // One response (head and Content-Length body) if it arrives within `within_s`, else "".
  std::string read_response(double within_s) {
    auto end = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(within_s));
    while (Clock::now() < end) {
      size_t head_end = pending_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t len = 0;
        std::string head = pending_.substr(0, head_end);
        for (auto& ch : head) ch = static_cast<char>(std::tolower(ch));
        if (auto at = head.find("content-length:"); at != std::string::npos) {
          len = std::strtoul(head.c_str() + at + 15, nullptr, 10);
        }
        if (pending_.size() >= head_end + 4 + len) {
          std::string r = pending_.substr(0, head_end + 4 + len);
          pending_.erase(0, r.size());
          return r;
        }
      }
      if (!wait_readable(end)) break;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      pending_.append(buf, static_cast<size_t>(n));
    }
    return "";
  }
  bool closed() const { return closed_; }
  int fd() const { return fd_; }

 private:
  bool wait_readable(Clock::time_point end) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) > 0;
  }
  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;
};

// The status code of a response ("HTTP/1.1 413 ..."), or 0.
int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string header(const char* token) {
  return token ? std::string("Authorization: Bearer ") + token + "\r\n" : std::string();
}

class ServerLimits : public testing::ServerFixture {
 protected:
  int port() const { return server_->tcp_port(); }
  std::vector<json> audit_lines() {
    std::vector<json> lines;
    std::istringstream in(audit_text());
    for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
    return lines;
  }
};

// Defect: a chunked body was read whole whatever its size (50 MB took 50 MB of RSS), then
// answered by the handler (400/422); now the read stops after a bounded amount and says 413.
TEST_F(ServerLimits, ChunkedBodyOverTheLimitIs413AndTheReadIsBounded) {
  start();
  Raw c = Raw::tcp(port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + header(kControl) +
                     "Transfer-Encoding: chunked\r\n\r\n"));
  std::atomic<size_t> sent{0};
  std::atomic<bool> stop{false};
  const size_t kTotal = 50u << 20;
  std::thread sender([&] {
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    while (!stop && sent < kTotal) {
      if (!c.send(chunk)) return;  // the agent closed the connection
      sent += 0x10000;
    }
    c.send("0\r\n\r\n");
  });
  auto t0 = Clock::now();
  std::string r = c.read_response(10);
  stop = true;
  // Unblock the sender if the socket buffers are full.
  ::shutdown(c.fd(), SHUT_RDWR);
  sender.join();
  EXPECT_EQ(status_of(r), 413) << r.substr(0, 200);
  EXPECT_LT(since_s(t0), 5.0);
  EXPECT_LT(sent.load(), kTotal) << "the agent read the whole 50 MB body";
  EXPECT_NE(r.find("4096"), std::string::npos);
}

// A chunked body within the limit is accepted, and the connection stays usable.
TEST_F(ServerLimits, SmallChunkedBodyIsAccepted) {
  start();
  Raw c = Raw::tcp(port());
  const std::string body = R"({"id": "chunky"})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  ASSERT_TRUE(c.send("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + header(kControl) +
                     "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\n" + body +
                     "\r\n0\r\n\r\n"));
  std::string r = c.read_response(5);
  EXPECT_EQ(status_of(r), 201) << r;
  EXPECT_TRUE(jobs_.get("chunky"));
  ASSERT_TRUE(c.send("GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + header(kRead) + "\r\n"));
  EXPECT_EQ(status_of(c.read_response(5)), 200);
}

// Defect: a body without a token was read whole before the 401. Now the 401 comes at once,
// without waiting for (or reading) the body, and the connection is closed.
TEST_F(ServerLimits, UnauthenticatedBodyIsRefusedBeforeItIsRead) {
  start();
  for (const char* framing : {"Transfer-Encoding: chunked\r\n", "Content-Length: 1000000\r\n"}) {
    Raw c = Raw::tcp(port());
    ASSERT_TRUE(c.send(std::string("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n") + framing + "\r\n"));
    auto t0 = Clock::now();
    std::string r = c.read_until_close(4);
    EXPECT_EQ(status_of(r), 401) << framing << r;
    EXPECT_TRUE(c.closed()) << framing;
    EXPECT_LT(since_s(t0), 2.0) << framing;
  }
  // Expect: 100-continue without a token: the refusal, no "100 Continue".
  Raw c = Raw::tcp(port());
  ASSERT_TRUE(c.send(
      "PUT /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\nExpect: 100-continue\r\n\r\n"));
  std::string r = c.read_until_close(4);
  EXPECT_EQ(status_of(r), 401) << r;
  EXPECT_TRUE(c.closed());
}

// Defect: a Content-Length over the limit was skipped by reading all of it (httplib); now
// 413 at once.
TEST_F(ServerLimits, ContentLengthOverTheLimitIs413BeforeTheBody) {
  start();
  Raw c = Raw::tcp(port());
  ASSERT_TRUE(c.send("PUT /v1/budget HTTP/1.1\r\nHost: x\r\n" + header(kControl) +
                     "Content-Length: 50000000\r\n\r\n"));
  auto t0 = Clock::now();
  std::string r = c.read_until_close(4);
  EXPECT_EQ(status_of(r), 413) << r;
  EXPECT_TRUE(c.closed());
  EXPECT_LT(since_s(t0), 2.0);
}

// Defect: httplib does not read a GET's body, so its chunks were parsed as requests: one
// chunked GET gave hundreds of answers. Now 400 and close.
TEST_F(ServerLimits, GetWithABodyIs400AndCloses) {
  start();
  std::string chunks;
  for (int i = 0; i < 400; ++i) chunks += "12\r\nGET / HTTP/1.1\r\n\r\n\r\n";
  for (const std::string& framing :
       {std::string("Transfer-Encoding: chunked\r\n\r\n") + chunks + "0\r\n\r\n",
        std::string("Content-Length: 18\r\n\r\nGET / HTTP/1.1\r\n\r\n")}) {
    Raw c = Raw::tcp(port());
    ASSERT_TRUE(c.send("GET /v1/status HTTP/1.1\r\nHost: x\r\n" + header(kRead) + framing));
    std::string all = c.read_until_close(4);
    EXPECT_EQ(status_of(all), 400) << all.substr(0, 300);
    EXPECT_EQ(count_of(all, "HTTP/1.1 "), 1u) << all.substr(0, 300);
    EXPECT_TRUE(c.closed());
  }
}

// Defect: a POST without Content-Length hung for the 5 s read timeout, then said 400.
TEST_F(ServerLimits, BodyWithoutALengthIs411AtOnce) {
  start();
  Raw c = Raw::tcp(port());
  ASSERT_TRUE(c.send("PUT /v1/budget HTTP/1.1\r\nHost: x\r\n" + header(kControl) + "\r\n"));
  auto t0 = Clock::now();
  std::string r = c.read_response(4);
  EXPECT_EQ(status_of(r), 411) << r;
  EXPECT_LT(since_s(t0), 2.0);
  EXPECT_EQ(commands_.pending(), 0u);
}

// Defect: a known path with a method it does not serve said 404.
TEST_F(ServerLimits, WrongMethodIs405WithAllow) {
  start();
  auto c = tcp(kControl);
  auto patch = c.Patch("/v1/budget", R"({"watts": 1})", "application/json");
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->status, 405);
  EXPECT_EQ(patch->get_header_value("Allow"), "PUT");
  EXPECT_EQ(json::parse(patch->body)["status"], 405);
  auto post = c.Post("/v1/status", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  auto del = c.Delete("/v1/jobs");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  EXPECT_EQ(del->get_header_value("Allow"), "GET, HEAD, POST");
  auto unknown = c.Patch("/v1/nothing", "{}", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

// Defect: a request httplib could not parse was logged as remote "unix" over TCP; and a refused
// unauthenticated write logged its body.
TEST_F(ServerLimits, AuditNamesTheRealRemoteAndLogsNoUnauthenticatedBody) {
  start();
  {
    Raw c = Raw::tcp(port());
    ASSERT_TRUE(c.send("PUT /v1/budget HTTP/9.9\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(status_of(c.read_response(5)), 400);
  }
  {
    Raw u = Raw::unix_socket(cfg_.unix_socket_path);
    ASSERT_TRUE(u.send("PUT /v1/budget HTTP/9.9\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(status_of(u.read_response(5)), 400);
  }
  auto none = tcp().Put("/v1/budget", R"({"watts": 2, "secret": "x"})", "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  server_->stop();
  auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 3u) << audit_text();
  EXPECT_EQ(lines[0]["remote"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << lines[0];
  EXPECT_EQ(lines[0]["status"], 400);
  EXPECT_EQ(lines[1]["remote"], "unix");
  EXPECT_EQ(lines[2]["who"], "unauthenticated");
  EXPECT_EQ(lines[2]["body"], "");
}

// Defect: each idle connection held one of the worker threads (40 idle connections took the
// API down). Now idle connections wait in the poller: with 2 workers and 24 idle connections,
// a probe is answered at once.
TEST_F(ServerLimits, IdleConnectionsHoldNoWorker) {
  cfg_.threads = 2;
  hub_.publish(testing::sample_state());
  start();
  std::vector<Raw> idle;
  for (int i = 0; i < 24; ++i) {
    idle.push_back(Raw::tcp(port(), "127.0.0.2"));
    ASSERT_TRUE(idle.back().ok());
  }
  // Half of them trickle a head, one byte at a time.
  for (int i = 0; i < 12; ++i) idle[i].send("G");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (int probe = 0; probe < 3; ++probe) {
    httplib::Client c("127.0.0.1", port());
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(2, 0);
    c.set_bearer_token_auth(kRead);
    auto t0 = Clock::now();
    auto r = c.Get("/v1/status");
    ASSERT_TRUE(r) << "probe " << probe << " failed: " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(since_s(t0), 2.0);
  }
}

// Defect: a head sent one byte at a time held its connection (and a worker) for as long as the
// bytes kept coming; now the head has an absolute deadline: 408, then close.
TEST_F(ServerLimits, TricklingHeadIs408AfterTheHeadDeadline) {
  cfg_.head_timeout_s = 1;
  start();
  Raw c = Raw::tcp(port());
  const std::string head = "GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(64, 'a');
  auto t0 = Clock::now();
  std::string got;
  for (char ch : head) {
    if (!c.send(std::string_view(&ch, 1))) break;
    got = c.read_until_close(0.1);
    if (!got.empty() || c.closed() || since_s(t0) > 5) break;
  }
  if (got.empty() && !c.closed()) got = c.read_until_close(2);
  EXPECT_EQ(status_of(got), 408) << got;
  EXPECT_LT(since_s(t0), 4.0);
  // An idle connection is closed after idle_timeout_s, without an answer.
  server_.reset();
  cfg_.idle_timeout_s = 1;
  start();
  Raw idle = Raw::tcp(port());
  t0 = Clock::now();
  EXPECT_EQ(idle.read_until_close(4), "");
  EXPECT_TRUE(idle.closed());
  EXPECT_LT(since_s(t0), 3.5);
}

// A head over 16 KiB is refused with 431.
TEST_F(ServerLimits, OversizedHeadIs431) {
  start();
  Raw c = Raw::tcp(port());
  c.send("GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'b') + "\r\n\r\n");
  std::string r = c.read_until_close(4);
  EXPECT_EQ(status_of(r), 431) << r.substr(0, 200);
  EXPECT_TRUE(c.closed());
}

// Connections beyond the per-client cap get 503 and are closed; other clients are served.
// (Raw connections only, opened in order: the poller counts them in accept order.)
TEST_F(ServerLimits, ConnectionCapPerClientIs503) {
  cfg_.max_connections_per_client = 3;
  cfg_.max_connections = 7;
  start();
  std::vector<Raw> held;
  for (int i = 0; i < 3; ++i) held.push_back(Raw::tcp(port(), "127.0.0.2"));
  Raw over = Raw::tcp(port(), "127.0.0.2");
  std::string r = over.read_until_close(4);
  EXPECT_EQ(status_of(r), 503) << r;
  EXPECT_TRUE(over.closed());
  Raw probe = Raw::tcp(port(), "127.0.0.1");
  ASSERT_TRUE(probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(status_of(probe.read_response(4)), 200);
  // The total cap: 3 from .2, the probe, 3 from .3 make 7; the next one is refused.
  for (int i = 0; i < 3; ++i) held.push_back(Raw::tcp(port(), "127.0.0.3"));
  Raw total = Raw::tcp(port(), "127.0.0.4");
  EXPECT_EQ(status_of(total.read_until_close(4)), 503);
  // Closing the held ones frees the slots.
  held.clear();
  int status = 0;
  for (auto t0 = Clock::now(); status != 200 && since_s(t0) < 3;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto again = tcp(kRead).Get("/healthz");
    status = again ? again->status : 0;
  }
  EXPECT_EQ(status, 200);
}

// Issue 44 N4: a connection the client closed was counted off the client's cap only when the
// poller next ran, so a client cycling one connection (connect, request, close, connect again)
// next to the cap got spurious 503s (263 in 2,000 cycles). A connection whose client hung up
// no longer counts at admission, whether the poller or a worker holds it.
TEST_F(ServerLimits, ClosedConnectionsCountOffAtOnce) {
  cfg_.max_connections_per_client = 4;
  cfg_.max_connections = 16;
  cfg_.idle_timeout_s = 60;  // the held connections stay for the whole test
  start();
  auto cycle = [&](auto connect, int cycles, bool request_every_time) {
    std::vector<Raw> held;
    for (int i = 0; i < 3; ++i) held.push_back(connect());  // one slot left
    int refused = 0, unanswered = 0;
    for (int i = 0; i < cycles; ++i) {
      Raw c = connect();
      if (!c.ok()) {
        ++unanswered;
        continue;
      }
      if (!request_every_time && i % 2 == 1) continue;  // connect and close at once
      if (!c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) {
        ++unanswered;
        continue;
      }
      const int status = status_of(c.read_response(5));
      if (status == 503) ++refused;
      if (status == 0) ++unanswered;
    }
    return std::make_pair(refused, unanswered);
  };
  auto tcp_from = [&] { return Raw::tcp(port(), "127.0.0.6"); };
  auto [tcp_refused, tcp_lost] = cycle(tcp_from, 2000, true);
  EXPECT_EQ(tcp_refused, 0) << "spurious 503s in 2000 TCP connect/request/close cycles";
  EXPECT_EQ(tcp_lost, 0);
  auto [mixed_refused, mixed_lost] = cycle(tcp_from, 2000, false);
  EXPECT_EQ(mixed_refused, 0) << "spurious 503s with bare connect/close cycles between";
  EXPECT_EQ(mixed_lost, 0);
  auto unix_conn = [&] { return Raw::unix_socket(cfg_.unix_socket_path); };
  auto [unix_refused, unix_lost] = cycle(unix_conn, 2000, true);
  EXPECT_EQ(unix_refused, 0) << "spurious 503s in 2000 Unix-socket cycles";
  EXPECT_EQ(unix_lost, 0);
  // The cap itself still holds: a 5th connection open at once is refused.
  std::vector<Raw> four;
  for (int i = 0; i < 4; ++i) four.push_back(tcp_from());
  ASSERT_TRUE(four[3].send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(status_of(four[3].read_response(5)), 200);
  Raw fifth = tcp_from();
  EXPECT_EQ(status_of(fifth.read_until_close(4)), 503);
}

// Keep-alive and pipelining still work: two requests in one write, two answers in order.
TEST_F(ServerLimits, PipelinedRequestsAreAnsweredInOrder) {
  hub_.publish(testing::sample_state());
  start();
  Raw c = Raw::tcp(port());
  ASSERT_TRUE(
      c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPUT /v1/budget HTTP/1.1\r\nHost: x\r\n" +
             header(kControl) +
             "Content-Length: 14\r\n\r\n{\"watts\": 600}GET /v1/status HTTP/1.1\r\nHost: x\r\n" +
             header(kRead) + "\r\n"));
  EXPECT_EQ(status_of(c.read_response(5)), 200);
  EXPECT_EQ(status_of(c.read_response(5)), 202);
  std::string third = c.read_response(5);
  EXPECT_EQ(status_of(third), 200);
  EXPECT_NE(third.find("\"gpus\""), std::string::npos);
  auto k = tcp(kRead);
  for (int i = 0; i < 5; ++i) {
    auto r = k.Get("/v1/status");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

// stop() ends idle, trickling and streaming connections promptly.
TEST_F(ServerLimits, StopIsPromptWithOpenConnections) {
  hub_.publish(testing::sample_state());
  start();
  std::vector<Raw> open;
  for (int i = 0; i < 8; ++i) open.push_back(Raw::tcp(port(), "127.0.0.2"));
  open[0].send("GET /v1/sta");
  open[1].send("PUT /v1/budget HTTP/1.1\r\n" + header(kControl) + "Content-Length: 100\r\n\r\n{");
  open[2].send("GET /v1/stream HTTP/1.1\r\n" + header(kRead) + "\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = Clock::now();
  server_->stop();
  EXPECT_LT(since_s(t0), 3.0);
  for (auto& c : open) {
    c.read_until_close(2);
    EXPECT_TRUE(c.closed());
  }
}

}  // namespace
}  // namespace fw::agent
