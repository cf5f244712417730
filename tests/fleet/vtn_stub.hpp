#pragma once
// Test helper: an OpenADR 3.1 VTN stub on a loopback port (cpp-httplib), strict about what a
// VEN sends, so a test that passes against it has sent the 3.1 shapes (3.1.0 openadr3.yaml):
//   GET  {base}/events[?programID=P]       the events set by the test
//   POST {base}/vens                       VenVenRequest: objectType "VEN_VEN_REQUEST", venName
//                                          (1..128 chars, unique: 409), attributes; any other
//                                          field is a 400 naming it. 201 with id, clientID,
//                                          createdDateTime, modificationDateTime, objectType "VEN"
//   GET  {base}/vens[?venName=N], GET {base}/vens/{id} (404 when unknown)
//   POST {base}/subscriptions, PUT {base}/subscriptions/{id}
//                                          subscriptionRequest: clientName, objectOperations
//                                          [{objects ⊂ PROGRAM|EVENT|..., operations ⊂ READ|
//                                          CREATE|UPDATE|DELETE, callbackUrl http://..,
//                                          bearerToken?}], programID?, targets?; 201 / 200
//   GET  {base}/subscriptions[?clientName=&programID=], GET {base}/subscriptions/{id}
//   POST {base}/reports                    reportRequest: eventID (a known event), clientName,
//                                          resources [{resourceName, intervalPeriod?, intervals
//                                          [{id, intervalPeriod {start: RFC 3339 string, duration:
//                                          ISO 8601}, payloads [{type, values (non-empty)}]}]}],
//                                          reportName?, payloadDescriptors? (objectType
//                                          "REPORT_PAYLOAD_DESCRIPTOR", payloadType), objectType?
//                                          ("REPORT"), programID? (the event's). Every payload type
//                                          must be one the event's reportDescriptors ask for (or
//                                          DATA_QUALITY); every interval must be one of the
//                                          event's, same id, start and duration. 400 names the
//                                          field; 201 with id and clientID.
// Every call needs "Authorization: Bearer <token>" (403). set_failing(503) answers everything
// with that status (counted in request_times()); stop()/start() take the VTN down and bring it
// back on the same port; forget() drops every VEN and subscription (a VTN restarted on an
// empty store; its events stay). set_events(..., notify) POSTs a notification
// {objectType "EVENT", operation, object} to each subscription's callbackUrl with its
// bearerToken. Thread-safe.

#include <httplib.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/format.hpp"
#include "fleet/grid.hpp"

namespace fw::fleet::testing {

class VtnStub {
 public:
  using Json = nlohmann::json;
  static constexpr const char* kBase = "/openadr3/3.1.0";

  explicit VtnStub(std::string token) : token_(std::move(token)) { start(); }
  ~VtnStub() { stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + kBase; }
  int port() const { return port_; }

