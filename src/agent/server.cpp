#include "agent/server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include "agent/server_impl.hpp"
#include "core/format.hpp"
#include "net/http_gate.hpp"

namespace fw::agent {
namespace {

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Refuses to take over a socket path another process is serving; removes a stale socket.
Status prepare_socket_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISSOCK(st.st_mode)) {
    return Status::InvalidArgument(path + ": exists and is not a socket; not replacing it");
  }
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return Status::InvalidArgument(path + ": too long");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool live = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  if (live) return Status::Unavailable(path + ": another process is serving this socket");
  if (::unlink(path.c_str()) != 0) return Status::IoError(path + ": cannot remove stale socket");
  return Status::Ok();
}

}  // namespace

void send_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  net::send_error(res, status, message);  // the gate's own refusals have the same shape
}

std::optional<Principal> AgentServer::Impl::principal(const httplib::Request& req) const {
  if (!tokens)
    return Principal{"anonymous", cfg.anonymous_read_only ? Scope::kRead : Scope::kAdmin};
  const std::string header = req.get_header_value("Authorization");
  std::string_view token = bearer_token(header);
  if (token.empty()) return std::nullopt;
  return tokens->find(token);
}

net::GatedServer::Handler AgentServer::Impl::guard(Scope need, Handler fn) {
  return [this, need, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    if (need == Scope::kNone) return fn(req, res, Principal{});
    auto who = principal(req);
    if (!who) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"flexwatt\"");
      send_error(res, 401, "missing or unknown bearer token");
      return;
    }
    if (static_cast<int>(who->scope) < static_cast<int>(need)) {
      send_error(res, 403,
                 "token scope '" + std::string(scope_name(who->scope)) + "' is below the '" +
                     std::string(scope_name(need)) + "' this endpoint needs");
      return;
    }
    fn(req, res, *who);
  };
}

void AgentServer::Impl::audit_request(const httplib::Request& req, const httplib::Response& res) {
  if (req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS") return;
  AuditRecord r;
  r.time_unix_s = unix_now_s();
  auto who = principal(req);
  r.who = who ? who->subject : "unauthenticated";
  // The connection knows its peer even when httplib refused the head before reading it.
  const net::ServedConnection* c = net::current_connection();
  r.remote = c ? c->remote() : req.remote_addr + ":" + std::to_string(req.remote_port);
  r.method = req.method;
  r.path = req.path;
  // Nothing a caller without a valid token sent is kept (it was not read anyway).
  if (who) r.body = req.body.substr(0, AuditLog::kMaxBody);
  r.status = res.status;
  audit.write(r);
}

bool AgentServer::Impl::take_waiter() {
  if (++waiters > cfg.max_waiters) {
    --waiters;
    return false;
  }
  return true;
}

AgentServer::AgentServer(ServerConfig cfg, StateHub& hub, CommandQueue& commands, JobRegistry& jobs)
    : impl_(std::make_unique<Impl>(std::move(cfg), hub, commands, jobs)) {
  if (impl_->cfg.hostname.empty()) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0) impl_->cfg.hostname = buf;
  }
}

AgentServer::~AgentServer() { stop(); }

void AgentServer::set_controller_validator(std::function<Status(const std::string&)> v) {
  impl_->validate_controller = std::move(v);
}

int AgentServer::tcp_port() const { return impl_->bound_tcp_port; }

namespace {

std::unique_ptr<net::GatedServer> make_server(AgentServer::Impl& impl) {
  const ServerConfig& cfg = impl.cfg;
  net::ConnectionLimits lim;
  lim.idle_timeout_s = cfg.idle_timeout_s;
  lim.head_timeout_s = cfg.head_timeout_s;
  lim.body_timeout_s = cfg.body_timeout_s;
  lim.max_connections = cfg.max_connections;
  lim.max_connections_per_client = cfg.max_connections_per_client;
  lim.threads = cfg.threads;
  lim.worker_nice = cfg.worker_nice;
  lim.max_body_bytes = cfg.max_body_bytes;
  net::HttpPolicy policy;
  policy.authenticate = [&impl](const httplib::Request& req) -> std::optional<net::Caller> {
    auto who = impl.principal(req);
    if (!who) return std::nullopt;
    return net::Caller{who->subject, static_cast<int>(who->scope)};
  };
  policy.not_found_message = "no such endpoint (see GET /v1/discover)";
  policy.on_answer = [&impl](const auto& req, const auto& res) { impl.audit_request(req, res); };
  auto s = std::make_unique<net::GatedServer>(lim, std::move(policy));
  impl.install_routes(*s);
  return s;
}

}  // namespace

