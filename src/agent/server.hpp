#pragma once
// AgentServer: the node agent's HTTP API (cpp-httplib) over a StateHub, a CommandQueue and
// a JobRegistry that the control loop shares. Endpoints, scopes and status codes are in
// docs/agent-api.md.
//
// Transports: a Unix socket (default; access is gated by its file mode, 0660 unless set)
// and, optionally, TCP. TCP binds to a loopback address unless allow_non_loopback is set,
// and a non-loopback address also requires a token file.
//
// Lifetime: construct, start() (binds, then serves on background threads), stop() (or the
// destructor) ends streams and long-polls, stops serving and joins. The hub, queue and
// registry must outlive the server. start() is called once.

#include <functional>
#include <memory>
#include <string>

#include "agent/commands.hpp"
#include "agent/job_registry.hpp"
#include "agent/state_hub.hpp"
#include "core/status.hpp"

namespace fw::agent {

struct ServerConfig {
  std::string unix_socket_path;  // empty: no Unix socket
  int unix_socket_mode = 0660;
  std::string tcp_host = "127.0.0.1";
  int tcp_port = -1;  // -1: no TCP; 0: any free port (see AgentServer::tcp_port())
  bool allow_non_loopback = false;
  std::string token_file;  // empty: no authentication (every caller is "anonymous" admin)
  // Without a token file, "anonymous" has scope read only: every write is refused (403).
  // The agent sets it when it follows a coordinator and its fleet block does not say
  // allow_unauthenticated_writes (docs/fleet.md, "Security").
  bool anonymous_read_only = false;
  std::string audit_log_path;        // empty: no audit file
  bool metrics_require_auth = true;  // /metrics needs a read token when auth is on
  // /metrics also serves the enforced limit and the throttle reasons under dcgm-exporter's own
  // names (DCGM_FI_DEV_ENFORCED_POWER_LIMIT, DCGM_FI_DEV_CLOCKS_EVENT_REASONS). Off by default:
  // where dcgm-exporter runs too, two sources would answer the same series.
  bool metrics_dcgm_names = false;
  size_t max_body_bytes = 64 * 1024;
  double max_wait_s = 30;   // bound on ?wait_s= of the knob long-poll
  int max_waiters = 16;     // concurrent SSE streams + long-polls (503 beyond)
  double keepalive_s = 15;  // SSE comment line when no tick came for this long
  int threads = 32;         // worker threads per transport (idle connections hold none)
  int worker_nice = 10;     // nice value of the worker threads (0..19; the loop stays at 0)
  std::string hostname;     // for /v1/discover; empty: gethostname()
  // Connection limits, per transport (docs/agent-api.md "Limits").
  double idle_timeout_s = 5;   // a connection with no request under way is closed after this
  double head_timeout_s = 5;   // first byte of a request to the end of its head: 408 after
  double body_timeout_s = 10;  // end of the head to the end of the body: 408 after
  int max_connections = 256;   // open connections; 503 and close beyond (2 transports: 512
                               // fds at most, within the usual soft limit of 1024)
  int max_connections_per_client = 64;  // per peer IP (TCP) or peer uid (Unix socket)
  // Audit log: rotated beyond max_bytes (PATH.1 … PATH.keep); refused requests are logged at
  // most audit_rate_per_s a second (bursts of audit_burst), the rest counted in one line.
  size_t audit_log_max_bytes = 16 * 1024 * 1024;
  int audit_log_keep = 3;
  double audit_rate_per_s = 20;
  double audit_burst = 100;
};

class AgentServer {
 public:
  AgentServer(ServerConfig cfg, StateHub& hub, CommandQueue& commands, JobRegistry& jobs);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Checks a controller spec's meaning (is the name registered, are the options valid)
  // before PUT /v1/controller accepts it; a non-ok Status answers 422 with its message.
  // Without one, only the syntax is checked. Call before start().
  void set_controller_validator(std::function<Status(const std::string& spec)> v);

  // Loads the token file, opens the audit log, binds the sockets and starts serving.
  Status start();
  void stop();
  int tcp_port() const;  // the bound TCP port, -1 without TCP

  struct Impl;  // defined in server_impl.hpp, private to server*.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fw::agent
