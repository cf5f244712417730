#include "fleet/grid.hpp"

#include <gtest/gtest.h>

namespace fw::fleet {
namespace {

TEST(Grid, ParsesTimesAndDurations) {
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("1970-01-01T00:01:00Z"), "t"), 60.0);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("1970-01-01T00:00:01.5Z"), "t"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json(12.0), "t"), 12.0);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("1970-01-01T02:00:00+02:00"), "t"), 0.0);
  EXPECT_DOUBLE_EQ(*parse_duration("PT1H30M", "d"), 5400.0);
  EXPECT_DOUBLE_EQ(*parse_duration("P1DT1S", "d"), 86401.0);
  EXPECT_FALSE(parse_duration("1H", "d").ok());
  EXPECT_FALSE(parse_duration("PT5X", "d").ok());
}

TEST(Grid, LoadTargetUnitsDefaultsAndErrors) {
  auto t = parse_load_target(
      R"({"value":70,"unit":"kilowatt","start_time":100,"end_time":400,"correlation_id":"c1",
          "best_effort":true,"ramp_w_per_s":50})",
      10);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ(*t->value_w, 70000);
  EXPECT_DOUBLE_EQ(t->start_unix_s, 100);
  EXPECT_DOUBLE_EQ(t->end_unix_s, 400);
  EXPECT_TRUE(t->best_effort);
  auto null = parse_load_target(R"({"value":null,"correlation_id":"c2"})", 10);
  ASSERT_TRUE(null.ok());
  EXPECT_FALSE(null->value_w.has_value());
  EXPECT_DOUBLE_EQ(null->start_unix_s, 10);
  EXPECT_FALSE(parse_load_target(R"({"value":1,"unit":"hp","correlation_id":"c"})", 0).ok());
  EXPECT_FALSE(parse_load_target(R"({"value":1})", 0).ok());
  auto unknown = parse_load_target(R"({"value":1,"correlation_id":"c","valu":2})", 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("valu"), std::string::npos);
  EXPECT_FALSE(parse_load_target(R"({"value":1,"correlation_id":"c","start_time":5,
                                     "end_time":5})",
                                 0)
                   .ok());
}

TEST(Grid, EffectiveBudgetRampsDownBeforeStartAndUpAfterEnd) {
  GridTarget t;
  t.value_w = 700;
  t.start_unix_s = 100;
  t.end_unix_s = 200;
  t.ramp_w_per_s = 30;  // 300 W gap: 10 s ramps
  t.correlation_id = "c";
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 80), 1000);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 95), 850);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 100), 700);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 150), 700);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 205), 850);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 211), 1000);
  t.ramp_w_per_s = 0;
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 99), 1000);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 100), 700);
  t.value_w = 2000;  // above the site budget: no effect
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, t, 150), 1000);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, std::nullopt, 150), 1000);
}

// Issue 45: a target's ramp rates down and up are separate (a grid may allow a fast cut and
// ask for a slow return). ramp_up_w_per_s 0 (absent) keeps ramp_w_per_s both ways.
TEST(Grid, RampUpRateIsItsOwn) {
  auto t = parse_load_target(
      R"({"value":700,"start_time":100,"end_time":200,"correlation_id":"c",
          "ramp_w_per_s":30,"ramp_up_w_per_s":5})",
      10);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ(t->ramp_up_w_per_s, 5);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, *t, 95), 850);   // down at 30 W/s
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, *t, 210), 750);  // up at 5 W/s: 60 s
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, *t, 259), 995);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, *t, 261), 1000);
  EXPECT_EQ(ramp_state(1000, *t, 230), RampState::kRampingUp);
  // Stored and read back in etcd as it came.
  auto back = decode_grid_target(encode(*t), "grid");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->ramp_up_w_per_s, 5);
  auto bad = parse_load_target(
      R"({"value":700,"correlation_id":"c","ramp_w_per_s":30,"ramp_up_w_per_s":-1})", 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ramp_up_w_per_s"), std::string::npos);
}

