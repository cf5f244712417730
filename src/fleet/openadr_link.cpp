#include "fleet/openadr_link.hpp"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "core/format.hpp"
#include "fleet/coordinator.hpp"

namespace fw::fleet {

namespace {

using Json = nlohmann::json;

constexpr size_t kMaxSamples = 200000;  // about 55 h at sample_s 1
constexpr size_t kMaxPostedKeys = 4096;
constexpr const char* kNotifyPath = "/openadr/notify";

// 128 random bits as hex: the bearer token the VTN must send to the callback.
std::string random_token() {
  std::random_device rd;
  std::string t;
  for (int i = 0; i < 4; ++i) t += strprintf("%08x", unsigned(rd()));
  return t;
}

}  // namespace

Result<std::unique_ptr<OpenAdrLink>> OpenAdrLink::Start(std::unique_ptr<OpenAdrVen> ven,
                                                        OpenAdrLinkOptions options, ReadSite read,
                                                        OpenAdrVen::ScheduleSink schedule,
                                                        Log log) {
  if (!ven || !read || !schedule) return Status::InvalidArgument("openadr link: missing part");
  if (!(options.poll_s > 0) || !(options.sample_s > 0) || !(options.retry_min_s > 0) ||
      !(options.retry_max_s >= options.retry_min_s)) {
    return Status::InvalidArgument(
        "openadr link: poll_s, sample_s, retry_min_s must be > 0 and retry_max_s >= "
        "retry_min_s");
  }
  std::unique_ptr<OpenAdrLink> l(new OpenAdrLink());
  l->ven_ = std::move(ven);
  l->o_ = std::move(options);
  l->read_ = std::move(read);
  l->schedule_ = std::move(schedule);
  l->log_ = std::move(log);
  l->token_ = random_token();
  l->server_ = std::make_unique<httplib::Server>();
  OpenAdrLink* self = l.get();
  l->server_->Post(kNotifyPath, [self](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer " + self->token_) {
      res.status = 403;
      return;
    }
    const Json n = Json::parse(req.body, nullptr, false);
    if (!n.is_object() || !n.contains("objectType")) {
      res.status = 400;
      return;
    }
    res.status = 200;
    if (n["objectType"] != "EVENT") return;
    std::lock_guard<std::mutex> lk(self->mu_);
    self->stats_.notifications++;
    self->wake_ = true;
    self->cv_.notify_all();
  });
  int port = l->o_.callback_port;
  if (port == 0) {
    port = l->server_->bind_to_any_port(l->o_.callback_host.c_str());
    if (port <= 0) {
      return Status::IoError("openadr link: cannot bind the callback on " + l->o_.callback_host);
    }
  } else if (!l->server_->bind_to_port(l->o_.callback_host.c_str(), port)) {
    return Status::IoError("openadr link: cannot bind the callback on " + l->o_.callback_host +
                           ":" + std::to_string(port));
  }
  l->callback_url_ = !l->o_.callback_url.empty() ? l->o_.callback_url
                                                 : "http://" + l->o_.callback_host + ":" +
                                                       std::to_string(port) + kNotifyPath;
  l->serve_thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  l->sampler_ = std::thread([self] { self->sample_loop(); });
  l->worker_ = std::thread([self] { self->run(); });
  return l;
}

OpenAdrLink::~OpenAdrLink() { stop(); }

void OpenAdrLink::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (server_) server_->stop();
  for (std::thread* t : {&serve_thread_, &sampler_, &worker_}) {
    if (t->joinable()) t->join();
  }
}

OpenAdrLinkStats OpenAdrLink::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

void OpenAdrLink::say(const std::string& m) const {
  if (log_) log_(m);
}

void OpenAdrLink::fail(const Status& s) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.vtn_failures++;
    stats_.last_error = s.message();
  }
  say(s.message());
}

void OpenAdrLink::sample_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    lk.unlock();
    const VenSiteReading r = read_();
    const double now = unix_now_s();
    lk.lock();
    if (r.leader) {
      samples_.push_back({now, r.power_w, r.baseline_w, r.target_w});
      if (samples_.size() > kMaxSamples) samples_.pop_front();
    }
    cv_.wait_for(lk, std::chrono::duration<double>(o_.sample_s), [this] { return stop_; });
  }
}