  // Starts serving (again) on the same port as before (any free port the first time).
  void start() {
    if (server_) return;
    server_ = std::make_unique<httplib::Server>();
    routes(*server_);
    if (port_ == 0) {
      port_ = server_->bind_to_any_port("127.0.0.1");
    } else {
      for (int i = 0; i < 100 && !server_->bind_to_port("127.0.0.1", port_); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    thread_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Takes the VTN down: connections to its port are refused until start().
  void stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }
  void forget() {
    std::lock_guard<std::mutex> lk(mu_);
    vens_.clear();
    subscriptions_.clear();
  }
  void set_failing(int status) {
    std::lock_guard<std::mutex> lk(mu_);
    failing_ = status;
  }

  // The events the VTN publishes; notify: tell every subscriber (operation CREATE or UPDATE).
  void set_events(Json events, bool notify = false) {
    std::vector<std::pair<Json, Json>> sends;  // (subscription, notification)
    {
      std::lock_guard<std::mutex> lk(mu_);
      std::set<std::string> known;
      for (const Json& e : events_) known.insert(e.value("id", ""));
      events_ = std::move(events);
      if (notify) {
        for (const Json& e : events_) {
          const Json n = {{"objectType", "EVENT"},
                          {"operation", known.count(e.value("id", "")) ? "UPDATE" : "CREATE"},
                          {"object", e}};
          for (const Json& s : subscriptions_) sends.emplace_back(s, n);
        }
      }
    }
    for (const auto& [s, n] : sends) {
      for (const Json& op : s["objectOperations"]) {
        bool events_too = false;
        for (const Json& o : op["objects"]) events_too |= o == "EVENT";
        if (!events_too) continue;
        const std::string cb = op["callbackUrl"];
        const size_t slash = cb.find('/', 7);
        httplib::Client cli(cb.substr(0, slash));
        cli.set_connection_timeout(2);
        cli.set_read_timeout(2);
        httplib::Headers h;
        if (op.contains("bearerToken") && op["bearerToken"].is_string())
          h.emplace("Authorization", "Bearer " + op["bearerToken"].get<std::string>());
        auto res = cli.Post(slash == std::string::npos ? "/" : cb.substr(slash), h, n.dump(),
                            "application/json");
        std::lock_guard<std::mutex> lk(mu_);
        if (res) notified_.push_back(res->status);
      }
    }
  }

  std::vector<Json> reports() {
    std::lock_guard<std::mutex> lk(mu_);
    return reports_;
  }
  std::vector<Json> vens() {
    std::lock_guard<std::mutex> lk(mu_);
    return vens_;
  }
  std::vector<Json> subscriptions() {
    std::lock_guard<std::mutex> lk(mu_);
    return subscriptions_;
  }
  int vens_created() {
    std::lock_guard<std::mutex> lk(mu_);
    return vens_created_;
  }
  int subscriptions_created() {
    std::lock_guard<std::mutex> lk(mu_);
    return subscriptions_created_;
  }
  int subscription_updates() {
    std::lock_guard<std::mutex> lk(mu_);
    return subscription_updates_;
  }
  int polls() {
    std::lock_guard<std::mutex> lk(mu_);
    return polls_;
  }
  // 400 answers, each "<METHOD> <path>: <why>".
  std::vector<std::string> rejections() {
    std::lock_guard<std::mutex> lk(mu_);
    return rejections_;
  }
  // Wall time (unix s) of every request answered, failing ones included.
  std::vector<double> request_times() {
    std::lock_guard<std::mutex> lk(mu_);
    return request_times_;
  }
  // HTTP statuses the subscribers' callbacks answered.
  std::vector<int> notified() {
    std::lock_guard<std::mutex> lk(mu_);
    return notified_;
  }

 private:
  using Req = httplib::Request;
  using Res = httplib::Response;

  static void answer(Res& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }
  // A problem (400) naming the field; recorded.
  bool reject(const Req& req, Res& res, const std::string& why) {
    rejections_.push_back(req.method + " " + req.path + ": " + why);
    answer(res, 400, {{"title", "Bad Request"}, {"status", 400}, {"detail", why}});
    return false;
  }
  // Under mu_: counts the request, checks the failing mode and the token.
  bool admit(const Req& req, Res& res) {
    request_times_.push_back(fw::unix_now_s());
    if (failing_) {
      answer(res, failing_, {{"title", "unavailable"}, {"status", failing_}});
      return false;
    }
    if (req.get_header_value("Authorization") != "Bearer " + token_) {
      answer(res, 403, {{"title", "Forbidden"}, {"status", 403}});
      return false;
    }
    return true;
  }
  Json metadata(const std::string& type, const std::string& prefix, int n) {
    const std::string now = fw::rfc3339_utc(fw::unix_now_s());
    return {{"id", prefix + "-" + std::to_string(n)},
            {"createdDateTime", now},
            {"modificationDateTime", now},
            {"objectType", type},
            {"clientID", "client-" + token_}};
  }
  static bool name_ok(const Json& v) {
    return v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().size() <= 128;
  }
  static std::string unknown_field(const Json& o, const std::set<std::string>& allowed) {
    for (const auto& [k, v] : o.items()) {
      if (!allowed.count(k)) return k;
    }
    return "";
  }
  static bool rfc3339(const Json& v) { return v.is_string() && parse_time(v, "t").ok(); }
  static bool iso_duration(const Json& v) {
    return v.is_string() && parse_duration(v.get<std::string>(), "d").ok();
  }

  bool check_subscription(const Req& req, Res& res, const Json& b) {
    if (!b.is_object()) return reject(req, res, "body: not an object");
    if (auto k = unknown_field(b, {"clientName", "programID", "objectOperations", "targets"});
        !k.empty())
      return reject(req, res, k + ": not a subscriptionRequest field");
    if (!b.contains("clientName") || !name_ok(b["clientName"]))
      return reject(req, res, "clientName: missing or not 1..128 characters");
    if (b.contains("programID") && !name_ok(b["programID"]))
      return reject(req, res, "programID: not an objectID");
    if (!b.contains("objectOperations") || !b["objectOperations"].is_array() ||
        b["objectOperations"].empty())
      return reject(req, res, "objectOperations: missing or empty");
    static const std::set<std::string> kObjects = {"PROGRAM",      "EVENT", "REPORT",
                                                   "SUBSCRIPTION", "VEN",   "RESOURCE"};
    static const std::set<std::string> kOps = {"READ", "CREATE", "UPDATE", "DELETE"};
    for (const Json& op : b["objectOperations"]) {
      if (!op.is_object()) return reject(req, res, "objectOperations[]: not an object");
      if (auto k = unknown_field(op, {"objects", "operations", "callbackUrl", "bearerToken"});
          !k.empty())
        return reject(req, res, "objectOperations[]." + k + ": unknown field");
      if (!op.contains("objects") || !op["objects"].is_array() || op["objects"].empty())
        return reject(req, res, "objectOperations[].objects: missing");
      for (const Json& o : op["objects"]) {
        if (!o.is_string() || !kObjects.count(o.get<std::string>()))
          return reject(req, res, "objectOperations[].objects: " + o.dump() + " not an objectType");
      }
      if (!op.contains("operations") || !op["operations"].is_array() || op["operations"].empty())
        return reject(req, res, "objectOperations[].operations: missing");
      for (const Json& o : op["operations"]) {
        if (!o.is_string() || !kOps.count(o.get<std::string>()))
          return reject(req, res,
                        "objectOperations[].operations: " + o.dump() + " not one of " +
                            "READ, CREATE, UPDATE, DELETE");
      }
      if (!op.contains("callbackUrl") || !op["callbackUrl"].is_string() ||
          op["callbackUrl"].get<std::string>().rfind("http", 0) != 0)
        return reject(req, res, "objectOperations[].callbackUrl: missing or not a URL");
      if (op.contains("bearerToken") && !op["bearerToken"].is_string())
        return reject(req, res, "objectOperations[].bearerToken: not a string");
    }
    return true;
  }

  // Under mu_: the report against the event it names.
  bool check_report(const Req& req, Res& res, const Json& r) {
    if (!r.is_object()) return reject(req, res, "body: not an object");
    if (auto k = unknown_field(r, {"objectType", "programID", "eventID", "clientName", "reportName",
                                   "payloadDescriptors", "resources"});
        !k.empty())
      return reject(req, res, k + ": not a reportRequest field");
    if (r.contains("objectType") && r["objectType"] != "REPORT")
      return reject(req, res, "objectType: not REPORT");
    if (!r.contains("eventID") || !name_ok(r["eventID"]))
      return reject(req, res, "eventID: missing");
    const Json* event = nullptr;
    for (const Json& e : events_) {
      if (e.value("id", "") == r["eventID"]) event = &e;
    }
    if (!event) return reject(req, res, "eventID: no such event");
    if (r.contains("programID") && r["programID"] != event->value("programID", ""))
      return reject(req, res, "programID: not the event's");
    if (!r.contains("clientName") || !name_ok(r["clientName"]))
      return reject(req, res, "clientName: missing or not 1..128 characters");
    if (r.contains("reportName") && !r["reportName"].is_string())
      return reject(req, res, "reportName: not a string");
    std::set<std::string> asked = {"DATA_QUALITY"};
    for (const Json& d : event->value("reportDescriptors", Json::array()))
      asked.insert(d.value("payloadType", ""));
    if (r.contains("payloadDescriptors")) {
      if (!r["payloadDescriptors"].is_array())
        return reject(req, res, "payloadDescriptors: not a list");
      for (const Json& d : r["payloadDescriptors"]) {
        if (!d.is_object() || d.value("objectType", "") != "REPORT_PAYLOAD_DESCRIPTOR")
          return reject(req, res, "payloadDescriptors[].objectType: not REPORT_PAYLOAD_DESCRIPTOR");
        if (auto k = unknown_field(
                d, {"objectType", "payloadType", "readingType", "units", "accuracy", "confidence"});
            !k.empty())
          return reject(req, res, "payloadDescriptors[]." + k + ": unknown field");
        if (!d.contains("payloadType") || !asked.count(d.value("payloadType", "")))
          return reject(req, res, "payloadDescriptors[].payloadType: not asked for");
      }
    }
    // The event's intervals: id -> (start, end).
    auto targets = translate_openadr_events(event->dump(), 1e6, 0);
    if (!targets.ok()) return reject(req, res, "event: " + targets.status().message());
    std::map<int, std::pair<double, double>> ivs;
    for (size_t k = 0; k < targets->size(); ++k) {
      const Json& iv = (*event)["intervals"][k];
      ivs[iv.value("id", int(k))] = {(*targets)[k].start_unix_s, (*targets)[k].end_unix_s};
    }
    if (!r.contains("resources") || !r["resources"].is_array() || r["resources"].empty())
      return reject(req, res, "resources: missing or empty");
    for (const Json& rs : r["resources"]) {
      if (!rs.is_object()) return reject(req, res, "resources[]: not an object");
      if (auto k = unknown_field(rs, {"resourceName", "intervalPeriod", "intervals"}); !k.empty())
        return reject(req, res, "resources[]." + k + ": unknown field");
      if (!rs.contains("resourceName") || !name_ok(rs["resourceName"]))
        return reject(req, res, "resources[].resourceName: missing");
      if (!rs.contains("intervals") || !rs["intervals"].is_array() || rs["intervals"].empty())
        return reject(req, res, "resources[].intervals: missing or empty");
      for (const Json& iv : rs["intervals"]) {
        const std::string at = "resources[].intervals[" + iv.value("id", Json()).dump() + "]";
        if (!iv.is_object() || !iv.contains("id") || !iv["id"].is_number_integer())
          return reject(req, res, at + ".id: missing or not an integer");
        if (auto k = unknown_field(iv, {"id", "intervalPeriod", "payloads"}); !k.empty())
          return reject(req, res, at + "." + k + ": unknown field");
        auto ev = ivs.find(iv["id"].get<int>());
        if (ev == ivs.end()) return reject(req, res, at + ".id: not an interval of the event");
        if (!iv.contains("intervalPeriod") || !iv["intervalPeriod"].is_object())
          return reject(req, res, at + ".intervalPeriod: missing");
        const Json& p = iv["intervalPeriod"];
        if (!p.contains("start") || !rfc3339(p["start"]))
          return reject(req, res,
                        at + ".intervalPeriod.start: not an RFC 3339 date-time: " +
                            p.value("start", Json()).dump());
        if (!p.contains("duration") || !iso_duration(p["duration"]))
          return reject(req, res, at + ".intervalPeriod.duration: not an ISO 8601 duration");
        const double start = *parse_time(p["start"], "start");
        const double dur = *parse_duration(p["duration"].get<std::string>(), "duration");
        if (std::abs(start - ev->second.first) > 1e-3 ||
            std::abs(start + dur - ev->second.second) > 1e-3)
          return reject(req, res, at + ".intervalPeriod: not the event interval's");
        if (!iv.contains("payloads") || !iv["payloads"].is_array() || iv["payloads"].empty())
          return reject(req, res, at + ".payloads: missing or empty");
        for (const Json& v : iv["payloads"]) {
          if (!v.is_object() || !v.contains("type") || !asked.count(v.value("type", "")))
            return reject(req, res, at + ".payloads[].type: not asked for: " + v.dump());
          if (!v.contains("values") || !v["values"].is_array() || v["values"].empty())
            return reject(req, res, at + ".payloads[].values: missing or empty");
        }
      }
    }
    return true;
  }

  void routes(httplib::Server& s) {
    const std::string b = kBase;
    s.Get(b + "/events", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      ++polls_;
      Json out = Json::array();
      for (const Json& e : events_) {
        if (!req.has_param("programID") ||
            e.value("programID", "") == req.get_param_value("programID"))
          out.push_back(e);
      }
      answer(res, 200, out);
    });
    s.Post(b + "/vens", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json v = Json::parse(req.body, nullptr, false);
      if (!v.is_object()) return (void)reject(req, res, "body: not a JSON object");
      if (auto k = unknown_field(v, {"objectType", "venName", "attributes"}); !k.empty())
        return (void)reject(req, res, k + ": not a VenVenRequest field");
      if (v.value("objectType", "") != "VEN_VEN_REQUEST")
        return (void)reject(req, res, "objectType: not VEN_VEN_REQUEST");
      if (!v.contains("venName") || !name_ok(v["venName"]))
        return (void)reject(req, res, "venName: missing or not 1..128 characters");
      for (const Json& e : vens_) {
        if (e["venName"] == v["venName"]) return answer(res, 409, {{"title", "Conflict"}});
      }
      Json ven = metadata("VEN", "ven", ++vens_created_);
      ven.update(v);
      ven["objectType"] = "VEN";
      vens_.push_back(ven);
      answer(res, 201, ven);
    });
    s.Get(b + "/vens", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json out = Json::array();
      for (const Json& v : vens_) {
        if (!req.has_param("venName") || v["venName"] == req.get_param_value("venName"))
          out.push_back(v);
      }
      answer(res, 200, out);
    });
    s.Get(b + R"(/vens/([A-Za-z0-9_-]+))", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      for (const Json& v : vens_) {
        if (v["id"] == req.matches[1].str()) return answer(res, 200, v);
      }
      answer(res, 404, {{"title", "Not Found"}});
    });
    s.Post(b + "/subscriptions", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json v = Json::parse(req.body, nullptr, false);
      if (!check_subscription(req, res, v)) return;
      Json sub = metadata("SUBSCRIPTION", "sub", ++subscriptions_created_);
      sub.update(v);
      subscriptions_.push_back(sub);
      answer(res, 201, sub);
    });
    s.Put(b + R"(/subscriptions/([A-Za-z0-9_-]+))", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json v = Json::parse(req.body, nullptr, false);
      if (!check_subscription(req, res, v)) return;
      for (Json& s : subscriptions_) {
        if (s["id"] != req.matches[1].str()) continue;
        ++subscription_updates_;
        for (const auto& [k, x] : v.items()) s[k] = x;
        s["modificationDateTime"] = fw::rfc3339_utc(fw::unix_now_s());
        return answer(res, 200, s);
      }
      answer(res, 404, {{"title", "Not Found"}});
    });
    s.Get(b + "/subscriptions", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json out = Json::array();
      for (const Json& v : subscriptions_) {
        if (req.has_param("clientName") && v["clientName"] != req.get_param_value("clientName"))
          continue;
        if (req.has_param("programID") &&
            v.value("programID", "") != req.get_param_value("programID"))
          continue;
        out.push_back(v);
      }
      answer(res, 200, out);
    });
    s.Get(b + R"(/subscriptions/([A-Za-z0-9_-]+))", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      for (const Json& v : subscriptions_) {
        if (v["id"] == req.matches[1].str()) return answer(res, 200, v);
      }
      answer(res, 404, {{"title", "Not Found"}});
    });
    s.Post(b + "/reports", [this](const Req& req, Res& res) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!admit(req, res)) return;
      Json r = Json::parse(req.body, nullptr, false);
      if (!check_report(req, res, r)) return;
      reports_.push_back(r);
      Json out = metadata("REPORT", "report", int(reports_.size()));
      out.update(r);
      out["objectType"] = "REPORT";
      answer(res, 201, out);
    });
  }

  std::string token_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  Json events_ = Json::array();
  std::vector<Json> reports_, vens_, subscriptions_;
  int vens_created_ = 0, subscriptions_created_ = 0, subscription_updates_ = 0, polls_ = 0;
  int failing_ = 0;
  std::vector<std::string> rejections_;
  std::vector<double> request_times_;
  std::vector<int> notified_;
};

}  // namespace fw::fleet::testing
