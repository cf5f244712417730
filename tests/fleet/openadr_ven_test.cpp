// The OpenADR 3.1 VEN (fleet/openadr_ven.hpp) against the VTN stub (vtn_stub.hpp: the REST
// calls a VTN answers, on a loopback port, strict about the 3.1 shapes) and, for the
// end-to-end case, a real etcd with a coordinator: events with several intervals and RFC 3339
// offsets go through the translator into the site's schedule, and a report goes back.

#include "fleet/openadr_ven.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "../require_tool.hpp"
#include "core/format.hpp"
#include "etcd_harness.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/site_store.hpp"
#include "vtn_stub.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;

using testing::VtnStub;  // vtn_stub.hpp: strict about the 3.1 shapes

VenOptions ven(const std::string& url, const std::string& token,
               const std::string& name = "flexwatt", const std::string& program = "",
               double ramp = 0) {
  VenOptions o;
  o.vtn_url = url;
  o.token = token;
  o.ven_name = name;
  o.program_id = program;
  o.ramp_w_per_s = ramp;
  return o;
}

// An OpenADR 3 event of three intervals in Pacific time (-08:00), the first two with their own
// intervalPeriod, the third following the second; limits in kW.
Json three_interval_event(const std::string& id, const std::string& modified) {
  return Json::parse(R"({
    "objectType": "EVENT", "id": ")" +
                     id + R"(", "programID": "dr-prog",
    "eventName": "evening peak", "modificationDateTime": ")" +
                     modified + R"(",
    "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}],
    "reportDescriptors": [{"payloadType": "DEMAND", "readingType": "MEAN", "units": "KW"},
                          {"payloadType": "USAGE", "units": "KWH"}, {"payloadType": "BASELINE"}],
    "intervals": [
      {"id": 0, "intervalPeriod": {"start": "2099-06-01T17:00:00-08:00", "duration": "PT30M"},
       "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [3.0]}]},
      {"id": 1, "intervalPeriod": {"start": "2099-06-01T17:30:00-08:00", "duration": "PT1H"},
       "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [2.5]}]},
      {"id": 2, "intervalPeriod": {"duration": "PT15M"},
       "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [3.5]}]}
    ]})");
}

// 2099-06-01T17:00:00-08:00 = 2099-06-02T01:00:00Z.
constexpr double k17h = 4084045200;

TEST(OpenAdrVen, RejectsABadVtnUrl) {
  EXPECT_FALSE(OpenAdrVen::Create(ven("https://vtn.example/api", "")).ok());
  EXPECT_FALSE(OpenAdrVen::Create(ven("http:///x", "")).ok());
}

TEST(OpenAdrVen, IntervalsWithOffsetsReachTheSinkOnceAndTheirReportGoesBack) {
  VtnStub vtn("secret");
  auto v = OpenAdrVen::Create(ven(vtn.url(), "secret", "site-a", "dr-prog", 10));
  ASSERT_TRUE(v.ok()) << v.status().message();
  Json events = Json::array({three_interval_event("ev-1", "2099-05-30T10:00:00Z")});
  Json other = three_interval_event("ev-x", "2099-05-30T10:00:00Z");
  other["programID"] = "someone-else";
  events.push_back(other);
  vtn.set_events(events);
  std::vector<std::pair<std::string, std::vector<GridTarget>>> got;
  auto sink = [&](const std::string& g,
                  const std::vector<GridTarget>& t) -> Result<ScheduleChange> {
    got.emplace_back(g, t);
    ScheduleChange c;
    return c;
  };
  auto r = (*v)->poll(4000, sink);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->events, 1);  // the other program's event is filtered by the VTN
  EXPECT_EQ(r->scheduled, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "ev-1");
  ASSERT_EQ(got[0].second.size(), 3u);
  const auto& t = got[0].second;
  EXPECT_EQ(t[0].correlation_id, "ev-1#0");
  EXPECT_DOUBLE_EQ(t[0].start_unix_s, k17h);
  EXPECT_DOUBLE_EQ(t[0].end_unix_s, k17h + 1800);
  EXPECT_DOUBLE_EQ(*t[0].value_w, 3000);
  EXPECT_DOUBLE_EQ(t[1].start_unix_s, k17h + 1800);
  EXPECT_DOUBLE_EQ(t[1].end_unix_s, k17h + 5400);
  EXPECT_DOUBLE_EQ(*t[1].value_w, 2500);
  EXPECT_DOUBLE_EQ(t[2].start_unix_s, k17h + 5400);  // follows the interval before
  EXPECT_DOUBLE_EQ(t[2].end_unix_s, k17h + 6300);
  EXPECT_DOUBLE_EQ(t[2].ramp_w_per_s, 10);
  // Polled again unchanged: not scheduled again; modified: scheduled again.
  r = (*v)->poll(4000, sink);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unchanged, 1);
  EXPECT_EQ(got.size(), 1u);
  vtn.set_events(Json::array({three_interval_event("ev-1", "2099-05-31T10:00:00Z")}));
  r = (*v)->poll(4000, sink);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->scheduled, 1);
  EXPECT_EQ(got.size(), 2u);
  ASSERT_EQ(r->changed.size(), 1u);  // the modified event, with its intervals' ids and times
  const PolledEvent& pe = r->changed[0];
  EXPECT_EQ(pe.program_id, "dr-prog");
  ASSERT_EQ(pe.intervals.size(), 3u);
  EXPECT_EQ(pe.intervals[2].id, 2);
  EXPECT_DOUBLE_EQ(pe.intervals[2].start_unix_s, k17h + 5400);
  // The report its descriptors ask for (one, of the three intervals): 2.5 kW measured against
  // a 3.2 kW baseline throughout; the strict stub takes it.
  auto owed = plan_reports(pe.id, pe.program_id, pe.report_descriptors, pe.intervals, nullptr);
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_DOUBLE_EQ(owed[0].due_unix_s, k17h + 6300);
  std::vector<SiteSample> samples;
  for (int k = 0; k <= 6300; k += 10) samples.push_back({k17h + k, 2500, 3200, 3000});
  const Status posted = (*v)->post_report(build_report(owed[0], samples, 30, "site-a", "hall"));
  ASSERT_TRUE(posted.ok()) << posted.message() << " " << ::testing::PrintToString(vtn.rejections());
  auto reports = vtn.reports();
  ASSERT_EQ(reports.size(), 1u);
  const Json& rep = reports[0];
  EXPECT_EQ(rep["eventID"], "ev-1");
  EXPECT_EQ(rep["programID"], "dr-prog");
  EXPECT_EQ(rep["clientName"], "site-a");
  const Json& iv = rep["resources"][0]["intervals"][1];  // 17:30-08:00 for an hour
  EXPECT_EQ(iv["intervalPeriod"]["start"], "2099-06-02T01:30:00.000Z");
  EXPECT_EQ(iv["intervalPeriod"]["duration"], "PT3600S");
  EXPECT_NEAR(iv["payloads"][0]["values"][0].get<double>(), 2.5, 1e-9);  // DEMAND kW
  EXPECT_NEAR(iv["payloads"][1]["values"][0].get<double>(), 2.5, 1e-9);  // USAGE kWh (1 h)
  EXPECT_NEAR(iv["payloads"][2]["values"][0].get<double>(), 3.2, 1e-9);  // BASELINE kW
  // A report the VTN cannot place (an unknown event) is refused: InvalidArgument, not retried.
  Json stray = build_report(owed[0], samples, 30, "site-a", "hall");
  stray["eventID"] = "no-such-event";
  const Status refused = (*v)->post_report(stray);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.message();
  EXPECT_NE(refused.message().find("HTTP 400"), std::string::npos) << refused.message();
}