TEST(Grid, OpenAdrEventsTranslate) {
  auto cap = translate_openadr_event(
      R"({"id":"ev-7","programID":"p","eventName":"peak",
          "payloadDescriptors":[{"payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],
          "intervals":[{"id":0,"intervalPeriod":{"start":"2026-01-01T00:00:00Z",
                        "duration":"PT5M"},
                        "payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[70]}]}]})",
      100000, 100);
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  EXPECT_DOUBLE_EQ(*cap->value_w, 70000);
  EXPECT_DOUBLE_EQ(cap->end_unix_s - cap->start_unix_s, 300);
  EXPECT_EQ(cap->correlation_id, "ev-7");
  EXPECT_DOUBLE_EQ(cap->ramp_w_per_s, 100);
  auto simple = translate_openadr_event(
      R"({"eventName":"s","intervalPeriod":{"start":0},
          "intervals":[{"id":0,"payloads":[{"type":"SIMPLE","values":[2]}]}]})",
      100000, 0);
  ASSERT_TRUE(simple.ok()) << simple.status().message();
  EXPECT_DOUBLE_EQ(*simple->value_w, 70000);
  auto zero = translate_openadr_event(
      R"({"intervalPeriod":{"start":0},"intervals":[{"payloads":[{"type":"SIMPLE","values":[0]}]}]})",
      100000, 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_FALSE(zero->value_w.has_value());
  EXPECT_FALSE(
      translate_openadr_event(
          R"({"intervalPeriod":{"start":0},"intervals":[{"payloads":[{"type":"PRICE","values":[1]}]}]})",
          1, 0)
          .ok());
}

TEST(Grid, OutOfRangeAndMalformedFieldsAreErrorsNamingThem) {
  auto msg = [](const Result<GridTarget>& r) {
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(msg(parse_load_target(R"({"value":1e308,"unit":"megawatt","correlation_id":"c"})", 0))
                .find("value: "),
            std::string::npos);
  // The product overflows to infinity: the message says so, not "null W".
  const std::string inf_msg =
      msg(parse_load_target(R"({"value":1e308,"unit":"megawatt","correlation_id":"c"})", 0));
  EXPECT_EQ(inf_msg.find("null"), std::string::npos) << inf_msg;
  EXPECT_NE(inf_msg.find("inf W"), std::string::npos) << inf_msg;
  EXPECT_NE(msg(parse_load_target(R"({"value":1,"correlation_id":"c","start_time":1e300})", 0))
                .find("start_time: "),
            std::string::npos);
  EXPECT_NE(msg(parse_load_target(R"({"value":1,"unit":5,"correlation_id":"c"})", 0))
                .find("unit: must be a string"),
            std::string::npos);
  const std::string long_id = std::string(300, 'a');
  EXPECT_NE(msg(parse_load_target(R"({"value":1,"correlation_id":")" + long_id + R"("})", 0))
                .find("correlation_id: longer than 256"),
            std::string::npos);
  EXPECT_FALSE(parse_duration("PT.S", "d").ok());  // threw std::invalid_argument
  EXPECT_FALSE(parse_duration("PT" + std::string(400, '9') + "S", "d").ok());  // out_of_range
  EXPECT_FALSE(parse_duration("PT99999999999S", "d").ok());                    // beyond 10 years
  const std::string head = R"({"intervalPeriod":{"start":0},"intervals":[{"payloads":[)";
  auto event = [&](const std::string& payload, const std::string& extra = "") {
    return translate_openadr_event(head + payload + "]}]" + extra + "}", 100000, 0);
  };
  EXPECT_NE(msg(event(R"({"type":"SIMPLE","values":[1e300]})")).find("SIMPLE level"),
            std::string::npos);
  EXPECT_NE(msg(event(R"({"type":"IMPORT_CAPACITY_LIMIT","values":[-5]})"))
                .find("IMPORT_CAPACITY_LIMIT: "),
            std::string::npos);
  EXPECT_NE(msg(event(R"({"type":7,"values":[1]})")).find("payloads"), std::string::npos);
  EXPECT_NE(msg(event(R"({"type":"SIMPLE","values":[1]})", R"(,"id":12)")).find("id: "),
            std::string::npos);
  EXPECT_NE(msg(translate_openadr_event(
                    R"({"intervalPeriod":{"start":0,"duration":5},"intervals":[{"payloads":[
                        {"type":"SIMPLE","values":[1]}]}]})",
                    1, 0))
                .find("duration: not a string"),
            std::string::npos);
}