void OpenAdrLink::run() {
  double next_cycle_s = 0, retry_at_s = 0, backoff_s = 0, last_cycle_s = -1e300;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const bool woken = std::exchange(wake_, false);
    lk.unlock();
    const VenSiteReading r = read_();
    double now = unix_now_s();
    // A notification cycles at once, at most once per retry_min_s.
    if (woken) next_cycle_s = std::max(now, std::min(next_cycle_s, last_cycle_s + o_.retry_min_s));
    if (r.leader && lead_since_s_ < 0) lead_since_s_ = now;
    if (!r.leader && lead_since_s_ >= 0) {  // another member speaks for the site now
      lead_since_s_ = -1;
      owed_.clear();
      ven_->forget_events();
      next_cycle_s = retry_at_s = backoff_s = 0;
    }
    if (r.leader && now >= retry_at_s) {
      Status s = Status::Ok();
      if (now >= next_cycle_s) {
        last_cycle_s = now;
        s = cycle(r.site_w);
        if (s.ok()) next_cycle_s = unix_now_s() + o_.poll_s;
      }
      if (s.ok()) s = post_due(unix_now_s());
      if (s.ok()) {
        backoff_s = 0;
      } else {
        backoff_s = backoff_s == 0 ? o_.retry_min_s : std::min(2 * backoff_s, o_.retry_max_s);
        retry_at_s = unix_now_s() + backoff_s;
        fail(s);
      }
    }
    // Sleep until the next thing to do: a retry, the next cycle, a report falling due (and a
    // sample after it), or a notification; a follower looks again every sample_s.
    now = unix_now_s();
    double until_s = now + std::min(o_.sample_s, 1.0);
    if (r.leader) {
      until_s = backoff_s > 0 ? retry_at_s : next_cycle_s;
      if (backoff_s == 0) {
        for (const auto& [key, owed] : owed_) {
          until_s =
              std::min(until_s, std::max(owed.due_unix_s + o_.sample_s, now + 0.5 * o_.sample_s));
        }
      }
    }
    lk.lock();
    stats_.backoff_s = backoff_s;
    stats_.reports_owed = owed_.size();
    stats_.ven_id = ven_->ven_id();
    stats_.subscription_id = ven_->subscription_id();
    cv_.wait_for(lk, std::chrono::duration<double>(std::max(0.0, until_s - now)),
                 [this] { return stop_ || wake_; });
  }
}

Status OpenAdrLink::cycle(double site_w) {
  FW_ASSIGN_OR_RETURN(bool created, ven_->register_ven());
  if (created) {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.registrations++;
  }
  if (created) say("openadr: registered VEN " + ven_->ven_id());
  FW_ASSIGN_OR_RETURN(OpenAdrVen::Subscribed sub, ven_->subscribe(callback_url_, token_));
  if (sub != OpenAdrVen::Subscribed::kKept) {
    std::lock_guard<std::mutex> lk(mu_);
    (sub == OpenAdrVen::Subscribed::kCreated ? stats_.subscriptions
                                             : stats_.subscription_updates)++;
  }
  if (sub != OpenAdrVen::Subscribed::kKept) {
    say(std::string("openadr: subscription ") + ven_->subscription_id() +
        (sub == OpenAdrVen::Subscribed::kCreated ? " created" : " moved") + " to " + callback_url_);
  }
  FW_ASSIGN_OR_RETURN(PollResult p, ven_->poll(site_w, schedule_));
  {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.polls++;
  }
  for (const auto& why : p.refused) say("openadr: event refused: " + why);
  for (const PolledEvent& ev : p.changed) {
    std::vector<std::string> unsupported;
    std::vector<OwedReport> plans =
        plan_reports(ev.id, ev.program_id, ev.report_descriptors, ev.intervals, &unsupported);
    for (const auto& why : unsupported) say("openadr: report not supported: " + why);
    for (auto it = owed_.begin(); it != owed_.end();) {  // the event changed: its new plan
      it = it->second.event_id == ev.id ? owed_.erase(it) : std::next(it);
    }
    for (OwedReport& r : plans) {
      if (posted_.count(r.key) || r.due_unix_s <= lead_since_s_) continue;  // done, or no data
      owed_[r.key] = std::move(r);
    }
    while (owed_.size() > o_.max_owed_reports) {
      auto oldest = std::min_element(owed_.begin(), owed_.end(), [](const auto& a, const auto& b) {
        return a.second.due_unix_s < b.second.due_unix_s;
      });
      say("openadr: too many reports owed, dropped " + oldest->first);
      owed_.erase(oldest);
      std::lock_guard<std::mutex> lk(mu_);
      stats_.reports_dropped++;
    }
  }
  return Status::Ok();
}

Status OpenAdrLink::post_due(double now_unix_s) {
  std::vector<SiteSample> samples;
  for (auto it = owed_.begin(); it != owed_.end();) {
    const OwedReport& r = it->second;
    if (r.due_unix_s > now_unix_s) {
      ++it;
      continue;
    }
    if (samples.empty()) {
      std::lock_guard<std::mutex> lk(mu_);
      samples.assign(samples_.begin(), samples_.end());
    }
    if (samples.empty() || samples.back().time_unix_s < r.due_unix_s) {  // a sample after it
      ++it;
      continue;
    }
    const Json body =
        build_report(r, samples, 3 * o_.sample_s, ven_->options().ven_name, o_.resource_name);
    const Status s = ven_->post_report(body);
    if (!s.ok() &&
        (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kPermissionDenied)) {
      return s;  // owed still: after the back-off
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      (s.ok() ? stats_.reports_posted : stats_.reports_dropped)++;
    }
    if (s.ok()) {
      posted_[r.key] = r.due_unix_s;
      if (posted_.size() > kMaxPostedKeys) {
        posted_.erase(
            std::min_element(posted_.begin(), posted_.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; }));
      }
    } else {
      say("openadr: report " + r.key + " refused, dropped: " + s.message());
    }
    it = owed_.erase(it);
  }
  return Status::Ok();
}

OpenAdrLink::ReadSite coordinator_reader(const Coordinator* c) {
  return [c] {
    const CoordinatorStats st = c->stats();
    VenSiteReading r;
    r.leader = st.leader;
    r.site_w = st.last_plan.site_w > 0 ? st.last_plan.site_w : c->options().default_budget_w;
    r.power_w = st.last_power_w;
    r.baseline_w = st.last_baseline_w;
    r.target_w = st.last_plan.effective_w;
    return r;
  };
}

}  // namespace fw::fleet
