#include "fleet/grid_server.hpp"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "fleet/site_store.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

Json target_json(const GridTarget& t) {
  return {{"value_w", t.value_w ? Json(*t.value_w) : Json(nullptr)},
          {"start_unix_s", t.start_unix_s},
          {"end_unix_s", t.end_unix_s},
          {"ramp_w_per_s", t.ramp_w_per_s},
          {"best_effort", t.best_effort},
          {"correlation_id", t.correlation_id}};
}

}  // namespace

Result<std::unique_ptr<GridServer>> GridServer::Start(Coordinator* coordinator,
                                                      const std::string& host, int port,
                                                      double ramp_w_per_s, double sample_s) {
  std::unique_ptr<GridServer> s(new GridServer());
  s->coord_ = coordinator;
  s->ramp_w_per_s_ = ramp_w_per_s;
  s->sample_s_ = sample_s;
  s->server_ = std::make_unique<httplib::Server>();
  s->install_routes();
  if (port == 0) {
    s->port_ = s->server_->bind_to_any_port(host.c_str());
    if (s->port_ <= 0) return Status::IoError("grid server: cannot bind " + host);
  } else {
    if (!s->server_->bind_to_port(host.c_str(), port)) {
      return Status::IoError("grid server: cannot bind " + host + ":" + std::to_string(port));
    }
    s->port_ = port;
  }
  GridServer* self = s.get();
  s->serve_thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  s->sample_thread_ = std::thread([self] { self->sample_loop(); });
  return s;
}

GridServer::~GridServer() { stop(); }

void GridServer::stop() {
  if (stop_.exchange(true)) return;
  server_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  if (sample_thread_.joinable()) sample_thread_.join();
}

void GridServer::sample_loop() {
  while (!stop_.load()) {
    const CoordinatorStats st = coord_->stats();
    if (st.leader) {
      std::lock_guard<std::mutex> lk(mu_);
      if (samples_.size() > 200000) samples_.erase(samples_.begin(), samples_.begin() + 100000);
      samples_.push_back({now_s(), st.last_power_w, st.last_baseline_w});
    }
    for (double t = 0; t < sample_s_ && !stop_.load(); t += 0.05) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

void GridServer::install_routes() {
  auto store = [this](const Result<GridTarget>& t, httplib::Response& res) {
    if (!t.ok()) return reply(res, 400, {{"error", t.status().message()}});
    if (Status s = coord_->put_grid_target(*t); !s.ok()) {
      return reply(res, 503, {{"error", s.message()}});
    }
    reply(res, 200, {{"accepted", true}, {"target", target_json(*t)}});
  };
  server_->Put("/v1/grid/target", [store](const httplib::Request& req, httplib::Response& res) {
    store(parse_load_target(req.body, now_s()), res);
  });
  server_->Post("/v1/grid/openadr/event", [this, store](const httplib::Request& req,
                                                        httplib::Response& res) {
    const double site_w = coord_->stats().last_plan.site_w > 0 ? coord_->stats().last_plan.site_w
                                                               : coord_->options().default_budget_w;
    store(translate_openadr_event(req.body, site_w, ramp_w_per_s_), res);
  });
  server_->Get("/v1/grid/status", [this](const httplib::Request&, httplib::Response& res) {
    const CoordinatorStats st = coord_->stats();
    const Plan& p = st.last_plan;
    auto target = read_grid_target(coord_->etcd(), coord_->options().site);
    std::optional<GridTarget> in_force;
    if (target.ok()) in_force = *target;
    const std::string ramp = ramp_state_name(ramp_state(p.site_w, in_force, now_s()));
    Json ramp_events = Json::array();  // the leader's last ten ramp events
    const size_t n = st.ramp_events.size();
    for (size_t i = n > 10 ? n - 10 : 0; i < n; ++i)
      ramp_events.push_back(to_json(st.ramp_events[i]));
    reply(res, 200,
          {{"leader", st.leader},
           {"site_w", p.site_w},
           {"effective_w", p.effective_w},
           {"held_w", p.held_w},
           {"calculated_load_w", st.last_power_w},
           {"compliant", st.last_power_w <= p.effective_w + 1e-6},
           {"ramp_state", ramp},
           {"ramp_events", ramp_events},
           {"target", target.ok() ? target_json(*target) : Json(nullptr)}});
  });
  server_->Get("/v1/grid/report", [this](const httplib::Request& req, httplib::Response& res) {
    // A query number: the whole text a finite number in [lo, hi], else NaN.
    auto param = [&req](const char* name, double fallback, double lo, double hi) {
      if (!req.has_param(name)) return fallback;
      const std::string text = req.get_param_value(name);
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      const bool ok = !text.empty() && end == text.c_str() + text.size() && v >= lo && v <= hi;
      return ok ? v : std::nan("");
    };
    const double interval_s = param("interval_s", 60, 1, 86400);
    if (std::isnan(interval_s)) {
      return reply(res, 400, {{"error", "interval_s: must be a number of seconds in [1, 86400]"}});
    }
    std::vector<PowerSample> copy;
    {
      std::lock_guard<std::mutex> lk(mu_);
      copy = samples_;
    }
    const double start =
        param("start", copy.empty() ? 0 : copy.front().time_unix_s, 0, kMaxRecordUnixS);
    if (std::isnan(start)) {
      return reply(res, 400, {{"error", "start: must be unix seconds in [0, 1e10]"}});
    }
    reply(res, 200,
          openadr_report(copy, start, interval_s, req.get_param_value("event_id"),
                         coord_->options().site));
  });
}

}  // namespace fw::fleet
