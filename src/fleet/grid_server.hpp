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
//
// Authentication (GridAuth): with a token lookup, writes need a bearer token of scope
// control (401 without or with an unknown one, 403 below control) and reads one of scope
// read. Without one, reads are open and writes are refused (401) unless
// allow_unauthenticated_writes, which Start() accepts only on a loopback host. Every write,
// accepted or refused, is one audit line.
//   GET  /v1/grid/report?event_id=E&interval_s=60&start=T
//                                 OpenADR 3 report (DEMAND, USAGE, BASELINE) from the site
//                                 power the coordinator sampled every sample_s
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

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

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

class GridServer {
 public:
  // coordinator must outlive the server. port 0: any free port (see port()).
  static Result<std::unique_ptr<GridServer>> Start(Coordinator* coordinator,
                                                   const std::string& host, int port,
                                                   double ramp_w_per_s, double sample_s = 1.0,
                                                   GridAuth auth = {});
  int64_t writes_refused() const { return writes_refused_.load(); }
  int64_t writes_accepted() const { return writes_accepted_.load(); }
  ~GridServer();
  void stop();
  int port() const { return port_; }
  // The largest request body taken (a grid target or an OpenADR event is a few hundred bytes).
  static constexpr size_t kMaxBodyBytes = 64 * 1024;

 private:
  GridServer() = default;
  void install_routes();
  // The caller's subject when it may act with `scope`; else answers 401/403 and nullopt
  // (*subject: a known token's subject on a 403).
  std::optional<std::string> authorize(const httplib::Request& req, httplib::Response& res,
                                       int scope, std::string* subject = nullptr);
  void audit(const httplib::Request& req, const httplib::Response& res, const std::string& who,
             bool authorized);
  void sample_loop();

  Coordinator* coord_ = nullptr;
  double ramp_w_per_s_ = 0, sample_s_ = 1;
  GridAuth auth_;
  std::atomic<int64_t> writes_refused_{0}, writes_accepted_{0};
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread serve_thread_, sample_thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<PowerSample> samples_;
};

}  // namespace fw::fleet
