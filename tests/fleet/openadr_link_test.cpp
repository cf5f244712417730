// The site's OpenADR 3.1 VEN at work (fleet/openadr_link.hpp) against the strict VTN stub
// (vtn_stub.hpp): the report an event's reportDescriptors ask for is POSTed with RFC 3339
// times and the site's measured power and target per event interval; the VEN registers and
// subscribes once, again when the VTN forgets it; a notification polls at once; a VTN that
// fails or is down gets bounded retries with back-off while the coordinator keeps running;
// stop() returns while the VTN hangs. The report planning and building (openadr_report.hpp)
// and the config keys are tested without a network. Every wait has a deadline; etcd tests
// skip without etcd (or fail under CI=true, require_tool.hpp).

#include "fleet/openadr_link.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <regex>

#include "../require_tool.hpp"
#include "core/format.hpp"
#include "etcd_harness.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/coordinator_config.hpp"
#include "fleet/node_link.hpp"
#include "fleet/openadr_report.hpp"
#include "vtn_stub.hpp"

namespace fw::fleet {
namespace {

using Json = nlohmann::json;
using testing::eventually;
using testing::VtnStub;

const std::regex kRfc3339(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$)");

VenOptions ven_options(const std::string& url) {
  VenOptions o;
  o.vtn_url = url;
  o.token = "t";
  o.ven_name = "site-a";
  o.program_id = "dr-prog";
  o.timeout_s = 1;
  return o;
}

std::unique_ptr<OpenAdrVen> make_ven(const std::string& url) {
  auto v = OpenAdrVen::Create(ven_options(url));
  if (!v.ok()) std::abort();
  return std::move(v).value();
}

OpenAdrLinkOptions link_options(const std::string& site) {
  OpenAdrLinkOptions o;
  o.poll_s = 0.2;
  o.sample_s = 0.1;
  o.retry_min_s = 0.1;
  o.retry_max_s = 0.8;
  o.resource_name = site;
  return o;
}

// An event of dr-prog: intervals of interval_s from start_unix_s with these kW limits, and
// reportDescriptors asking (default timing: one report after the last interval) for payloads.
Json event_with_reports(const std::string& id, double start_unix_s, std::vector<double> kw,
                        double interval_s, const std::vector<std::string>& payloads) {
  Json ev = {{"id", id},
             {"objectType", "EVENT"},
             {"programID", "dr-prog"},
             {"eventName", "peak"},
             {"modificationDateTime", "2026-01-01T00:00:00Z"},
             {"payloadDescriptors", Json::array({{{"objectType", "EVENT_PAYLOAD_DESCRIPTOR"},
                                                  {"payloadType", "IMPORT_CAPACITY_LIMIT"},
                                                  {"units", "KW"}}})},
             {"intervalPeriod",
              {{"start", rfc3339_utc(start_unix_s)},
               {"duration", "PT" + std::to_string(int(interval_s)) + "S"}}},
             {"intervals", Json::array()},
             {"reportDescriptors", Json::array()}};
  for (size_t k = 0; k < kw.size(); ++k) {
    Json iv = {
        {"id", int(k)},
        {"payloads",
         Json::array({{{"type", "IMPORT_CAPACITY_LIMIT"}, {"values", Json::array({kw[k]})}}})}};
    if (k == 0) iv["intervalPeriod"] = ev["intervalPeriod"];
    ev["intervals"].push_back(iv);
  }
  for (const auto& p : payloads) {
    Json d = {{"payloadType", p}};
    if (p == "DEMAND") d["readingType"] = "MEAN";
    d["units"] = p == "USAGE" ? "KWH" : "KW";
    ev["reportDescriptors"].push_back(d);
  }
  return ev;
}

double payload(const Json& interval, const std::string& type) {
  for (const Json& p : interval["payloads"]) {
    if (p["type"] == type) return p["values"][0].get<double>();
  }
  return std::nan("");
}
std::string quality(const Json& interval) {
  for (const Json& p : interval["payloads"]) {
    if (p["type"] == "DATA_QUALITY") return p["values"][0];
  }
  return "";
}

CoordinatorOptions coord_options(const std::string& site) {
  CoordinatorOptions co;
  co.site = site;
  co.id = "a";
  co.lease_ttl_s = 2;
  co.campaign_timeout_s = 0.5;
  co.expiry_s = 4;
  co.refresh_s = 1;
  co.default_budget_w = 4000;
  co.tick_s = 0.05;
  return co;
}

OpenAdrVen::ScheduleSink coordinator_sink(Coordinator* c) {
  return [c](const std::string& g, const std::vector<GridTarget>& t) {
    return c->schedule_grid(g, t);
  };
}

// A node that draws 800 W, 1200 W uncontrolled (the report's DEMAND and BASELINE).
std::unique_ptr<NodeLink> node(const testing::EtcdCluster& c, const std::string& site) {
  NodeLinkOptions o;
  o.site = site;
  o.node = "n1";
  o.safe_share_w = 500;
  o.lease_ttl_s = 2;
  NodeRecord r;
  r.node = "n1";
  r.gpus = 4;
  r.nameplate_w = 1500;
  r.min_w = 100;
  r.draw_w = 800;
  r.cap_w = 800;
  r.uncontrolled_w = 1200;
  auto l = NodeLink::Start(testing::fast_client_options(c), o, r);
  if (!l.ok()) std::abort();
  return std::move(l).value();
}

// The issue's test: the coordinator, given an event whose reportDescriptors ask for DEMAND,
// USAGE, BASELINE and SETPOINT, POSTs one report after the event's last interval: the event's
// intervals (same ids, RFC 3339 starts, ISO 8601 durations), the site's measured draw and the
// target it held in each, accepted by the strict stub; polled again, nothing is posted twice.
TEST(OpenAdrLink, PostsTheReportAnEventAsksForWithRfc3339Times) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  auto coord = Coordinator::Start(testing::fast_client_options(**cluster), coord_options("adr-r"));
  ASSERT_TRUE(coord.ok()) << coord.status().message();
  auto n1 = node(**cluster, "adr-r");
  ASSERT_TRUE(
      eventually(8, [&] { return (*coord)->leader() && (*coord)->stats().last_power_w == 800; }));
  VtnStub vtn("t");
  const double s0 = std::ceil(unix_now_s()) + 2;
  vtn.set_events(Json::array({event_with_reports("ev-r", s0, {3.0, 2.5}, 2,
                                                 {"DEMAND", "USAGE", "BASELINE", "SETPOINT"})}));
  auto link = OpenAdrLink::Start(make_ven(vtn.url()), link_options("adr-r"),
                                 coordinator_reader(coord->get()), coordinator_sink(coord->get()));
  ASSERT_TRUE(link.ok()) << link.status().message();
  ASSERT_TRUE(eventually(12, [&] { return !vtn.reports().empty(); }))
      << "no report; stub rejections: " << ::testing::PrintToString(vtn.rejections())
      << " last error: " << (*link)->stats().last_error;
  const Json rep = vtn.reports()[0];
  EXPECT_EQ(rep["eventID"], "ev-r");
  EXPECT_EQ(rep["programID"], "dr-prog");
  EXPECT_EQ(rep["clientName"], "site-a");
  ASSERT_EQ(rep["resources"].size(), 1u);
  EXPECT_EQ(rep["resources"][0]["resourceName"], "adr-r");
  const Json& ivs = rep["resources"][0]["intervals"];
  ASSERT_EQ(ivs.size(), 2u) << rep.dump(2);
  for (int k = 0; k < 2; ++k) {
    const Json& iv = ivs[k];
    EXPECT_EQ(iv["id"], k);
    ASSERT_TRUE(iv["intervalPeriod"]["start"].is_string()) << iv.dump();
    const std::string start = iv["intervalPeriod"]["start"];
    EXPECT_TRUE(std::regex_match(start, kRfc3339)) << start;
    EXPECT_DOUBLE_EQ(*parse_time(iv["intervalPeriod"]["start"], "start"), s0 + 2 * k);
    EXPECT_EQ(iv["intervalPeriod"]["duration"], "PT2S");
    EXPECT_EQ(quality(iv), "OK") << iv.dump();
    EXPECT_NEAR(payload(iv, "DEMAND"), 0.8, 1e-9) << iv.dump();                   // kW measured
    EXPECT_NEAR(payload(iv, "USAGE"), 0.8 * 2 / 3600, 1e-9) << iv.dump();         // kWh
    EXPECT_NEAR(payload(iv, "BASELINE"), 1.2, 1e-9) << iv.dump();                 // kW uncontrolled
    EXPECT_NEAR(payload(iv, "SETPOINT"), k == 0 ? 3.0 : 2.5, 0.15) << iv.dump();  // kW target
  }
  std::set<std::string> described;
  for (const Json& d : rep["payloadDescriptors"]) {
    EXPECT_EQ(d["objectType"], "REPORT_PAYLOAD_DESCRIPTOR");
    described.insert(d["payloadType"].get<std::string>());
  }
  EXPECT_EQ(described,
            (std::set<std::string>{"DEMAND", "USAGE", "BASELINE", "SETPOINT", "DATA_QUALITY"}));
  std::printf("the POSTed report: %s\n", rep.dump(1).c_str());
  const int64_t polls = (*link)->stats().polls;
  ASSERT_TRUE(eventually(3, [&] { return (*link)->stats().polls >= polls + 3; }));
  EXPECT_EQ(vtn.reports().size(), 1u);
  EXPECT_EQ((*link)->stats().reports_posted, 1);
  EXPECT_TRUE(vtn.rejections().empty()) << ::testing::PrintToString(vtn.rejections());
  (*link)->stop();
  (*coord)->stop(true);
}

OpenAdrLink::ReadSite fake_site(std::atomic<bool>* leader = nullptr) {
  return [leader] {
    VenSiteReading r;
    r.leader = leader ? leader->load() : true;
    r.site_w = 4000;
    r.power_w = 800;
    r.baseline_w = 1200;
    r.target_w = 4000;
    return r;
  };
}

struct SinkLog {
  std::mutex mu;
  std::vector<std::string> groups;
  OpenAdrVen::ScheduleSink sink() {
    return [this](const std::string& g, const std::vector<GridTarget>&) -> Result<ScheduleChange> {
      std::lock_guard<std::mutex> lk(mu);
      groups.push_back(g);
      return ScheduleChange{};
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lk(mu);
    return groups.size();
  }
};

// Registration (POST /vens, a VenVenRequest) and the subscription (EVENT operations to the
// link's callback) happen once, however many polls follow; when the VTN forgets both (a
// restart on an empty store) the next cycle registers and subscribes again, once. A second
// leader (failover) finds the VEN by name and moves the subscription to its own callback.
TEST(OpenAdrLink, RegistersAndSubscribesOnceAndAgainWhenTheVtnForgets) {
  VtnStub vtn("t");
  SinkLog sink;
  auto link =
      OpenAdrLink::Start(make_ven(vtn.url()), link_options("site"), fake_site(), sink.sink());
  ASSERT_TRUE(link.ok()) << link.status().message();
  ASSERT_TRUE(eventually(5, [&] { return vtn.polls() >= 5; }));
  EXPECT_EQ(vtn.vens_created(), 1);
  EXPECT_EQ(vtn.subscriptions_created(), 1);
  EXPECT_EQ(vtn.subscription_updates(), 0);
  ASSERT_EQ(vtn.vens().size(), 1u);
  EXPECT_EQ(vtn.vens()[0]["venName"], "site-a");
  ASSERT_EQ(vtn.subscriptions().size(), 1u);
  const Json sub = vtn.subscriptions()[0];
  EXPECT_EQ(sub["clientName"], "site-a");
  EXPECT_EQ(sub["programID"], "dr-prog");
  EXPECT_EQ(sub["objectOperations"][0]["objects"], Json::array({"EVENT"}));
  EXPECT_EQ(sub["objectOperations"][0]["callbackUrl"], (*link)->callback_url());
  EXPECT_FALSE(sub["objectOperations"][0].value("bearerToken", "").empty());
  OpenAdrLinkStats st = (*link)->stats();
  EXPECT_EQ(st.ven_id, vtn.vens()[0]["id"]);
  EXPECT_EQ(st.subscription_id, sub["id"]);
  EXPECT_EQ(st.registrations, 1);
  EXPECT_EQ(st.subscriptions, 1);

  vtn.forget();
  ASSERT_TRUE(eventually(3, [&] {
    return vtn.vens_created() == 2 && vtn.subscriptions_created() == 2;
  })) << (*link)->stats().last_error;
  const int polls = vtn.polls();
  ASSERT_TRUE(eventually(5, [&] { return vtn.polls() >= polls + 5; }));
  EXPECT_EQ(vtn.vens_created(), 2);
  EXPECT_EQ(vtn.subscriptions_created(), 2);
  EXPECT_EQ((*link)->stats().registrations, 2);
  EXPECT_TRUE(vtn.rejections().empty()) << ::testing::PrintToString(vtn.rejections());
  (*link)->stop();

  // Failover: another member's link, its own callback: the VEN is found, not created; the
  // subscription is updated to the new callback, not duplicated.
  auto next =
      OpenAdrLink::Start(make_ven(vtn.url()), link_options("site"), fake_site(), sink.sink());
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(eventually(5, [&] { return (*next)->stats().polls >= 2; }));
  EXPECT_EQ(vtn.vens_created(), 2);
  EXPECT_EQ(vtn.subscriptions_created(), 2);
  EXPECT_EQ(vtn.subscription_updates(), 1);
  ASSERT_EQ(vtn.subscriptions().size(), 1u);
  EXPECT_EQ(vtn.subscriptions()[0]["objectOperations"][0]["callbackUrl"], (*next)->callback_url());
}

// With a long poll period, an event the VTN announces reaches the schedule at once through
// the subscription's callback; a notification without the subscription's token is refused.
TEST(OpenAdrLink, ANotificationPollsAtOnce) {
  VtnStub vtn("t");
  SinkLog sink;
  OpenAdrLinkOptions o = link_options("site");
  o.poll_s = 60;
  auto link = OpenAdrLink::Start(make_ven(vtn.url()), o, fake_site(), sink.sink());
  ASSERT_TRUE(link.ok());
  ASSERT_TRUE(eventually(5, [&] { return (*link)->stats().polls == 1; }));
  EXPECT_EQ(sink.size(), 0u);
  const double s0 = std::ceil(unix_now_s()) + 60;
  vtn.set_events(Json::array({event_with_reports("ev-n", s0, {3.0}, 60, {})}), true);
  ASSERT_TRUE(eventually(3, [&] { return sink.size() == 1; }));
  EXPECT_EQ(vtn.notified(), std::vector<int>{200});
  EXPECT_EQ((*link)->stats().notifications, 1);
  const std::string cb = (*link)->callback_url();
  httplib::Client cli(cb.substr(0, cb.find('/', 7)));
  auto res =
      cli.Post(cb.substr(cb.find('/', 7)), {{"Authorization", "Bearer wrong"}},
               R"({"objectType":"EVENT","operation":"UPDATE","object":{}})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ((*link)->stats().notifications, 1);
}

// Only the leading member speaks to the VTN: a follower's link sends nothing; leading, it
// registers and polls; no longer leading, it stops; leading again, it takes the events afresh.
TEST(OpenAdrLink, OnlyTheLeaderSpeaksToTheVtn) {
  VtnStub vtn("t");
  vtn.set_events(Json::array(
      {event_with_reports("ev-l", std::ceil(unix_now_s()) + 600, {3.0}, 60, {"DEMAND"})}));
  SinkLog sink;
  std::atomic<bool> leader{false};
  auto link = OpenAdrLink::Start(make_ven(vtn.url()), link_options("site"), fake_site(&leader),
                                 sink.sink());
  ASSERT_TRUE(link.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(vtn.request_times().empty());
  leader = true;
  ASSERT_TRUE(eventually(3, [&] { return vtn.polls() >= 2; }));
  EXPECT_EQ(sink.size(), 1u);
  EXPECT_EQ((*link)->stats().reports_owed, 1u);
  leader = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const size_t requests = vtn.request_times().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(vtn.request_times().size(), requests);
  EXPECT_EQ((*link)->stats().reports_owed, 0u);  // the new leader owes them
  leader = true;
  ASSERT_TRUE(eventually(3, [&] { return sink.size() == 2; }));  // the event taken afresh
  EXPECT_TRUE(eventually(1, [&] { return (*link)->stats().reports_owed == 1; }));
  EXPECT_EQ(vtn.vens_created(), 1);
}

// A VTN that answers 503, then refuses connections: retries with back-off (retry_min_s
// doubling to retry_max_s, one exchange per attempt, no busy loop), the coordinator's site
// loop keeps going (rounds, a grid target applied), and when the VTN is back on an empty store
// the VEN registers and subscribes again and posts the report that fell due meanwhile.
TEST(OpenAdrLink, BacksOffWhileTheVtnIsDownWithoutBlockingTheCoordinator) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  auto coord = Coordinator::Start(testing::fast_client_options(**cluster), coord_options("adr-b"));
  ASSERT_TRUE(coord.ok()) << coord.status().message();
  auto n1 = node(**cluster, "adr-b");
  ASSERT_TRUE(eventually(8, [&] { return (*coord)->leader(); }));
  VtnStub vtn("t");
  const double s0 = std::ceil(unix_now_s()) + 1;
  vtn.set_events(Json::array({event_with_reports("ev-b", s0, {3.0}, 2, {"DEMAND"})}));
  auto link = OpenAdrLink::Start(make_ven(vtn.url()), link_options("adr-b"),
                                 coordinator_reader(coord->get()), coordinator_sink(coord->get()));
  ASSERT_TRUE(link.ok());
  ASSERT_TRUE(eventually(3, [&] { return (*link)->stats().polls >= 1; }));
  EXPECT_EQ(vtn.vens_created(), 1);

  // 503 for 3.2 s: about 0.1, 0.2, 0.4, 0.8, 0.8, 0.8 s apart.
  vtn.set_failing(503);
  const size_t before = vtn.request_times().size();
  const int64_t rounds = (*coord)->stats().rounds;
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  const std::vector<double> t = vtn.request_times();
  const std::vector<double> failing(t.begin() + before, t.end());
  EXPECT_GE(failing.size(), 4u);
  EXPECT_LE(failing.size(), 12u) << "not backing off";
  for (size_t i = 1; i < failing.size(); ++i) {
    const double gap = failing[i] - failing[i - 1];
    EXPECT_GE(gap, 0.09) << "attempt " << i;
    EXPECT_LE(gap, 0.8 + 0.4) << "attempt " << i;
  }
  if (failing.size() >= 3) {
    EXPECT_GE(failing.back() - failing[failing.size() - 2], 0.7);
  }
  EXPECT_DOUBLE_EQ((*link)->stats().backoff_s, 0.8);
  // The coordinator's site loop went on meanwhile: refresh rounds, and a grid target applied.
  EXPECT_GE((*coord)->stats().rounds, rounds + 2);
  GridTarget g;
  g.value_w = 3500;
  g.start_unix_s = unix_now_s() - 1;
  g.end_unix_s = unix_now_s() + 600;
  g.correlation_id = "direct";
  ASSERT_TRUE((*coord)->put_grid_target(g).ok());
  EXPECT_TRUE(eventually(2, [&] { return (*coord)->stats().last_plan.effective_w == 3500; }));

  // Down (connection refused) for 2 s: still about one attempt per 0.8 s.
  vtn.set_failing(0);
  vtn.stop();
  const int64_t failures = (*link)->stats().vtn_failures;
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const int64_t down_failures = (*link)->stats().vtn_failures - failures;
  EXPECT_GE(down_failures, 1);
  EXPECT_LE(down_failures, 5);
  EXPECT_TRUE(vtn.reports().empty());

  // Back, having forgotten the VEN: registered and subscribed again, the owed report posted.
  vtn.forget();
  vtn.start();
  ASSERT_TRUE(eventually(3, [&] { return vtn.reports().size() == 1; }))
      << ::testing::PrintToString(vtn.rejections()) << " " << (*link)->stats().last_error;
  EXPECT_EQ(vtn.vens_created(), 2);
  EXPECT_EQ(vtn.subscriptions_created(), 2);
  EXPECT_EQ((*link)->stats().backoff_s, 0);
  const Json iv = vtn.reports()[0]["resources"][0]["intervals"][0];
  EXPECT_NEAR(payload(iv, "DEMAND"), 0.8, 1e-9) << iv.dump();
  (*link)->stop();
  (*coord)->stop(true);
}

// A VTN that accepts connections and never answers: each exchange ends at timeout_s, and
// stop() returns within about one timeout.
TEST(OpenAdrLink, StopsPromptlyWhileTheVtnHangs) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);  // never accepted: connects succeed, nothing is answered
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/api";
  std::atomic<int> reads{0};
  auto read = [&reads] {
    ++reads;
    return fake_site()();
  };
  SinkLog sink;
  auto link = OpenAdrLink::Start(make_ven(url), link_options("site"), read, sink.sink());
  ASSERT_TRUE(link.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const OpenAdrLinkStats st = (*link)->stats();
  EXPECT_GE(st.vtn_failures, 1);
  EXPECT_LE(st.vtn_failures, 3);  // each a 1 s timeout, then back-off
  EXPECT_NE(st.last_error.find("openadr"), std::string::npos) << st.last_error;
  const auto t0 = std::chrono::steady_clock::now();
  (*link)->stop();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  ::close(fd);
}

// --- openadr_report.hpp: which reports an event asks for, and what they carry.

std::vector<EventInterval> four_intervals() {
  std::vector<EventInterval> v;
  for (int k = 0; k < 4; ++k) v.push_back({10 + k, 1000.0 + 60 * k, 1060.0 + 60 * k});
  return v;
}

TEST(OpenAdrReport, PlansReportsFromDescriptors) {
  std::vector<std::string> unsupported;
  // Defaults: one report of every interval, due at the end of the last; descriptors of the
  // same timing share one report.
  auto r = plan_reports("e", "p", Json::parse(R"([{"payloadType":"DEMAND"},
      {"payloadType":"USAGE","readingType":"DIRECT_READ","units":"KWH"}])"),
                        four_intervals(), &unsupported);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].descriptors.size(), 2u);
  EXPECT_EQ(r[0].intervals.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0].due_unix_s, 1240);
  EXPECT_EQ(r[0].event_id, "e");
  EXPECT_EQ(r[0].program_id, "p");
  EXPECT_TRUE(unsupported.empty());
  // startInterval 1, numIntervals 2: intervals 1..2 (ids 11, 12), due at the end of 12.
  r = plan_reports("e", "p",
                   Json::parse(R"([{"payloadType":"DEMAND","startInterval":1,"numIntervals":2}])"),
                   four_intervals(), &unsupported);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].intervals.size(), 2u);
  EXPECT_EQ(r[0].intervals[0].id, 11);
  EXPECT_DOUBLE_EQ(r[0].due_unix_s, 1180);
  // frequency 1, repeat -1: one report per interval, each due at its end.
  r = plan_reports("e", "p", Json::parse(R"([{"payloadType":"DEMAND","frequency":1,"repeat":-1}])"),
                   four_intervals(), &unsupported);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[2].due_unix_s, 1180);
  EXPECT_EQ(r[2].intervals[0].id, 12);
  EXPECT_NE(r[0].key, r[1].key);
  // frequency 2, repeat 1 (the default): only the first two intervals.
  r = plan_reports("e", "p", Json::parse(R"([{"payloadType":"DEMAND","frequency":2}])"),
                   four_intervals(), &unsupported);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].intervals.size(), 2u);
  // Not supported, each named: a forecast, an unknown payload, a unit that does not fit,
  // open intervals; the rest still planned.
  unsupported.clear();
  r = plan_reports("e", "p", Json::parse(R"([{"payloadType":"DEMAND","historical":false},
      {"payloadType":"PRICE"}, {"payloadType":"USAGE","units":"KW"},
      {"payloadType":"DEMAND","reportIntervals":"OPEN_INTERVALS"},
      {"payloadType":"DEMAND","readingType":"FORECAST"},
      {"payloadType":"BASELINE","startInterval":9},
      {"payloadType":"SETPOINT"}])"),
                   four_intervals(), &unsupported);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].descriptors[0].payload_type, "SETPOINT");
  ASSERT_EQ(unsupported.size(), 6u) << ::testing::PrintToString(unsupported);
  EXPECT_NE(unsupported[0].find("reportDescriptors[0]"), std::string::npos) << unsupported[0];
  EXPECT_NE(unsupported[0].find("historical"), std::string::npos) << unsupported[0];
  EXPECT_NE(unsupported[1].find("PRICE"), std::string::npos) << unsupported[1];
  EXPECT_NE(unsupported[5].find("startInterval"), std::string::npos) << unsupported[5];
}

