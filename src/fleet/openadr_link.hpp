#pragma once
// OpenAdrLink: the site's OpenADR 3.1 VEN at work, on threads of its own, so no VTN exchange
// ever runs on the coordinator's thread (its rounds and site loop) or the CLI's loop.
//
// While the site reading says this member leads:
//  - a sampler records what the site draws every sample_s (SiteSample: measured power,
//    baseline, the effective target), the data of the reports;
//  - a cycle every poll_s (at once on a notification): register the VEN (OpenAdrVen::
//    register_ven: the VEN the VTN knows, found by venName or created), keep the subscription
//    of EVENT operations to this link's callback (subscribe), poll the events into the
//    schedule (poll), and plan the reports each new or changed event's reportDescriptors ask
//    for (openadr_report.hpp plan_reports; a report whose intervals ended before this link
//    first sampled is not owed: there is nothing to report);
//  - each owed report is POSTed once due (its last interval ended and a sample followed),
//    built from the samples (build_report; resourceName resource_name); posted reports are
//    remembered by key, so a re-polled or modified event does not post the same report twice.
// Registration and subscription happen at the first cycle and again whenever the VTN no
// longer knows them (each cycle checks both by id: two GETs). When the member stops leading,
// its owed reports are dropped and its events forgotten (the new leader owes the reports
// falling due from its takeover on); leading again, it takes every event afresh.
//
// Failures: a VTN exchange that fails (unreachable, a timeout, an error answer) ends the cycle;
// the next attempt waits retry_min_s, doubling on each failure in a row up to retry_max_s, and
// any success resets it (one exchange per attempt while the VTN is down: no busy loop). A
// report the VTN refuses (4xx other than 401/403/408/429) is dropped and logged, never
// retried; one it cannot take now stays owed (at most max_owed_reports, the oldest dropped).
// An exchange blocks the worker for at most 2 x timeout_s (VenOptions); stop() waits for it.
//
// The callback: an HTTP listener on callback_host:callback_port (port 0: any free port) takes
// the VTN's notifications at POST /openadr/notify with the subscription's bearer token (a
// random token per link; 403 otherwise) and starts a cycle at once (at most one per
// retry_min_s, and none before a back-off ends). callback_url is the URL
// given to the VTN (default http://callback_host:port/openadr/notify); polling every poll_s
// goes on whether notifications arrive or not.
//
// Thread-safe accessors. log (may be empty) is called from the link's threads.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleet/openadr_report.hpp"
#include "fleet/openadr_ven.hpp"

namespace httplib {
class Server;
}

namespace fw::fleet {

class Coordinator;

struct OpenAdrLinkOptions {
  double poll_s = 30;                       // cycle period
  double sample_s = 1;                      // sampling period of the site (the reports' data)
  double retry_min_s = 1;                   // first back-off after a failed exchange
  double retry_max_s = 300;                 // back-off ceiling
  std::string callback_host = "127.0.0.1";  // notification listener
  int callback_port = 0;                    // 0: any free port
  std::string callback_url;                 // as the VTN reaches it ("": derived)
  std::string resource_name = "site";       // resourceName of the reports (the site)
  size_t max_owed_reports = 256;
};

// What the link reads of the site (the coordinator's view; coordinator_reader()).
struct VenSiteReading {
  bool leader = false;    // only the leader speaks to the VTN and samples
  double site_w = 0;      // the site budget (turns SIMPLE levels into watts)
  double power_w = 0;     // measured draw of the site's nodes
  double baseline_w = 0;  // their uncontrolled prediction
  double target_w = 0;    // the effective budget split now (the grid's target, capped)
};

struct OpenAdrLinkStats {
  int64_t registrations = 0;         // VEN objects this link created
  int64_t subscriptions = 0;         // subscriptions it created
  int64_t subscription_updates = 0;  // subscriptions it moved to its callback
  int64_t polls = 0;                 // successful polls
  int64_t notifications = 0;         // accepted at the callback
  int64_t reports_posted = 0;
  int64_t reports_dropped = 0;  // refused by the VTN, unsupported or over max_owed_reports
  int64_t vtn_failures = 0;     // failed attempts (each followed by a back-off)
  double backoff_s = 0;         // the back-off now (0: the VTN answered the last attempt)
  size_t reports_owed = 0;
  std::string ven_id, subscription_id;
  std::string last_error;  // of the last failure ("" : none yet)
};

class OpenAdrLink {
 public:
  using ReadSite = std::function<VenSiteReading()>;
  using Log = std::function<void(const std::string&)>;
  // Starts the listener and the threads. read is called from the link's threads (cheap,
  // thread-safe); schedule as in OpenAdrVen::poll.
  static Result<std::unique_ptr<OpenAdrLink>> Start(std::unique_ptr<OpenAdrVen> ven,
                                                    OpenAdrLinkOptions options, ReadSite read,
                                                    OpenAdrVen::ScheduleSink schedule,
                                                    Log log = {});
  ~OpenAdrLink();
  OpenAdrLink(const OpenAdrLink&) = delete;
  OpenAdrLink& operator=(const OpenAdrLink&) = delete;
  void stop();
  OpenAdrLinkStats stats() const;
  std::string callback_url() const { return callback_url_; }

 private:
  OpenAdrLink() = default;
  void run();
  void sample_loop();
  // One cycle: registration, subscription, poll, planning. Not ok: the failing exchange.
  Status cycle(double site_w);
  // POSTs the owed reports that are due; not ok: the VTN could not take one now.
  Status post_due(double now_unix_s);
  void fail(const Status& s);
  void say(const std::string& m) const;

  std::unique_ptr<OpenAdrVen> ven_;  // worker thread only
  OpenAdrLinkOptions o_;
  ReadSite read_;
  OpenAdrVen::ScheduleSink schedule_;
  Log log_;
  std::string token_, callback_url_;
  std::unique_ptr<httplib::Server> server_;
  std::thread serve_thread_, worker_, sampler_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;  // a notification: cycle now
  OpenAdrLinkStats stats_;
  std::deque<SiteSample> samples_;
  // Worker thread only: when this link first saw its member lead (-1: not yet), the reports
  // owed (by key) and those posted (key -> due time, the last kMaxPostedKeys).
  double lead_since_s_ = -1;
  std::map<std::string, OwedReport> owed_;
  std::map<std::string, double> posted_;
};

// The reading of a coordinator member (its stats; site_w falls back to the configured budget
// before the first round). c must outlive the link.
OpenAdrLink::ReadSite coordinator_reader(const Coordinator* c);

}  // namespace fw::fleet
