#pragma once
// OpenAdrVen: the site's OpenADR 3.1 VEN (client side of the REST API; no OpenADR client
// library is packaged for Debian 12, so this speaks the few calls a site needs over HTTP):
//   GET  {vtn}/events[?programID=P]   every event the VTN publishes; each event new or changed
//                                      (its id with its modificationDateTime, else its whole
//                                      body) goes through the translator
//                                      (grid.hpp translate_openadr_events: every interval,
//                                      RFC 3339 times with offsets, ISO 8601 durations) into
//                                      the schedule sink (the coordinator's schedule_grid)
//   GET  {vtn}/vens/{id}, GET {vtn}/vens?venName=N, POST {vtn}/vens
//                                      registration: the VEN object named ven_name, found or
//                                      created (a VenVenRequest: objectType VEN_VEN_REQUEST,
//                                      venName)
//   GET  {vtn}/subscriptions/{id}, GET {vtn}/subscriptions?clientName=N[&programID=P],
//   POST {vtn}/subscriptions, PUT {vtn}/subscriptions/{id}
//                                      the subscription: clientName ven_name, programID, EVENT
//                                      CREATE/UPDATE/DELETE to a callback URL with its bearer
//                                      token; found, updated when its callback differs, or
//                                      created
//   POST {vtn}/reports                 a REPORT (openadr_report.hpp build_report), 200 or 201
// {vtn} is the VTN's base URL, e.g. http://127.0.0.1:8080/openadr3/3.1.0 (http only; a bearer
// token when one is given).
// Contract: every call blocks for its HTTP exchanges (each at most timeout_s to connect and
// timeout_s to read) and has no thread of its own; not thread-safe (one caller: OpenAdrLink).
// Errors name the call: Unavailable when the VTN is unreachable or answers 5xx, 408 or 429
// (worth retrying), PermissionDenied for 401/403, InvalidArgument for any other refusal or an
// undecodable answer. An event the translator refuses is counted in PollResult.refused with
// its message (the other events are still scheduled).

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "fleet/grid.hpp"
#include "fleet/openadr_report.hpp"

namespace fw::fleet {

struct VenOptions {
  std::string vtn_url;                // base URL of the VTN's API
  std::string token;                  // bearer token (empty: none sent)
  std::string ven_name = "flexwatt";  // venName, and clientName of subscriptions and reports
  std::string program_id;             // empty: every program's events
  double ramp_w_per_s = 0;            // given to the translated targets
  double timeout_s = 5;               // connect and read timeouts of each exchange
};

// An event new or changed at this poll, translated: what its reports need.
struct PolledEvent {
  std::string id, program_id;
  std::vector<EventInterval> intervals;
  nlohmann::json report_descriptors;  // the event's reportDescriptors (null: none)
};

struct PollResult {
  int events = 0;                    // events the VTN listed
  int scheduled = 0;                 // new or changed events scheduled (every interval)
  int unchanged = 0;                 // seen before, not changed
  std::vector<std::string> refused;  // "<event id>: <why>" (translator or schedule refusals)
  std::vector<PolledEvent> changed;  // new or changed events the translator took
};

class OpenAdrVen {
 public:
  // Events go to schedule(group, targets); a non-200 ScheduleChange is a refusal.
  using ScheduleSink =
      std::function<Result<ScheduleChange>(const std::string&, const std::vector<GridTarget>&)>;
  static Result<std::unique_ptr<OpenAdrVen>> Create(VenOptions options);

  // One poll of the VTN's events; site_w turns SIMPLE levels into watts.
  Result<PollResult> poll(double site_w, const ScheduleSink& schedule);

  // Registration: the VEN known by id still there, else found by venName, else created.
  // True when this call created it (POST /vens).
  Result<bool> register_ven();
  // The subscription of EVENT operations to callback_url (bearer: the token the VTN sends
  // there): the one known by id, else found by clientName (and programID); updated (PUT)
  // when its callback or token differ; else created.
  enum class Subscribed { kKept, kCreated, kUpdated };
  Result<Subscribed> subscribe(const std::string& callback_url, const std::string& bearer);
  const std::string& ven_id() const { return ven_id_; }
  const std::string& subscription_id() const { return subscription_id_; }

  // POST {vtn}/reports.
  Status post_report(const nlohmann::json& report);
  // Forgets the events seen: the next poll takes every event as new (a member that leads
  // again schedules and plans them afresh).
  void forget_events() { seen_.clear(); }

  const VenOptions& options() const { return o_; }

 private:
  explicit OpenAdrVen(VenOptions o) : o_(std::move(o)) {}
  struct Answer {
    int status = 0;
    nlohmann::json body;  // null when empty or not JSON
  };
  // One exchange; transport errors are Unavailable naming the call.
  Result<Answer> call(const std::string& method, const std::string& path,
                      const nlohmann::json* body = nullptr,
                      const std::multimap<std::string, std::string>& query = {});
  VenOptions o_;
  std::string scheme_host_, base_path_;
  std::map<std::string, std::string> seen_;  // event id -> version seen
  std::string ven_id_, subscription_id_;
};

// The error for an HTTP answer that is not one of those expected (see the contract above).
Status vtn_refusal(const std::string& call, int http_status);

}  // namespace fw::fleet