TEST(OpenAdrReport, CarriesMeasuredPowerTargetAndQualityPerInterval) {
  auto plan = plan_reports("e", "p", Json::parse(R"([{"payloadType":"DEMAND","units":"W"},
      {"payloadType":"DEMAND","readingType":"PEAK","units":"KW"},
      {"payloadType":"USAGE"}, {"payloadType":"BASELINE"}, {"payloadType":"SETPOINT"}])"),
                           four_intervals(), nullptr);
  // DEMAND twice (MEAN in W, PEAK in kW): one report, both descriptors.
  ASSERT_EQ(plan.size(), 1u);
  // Samples every second: interval 10 at 1000 W then 3000 W (half each), interval 11 covered
  // 30 s of 60, interval 12 none, interval 13 flat 2000 W; target 2500 W, baseline 4000 W.
  std::vector<SiteSample> s;
  for (int t = 1000; t <= 1090; ++t)
    s.push_back({double(t), t < 1030 ? 1000.0 : 3000.0, 4000, 2500});
  for (int t = 1180; t <= 1241; ++t) s.push_back({double(t), 2000, 4000, 2500});
  Json rep = build_report(plan[0], s, 2, "ven-a", "hall-a");
  EXPECT_EQ(rep["objectType"], "REPORT");
  EXPECT_EQ(rep["eventID"], "e");
  EXPECT_EQ(rep["programID"], "p");
  EXPECT_EQ(rep["clientName"], "ven-a");
  ASSERT_EQ(rep["payloadDescriptors"].size(), 6u);  // five asked, DATA_QUALITY
  EXPECT_EQ(rep["payloadDescriptors"][0]["units"], "W");
  EXPECT_EQ(rep["payloadDescriptors"][0]["readingType"], "MEAN");
  EXPECT_EQ(rep["payloadDescriptors"][1]["readingType"], "PEAK");
  const Json& ivs = rep["resources"][0]["intervals"];
  ASSERT_EQ(ivs.size(), 4u);
  EXPECT_EQ(rep["resources"][0]["resourceName"], "hall-a");
  EXPECT_EQ(ivs[0]["id"], 10);
  EXPECT_EQ(ivs[0]["intervalPeriod"]["start"], "1970-01-01T00:16:40.000Z");
  EXPECT_EQ(ivs[0]["intervalPeriod"]["duration"], "PT60S");
  // The two DEMAND payloads: mean 2000 W and peak 3 kW; payloads in descriptor order.
  EXPECT_EQ(ivs[0]["payloads"][0]["type"], "DEMAND");
  EXPECT_DOUBLE_EQ(ivs[0]["payloads"][0]["values"][0].get<double>(), 2000);
  EXPECT_DOUBLE_EQ(ivs[0]["payloads"][1]["values"][0].get<double>(), 3.0);
  EXPECT_NEAR(payload(ivs[0], "USAGE"), 2000.0 * 60 / 3.6e6, 1e-12);
  EXPECT_DOUBLE_EQ(payload(ivs[0], "BASELINE"), 4.0);
  EXPECT_DOUBLE_EQ(payload(ivs[0], "SETPOINT"), 2.5);
  EXPECT_EQ(quality(ivs[0]), "OK");
  // Half covered: the mean of what was seen, USAGE over the whole interval, ESTIMATED.
  EXPECT_DOUBLE_EQ(ivs[1]["payloads"][0]["values"][0].get<double>(), 3000);
  EXPECT_NEAR(payload(ivs[1], "USAGE"), 3000.0 * 60 / 3.6e6, 1e-12);
  EXPECT_EQ(quality(ivs[1]), "ESTIMATED");
  // No sample: DATA_QUALITY MISSING alone.
  ASSERT_EQ(ivs[2]["payloads"].size(), 1u);
  EXPECT_EQ(quality(ivs[2]), "MISSING");
  EXPECT_EQ(quality(ivs[3]), "OK");
  EXPECT_DOUBLE_EQ(ivs[3]["payloads"][0]["values"][0].get<double>(), 2000);
}