TEST(Grid, ReportHasDemandUsageAndBaselinePerInterval) {
  std::vector<PowerSample> s;
  for (int i = 0; i <= 120; ++i) s.push_back({double(i), i < 60 ? 1000.0 : 2000.0, 3000.0});
  auto r = openadr_report(s, 0, 60, "ev", "site");
  const auto& iv = r["resources"][0]["intervals"];
  ASSERT_EQ(iv.size(), 2u);
  EXPECT_DOUBLE_EQ(iv[0]["payloads"][0]["values"][0].get<double>(), 1.0);  // kW
  EXPECT_DOUBLE_EQ(iv[1]["payloads"][0]["values"][0].get<double>(), 2.0);
  EXPECT_NEAR(iv[0]["payloads"][1]["values"][0].get<double>(), 60000.0 / 3.6e6, 1e-12);
  EXPECT_DOUBLE_EQ(iv[0]["payloads"][2]["values"][0].get<double>(), 3.0);
  EXPECT_EQ(iv[0]["payloads"][0]["type"], "DEMAND");
}

// OpenADR 3 times are RFC 3339 date-times (the schema's dateTime), never Unix numbers: the
// report's intervalPeriod.start, and its durations ISO 8601.
TEST(Grid, ReportTimesAreRfc3339) {
  std::vector<PowerSample> s;
  const double t0 = 1796600357;  // 2026-12-06T23:39:17Z
  for (int i = 0; i <= 120; ++i) s.push_back({t0 + i, 1000.0, 3000.0});
  auto r = openadr_report(s, t0, 60, "ev", "site");
  const auto& iv = r["resources"][0]["intervals"];
  ASSERT_EQ(iv.size(), 2u);
  ASSERT_TRUE(iv[0]["intervalPeriod"]["start"].is_string()) << iv[0]["intervalPeriod"].dump();
  EXPECT_DOUBLE_EQ(*parse_time(iv[0]["intervalPeriod"]["start"], "start"), t0);
  EXPECT_EQ(iv[0]["intervalPeriod"]["start"].get<std::string>().substr(0, 19),
            "2026-12-06T23:39:17");
  EXPECT_DOUBLE_EQ(*parse_time(iv[1]["intervalPeriod"]["start"], "start"), t0 + 60);
  EXPECT_EQ(iv[1]["intervalPeriod"]["duration"], "PT60S");
  for (const auto& d : r["payloadDescriptors"])
    EXPECT_EQ(d["objectType"], "REPORT_PAYLOAD_DESCRIPTOR");
}

TEST(Grid, RampStateFollowsTheEffectiveBudget) {
  GridTarget g;
  g.value_w = 600;
  g.start_unix_s = 100;
  g.end_unix_s = 200;
  g.ramp_w_per_s = 40;  // 400 W gap: 10 s ramps
  g.correlation_id = "c";
  const std::optional<GridTarget> t = g;
  EXPECT_EQ(ramp_state(1000, t, 80), RampState::kIdle);
  EXPECT_EQ(ramp_state(1000, t, 95), RampState::kRampingDown);
  EXPECT_EQ(ramp_state(1000, t, 150), RampState::kHolding);
  EXPECT_EQ(ramp_state(1000, t, 205), RampState::kRampingUp);
  EXPECT_EQ(ramp_state(1000, t, 211), RampState::kIdle);
  EXPECT_EQ(ramp_state(1000, std::nullopt, 150), RampState::kIdle);
  EXPECT_EQ(ramp_state(500, t, 150), RampState::kIdle);  // target above the site budget
  g.ramp_w_per_s = 0;                                    // a step never ramps
  EXPECT_EQ(ramp_state(1000, g, 99), RampState::kIdle);
  EXPECT_EQ(ramp_state(1000, g, 100), RampState::kHolding);
  EXPECT_STREQ(ramp_state_name(RampState::kRampingDown), "ramping_down");
  EXPECT_STREQ(ramp_state_name(RampState::kIdle), "idle");
}

