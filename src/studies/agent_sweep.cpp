#include "studies/agent_sweep.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "telemetry/snapshot.hpp"

namespace fw::studies {
namespace {

using json = nlohmann::json;

// One agent connection: JSON in, JSON out; errors as Status with the agent's message.
class AgentHttp {
 public:
  explicit AgentHttp(const AgentSweepRequest& req) {
    std::string a = req.address;
    if (a.rfind("http://", 0) == 0) {
      cli_ = std::make_unique<httplib::Client>(a);
    } else {
      if (a.rfind("unix:", 0) == 0) a = a.substr(5);
      cli_ = std::make_unique<httplib::Client>(a);
      cli_->set_address_family(AF_UNIX);
    }
    cli_->set_connection_timeout(5);
    cli_->set_read_timeout(10);
    if (!req.token.empty()) headers_.emplace("Authorization", "Bearer " + req.token);
  }

  Result<json> call(const std::string& method, const std::string& path, const json& body = {}) {
    httplib::Result r = method == "GET"
                            ? cli_->Get(path.c_str(), headers_)
                            : cli_->Put(path.c_str(), headers_, body.dump(), "application/json");
    if (!r) {
      return Status::Unavailable("agent: " + method + " " + path + ": " +
                                 httplib::to_string(r.error()));
    }
    json j = json::parse(r->body, nullptr, false);
    if (r->status >= 300) {
      std::string msg = j.is_object() && j.contains("error") && j["error"].is_string()
                            ? j["error"].get<std::string>()
                            : r->body;
      std::string what =
          "agent: " + method + " " + path + ": HTTP " + std::to_string(r->status) + " " + msg;
      if (r->status == 401 || r->status == 403) return Status::PermissionDenied(what);
      return Status::InvalidArgument(what);
    }
    if (j.is_discarded()) return Status::Internal("agent: " + path + ": not JSON");
    return j;
  }

