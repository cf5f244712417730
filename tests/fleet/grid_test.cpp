#include "fleet/grid.hpp"

#include <gtest/gtest.h>

namespace fw::fleet {
namespace {

TEST(Grid, ParsesTimesAndDurations) {
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("1970-01-01T00:01:00Z"), "t"), 60.0);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json("1970-01-01T00:00:01.5Z"), "t"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_time(nlohmann::json(12.0), "t"), 12.0);
  EXPECT_FALSE(parse_time(nlohmann::json("1970-01-01T00:00:00+02:00"), "t").ok());
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

}  // namespace
}  // namespace fw::fleet