TEST(Grid, Rfc3339OffsetsAndFullIso8601Durations) {
  // 2026-01-01T00:00:00-08:00 is 08:00 UTC.
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("2026-01-01T00:00:00-08:00"), "t"), 1767254400.0);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("2026-01-01T13:30:00.25+05:30"), "t"), 1767254400.25);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("2026-01-01t08:00:00z"), "t"), 1767254400.0);
  EXPECT_FALSE(parse_time(nlohmann::json("2026-01-01T00:00:00-8"), "t").ok());
  EXPECT_FALSE(parse_time(nlohmann::json("2026-01-01T00:00:00+24:00"), "t").ok());
  EXPECT_FALSE(parse_time(nlohmann::json("2026-01-01T00:00:00"), "t").ok());  // no zone
  // Nominal calendar units: a year 365 days, a month 30 days.
  EXPECT_DOUBLE_EQ(*parse_duration("P1Y", "d"), 365 * 86400.0);
  EXPECT_DOUBLE_EQ(*parse_duration("P2M", "d"), 60 * 86400.0);
  EXPECT_DOUBLE_EQ(*parse_duration("P1W", "d"), 7 * 86400.0);
  EXPECT_DOUBLE_EQ(*parse_duration("P1Y2M3DT4H5M6.5S", "d"),
                   365 * 86400.0 + 60 * 86400.0 + 3 * 86400.0 + 4 * 3600.0 + 5 * 60.0 + 6.5);
  EXPECT_DOUBLE_EQ(*parse_duration("PT1H30M", "d"), 5400.0);
  EXPECT_DOUBLE_EQ(*parse_duration("PT0,5S", "d"), 0.5);  // ISO 8601 allows a decimal comma
  EXPECT_FALSE(parse_duration("P1H", "d").ok());          // H only after T
  EXPECT_FALSE(parse_duration("PT", "d").ok());           // no component
  EXPECT_FALSE(parse_duration("P1D2Y", "d").ok());        // out of order
  EXPECT_FALSE(parse_duration("P11Y", "d").ok());         // beyond 10 years
}

TEST(Grid, RampRatesOutsideSaneRangesAreRefusedNamingTheField) {
  auto ramp = [](const std::string& r) {
    return parse_load_target(R"({"value":700,"correlation_id":"c","ramp_w_per_s":)" + r + "}", 0);
  };
  for (const char* bad : {"1e-300", "0.5", "1e13", "-1"}) {
    auto t = ramp(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("ramp_w_per_s"), std::string::npos) << bad;
  }
  EXPECT_TRUE(ramp("0").ok());  // a step
  EXPECT_TRUE(ramp("1").ok());
  EXPECT_TRUE(ramp("1e12").ok());
  // A slow ramp over a deep cut still ends within an hour of the event's end.
  GridTarget g;
  g.value_w = 0;
  g.start_unix_s = 10000;
  g.end_unix_s = 20000;
  g.ramp_w_per_s = 1;  // 1e6 W gap: 11.6 days at 1 W/s
  g.correlation_id = "c";
  EXPECT_DOUBLE_EQ(effective_budget_w(1e6, g, 20000 + 3600), 1e6);
  EXPECT_EQ(ramp_state(1e6, g, 20000 + 3600), RampState::kIdle);
  EXPECT_LT(effective_budget_w(1e6, g, 20000 + 1800), 1e6);
}

