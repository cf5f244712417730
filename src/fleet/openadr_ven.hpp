#pragma once
// OpenAdrVen: the site's OpenADR 3.1 VEN (client side of the REST API; no OpenADR client
// library is packaged for Debian 12, so this speaks the few calls a site needs over HTTP):
//   GET  {vtn}/events[?programID=P]   every event the VTN publishes; each event new or changed
//                                      (its id with its modificationDateTime, else its whole
//                                      body) goes through the translator
//                                      (grid.hpp translate_openadr_events: every interval,
//                                      RFC 3339 times with offsets, ISO 8601 durations) into
//                                      the schedule sink (the coordinator's schedule_grid)
//   POST {vtn}/reports                 a REPORT (grid.hpp openadr_report: DEMAND, USAGE,
//                                      BASELINE per interval) with programID, eventID and
//                                      clientName (the VEN's name), answered 200 or 201
// {vtn} is the VTN's base URL, e.g. http://127.0.0.1:8080/openadr3/3.1.0 (http only; a bearer
// token when one is given). Contract: poll() and report() block for one HTTP exchange each
// (timeouts 5 s); a VTN error or an undecodable answer is an error naming the call, an event
// the translator refuses is counted in PollResult.refused with its message (the other events
// are still scheduled); no thread of its own.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "fleet/grid.hpp"

namespace fw::fleet {

struct VenOptions {
  std::string vtn_url;  // base URL of the VTN's API
  std::string token;    // bearer token (empty: none sent)
  std::string ven_name = "flexwatt";
  std::string program_id;   // empty: every program's events
  double ramp_w_per_s = 0;  // given to the translated targets
};

struct PollResult {
  int events = 0;                    // events the VTN listed
  int scheduled = 0;                 // new or changed events scheduled (every interval)
  int unchanged = 0;                 // seen before, not changed
  std::vector<std::string> refused;  // "<event id>: <why>" (translator or schedule refusals)
};

class OpenAdrVen {
 public:
  // Events go to schedule(group, targets); a non-200 ScheduleChange is a refusal.
  using ScheduleSink =
      std::function<Result<ScheduleChange>(const std::string&, const std::vector<GridTarget>&)>;
  static Result<std::unique_ptr<OpenAdrVen>> Create(VenOptions options);

  // One poll of the VTN's events; site_w turns SIMPLE levels into watts.
  Result<PollResult> poll(double site_w, const ScheduleSink& schedule);
  // Posts the report of event_id (its programID when the event was polled) from samples.
  Status report(const std::string& event_id, const std::vector<PowerSample>& samples,
                double start_unix_s, double interval_s);

 private:
  explicit OpenAdrVen(VenOptions o) : o_(std::move(o)) {}
  VenOptions o_;
  std::string scheme_host_, base_path_;
  std::map<std::string, std::string> seen_;     // event id -> version seen
  std::map<std::string, std::string> program_;  // event id -> its programID
};

}  // namespace fw::fleet
