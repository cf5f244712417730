#include "fleet/openadr_ven.hpp"

#include <httplib.h>

namespace fw::fleet {

namespace {

using Json = nlohmann::json;

// The EVENT operations of a subscription, with its callback and token.
Json event_operations(const std::string& callback_url, const std::string& bearer) {
  Json op = {{"objects", Json::array({"EVENT"})},
             {"operations", Json::array({"CREATE", "UPDATE", "DELETE"})},
             {"callbackUrl", callback_url}};
  if (!bearer.empty()) op["bearerToken"] = bearer;
  return Json::array({op});
}

// Whether subscription s sends EVENT operations to callback_url with bearer.
bool sends_events_to(const Json& s, const std::string& callback_url, const std::string& bearer) {
  if (!s.is_object() || !s.contains("objectOperations") || !s["objectOperations"].is_array())
    return false;
  for (const Json& op : s["objectOperations"]) {
    if (!op.is_object() || !op.contains("objects") || !op["objects"].is_array()) continue;
    bool events = false;
    for (const Json& o : op["objects"]) events |= o == "EVENT";
    const Json token = op.value("bearerToken", Json());
    if (events && op.value("callbackUrl", "") == callback_url &&
        (bearer.empty() ? token.is_null() || token == "" : token == bearer))
      return true;
  }
  return false;
}

bool subscribes_events(const Json& s) {
  if (!s.is_object() || !s.contains("objectOperations") || !s["objectOperations"].is_array())
    return false;
  for (const Json& op : s["objectOperations"]) {
    if (!op.is_object() || !op.contains("objects") || !op["objects"].is_array()) continue;
    for (const Json& o : op["objects"]) {
      if (o == "EVENT") return true;
    }
  }
  return false;
}

std::string id_of(const Json& o) {
  return o.is_object() && o.contains("id") && o["id"].is_string() ? o["id"].get<std::string>()
                                                                  : std::string();
}

}  // namespace

Status vtn_refusal(const std::string& call, int http_status) {
  const std::string m = "openadr: " + call + ": HTTP " + std::to_string(http_status);
  if (http_status >= 500 || http_status == 408 || http_status == 429) {
    return Status::Unavailable(m);
  }
  if (http_status == 401 || http_status == 403) return Status::PermissionDenied(m);
  return Status::InvalidArgument(m);
}

Result<std::unique_ptr<OpenAdrVen>> OpenAdrVen::Create(VenOptions options) {
  const std::string& url = options.vtn_url;
  if (url.rfind("http://", 0) != 0) {
    return Status::InvalidArgument("openadr: vtn_url: '" + url + "' is not an http:// URL");
  }
  if (!(options.timeout_s > 0 && options.timeout_s <= 600)) {
    return Status::InvalidArgument("openadr: timeout_s: must be in (0, 600]");
  }
  const size_t slash = url.find('/', 7);
  auto v = std::unique_ptr<OpenAdrVen>(new OpenAdrVen(std::move(options)));
  v->scheme_host_ = v->o_.vtn_url.substr(0, slash);
  v->base_path_ = slash == std::string::npos ? "" : v->o_.vtn_url.substr(slash);
  while (!v->base_path_.empty() && v->base_path_.back() == '/') v->base_path_.pop_back();
  if (v->scheme_host_.size() <= 7) {
    return Status::InvalidArgument("openadr: vtn_url: no host in '" + url + "'");
  }
  return v;
}

Result<OpenAdrVen::Answer> OpenAdrVen::call(const std::string& method, const std::string& path,
                                            const Json* body,
                                            const std::multimap<std::string, std::string>& query) {
  httplib::Client cli(scheme_host_);
  const auto timeout = std::chrono::microseconds(int64_t(o_.timeout_s * 1e6));
  cli.set_connection_timeout(timeout);
  cli.set_read_timeout(timeout);
  cli.set_write_timeout(timeout);
  httplib::Headers h;
  if (!o_.token.empty()) h.emplace("Authorization", "Bearer " + o_.token);
  const std::string full = base_path_ + path;
  httplib::Result res = [&] {
    if (method == "GET") {
      return query.empty() ? cli.Get(full, h) : cli.Get(full, httplib::Params(query), h);
    }
    const std::string text = body ? body->dump() : std::string("{}");
    if (method == "PUT") return cli.Put(full, h, text, "application/json");
    return cli.Post(full, h, text, "application/json");
  }();
  if (!res) {
    return Status::Unavailable("openadr: " + method + " " + full + ": " +
                               httplib::to_string(res.error()));
  }
  Answer a;
  a.status = res->status;
  a.body = res->body.empty() ? Json() : Json::parse(res->body, nullptr, false);
  if (a.body.is_discarded()) a.body = Json();
  return a;
}

Result<PollResult> OpenAdrVen::poll(double site_w, const ScheduleSink& schedule) {
  std::multimap<std::string, std::string> query;
  if (!o_.program_id.empty()) query.emplace("programID", o_.program_id);
  const std::string what = "GET " + base_path_ + "/events";
  FW_ASSIGN_OR_RETURN(Answer a, call("GET", "/events", nullptr, query));
  if (a.status != 200) return vtn_refusal(what, a.status);
  const Json& events = a.body;
  if (!events.is_array()) {
    return Status::InvalidArgument("openadr: " + what + ": not a JSON array of events");
  }
  PollResult out;
  std::vector<std::string> marked;  // seen at this poll: forgotten again if the poll fails
  for (const Json& ev : events) {
    ++out.events;
    if (!ev.is_object()) {
      out.refused.push_back("?: not an object");
      continue;
    }
    const std::string id = id_of(ev);
    const std::string version =
        ev.contains("modificationDateTime") ? ev["modificationDateTime"].dump() : ev.dump();
    if (!id.empty()) {
      if (auto it = seen_.find(id); it != seen_.end() && it->second == version) {
        ++out.unchanged;
        continue;
      }
    }
    auto targets = translate_openadr_events(ev.dump(), site_w, o_.ramp_w_per_s);
    if (!targets.ok()) {
      out.refused.push_back((id.empty() ? "?" : id) + ": " + targets.status().message());
      continue;
    }
    const std::string group =
        targets->size() == 1
            ? targets->front().correlation_id
            : targets->front().correlation_id.substr(0, targets->front().correlation_id.rfind('#'));
    auto change = schedule(group, *targets);
    if (!change.ok()) {  // etcd: this poll's events again at the next poll
      for (const auto& m : marked) seen_.erase(m);
      return change.status();
    }
    if (change->http_status != 200) {
      out.refused.push_back(group + ": " + change->error);
    } else {
      ++out.scheduled;
    }
    if (!id.empty()) {
      seen_[id] = version;
      marked.push_back(id);
      PolledEvent p;
      p.id = id;
      if (ev.contains("programID") && ev["programID"].is_string()) p.program_id = ev["programID"];
      const Json& ivs = ev["intervals"];  // the translator checked it: one target per interval
      for (size_t k = 0; k < targets->size(); ++k) {
        const Json& iv = ivs[k];
        const int iv_id =
            iv.contains("id") && iv["id"].is_number_integer() ? iv["id"].get<int>() : int(k);
        p.intervals.push_back({iv_id, (*targets)[k].start_unix_s, (*targets)[k].end_unix_s});
      }
      p.report_descriptors = ev.value("reportDescriptors", Json());
      out.changed.push_back(std::move(p));
    }
  }
  return out;
}

Result<bool> OpenAdrVen::register_ven() {
  if (!ven_id_.empty()) {
    FW_ASSIGN_OR_RETURN(Answer a, call("GET", "/vens/" + ven_id_));
    if (a.status == 200) return false;
    if (a.status != 404) return vtn_refusal("GET " + base_path_ + "/vens/" + ven_id_, a.status);
    ven_id_.clear();  // the VTN forgot this VEN
  }
  FW_ASSIGN_OR_RETURN(Answer found, call("GET", "/vens", nullptr, {{"venName", o_.ven_name}}));
  if (found.status != 200) return vtn_refusal("GET " + base_path_ + "/vens", found.status);
  if (!found.body.is_array()) {
    return Status::InvalidArgument("openadr: GET " + base_path_ + "/vens: not a JSON array");
  }
  for (const Json& v : found.body) {
    if (v.is_object() && v.value("venName", "") == o_.ven_name && !id_of(v).empty()) {
      ven_id_ = id_of(v);
      return false;
    }
  }
  const Json req = {{"objectType", "VEN_VEN_REQUEST"}, {"venName", o_.ven_name}};
  FW_ASSIGN_OR_RETURN(Answer made, call("POST", "/vens", &req));
  if (made.status != 201 && made.status != 200) {
    return vtn_refusal("POST " + base_path_ + "/vens", made.status);
  }
  if (id_of(made.body).empty()) {
    return Status::InvalidArgument("openadr: POST " + base_path_ + "/vens: no id in the answer");
  }
  ven_id_ = id_of(made.body);
  return true;
}

Result<OpenAdrVen::Subscribed> OpenAdrVen::subscribe(const std::string& callback_url,
                                                     const std::string& bearer) {
  Json req = {{"clientName", o_.ven_name},
              {"objectOperations", event_operations(callback_url, bearer)}};
  if (!o_.program_id.empty()) req["programID"] = o_.program_id;
  const std::string subs = base_path_ + "/subscriptions";
  Json current;
  if (!subscription_id_.empty()) {
    FW_ASSIGN_OR_RETURN(Answer a, call("GET", "/subscriptions/" + subscription_id_));
    if (a.status == 200) {
      current = a.body;
    } else if (a.status == 404) {
      subscription_id_.clear();  // the VTN forgot it
    } else {
      return vtn_refusal("GET " + subs + "/" + subscription_id_, a.status);
    }
  }
  if (current.is_null()) {
    std::multimap<std::string, std::string> query = {{"clientName", o_.ven_name}};
    if (!o_.program_id.empty()) query.emplace("programID", o_.program_id);
    FW_ASSIGN_OR_RETURN(Answer found, call("GET", "/subscriptions", nullptr, query));
    if (found.status != 200) return vtn_refusal("GET " + subs, found.status);
    if (!found.body.is_array()) {
      return Status::InvalidArgument("openadr: GET " + subs + ": not a JSON array");
    }
    for (const Json& s : found.body) {
      if (s.is_object() && s.value("clientName", "") == o_.ven_name &&
          (o_.program_id.empty() || s.value("programID", "") == o_.program_id) &&
          subscribes_events(s) && !id_of(s).empty()) {
        current = s;
        subscription_id_ = id_of(s);
        break;
      }
    }
  }
  if (!current.is_null()) {
    if (sends_events_to(current, callback_url, bearer)) return Subscribed::kKept;
    FW_ASSIGN_OR_RETURN(Answer put, call("PUT", "/subscriptions/" + subscription_id_, &req));
    if (put.status == 200 || put.status == 201) return Subscribed::kUpdated;
    if (put.status != 404) return vtn_refusal("PUT " + subs + "/" + subscription_id_, put.status);
    subscription_id_.clear();
  }
  FW_ASSIGN_OR_RETURN(Answer made, call("POST", "/subscriptions", &req));
  if (made.status != 201 && made.status != 200) return vtn_refusal("POST " + subs, made.status);
  if (id_of(made.body).empty()) {
    return Status::InvalidArgument("openadr: POST " + subs + ": no id in the answer");
  }
  subscription_id_ = id_of(made.body);
  return Subscribed::kCreated;
}

Status OpenAdrVen::post_report(const Json& report) {
  FW_ASSIGN_OR_RETURN(Answer a, call("POST", "/reports", &report));
  if (a.status != 200 && a.status != 201) {
    return vtn_refusal("POST " + base_path_ + "/reports", a.status);
  }
  return Status::Ok();
}

}  // namespace fw::fleet