Status AgentServer::start() {
  Status s = impl_->start();
  if (!s.ok()) impl_->undo_start();
  return s;
}

// A start that failed after binding leaves nothing behind: the listening sockets are closed
// and the socket file it created is removed (a file bound and listening with nobody serving
// it: a client that connected would wait in its backlog). A path another process serves was
// never bound here and is left alone.
void AgentServer::Impl::undo_start() {
  for (auto& s : servers) s->shutdown();
  servers.clear();
  if (unix_bound) ::unlink(cfg.unix_socket_path.c_str());
  unix_bound = false;
  bound_tcp_port = -1;
}

Status AgentServer::Impl::start() {
  Impl& m = *this;
  if (m.cfg.unix_socket_path.empty() && m.cfg.tcp_port < 0) {
    return Status::InvalidArgument("agent: neither a Unix socket nor a TCP port is configured");
  }
  if (!m.cfg.token_file.empty()) {
    auto t = TokenStore::load(m.cfg.token_file);
    if (!t.ok()) return t.status();
    m.tokens = std::move(t).value();
  }
  if (m.cfg.tcp_port >= 0 && !is_loopback(m.cfg.tcp_host)) {
    if (!m.cfg.allow_non_loopback) {
      return Status::InvalidArgument("agent: tcp host " + m.cfg.tcp_host +
                                     " is not loopback (set allow_non_loopback to bind it)");
    }
    if (!m.tokens) return Status::InvalidArgument("agent: a non-loopback host needs a token file");
  }
  AuditLimits audit_limits;
  audit_limits.max_bytes = m.cfg.audit_log_max_bytes;
  audit_limits.keep = m.cfg.audit_log_keep;
  audit_limits.rate_per_s = m.cfg.audit_rate_per_s;
  audit_limits.burst = m.cfg.audit_burst;
  FW_RETURN_IF_ERROR(m.audit.open(m.cfg.audit_log_path, audit_limits));
  if (!m.cfg.unix_socket_path.empty()) {
    const std::string& path = m.cfg.unix_socket_path;
    FW_RETURN_IF_ERROR(prepare_socket_path(path));
    auto s = make_server(m);
    // The umask makes the socket file born with at most the configured mode, so no
    // connection can slip in before the chmod (start-up only; the umask is restored).
    mode_t old = ::umask(0777 & ~static_cast<mode_t>(m.cfg.unix_socket_mode));
    bool bound = s->bind_unix(path);
    ::umask(old);
    m.servers.push_back(std::move(s));
    if (!bound) return Status::IoError(path + ": cannot bind the Unix socket");
    m.unix_bound = true;
    ::chmod(path.c_str(), static_cast<mode_t>(m.cfg.unix_socket_mode));
  }
  if (m.cfg.tcp_port >= 0) {
    auto s = make_server(m);
    const bool bound = s->bind_tcp(m.cfg.tcp_host, m.cfg.tcp_port);
    const int port = s->bound_port();
    m.servers.push_back(std::move(s));
    if (!bound) {
      return Status::IoError("agent: cannot bind " + m.cfg.tcp_host + ":" +
                             std::to_string(m.cfg.tcp_port));
    }
    m.bound_tcp_port = port;
  }
  // The audit log's count of dropped refusals, about once a second (on one poller).
  m.servers.front()->set_tick([&m] { m.audit.flush_suppressed(unix_now_s()); });
  for (auto& s : m.servers) {
    if (!s->start_serving()) return Status::Internal("agent: the HTTP listener did not start");
  }
  return Status::Ok();
}

void AgentServer::stop() {
  Impl& m = *impl_;
  if (m.stopping.exchange(true)) return;
  m.hub.wake_all();
  m.jobs.wake_all();
  for (auto& s : m.servers) s->shutdown();
  m.audit.flush_suppressed(unix_now_s());
  if (m.unix_bound) ::unlink(m.cfg.unix_socket_path.c_str());
  m.unix_bound = false;
}

}  // namespace fw::agent
