#pragma once
// GatedServer: flexwatt's one hardened HTTP/1.1 server, on Debian's cpp-httplib 0.11.4. The
// node agent's API (agent/server*.cpp) and the coordinator's grid endpoint
// (fleet/grid_server.cpp) both run on it, with the same limits, admission and auth hooks; each
// sets its own values (net/limits.hpp) and its caller lookup (HttpPolicy).
//
// Connections cost no worker while they are idle or while their request head arrives. The
// server binds and listens on its own socket (backlog 1024) and one poller thread (epoll)
// accepts and owns every connection between requests: it reads the request head without a
// worker (up to kMaxHeadBytes, else 431; within head_timeout_s of its first byte, else 408; an
// idle connection is closed after idle_timeout_s), applies the connection caps (503 and close
// beyond), and queues a connection with a complete head to a worker. The worker runs httplib's
// request processing on a Stream that serves the buffered head first and then reads the body
// from the socket only as far as admission allowed, before the body deadline. After the answer
// the connection goes back to the poller, or is closed: a connection to close is shut down
// for writing, then drained (bounded) so that the client reads the answer rather than a reset.
//
// Admission, when a head is in and before any body byte is read (also before a "100
// Continue"): framing (one Content-Length or chunked Transfer-Encoding, none on GET/HEAD/
// DELETE/OPTIONS: 400/411/501), the route and its method (404, 405 + Allow), the caller's
// token and scope from HttpPolicy::authenticate (401/403), the size (413). Every route is
// registered with its scope (route()): the admission table and the handlers are one list.
//
// What of cpp-httplib this uses, and why not its public API only (issue 43): httplib 0.11.4
// has no public entry point that serves a request from a connection or a stream, nor one that
// hands over an accepted socket. listen() runs each accepted socket's whole keep-alive life on
// one pool thread; new_task_queue (public) is given only an opaque closure over the socket
// (`[this, sock] { process_and_close_socket(sock); }`), so a queue cannot poll the socket and
// must run the closure on a thread that then blocks for the connection's life; routing and
// dispatch are private. A public-only gate would have to re-implement the HTTP server
// (parser, chunked decoding, routing, content providers) or proxy every request into a plain
// httplib::Server over a second socket (two more descriptors per request, the peer's identity
// lost). So this class never lets httplib listen or accept (it is a *private* subclass: no
// caller can reach listen() and bypass the gate), overrides no private virtual, and uses
// exactly two *protected* members, the interface httplib gives its subclasses (SSLServer uses
// both): process_request(Stream&, ...) to serve one request, and svr_sock_, which httplib's
// content providers (the agent's SSE stream) read as "the server runs" (INVALID_SOCKET ends
// them: shutdown() sets it). http_gate.cpp static_asserts both signatures and the httplib
// version (httplib_verified): an upgrade fails the build until someone re-checks them.
//
// Ownership: a connection belongs to the poller or to one worker, never both; it moves between
// them through mutex-guarded queues. Sockets are accepted and closed on the poller thread only,
// and the connection caps' counts are the poller's alone. A connection counts against the caps
// from its accept until it is closed or, whichever comes first, until its client is seen to
// have hung up: before refusing a connection over a cap, the poller probes the counted
// connections (its own and the workers', whose sockets it alone closes, so their descriptors
// stay valid) and counts off those whose client closed or shut down its sending side.
// Handlers reach the connection they serve through current_connection() (thread-local, valid
// while the request's handlers run on the worker thread).

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "net/limits.hpp"

namespace fw::net {

// The scopes of flexwatt's token files (docs/agent-api.md): read < control < admin.
inline constexpr int kScopeNone = 0, kScopeRead = 1, kScopeControl = 2, kScopeAdmin = 3;
std::string_view scope_name(int scope);  // "none", "read", "control", "admin"

// Who sent a request, as a server's token lookup says.
struct Caller {
  std::string subject;  // the token's subject, or "anonymous"
  int scope = kScopeNone;
};

// What each server configures of the admission and the answers.
struct HttpPolicy {
  // The caller of a request, from its head (before its body is read); nullopt: no valid
  // token (401). Unset: every route with a scope is refused.
  std::function<std::optional<Caller>(const httplib::Request&)> authenticate;
  std::string unauthorized_message = "missing or unknown bearer token";
  std::string not_found_message = "no such endpoint";
  // Every answer, errors and admission refusals included, before it is written (an audit
  // log: a logger would run after the client already has its answer).
  std::function<void(const httplib::Request&, const httplib::Response&)> on_answer;
};

// Writes {"error": message, "status": code} with that HTTP status.
void send_error(httplib::Response& res, int status, const std::string& message);

// The connection a worker serves: what the handlers of one request may ask and decide.
class ServedConnection {
 public:
  static constexpr size_t kMaxHeadBytes = 16 * 1024;

  // "IP:PORT" of the peer (TCP), or "unix".
  const std::string& remote() const { return remote_; }
  bool is_unix() const { return unix_; }
  // Lets the body take up to max_bytes from the socket (framing included) before the body
  // deadline; a read beyond fails and body_over_budget() says so. Without this call the
  // request reads nothing past its head.
  void allow_body(size_t max_bytes);
  // The request's body was read whole (or it had none): the connection may serve another.
  void body_complete() { body_complete_ = true; }
  // Close the connection after this answer ("Connection: close" is added to it).
  void close_after() { close_after_ = true; }
  bool closing() const { return close_after_; }
  bool body_over_budget() const { return over_budget_; }
  bool body_timed_out() const { return timed_out_; }
  // The admission checks ran on this request; they run once per request. A request they did
  // not check (httplib refused its head) closes.
  void mark_gated() { gated_ = true; }
  bool gated() const { return gated_; }
  // Whether the connection can serve another request after this answer, as decided so far.
  bool reusable() const;
  // Decides reuse for this answer and says so in its headers ("Connection: close" when
  // not): called where the headers are final (the post-routing handler).
  void finish_headers(httplib::Response& res);

