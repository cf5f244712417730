#include "fleet/grid_server.hpp"

#include <httplib.h>
#include <strings.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/format.hpp"
#include "core/version.hpp"
#include "fleet/site_store.hpp"
#include "net/http_gate.hpp"
#include "pipeline/plan_file.hpp"
#include "report/html_page.hpp"

namespace fw::fleet {
namespace {

// The gate compares scopes on the token files' one scale (read < control < admin).
static_assert(kGridScopeRead == net::kScopeRead && kGridScopeControl == net::kScopeControl);

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
          {"ramp_up_w_per_s", t.ramp_up_w_per_s},
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
                                                      GridAuth auth, net::ConnectionLimits limits) {
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
  GridServer* self = s.get();
  // The agent's gate (net/http_gate.hpp) with this endpoint's limits: the caller's token and
  // scope, a body's size and framing are checked when the head is in, before the body is read.
  net::HttpPolicy policy;
  policy.authenticate = [self](const httplib::Request& req) -> std::optional<net::Caller> {
    auto who = self->caller(req);
    if (!who) return std::nullopt;
    return net::Caller{who->first, who->second};
  };
  if (!s->auth_.lookup) {
    policy.unauthorized_message =
        "writes need a bearer token: configure token_file (or, on loopback only, "
        "allow_unauthenticated_writes)";
  }
  policy.on_answer = [self](const httplib::Request& req, const httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD" && req.method != "OPTIONS") {
      self->audit(req, res);
    }
  };
  s->server_ = std::make_unique<net::GatedServer>(limits, std::move(policy));
  s->install_routes();
  if (!s->server_->bind_tcp(host, port)) {
    return Status::IoError("grid server: cannot bind " + host + ":" + std::to_string(port));
  }
  s->port_ = s->server_->bound_port();
  if (!s->server_->start_serving()) return Status::Internal("grid server: did not start");
  s->sample_thread_ = std::thread([self] { self->sample_loop(); });
  return s;
}

GridServer::~GridServer() { stop(); }