// --- coordinator.yaml: the openadr block's new keys.

TEST(OpenAdrLink, ConfigKeys) {
  const std::string dir = ::testing::TempDir();
  auto load = [&](const std::string& openadr) {
    const std::string path = dir + "/adr_link.yaml";
    std::ofstream(path) << "site: s\nid: a\netcd: [http://127.0.0.1:2379]\nopenadr: {vtn_url: "
                           "'http://127.0.0.1:9/openadr3/3.1.0'"
                        << openadr << "}\n";
    return load_coordinator_config(path);
  };
  auto c = load(
      ", retry_min_s: 2, retry_max_s: 120, callback_listen: '127.0.0.1:8741', "
      "callback_url: 'http://coord-a.example:8741/openadr/notify'");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->ven_link.retry_min_s, 2);
  EXPECT_DOUBLE_EQ(c->ven_link.retry_max_s, 120);
  EXPECT_EQ(c->ven_link.callback_host, "127.0.0.1");
  EXPECT_EQ(c->ven_link.callback_port, 8741);
  EXPECT_EQ(c->ven_link.callback_url, "http://coord-a.example:8741/openadr/notify");
  EXPECT_DOUBLE_EQ(c->ven_link.poll_s, 30);
  EXPECT_EQ(c->ven_link.resource_name, "s");
  c = load("");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->ven_link.retry_min_s, 1);
  EXPECT_DOUBLE_EQ(c->ven_link.retry_max_s, 300);
  EXPECT_EQ(c->ven_link.callback_host, "127.0.0.1");
  EXPECT_EQ(c->ven_link.callback_port, 0);
  for (const char* bad : {", retry_min_s: 0", ", retry_min_s: 10, retry_max_s: 5",
                          ", callback_listen: '0.0.0.0:8741'", ", callback_url: 'ftp://x'"}) {
    auto b = load(bad);
    EXPECT_FALSE(b.ok()) << bad;
  }
}

}  // namespace
}  // namespace fw::fleet
