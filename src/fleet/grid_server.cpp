#include "fleet/grid_server.hpp"

#include <httplib.h>
#include <strings.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/format.hpp"
#include "fleet/site_store.hpp"
#include "report/html_page.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;

double now_s() { return fw::unix_now_s(); }

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

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

Result<std::unique_ptr<GridServer>> GridServer::Start(Coordinator* coordinator,
                                                      const std::string& host, int port,
                                                      double ramp_w_per_s, double sample_s,
                                                      GridAuth auth) {
  if (auth.allow_unauthenticated_writes && !auth.lookup && !is_loopback_host(host)) {
    return Status::InvalidArgument("grid server: " + host +
                                   " is not loopback: unauthenticated writes are refused there "
                                   "(configure token_file)");
  }
  std::unique_ptr<GridServer> s(new GridServer());
  s->auth_ = std::move(auth);
  s->coord_ = coordinator;
  s->ramp_w_per_s_ = ramp_w_per_s;
  s->sample_s_ = sample_s;
  s->server_ = std::make_unique<httplib::Server>();
  // Limits before bodies, through cpp-httplib's public setters: a body over kMaxBodyBytes is
  // answered 413 without being read; a read or a write stalled 5 s ends the connection; an
  // idle keep-alive connection is closed after 2 s and serves at most 100 requests, so idle
  // clients cannot hold the worker threads for long.
  s->server_->set_payload_max_length(kMaxBodyBytes);
  s->server_->set_read_timeout(5, 0);
  s->server_->set_write_timeout(5, 0);
  s->server_->set_keep_alive_timeout(2);
  s->server_->set_keep_alive_max_count(100);
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

std::optional<std::string> GridServer::authorize(const httplib::Request& req,
                                                 httplib::Response& res, int scope,
                                                 std::string* subject) {
  if (!auth_.lookup) {
    if (scope <= kGridScopeRead || auth_.allow_unauthenticated_writes) {
      return std::string("anonymous");
    }
    reply(res, 401,
          {{"error",
            "writes need a bearer token: configure token_file (or, on loopback only, "
            "allow_unauthenticated_writes)"}});
    return std::nullopt;
  }
  const std::string header = req.get_header_value("Authorization");
  std::string token;
  if (header.size() > 7 && ::strncasecmp(header.c_str(), "Bearer ", 7) == 0) {
    token = header.substr(7);
    while (!token.empty() && token.front() == ' ') token.erase(token.begin());
  }
  auto who = token.empty() ? std::nullopt : auth_.lookup(token);
  if (!who) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"flexwatt\"");
    reply(res, 401, {{"error", "missing or unknown bearer token"}});
    return std::nullopt;
  }
  if (who->second < scope) {
    if (subject) *subject = who->first;
    reply(res, 403,
          {{"error", std::string("token scope is below the '") +
                         (scope >= kGridScopeControl ? "control" : "read") +
                         "' this endpoint needs"}});
    return std::nullopt;
  }
  return who->first;
}

void GridServer::audit(const httplib::Request& req, const httplib::Response& res,
                       const std::string& who, bool authorized) {
  (res.status == 200 ? writes_accepted_ : writes_refused_)++;
  GridAuth::Write w;
  w.time_unix_s = now_s();
  w.who = who;
  w.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
  w.method = req.method;
  w.path = req.path;
  if (authorized) w.body = req.body.substr(0, 1024);
  w.status = res.status;
  if (auth_.audit) return auth_.audit(w);
  const Json line = {{"time_unix_s", w.time_unix_s}, {"who", w.who},   {"remote", w.remote},
                     {"method", w.method},           {"path", w.path}, {"status", w.status}};
  std::fprintf(stderr, "grid audit: %s\n", line.dump().c_str());
}