 private:
  friend class GatedServer;
  friend class ConnStream;
  using Clock = std::chrono::steady_clock;
  void begin_request();

  int fd_ = -1;
  bool unix_ = false;
  std::string remote_;  // for the audit log
  std::string ip_;      // for httplib (empty on the Unix socket)
  int port_ = 0;
  std::string local_ip_;
  int local_port_ = 0;
  std::string client_;  // the key of the per-client cap
  // Bytes received and not yet consumed: buf_[off_, size).
  std::string buf_;
  size_t off_ = 0;
  size_t scanned_ = 0;  // buf_ searched for the head's end up to here
  size_t served_ = 0;   // requests answered
  // Poller state.
  enum class Phase { kReading, kDraining } phase_ = Phase::kReading;
  Clock::time_point deadline_{};
  size_t drained_ = 0;
  // Per request (the worker's while it serves it).
  bool body_allowed_ = false;
  size_t body_budget_ = 0;
  Clock::time_point body_deadline_{};
  bool body_complete_ = false;
  bool close_after_ = false;
  bool over_budget_ = false;
  bool timed_out_ = false;
  bool gated_ = false;
  double body_timeout_s_ = 10;
};

// The connection the calling thread serves; nullptr outside a GatedServer's request.
ServedConnection* current_connection();

// The cpp-httplib versions whose protected members (process_request, svr_sock_) and request
// processing this gate was checked against; http_gate.cpp static_asserts CPPHTTPLIB_VERSION.
constexpr bool httplib_verified(std::string_view version) { return version == "0.11.4"; }

class GatedServer : private httplib::Server {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  GatedServer(ConnectionLimits limits, HttpPolicy policy);
  ~GatedServer() override;
  GatedServer(const GatedServer&) = delete;
  GatedServer& operator=(const GatedServer&) = delete;

  // One endpoint, before start_serving(): `method` GET (which answers HEAD too), PUT, POST,
  // PATCH or DELETE; `pattern` a regex the whole path must match (httplib's); `scope` the
  // least scope its caller needs (kScopeNone: anyone). Admission checks method and scope
  // before the body is read; the handler runs once the body is in (within max_body_bytes).
  GatedServer& route(std::string_view method, const std::string& pattern, int scope,
                     Handler handler);

  // One listening socket per server, bound and listening (backlog 1024) at once.
  // TCP: `host` a name or address, `port` 0 for any free port; false when it cannot bind.
  bool bind_tcp(const std::string& host, int port);
  // A Unix socket at `path` (the caller removes a stale file and sets the mode).
  bool bind_unix(const std::string& path);
  int bound_port() const { return bound_port_; }  // the TCP port; -1 before bind_tcp

  // After a bind: starts the poller and the workers (false without a bound socket).
  bool start_serving();
  // Stops accepting, ends content providers (streams), fails the workers' pending reads and
  // writes, closes every connection and the listening socket, and joins every thread.
  // Idempotent; the destructor calls it.
  void shutdown();
  // Called on the poller thread about once a second (set before start_serving()).
  void set_tick(std::function<void()> fn) { tick_ = std::move(fn); }
  // Open connections (idle, reading, served or draining), for tests and diagnostics.
  int open_connections() const { return open_.load(); }
  const ConnectionLimits& limits() const { return limits_; }

 private:
  class Poller;
  class Workers;
  struct Route {
    std::string method;
    std::regex path;
    int scope;
  };
  using Clock = std::chrono::steady_clock;
  // A keep-alive connection stays on its worker while requests follow within kLinger, for at
  // most kMaxInARow requests; then it goes back to the poller.
  static constexpr auto kLinger = std::chrono::milliseconds(1);
  static constexpr int kMaxInARow = 64;

  // httplib's handlers (pre-routing, 100-continue, post-routing, error, exception): installed
  // once by the constructor (http_admission.cpp).
  void install_hooks();
  // Admission when a head is in (framing, route, method, token, size): Handled is an answer
  // (with "close" where a body is left unread); Unhandled lets the body be read within the
  // budget it set.
  httplib::Server::HandlerResponse admit(const httplib::Request& req, httplib::Response& res);
  // Serves the connection's buffered request (and the ones that follow at once).
  void serve(std::unique_ptr<ServedConnection> c);
  // Whether the buffer holds a complete request head (up to its first blank line).
  static bool has_head(ServedConnection& c);
  // Drops the consumed bytes, then waits up to `linger` for the rest of a next head.
  bool next_head_within(ServedConnection& c, Clock::duration linger);
  bool listen_on(int fd);

  ConnectionLimits limits_;
  HttpPolicy policy_;
  std::vector<Route> routes_;
  std::function<void()> tick_;
  int listen_fd_ = -1;
  int bound_port_ = -1;
  int stop_fd_ = -1;  // eventfd, readable once shutdown() began: pending polls return
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  std::unique_ptr<Poller> poller_;
  std::unique_ptr<Workers> workers_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace fw::net