void GridServer::stop() {
  if (stop_.exchange(true)) return;
  if (server_) server_->shutdown();
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

std::optional<std::pair<std::string, int>> GridServer::caller(const httplib::Request& req) const {
  if (!auth_.lookup) {
    const bool read = req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS";
    if (auth_.allow_unauthenticated_writes) return std::make_pair("anonymous", kGridScopeControl);
    if (read) return std::make_pair("anonymous", kGridScopeRead);
    return std::nullopt;  // a write without a token file: 401, "configure token_file"
  }
  const std::string header = req.get_header_value("Authorization");
  std::string token;
  if (header.size() > 7 && ::strncasecmp(header.c_str(), "Bearer ", 7) == 0) {
    token = header.substr(7);
    while (!token.empty() && token.front() == ' ') token.erase(token.begin());
  }
  if (token.empty()) return std::nullopt;
  return auth_.lookup(token);
}

void GridServer::audit(const httplib::Request& req, const httplib::Response& res) {
  (res.status == 200 ? writes_accepted_ : writes_refused_)++;
  const auto who = caller(req);
  const bool authorized = who && who->second >= kGridScopeControl;
  GridAuth::Write w;
  w.time_unix_s = now_s();
  w.who = who ? who->first : "unauthenticated";
  // The connection knows its peer even when httplib refused the head before parsing it.
  const net::ServedConnection* c = net::current_connection();
  w.remote = c ? c->remote() : req.remote_addr + ":" + std::to_string(req.remote_port);
  w.method = req.method;
  w.path = req.path;
  // Nothing a caller without a control token sent is kept (it was not read anyway).
  if (authorized) w.body = req.body.substr(0, 1024);
  w.status = res.status;
  if (auth_.audit) return auth_.audit(w);
  const Json line = {{"time_unix_s", w.time_unix_s}, {"who", w.who},   {"remote", w.remote},
                     {"method", w.method},           {"path", w.path}, {"status", w.status}};
  std::fprintf(stderr, "grid audit: %s\n", line.dump().c_str());
}

void GridServer::install_routes() {
  // A write (scope control, checked by the gate before the body): the events stored. Its
  // audit line is written for every answer to a write method (GridServer::audit).
  auto write = [this](const httplib::Request& req, httplib::Response& res, auto make) {
    Result<std::pair<std::string, std::vector<GridTarget>>> ev = make();
    if (!ev.ok()) return reply(res, 400, {{"error", ev.status().message()}});
    auto change = coord_->schedule_grid(ev->first, ev->second);
    if (!change.ok()) return reply(res, 503, {{"error", change.status().message()}});
    if (change->http_status != 200) {
      return reply(res, change->http_status, {{"error", change->error}});
    }
    Json events = Json::array();
    for (const auto& e : ev->second) events.push_back(target_json(e));
    reply(res, 200,
          {{"accepted", true},
           {"target", target_json(ev->second.front())},
           {"events", events},
           {"scheduled", change->schedule.events.size()}});
  };
  // Each route with the scope its caller needs (the gate checks it before a body is read).
  auto route = [this](const char* method) {
    return [this, method](const char* path, int scope, net::GatedServer::Handler h) {
      server_->route(method, path, scope, std::move(h));
    };
  };
  auto get = route("GET"), put = route("PUT"), post = route("POST"), del = route("DELETE");
  get("/healthz", net::kScopeNone, [](const auto&, auto& res) {
    reply(res, 200, {{"ok", true}, {"version", kVersion}});
  });
  put("/v1/grid/target", kGridScopeControl, [write](const auto& req, auto& res) {
    write(req, res, [&]() -> Result<std::pair<std::string, std::vector<GridTarget>>> {
      FW_ASSIGN_OR_RETURN(GridTarget t, parse_load_target(req.body, now_s()));
      if (t.correlation_id.find('#') != std::string::npos) {
        return Status::InvalidArgument("load target: correlation_id: must not contain '#'");
      }
      return std::make_pair(t.correlation_id, std::vector<GridTarget>{t});
    });
  });
  post("/v1/grid/openadr/event", kGridScopeControl, [this, write](const auto& req, auto& res) {
    const double site_w = coord_->stats().last_plan.site_w > 0 ? coord_->stats().last_plan.site_w
                                                               : coord_->options().default_budget_w;
    write(req, res, [&]() -> Result<std::pair<std::string, std::vector<GridTarget>>> {
      FW_ASSIGN_OR_RETURN(std::vector<GridTarget> ev,
                          translate_openadr_events(req.body, site_w, ramp_w_per_s_));
      const std::string& id = ev.front().correlation_id;
      return std::make_pair(id.substr(0, id.find('#')), ev);
    });
  });
  // Pipeline plans (keys.hpp plan_key, site_store.hpp): PUT stores a job's `pipeline plan
  // --json` for every node that runs the job (checked first: 400 naming the field); GET lists
  // them (or gives one as stored); DELETE removes one (404: none stored). etcd down: 503.
  const std::string plan_path = R"(/v1/plans/([A-Za-z0-9._-]{1,64}))";
  put(plan_path.c_str(), kGridScopeControl, [this](const auto& req, auto& res) {
    const std::string job = req.matches[1];
    auto rev = write_plan(coord_->etcd(), coord_->options().site, job, req.body);
    if (!rev.ok()) {
      const int code = rev.status().code() == StatusCode::kInvalidArgument ? 400 : 503;
      return reply(res, code, {{"error", rev.status().message()}});
    }
    reply(res, 200, {{"accepted", true}, {"job", job}, {"revision", *rev}});
  });
  get(plan_path.c_str(), kGridScopeRead, [this](const auto& req, auto& res) {
    auto p = read_plan(coord_->etcd(), coord_->options().site, std::string(req.matches[1]));
    if (!p.ok()) {
      const int code = p.status().code() == StatusCode::kNotFound ? 404 : 503;
      return reply(res, code, {{"error", p.status().message()}});
    }
    res.status = 200;
    res.set_content(p->text, "application/json");
  });
  del(plan_path.c_str(), kGridScopeControl, [this](const auto& req, auto& res) {
    const std::string job = req.matches[1];
    auto gone = delete_plan(coord_->etcd(), coord_->options().site, job);
    if (!gone.ok()) return reply(res, 503, {{"error", gone.status().message()}});
    if (!*gone) return reply(res, 404, {{"error", "job " + job + ": no plan stored"}});
    reply(res, 200, {{"deleted", true}, {"job", job}});
  });
  get("/v1/plans", kGridScopeRead, [this](const auto&, auto& res) {
    auto all = list_plans(coord_->etcd(), coord_->options().site);
    if (!all.ok()) return reply(res, 503, {{"error", all.status().message()}});
    Json plans = Json::array();
    for (const StoredPlan& sp : *all) {
      Json row = {{"job", sp.job}, {"revision", sp.mod_revision}, {"bytes", sp.text.size()}};
      if (auto f = pipeline::parse_plan_json(sp.text, sp.job); f.ok()) {
        row["stages"] = f->stages;
        row["gpu"] = f->gpu;
        row["best_mode"] = f->best_mode;
        row["schedule"] = !f->schedule.empty();
      } else {
        row["error"] = f.status().message();  // written around this endpoint
      }
      plans.push_back(row);
    }
    reply(res, 200, {{"plans", plans}});
  });
  get("/v1/grid/status", kGridScopeRead, [this](const auto&, auto& res) {
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
  // The site's state for Prometheus (read scope, as /v1/grid/status; text format 0.0.4): the
  // figures /v1/grid/status gives, of the leader's last round, labelled with the site. NaN
  // where the round had none (Prometheus reads it as such).
  get("/metrics", kGridScopeRead, [this](const auto&, auto& res) {
    const CoordinatorStats st = coord_->stats();
    const Plan& p = st.last_plan;
    const std::string site = coord_->options().site;
    std::string out;
    auto gauge = [&](const char* name, const char* help, double v) {
      out += strprintf("# HELP %s %s\n# TYPE %s gauge\n%s{site=\"%s\"} %.10g\n", name, help, name,
                       name, site.c_str(), v);
    };
    gauge("flexwatt_site_budget_watts", "the site budget in force (W)", p.site_w);
    gauge("flexwatt_site_effective_target_watts",
          "the budget after the grid's targets and ramps, what the split holds (W)", p.effective_w);
    gauge("flexwatt_site_power_watts", "the live nodes' reported draw (W)", st.last_power_w);
    gauge("flexwatt_site_holdable_target_watts",
          "the deepest target the site holds with its jobs at their tiers (W)",
          st.holdable_target_w);
    gauge("flexwatt_site_floor_watts", "the site's draw with every node at its floor (W)",
          st.site_floor_w);
    gauge("flexwatt_site_shortfall_watts",
          "W the deepest grid target in force or to come lies below what the site can hold",
          st.shortfall_w);
    gauge("flexwatt_coordinator_leader", "1 while this coordinator leads the site",
          st.leader ? 1 : 0);
    res.status = 200;
    res.set_content(out, "text/plain; version=0.0.4");
  });
  // The site view: the report page with the site's state embedded (kind "site"): the budget,
  // the grid's effective target, every live node's share, safe share and reserve, the held
  // (departed) nodes, the binding grid event and the schedule. Read scope, as /v1/grid/status.
  get("/site", kGridScopeRead, [this](const auto&, auto& res) {
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
  get("/v1/grid/report", kGridScopeRead, [this](const auto& req, auto& res) {
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