void GridServer::install_routes() {
  // A write: authorized (control), then the events stored, then one audit line either way.
  auto write = [this](const httplib::Request& req, httplib::Response& res, auto make) {
    std::string refused_as = "unauthenticated";  // a known token below control: its subject
    const std::optional<std::string> who = authorize(req, res, kGridScopeControl, &refused_as);
    if (who) {
      Result<std::pair<std::string, std::vector<GridTarget>>> ev = make();
      if (!ev.ok()) {
        reply(res, 400, {{"error", ev.status().message()}});
      } else {
        auto change = coord_->schedule_grid(ev->first, ev->second);
        if (!change.ok()) {
          reply(res, 503, {{"error", change.status().message()}});
        } else if (change->http_status != 200) {
          reply(res, change->http_status, {{"error", change->error}});
        } else {
          Json events = Json::array();
          for (const auto& e : ev->second) events.push_back(target_json(e));
          reply(res, 200,
                {{"accepted", true},
                 {"target", target_json(ev->second.front())},
                 {"events", events},
                 {"scheduled", change->schedule.events.size()}});
        }
      }
    }
    audit(req, res, who.value_or(refused_as), who.has_value());
  };
  server_->Put("/v1/grid/target", [write](const httplib::Request& req, httplib::Response& res) {
    write(req, res, [&]() -> Result<std::pair<std::string, std::vector<GridTarget>>> {
      FW_ASSIGN_OR_RETURN(GridTarget t, parse_load_target(req.body, now_s()));
      if (t.correlation_id.find('#') != std::string::npos) {
        return Status::InvalidArgument("load target: correlation_id: must not contain '#'");
      }
      return std::make_pair(t.correlation_id, std::vector<GridTarget>{t});
    });
  });
  server_->Post("/v1/grid/openadr/event", [this, write](const httplib::Request& req,
                                                        httplib::Response& res) {
    const double site_w = coord_->stats().last_plan.site_w > 0 ? coord_->stats().last_plan.site_w
                                                               : coord_->options().default_budget_w;
    write(req, res, [&]() -> Result<std::pair<std::string, std::vector<GridTarget>>> {
      FW_ASSIGN_OR_RETURN(std::vector<GridTarget> ev,
                          translate_openadr_events(req.body, site_w, ramp_w_per_s_));
      const std::string& id = ev.front().correlation_id;
      return std::make_pair(id.substr(0, id.find('#')), ev);
    });
  });
  server_->Get("/v1/grid/status", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(req, res, kGridScopeRead)) return;
    const CoordinatorStats st = coord_->stats();
    const Plan& p = st.last_plan;
    auto schedule = read_grid_schedule(coord_->etcd(), coord_->options().site);
    const GridSchedule in_force = schedule.ok() ? *schedule : GridSchedule();
    const double now = now_s();
    const std::string ramp = ramp_state_name(ramp_state(p.site_w, in_force, now));
    const GridTarget* binding = binding_event(p.site_w, in_force, now);
    Json events = Json::array();
    for (const auto& e : in_force.events) events.push_back(target_json(e));
    Json ramp_events = Json::array();  // the leader's last ten ramp events
    const size_t n = st.ramp_events.size();
    for (size_t i = n > 10 ? n - 10 : 0; i < n; ++i)
      ramp_events.push_back(to_json(st.ramp_events[i]));
    Json status = {{"leader", st.leader},
                   {"site_w", p.site_w},
                   {"effective_w", p.effective_w},
                   {"held_w", p.held_w},
                   {"calculated_load_w", st.last_power_w},
                   {"compliant", st.last_power_w <= p.effective_w + 1e-6},
                   {"ramp_state", ramp},
                   {"ramp_events", ramp_events},
                   {"target", binding ? target_json(*binding) : Json(nullptr)},
                   {"events", events}};
    // Issue 45 (the leader's last round; coordinator.hpp CoordinatorStats): the deepest target
    // the site holds with its jobs at their tiers, its floor, and the shortfall of the deepest
    // event in force or to come.
    status["holdable_target_w"] = st.holdable_target_w;
    status["site_floor_w"] = st.site_floor_w;
    status["shortfall_w"] = st.shortfall_w;
    status["shortfall_event"] =
        st.shortfall_event.empty() ? Json(nullptr) : Json(st.shortfall_event);
    status["holdable"] = !(st.shortfall_w > 0);
    reply(res, 200, status);
  });
  // The site view: the report page with the site's state embedded (kind "site"): the budget,
  // the grid's effective target, every live node's share, safe share and reserve, the held
  // (departed) nodes, the binding grid event and the schedule. Read scope, as /v1/grid/status.
  server_->Get("/site", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(req, res, kGridScopeRead)) return;
    const CoordinatorStats st = coord_->stats();
    const Plan& p = st.last_plan;
    auto schedule = read_grid_schedule(coord_->etcd(), coord_->options().site);
    const GridSchedule in_force = schedule.ok() ? *schedule : GridSchedule();
    const double now = now_s();
    const GridTarget* binding = binding_event(p.site_w, in_force, now);
    Json events = Json::array(), nodes = Json::array();
    for (const auto& e : in_force.events) events.push_back(target_json(e));
    for (const auto& [node, w] : p.watts) {
      auto at = [&](const std::map<std::string, double>& m) {
        auto it = m.find(node);
        return it == m.end() ? Json(nullptr) : Json(it->second);
      };
      nodes.push_back(
          {{"node", node}, {"watts", w}, {"safe_w", at(p.safe_w)}, {"reserve_w", at(p.reserve_w)}});
    }
    const Json site = {{"kind", "site"},
                       {"site", coord_->options().site},
                       {"leader", st.leader},
                       {"site_w", p.site_w},
                       {"effective_w", p.effective_w},
                       {"held_w", p.held_w},
                       {"calculated_load_w", st.last_power_w},
                       {"compliant", st.last_power_w <= p.effective_w + 1e-6},
                       {"ramp_state", ramp_state_name(ramp_state(p.site_w, in_force, now))},
                       {"nodes", nodes},
                       {"held", p.held},
                       {"below_floors", p.below_floors},
                       {"target", binding ? target_json(*binding) : Json(nullptr)},
                       {"events", events},
                       {"time_unix_s", now}};
    res.status = 200;
    res.set_content(report::report_html(site), "text/html; charset=utf-8");
  });
  server_->Get("/v1/grid/report", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(req, res, kGridScopeRead)) return;
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