TEST(OpenAdrVen, VtnErrorsAndRefusedEventsAreReported) {
  VtnStub vtn("secret");
  auto wrong = OpenAdrVen::Create(ven(vtn.url(), "wrong"));
  ASSERT_TRUE(wrong.ok());
  auto sink = [](const std::string&, const std::vector<GridTarget>&) -> Result<ScheduleChange> {
    return ScheduleChange{};
  };
  auto r = (*wrong)->poll(4000, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HTTP 403"), std::string::npos) << r.status().message();
  auto v = OpenAdrVen::Create(ven(vtn.url(), "secret"));
  Json bad = three_interval_event("ev-bad", "x");
  bad["intervals"][0]["intervalPeriod"]["start"] = "2099-06-01T17:00:00";  // no zone
  vtn.set_events(Json::array({bad, three_interval_event("ev-ok", "x")}));
  r = (*v)->poll(4000, sink);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->scheduled, 1);
  ASSERT_EQ(r->refused.size(), 1u);
  EXPECT_NE(r->refused[0].find("ev-bad"), std::string::npos) << r->refused[0];
  EXPECT_NE(r->refused[0].find("start"), std::string::npos) << r->refused[0];
}

// End to end: the VEN's events land in the site's schedule in etcd through the coordinator.
TEST(OpenAdrVen, EventsReachTheSitesScheduleThroughTheCoordinator) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EtcdClientOptions eo;
  eo.endpoints = (*cluster)->endpoints();
  CoordinatorOptions co;
  co.site = "adr";
  co.id = "a";
  co.lease_ttl_s = 2;
  co.campaign_timeout_s = 0.5;
  co.expiry_s = 4;
  co.refresh_s = 1;
  co.default_budget_w = 4000;
  auto coord = Coordinator::Start(eo, co);
  ASSERT_TRUE(coord.ok()) << coord.status().message();
  VtnStub vtn("t");
  vtn.set_events(Json::array({three_interval_event("ev-1", "2099-05-30T10:00:00Z")}));
  auto v = OpenAdrVen::Create(ven(vtn.url(), "t", "site-a", "dr-prog", 0));
  ASSERT_TRUE(v.ok());
  auto r = (*v)->poll(4000, [&](const std::string& g, const std::vector<GridTarget>& t) {
    return (*coord)->schedule_grid(g, t);
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->scheduled, 1);
  auto admin = EtcdClient::Create(eo);
  ASSERT_TRUE(admin.ok());
  auto sched = read_grid_schedule(*admin, "adr");
  ASSERT_TRUE(sched.ok()) << sched.status().message();
  ASSERT_EQ(sched->events.size(), 3u);
  EXPECT_DOUBLE_EQ(sched->events[1].start_unix_s, k17h + 1800);
  EXPECT_DOUBLE_EQ(*sched->events[1].value_w, 2500);
  // During the second interval the effective budget is its 2.5 kW.
  EXPECT_DOUBLE_EQ(effective_budget_w(4000, *sched, k17h + 3600), 2500);
  (*coord)->stop(true);
}

}  // namespace
}  // namespace fw::fleet
