#include "fleet/openadr_ven.hpp"

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace fw::fleet {

namespace {

using Json = nlohmann::json;

httplib::Headers headers(const VenOptions& o) {
  httplib::Headers h;
  if (!o.token.empty()) h.emplace("Authorization", "Bearer " + o.token);
  return h;
}

}  // namespace

Result<std::unique_ptr<OpenAdrVen>> OpenAdrVen::Create(VenOptions options) {
  const std::string& url = options.vtn_url;
  if (url.rfind("http://", 0) != 0) {
    return Status::InvalidArgument("openadr: vtn_url: '" + url + "' is not an http:// URL");
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

Result<PollResult> OpenAdrVen::poll(double site_w, const ScheduleSink& schedule) {
  httplib::Client cli(scheme_host_);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(5);
  std::string path = base_path_ + "/events";
  if (!o_.program_id.empty()) path += "?programID=" + o_.program_id;
  auto res = cli.Get(path, headers(o_));
  if (!res) {
    return Status::Unavailable("openadr: GET " + path + ": " + httplib::to_string(res.error()));
  }
  if (res->status != 200) {
    return Status::Unavailable("openadr: GET " + path + ": HTTP " + std::to_string(res->status));
  }
  Json events = Json::parse(res->body, nullptr, false);
  if (events.is_discarded() || !events.is_array()) {
    return Status::InvalidArgument("openadr: GET " + path + ": not a JSON array of events");
  }
  PollResult out;
  for (const Json& ev : events) {
    ++out.events;
    if (!ev.is_object()) {
      out.refused.push_back("?: not an object");
      continue;
    }
    const std::string id =
        ev.contains("id") && ev["id"].is_string() ? ev["id"].get<std::string>() : std::string();
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
    if (!change.ok()) return change.status();  // etcd: try again at the next poll
    if (change->http_status != 200) {
      out.refused.push_back(group + ": " + change->error);
    } else {
      ++out.scheduled;
    }
    if (!id.empty()) {
      seen_[id] = version;
      if (ev.contains("programID") && ev["programID"].is_string())
        program_[id] = ev["programID"].get<std::string>();
    }
  }
  return out;
}

Status OpenAdrVen::report(const std::string& event_id, const std::vector<PowerSample>& samples,
                          double start_unix_s, double interval_s) {
  Json r = openadr_report(samples, start_unix_s, interval_s, event_id, o_.ven_name);
  auto it = program_.find(event_id);
  r["programID"] = it != program_.end() ? it->second : o_.program_id;
  r["reportName"] = o_.ven_name + ":" + event_id;
  httplib::Client cli(scheme_host_);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(5);
  const std::string path = base_path_ + "/reports";
  auto res = cli.Post(path, headers(o_), r.dump(), "application/json");
  if (!res) {
    return Status::Unavailable("openadr: POST " + path + ": " + httplib::to_string(res.error()));
  }
  if (res->status != 200 && res->status != 201) {
    return Status::Unavailable("openadr: POST " + path + ": HTTP " + std::to_string(res->status));
  }
  return Status::Ok();
}

}  // namespace fw::fleet