 private:
  std::unique_ptr<httplib::Client> cli_;
  httplib::Headers headers_;
};

double number_or_nan(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// The job's entry in a status document; null when absent.
json find_job(const json& status, const std::string& id) {
  for (const json& j : status.value("jobs", json::array())) {
    if (j.value("id", "") == id) return j;
  }
  return nullptr;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

struct Measured {
  double power_w = 0, throughput = 0;
};

// Node energy counter (sum over GPUs), J; NaN when a GPU has none.
double node_energy_j(const json& status) {
  double e = 0;
  for (const json& g : status.value("gpus", json::array())) e += number_or_nan(g, "energy_j");
  return e;
}

// Over measure_s: the job's tokens/s and the node's power, both from the first and last status
// (counter differences over the same span: energy where every GPU counts it, else the mean of
// the polled node power).
Result<Measured> measure(AgentHttp& http, const AgentSweepRequest& req, const std::string& job) {
  json first, last;
  double sum_w = 0;
  int n = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(req.measure_s);
  for (;;) {
    FW_ASSIGN_OR_RETURN(json s, http.call("GET", "/v1/status"));
    if (find_job(s, job).is_null()) {
      return Status::NotFound("job '" + job + "' left the agent during the sweep");
    }
    const double w = number_or_nan(s, "node_power_w");
    if (std::isfinite(w)) {
      sum_w += w;
      ++n;
    }
    if (first.is_null()) first = s;
    last = std::move(s);
    if (std::chrono::steady_clock::now() >= end) break;
    sleep_s(std::min(
        req.poll_s,
        std::max(0.0,
                 std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count())));
  }
  // The plant's clock (simulated seconds under time_scale); the wall clock for older agents.
  auto plant_s = [](const json& s) {
    const double t = number_or_nan(s.value("loop", json::object()), "plant_time_s");
    return std::isfinite(t) ? t : number_or_nan(s, "time_unix_s");
  };
  const double dt = plant_s(last) - plant_s(first);
  if (!(dt > 0)) return Status::Unavailable("agent: the state did not advance while measuring");
  Measured m;
  m.throughput = (number_or_nan(find_job(last, job), "tokens_total") -
                  number_or_nan(find_job(first, job), "tokens_total")) /
                 dt;
  const double de = node_energy_j(last) - node_energy_j(first);
  m.power_w = std::isfinite(de) && de > 0 ? de / dt : (n > 0 ? sum_w / n : kUnset);
  if (!std::isfinite(m.power_w) || !std::isfinite(m.throughput)) {
    return Status::Unavailable("agent: no power or progress measured");
  }
  return m;
}

// The caps to sweep: as given (checked against the devices), or 6 from min to max.
Result<std::vector<double>> sweep_caps(const AgentSweepRequest& req, const json& status) {
  double lo = 0, hi = INFINITY;
  for (const json& g : status.value("gpus", json::array())) {
    lo = std::max(lo, number_or_nan(g, "cap_min_w"));
    hi = std::min(hi, number_or_nan(g, "cap_max_w"));
  }
  if (!(hi > lo) || !std::isfinite(hi)) {
    return Status::Unavailable("agent: the GPUs report no settable cap range");
  }
  std::vector<double> caps = req.caps_w;
  if (caps.empty()) {
    for (int i = 0; i < 6; ++i) caps.push_back(lo + (hi - lo) * i / 5.0);
  }
  std::sort(caps.begin(), caps.end());
  for (double c : caps) {
    if (!(c >= lo - 1e-9 && c <= hi + 1e-9)) {
      return Status::InvalidArgument("--caps: " + json(c).dump() + " W is outside the GPUs' [" +
                                     json(lo).dump() + ", " + json(hi).dump() + "] W");
    }
  }
  if (caps.back() < hi - 1e-9) caps.push_back(hi);  // the uncapped point (Pmax, Tmax)
  return caps;
}

// Sets the controller and waits until the loop has applied it.
Status set_controller(AgentHttp& http, const std::string& spec) {
  FW_ASSIGN_OR_RETURN(json r, http.call("PUT", "/v1/controller", {{"controller", spec}}));
  const uint64_t seq = r.value("config_version", uint64_t{0});
  for (int i = 0; i < 100; ++i) {
    FW_ASSIGN_OR_RETURN(json s, http.call("GET", "/v1/status"));
    if (s.value("applied_command_seq", uint64_t{0}) >= seq) {
      if (s.value("controller", "") != spec) {
        return Status::PermissionDenied("agent: controller '" + spec +
                                        "' was not taken (see its log)");
      }
      return Status::Ok();
    }
    sleep_s(0.05);
  }
  return Status::Unavailable("agent: the loop did not apply the controller within 5 s");
}

}  // namespace

Result<SweepResult> sweep_through_agent(const AgentSweepRequest& req,
                                        const std::function<void(const std::string&)>& log) {
  auto say = [&log](const std::string& m) {
    if (log) log(m);
  };
  if (!(req.dwell_s >= 0) || !(req.measure_s > 0) || !(req.poll_s > 0)) {
    return Status::InvalidArgument("dwell must be >= 0 s, measure and poll > 0 s");
  }
  AgentHttp http(req);
  FW_ASSIGN_OR_RETURN(json status, http.call("GET", "/v1/status"));
  // A job registered a moment ago shows in the state from the loop's next tick (<= 1 s).
  for (int i = 0; i < 20 && status.value("jobs", json::array()).empty(); ++i) {
    sleep_s(0.1);
    FW_ASSIGN_OR_RETURN(status, http.call("GET", "/v1/status"));
  }
  for (int i = 0; i < 20 && !req.job_id.empty() && find_job(status, req.job_id).is_null(); ++i) {
    sleep_s(0.1);
    FW_ASSIGN_OR_RETURN(status, http.call("GET", "/v1/status"));
  }
  if (status.value("read_only", false)) {
    return Status::PermissionDenied("agent is read_only: it writes no caps, so it cannot sweep");
  }
  std::string job = req.job_id;
  if (job.empty()) {
    const json jobs = status.value("jobs", json::array());
    if (jobs.size() != 1) {
      return Status::InvalidArgument("--job: the agent has " + std::to_string(jobs.size()) +
                                     " registered jobs; name one");
    }
    job = jobs[0].value("id", "");
  }
  if (find_job(status, job).is_null()) {
    return Status::InvalidArgument("--job: no job '" + job + "' registered on the agent");
  }
  FW_ASSIGN_OR_RETURN(std::vector<double> caps, sweep_caps(req, status));
  const std::string previous = status.value("controller", "");
  std::vector<SweepRow> points;
  Status failed;
  for (double cap : caps) {
    char spec[64];
    std::snprintf(spec, sizeof spec, "static:knob=caps,value=%g", cap);
    failed = set_controller(http, spec);
    if (!failed.ok()) break;
    sleep_s(req.dwell_s);
    auto m = measure(http, req, job);
    if (!m.ok()) {
      failed = m.status();
      break;
    }
    char line[160];
    std::snprintf(line, sizeof line, "cap %g W: %.1f W, %.2f tokens/s", cap, m->power_w,
                  m->throughput);
    say(line);
    points.push_back({cap, m->power_w, m->throughput});
  }
  // Put the operator's controller back whatever happened.
  Status back = set_controller(http, previous);
  if (!failed.ok()) return failed;
  if (!back.ok())
    return Status(back.code(), "restoring controller '" + previous + "': " + back.message());
  say("controller restored: " + previous);
  FW_ASSIGN_OR_RETURN(SweepResult r, sweep_result(job, points));
  r.source = "agent " + req.address;
  r.throughput_unit = "tokens/s";
  if (req.publish_pfi) {
    auto put = http.call("PUT", "/v1/jobs/" + job + "/pfi", {{"pfi", r.pfi}, {"source", "sweep"}});
    if (!put.ok()) return put.status();
  }
  return r;
}

}  // namespace fw::studies
