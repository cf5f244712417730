#pragma once
// GridServer: the coordinator's HTTP endpoint for grid signals (cpp-httplib).
//
//   PUT  /v1/grid/target          NVIDIA-style load target (grid.hpp parse_load_target);
//                                 stored in etcd (latest wins); 200 {"accepted":true,...},
//                                 400 {"error": "..."} on bad input, 503 if etcd refuses
//   POST /v1/grid/openadr/event   OpenADR 3 event -> load target (translate_openadr_event)
//   GET  /v1/grid/status          {leader, site_w, effective_w, held_w, calculated_load_w,
//                                  compliant, ramp_state, target}
//   GET  /v1/grid/report?event_id=E&interval_s=60&start=T
//                                 OpenADR 3 report (DEMAND, USAGE, BASELINE) from the site
//                                 power the coordinator sampled every sample_s
//
// Contract: serves from its own threads; stop() (and the destructor) end them.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleet/coordinator.hpp"
#include "fleet/grid.hpp"

namespace httplib {
class Server;
}

namespace fw::fleet {

class GridServer {
 public:
  // coordinator must outlive the server. port 0: any free port (see port()).
  static Result<std::unique_ptr<GridServer>> Start(Coordinator* coordinator,
                                                   const std::string& host, int port,
                                                   double ramp_w_per_s, double sample_s = 1.0);
  ~GridServer();
  void stop();
  int port() const { return port_; }

 private:
  GridServer() = default;
  void install_routes();
  void sample_loop();

  Coordinator* coord_ = nullptr;
  double ramp_w_per_s_ = 0, sample_s_ = 1;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread serve_thread_, sample_thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<PowerSample> samples_;
};

}  // namespace fw::fleet