TEST(GridSchedule, OverlapsTakeTheLowestAndPastEventsAreRefused) {
  auto ev = [](const char* id, double w, double start, double end) {
    GridTarget t;
    t.value_w = w;
    t.start_unix_s = start;
    t.end_unix_s = end;
    t.correlation_id = id;
    return t;
  };
  ScheduleChange a = schedule_events({}, "active", {ev("active", 700, 100, 400)}, 200);
  ASSERT_EQ(a.http_status, 200) << a.error;
  // A future event does not lift the active one.
  ScheduleChange b = schedule_events(a.schedule, "future", {ev("future", 800, 1000, 1200)}, 200);
  ASSERT_EQ(b.http_status, 200);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, b.schedule, 200), 700);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, b.schedule, 1100), 800);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, b.schedule, 500), 1000);
  // Overlapping: the most restrictive wins while both are in force.
  ScheduleChange c = schedule_events(b.schedule, "deep", {ev("deep", 500, 300, 350)}, 200);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, c.schedule, 320), 500);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, c.schedule, 360), 700);
  ASSERT_NE(binding_event(1000, c.schedule, 320), nullptr);
  EXPECT_EQ(binding_event(1000, c.schedule, 320)->correlation_id, "deep");
  // Wholly past, and a finished event replayed: 409, nothing changes.
  EXPECT_EQ(schedule_events(c.schedule, "old", {ev("old", 100, 10, 50)}, 200).http_status, 409);
  EXPECT_EQ(schedule_events(c.schedule, "active", {ev("active", 700, 100, 400)}, 500).http_status,
            409);
  // Same group: an update replaces; a null value cancels; an unknown cancel is 404.
  ScheduleChange d = schedule_events(c.schedule, "active", {ev("active", 600, 100, 400)}, 200);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, d.schedule, 200), 600);
  EXPECT_EQ(d.schedule.events.size(), 3u);
  GridTarget none;
  none.correlation_id = "active";
  ScheduleChange e = schedule_events(d.schedule, "active", {none}, 200);
  ASSERT_EQ(e.http_status, 200);
  EXPECT_DOUBLE_EQ(effective_budget_w(1000, e.schedule, 200), 1000);
  none.correlation_id = "nope";
  EXPECT_EQ(schedule_events(e.schedule, "nope", {none}, 200).http_status, 404);
  // Full.
  GridSchedule full;
  for (size_t i = 0; i < kMaxGridEvents; ++i)
    full.events.push_back(ev(("e" + std::to_string(i)).c_str(), 500, 1000, 2000));
  EXPECT_EQ(schedule_events(full, "more", {ev("more", 500, 1000, 2000)}, 0).http_status, 422);
}

TEST(GridSchedule, OpenAdrEveryIntervalIsAnEvent) {
  auto ev = translate_openadr_events(
      R"({"id":"ev-9","payloadDescriptors":[{"payloadType":"IMPORT_CAPACITY_LIMIT","units":"KW"}],
          "intervalPeriod":{"start":"2026-01-01T00:00:00-08:00","duration":"PT10M"},
          "intervals":[{"id":0,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[70]}]},
                       {"id":1,"payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[50]}]},
                       {"id":2,"intervalPeriod":{"start":"2026-01-01T09:00:00Z","duration":"PT1H30M"},
                        "payloads":[{"type":"SIMPLE","values":[3]}]}]})",
      100000, 0);
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  ASSERT_EQ(ev->size(), 3u);
  const double t0 = 1767254400;  // 08:00 UTC
  EXPECT_DOUBLE_EQ((*ev)[0].start_unix_s, t0);
  EXPECT_DOUBLE_EQ((*ev)[0].end_unix_s, t0 + 600);
  EXPECT_DOUBLE_EQ((*ev)[1].start_unix_s, t0 + 600);  // where the one before ended
  EXPECT_DOUBLE_EQ((*ev)[1].end_unix_s, t0 + 1200);
  EXPECT_DOUBLE_EQ((*ev)[2].start_unix_s, t0 + 3600);
  EXPECT_DOUBLE_EQ((*ev)[2].end_unix_s, t0 + 3600 + 5400);
  EXPECT_DOUBLE_EQ(*(*ev)[0].value_w, 70000);
  EXPECT_DOUBLE_EQ(*(*ev)[1].value_w, 50000);
  EXPECT_DOUBLE_EQ(*(*ev)[2].value_w, 50000);
  EXPECT_EQ((*ev)[1].correlation_id, "ev-9#1");
  ScheduleChange s = schedule_events({}, "ev-9", *ev, t0 - 10);
  ASSERT_EQ(s.http_status, 200);
  EXPECT_DOUBLE_EQ(effective_budget_w(100000, s.schedule, t0 + 900), 50000);
  EXPECT_DOUBLE_EQ(effective_budget_w(100000, s.schedule, t0 + 1500), 100000);
  // An interval that needs the previous one's end, which has none: 400 naming it.
  auto bad = translate_openadr_events(
      R"({"id":"x","intervals":[{"intervalPeriod":{"start":0},"payloads":[{"type":"SIMPLE","values":[1]}]},
                              {"payloads":[{"type":"SIMPLE","values":[1]}]}]})",
      1, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("intervals[1].intervalPeriod.start"), std::string::npos);
}

}  // namespace
}  // namespace fw::fleet
