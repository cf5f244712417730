#pragma once
// GridServer: the coordinator's HTTP endpoint for grid signals (cpp-httplib).
//
//   PUT  /v1/grid/target          NVIDIA-style load target (grid.hpp parse_load_target);
//                                 added to the site's schedule in etcd (schedule_events);
//                                 200 {"accepted":true,...}, 400 {"error": "..."} on bad
//                                 input, 404 cancel of an unknown event, 409 an event wholly
//                                 in the past, 422 schedule full, 503 if etcd refuses
//   POST /v1/grid/openadr/event   OpenADR 3 event -> one event per interval
//                                 (translate_openadr_events), same answers
//   GET  /v1/grid/status          {leader, site_w, effective_w, held_w, calculated_load_w,
//                                  compliant, ramp_state, target (the binding event), events,
//                                  holdable_target_w, site_floor_w, shortfall_w,
//                                  shortfall_event, holdable} (the last five: issue 45, the
//                                  leader's last round, CoordinatorStats; the coordinator
//                                  exports no Prometheus metrics, so these are the place)
//   GET  /site                    the site view (HTML, report::report_html kind "site"): the
//                                 same state with every live node's share, safe share and
//                                 reserve, the held nodes; read scope; reloads every 5 s
//   GET  /v1/grid/report?event_id=E&interval_s=60&start=T
//                                 OpenADR 3 report (DEMAND, USAGE, BASELINE) from the site
//                                 power the coordinator sampled every sample_s
//   PUT  /v1/plans/<job>          a pipeline job's plan (`flexwatt pipeline plan --json`),
//                                 checked (400 naming the field) and stored at keys.hpp
//                                 plan_key for the agents that run the job (`plan:fleet`):
//                                 200 {"accepted", "job", "revision"}; 503 if etcd refuses
//   GET  /v1/plans                {"plans": [{job, revision, bytes, stages, gpu, best_mode,
//                                 schedule}]}; GET /v1/plans/<job>: the plan as stored (404)
//   DELETE /v1/plans/<job>        removes it (404: none stored); the agents keep their caps
//                                 until their controller is prepared again
//   GET  /healthz                 {"ok": true, "version"}: liveness, no token
//
// Served by net::GatedServer, the agent's hardened server (net/http_gate.hpp): idle
// connections and request heads cost no worker; head, body and idle deadlines; connection
// caps; and the admission checks before a body is read (framing 400/411/501, route and method
// 404/405, token and scope 401/403, size 413), with this endpoint's limits
// (grid_connection_limits(), docs/fleet.md "Grid endpoint").
//
// Authentication (GridAuth), checked when the request head is in, before its body is read:
// with a token lookup, writes need a bearer token of scope control (401 without or with an
// unknown one, 403 below control) and reads one of scope read. Without one, reads are open
// and writes are refused (401) unless allow_unauthenticated_writes, which Start() accepts only
// on a loopback host. Every answer to a write method (PUT, POST, ...), accepted or refused,
// is one audit line.
//
// Contract: serves from its own threads; stop() (and the destructor) end them.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleet/coordinator.hpp"
#include "fleet/grid.hpp"
#include "net/limits.hpp"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace fw::net {
class GatedServer;
}  // namespace fw::net

namespace fw::fleet {

struct GridAuth {
  // The caller of a bearer token: its subject and scope (1 read, 2 control, 3 admin);
  // nullopt for an unknown token. Unset: no token file.
  std::function<std::optional<std::pair<std::string, int>>(std::string_view token)> lookup;
  bool allow_unauthenticated_writes = false;  // without lookup; loopback hosts only
  // Called once per write, accepted or refused. Unset: one JSON line on stderr.
  struct Write {
    double time_unix_s = 0;
    std::string who;  // token subject, "anonymous" (no token file), "unauthenticated"
    std::string remote, method, path;
    std::string body;  // up to 1 KiB, only for an authorized caller
    int status = 0;
  };
  std::function<void(const Write&)> audit;
};
inline constexpr int kGridScopeRead = 1, kGridScopeControl = 2;
// The largest request body taken by default: a grid target or an OpenADR event is a few
// hundred bytes.
inline constexpr size_t kGridMaxBodyBytes = 64 * 1024;

// The grid endpoint's connection limits (docs/fleet.md "Grid endpoint"): a few callers (a grid
// operator's adapter, an OpenADR bridge, dashboards), small bodies.
inline net::ConnectionLimits grid_connection_limits() {
  net::ConnectionLimits l;
  l.idle_timeout_s = 2;   // an idle keep-alive connection
  l.head_timeout_s = 5;   // a request head, from its first byte
  l.body_timeout_s = 5;   // its body, from the end of the head
  l.write_timeout_s = 5;  // one write to a client that does not read
  l.max_connections = 128;
  l.max_connections_per_client = 32;
  l.threads = 8;
  l.worker_nice = 0;
  l.keep_alive_max = 100;
  l.max_body_bytes = kGridMaxBodyBytes;
  return l;
}

class GridServer {
 public:
  // coordinator must outlive the server. port 0: any free port (see port()).
  static Result<std::unique_ptr<GridServer>> Start(
      Coordinator* coordinator, const std::string& host, int port, double ramp_w_per_s,
      double sample_s = 1.0, GridAuth auth = {},
      net::ConnectionLimits limits = grid_connection_limits());
  int64_t writes_refused() const { return writes_refused_.load(); }
  int64_t writes_accepted() const { return writes_accepted_.load(); }
  ~GridServer();
  void stop();
  int port() const { return port_; }
  static constexpr size_t kMaxBodyBytes = kGridMaxBodyBytes;

 private:
  GridServer() = default;
  void install_routes();
  // The caller a request's token names (GridAuth's lookup), or, without a lookup, anonymous:
  // scope control where unauthenticated writes are allowed, else read (and nullopt for a
  // write method, which is refused with 401).
  std::optional<std::pair<std::string, int>> caller(const httplib::Request& req) const;
  // One audit line for an answer to a write method.
  void audit(const httplib::Request& req, const httplib::Response& res);
  void sample_loop();

  Coordinator* coord_ = nullptr;
  double ramp_w_per_s_ = 0, sample_s_ = 1;
  GridAuth auth_;
  std::atomic<int64_t> writes_refused_{0}, writes_accepted_{0};
  std::unique_ptr<net::GatedServer> server_;
  int port_ = 0;
  std::thread sample_thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<PowerSample> samples_;
};

}  // namespace fw::fleet
