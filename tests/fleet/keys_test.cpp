#include "fleet/keys.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

namespace fw::fleet {
namespace {

NodeRecord sample_node() {
  NodeRecord n;
  n.node = "gpu-07";
  n.gpus = 8;
  n.nameplate_w = 5600;
  n.min_w = 1600;
  n.draw_w = 4210.5;
  n.cap_w = 4800;
  n.time_unix_s = 1764532800.25;
  n.jobs = {{"grpo-72b", 4, 2380, 0.6, 0.42, 1000}, {"sft-7b", 2, 900, 0.2, 0.1, 0}};
  return n;
}

TEST(FleetKeys, Layout) {
  EXPECT_EQ(node_key("s1", "n1"), "/flexwatt/s1/nodes/n1");
  EXPECT_EQ(assign_key("s1", "n1"), "/flexwatt/s1/assign/n1");
  EXPECT_EQ(budget_key("s1"), "/flexwatt/s1/budget");
  EXPECT_EQ(grid_target_key("s1"), "/flexwatt/s1/budget/grid");
  EXPECT_EQ(election_name("s1"), "/flexwatt/s1/coordinator");
  EXPECT_EQ(*node_of_key("s1", "/flexwatt/s1/nodes/n-1.a"), "n-1.a");
  EXPECT_EQ(*node_of_key("s1", "/flexwatt/s1/assign/n2"), "n2");
  EXPECT_EQ(node_of_key("s1", "/flexwatt/s2/nodes/n2").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(node_of_key("s1", "/flexwatt/s1/nodes/a/b").ok());
  EXPECT_TRUE(check_name("node", "a.B_9-z").ok());
  EXPECT_FALSE(check_name("node", "").ok());
  EXPECT_FALSE(check_name("node", "a/b").ok());
  EXPECT_FALSE(check_name("site", std::string(65, 'a')).ok());
}

TEST(FleetKeys, NodeRoundTrip) {
  const NodeRecord n = sample_node();
  auto d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->node, n.node);
  EXPECT_EQ(d->gpus, 8);
  EXPECT_EQ(d->nameplate_w, 5600);
  EXPECT_EQ(d->min_w, 1600);
  EXPECT_EQ(d->draw_w, 4210.5);
  EXPECT_EQ(d->cap_w, 4800);
  EXPECT_EQ(d->time_unix_s, n.time_unix_s);
  ASSERT_EQ(d->jobs.size(), 2u);
  EXPECT_EQ(d->jobs[0].id, "grpo-72b");
  EXPECT_EQ(d->jobs[0].gpus, 4);
  EXPECT_EQ(d->jobs[0].pfi, 0.42);
  EXPECT_EQ(d->jobs[0].elasticity, 0.6);
  EXPECT_EQ(d->jobs[0].min_w, 1000);
  EXPECT_EQ(d->jobs[1].min_w, 0);
}

// A node's paused draw (the holdable target's) is optional: absent, it reads as not published
// (< 0) and is not written; published, it round-trips; out of range, the field is named; the
// coordinator's hold tier is never published.
TEST(FleetKeys, PausedDrawIsOptionalAndHoldTierIsNotPublished) {
  NodeRecord n = sample_node();
  n.jobs[0].hold_tier = 0.3;
  auto d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_LT(d->paused_draw_w, 0);
  EXPECT_EQ(nlohmann::json::parse(encode(n)).count("paused_draw_w"), 0u);
  EXPECT_EQ(encode(n).find("hold_tier"), std::string::npos);
  EXPECT_LT(d->jobs[0].hold_tier, 0);
  n.paused_draw_w = 480;
  d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_DOUBLE_EQ(d->paused_draw_w, 480);
  auto j = nlohmann::json::parse(encode(n));
  j["paused_draw_w"] = -1;
  auto bad = decode_node(j.dump(), "k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("paused_draw_w"), std::string::npos);
}

// A node's draw curve (the site loop's feed-forward) round-trips, is optional, and is read by
// curve_draw_w between and outside its points.
TEST(FleetKeys, NodeDrawCurveRoundTripsAndInterpolates) {
  NodeRecord n = sample_node();
  EXPECT_EQ(nlohmann::json::parse(encode(n)).count("draw_curve"), 0u);
  n.draw_curve = {{1600, 1500}, {3600, 3000}, {5600, 4200}};
  auto d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->draw_curve.size(), 3u);
  EXPECT_EQ(d->draw_curve[1], std::make_pair(3600.0, 3000.0));
  EXPECT_DOUBLE_EQ(curve_draw_w(d->draw_curve, 2600), 2250);
  EXPECT_DOUBLE_EQ(curve_draw_w(d->draw_curve, 9000), 4200);
  EXPECT_DOUBLE_EQ(curve_draw_w(d->draw_curve, 800), 750);  // scaled under the first point
  EXPECT_DOUBLE_EQ(curve_draw_w({}, 1234), 1234);           // none: the share is drawn
}

TEST(FleetKeys, DemandResponseFieldsRoundTripAndAreAdditive) {
  NodeRecord n = sample_node();
  // Absent by default: older readers see the same record.
  const nlohmann::json plain = nlohmann::json::parse(encode(n));
  EXPECT_EQ(plain.count("throughput_curve"), 0u);
  EXPECT_EQ(plain["jobs"][0].count("tier_min"), 0u);
  EXPECT_EQ(plain["jobs"][0].count("pausable"), 0u);
  n.jobs[0].tier_min = 0.75;
  n.jobs[0].pausable = true;
  n.throughput_curve = {{1600, 0.4}, {3600, 0.9}, {5600, 1.0}};
  auto d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_DOUBLE_EQ(d->jobs[0].tier_min, 0.75);
  EXPECT_TRUE(d->jobs[0].pausable);
  EXPECT_FALSE(d->jobs[1].pausable);
  ASSERT_EQ(d->throughput_curve.size(), 3u);
  EXPECT_EQ(d->throughput_curve[1], std::make_pair(3600.0, 0.9));
  Assignment a;
  a.watts = 800;
  a.revision = 3;
  a.expires_unix_s = 10;
  EXPECT_EQ(nlohmann::json::parse(encode(a)).count("pause"), 0u);
  a.pause = true;
  auto da = decode_assignment(encode(a), "k");
  ASSERT_TRUE(da.ok()) << da.status().message();
  EXPECT_TRUE(da->pause);
  auto bad = decode_assignment(R"({"watts":1,"revision":1,"expires_unix_s":1,"pause":1})", "k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pause: not a boolean"), std::string::npos);
  // The stop gate: a job's announced end and the node's stop slot, additive both ways.
  EXPECT_EQ(plain["jobs"][0].count("ends_at_unix_s"), 0u);
  EXPECT_EQ(nlohmann::json::parse(encode(a)).count("stop_at_unix_s"), 0u);
  n.jobs[0].ends_at_unix_s = 1.9e9;
  d = decode_node(encode(n), "k");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_DOUBLE_EQ(d->jobs[0].ends_at_unix_s, 1.9e9);
  EXPECT_DOUBLE_EQ(d->jobs[1].ends_at_unix_s, 0);
  a.stop_at_unix_s = 1.95e9;
  da = decode_assignment(encode(a), "k");
  ASSERT_TRUE(da.ok()) << da.status().message();
  EXPECT_DOUBLE_EQ(da->stop_at_unix_s, 1.95e9);
  bad =
      decode_assignment(R"({"watts":1,"revision":1,"expires_unix_s":1,"stop_at_unix_s":-1})", "k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stop_at_unix_s"), std::string::npos);
}

// Decoding errors name the key and the field.
void expect_error(const Result<NodeRecord>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(FleetKeys, NodeStrictErrorsNameTheField) {
  const std::string key = "/flexwatt/s1/nodes/gpu-07";
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(encode(sample_node()));
    edit(j);
    return decode_node(j.dump(), key);
  };
  expect_error(decode_node("{", key), key + ": not valid JSON");
  expect_error(decode_node("[1]", key), "not a JSON object");
  expect_error(with([](auto& j) { j.erase("gpus"); }), key + ": gpus: missing");
  expect_error(with([](auto& j) { j["gpus"] = 0; }), "gpus: must be >= 1");
  expect_error(with([](auto& j) { j["gpus"] = 2.5; }), "gpus: not an integer");
  expect_error(with([](auto& j) { j["draw_w"] = "100"; }), "draw_w: not a number");
  expect_error(with([](auto& j) { j["min_w"] = 6000; }), "min_w: must be <=");
  expect_error(with([](auto& j) { j["node"] = "a b"; }), "node: node name");
  expect_error(with([](auto& j) { j["extra"] = 1; }), "extra: unknown field");
  expect_error(with([](auto& j) { j["jobs"][1]["pfi"] = -0.1; }),
               key + ": jobs[1].pfi: must be >= 0");
  expect_error(with([](auto& j) { j["jobs"][0].erase("id"); }), "jobs[0].id: missing");
  expect_error(with([](auto& j) { j["jobs"][0]["color"] = "red"; }),
               "jobs[0].color: unknown field");
  expect_error(with([](auto& j) { j["jobs"][0]["gpus"] = 7; }), "jobs: use 9 GPUs, node has 8");
  expect_error(with([](auto& j) { j["jobs"] = 3; }), "jobs: not an array");
  // Upper bounds: one bad writer cannot overflow the split (gpus used to be cast to int).
  expect_error(with([](auto& j) { j["gpus"] = int64_t{1} << 50; }), "gpus: must be <= 4096");
  expect_error(with([](auto& j) { j["draw_w"] = 1e300; }), "draw_w: must be <=");
  expect_error(with([](auto& j) { j["time_unix_s"] = 1e300; }), "time_unix_s: must be <=");
  expect_error(with([](auto& j) { j["jobs"][0]["pfi"] = 1e9; }), "jobs[0].pfi: must be <= 100");
  expect_error(with([](auto& j) { j["draw_curve"] = 1; }), "draw_curve: not an array");
  expect_error(with([](auto& j) { j["draw_curve"] = {{1, 2}}; }), "draw_curve: needs 2..64");
  expect_error(with([](auto& j) {
                 j["draw_curve"] = {{1, 2}, {1, 3}};
               }),
               "draw_curve[1]: budgets must increase");
  expect_error(with([](auto& j) {
                 j["draw_curve"] = {{1, 2}, {2, -3}};
               }),
               "draw_curve[1]: draw_w out of range");
  expect_error(with([](auto& j) {
                 j["draw_curve"] = {{1, 2}, {2}};
               }),
               "draw_curve[1]: not a [budget_w, draw_w] pair");
  expect_error(with([](auto& j) {
                 j["throughput_curve"] = {{1, 0.5}, {2, 1.6}};
               }),
               "throughput_curve[1]: t_rel out of range");
  expect_error(with([](auto& j) { j["jobs"][0]["tier_min"] = 1.5; }),
               "jobs[0].tier_min: must be <= 1");
  expect_error(with([](auto& j) { j["jobs"][0]["pausable"] = "yes"; }),
               "jobs[0].pausable: not a boolean");
}

TEST(FleetKeys, AssignmentBudgetGridRoundTripAndErrors) {
  Assignment a{3200.5, 41, 1764532830.0, "join"};
  auto ad = decode_assignment(encode(a), "k");
  ASSERT_TRUE(ad.ok()) << ad.status().message();
  EXPECT_EQ(ad->watts, 3200.5);
  EXPECT_EQ(ad->revision, 41);
  EXPECT_EQ(ad->expires_unix_s, 1764532830.0);
  EXPECT_EQ(ad->reason, "join");
  auto bad = decode_assignment(R"({"watts":1,"revision":0,"expires_unix_s":5})", "/a");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/a: revision: must be >= 1"), std::string::npos);

  SiteBudget b{51200, 30, "operator", 1764532800};
  auto bd = decode_budget(encode(b), "k");
  ASSERT_TRUE(bd.ok()) << bd.status().message();
  EXPECT_EQ(bd->watts, 51200);
  EXPECT_EQ(bd->source, "operator");
  EXPECT_FALSE(decode_budget(R"({"watts":0,"source":"x","time_unix_s":1})", "k").ok());

  GridTarget g;
  g.value_w = 35840;
  g.start_unix_s = 100;
  g.end_unix_s = 400;
  g.ramp_w_per_s = 50;
  g.best_effort = true;
  g.correlation_id = "evt-1";
  auto gd = decode_grid_target(encode(g), "k");
  ASSERT_TRUE(gd.ok()) << gd.status().message();
  EXPECT_EQ(*gd->value_w, 35840);
  EXPECT_TRUE(gd->best_effort);
  EXPECT_EQ(gd->correlation_id, "evt-1");
  g.value_w.reset();  // null: back to the site default
  auto gn = decode_grid_target(encode(g), "k");
  ASSERT_TRUE(gn.ok());
  EXPECT_FALSE(gn->value_w.has_value());
  g.end_unix_s = 50;
  auto ge = decode_grid_target(encode(g), "k");
  ASSERT_FALSE(ge.ok());
  EXPECT_NE(ge.status().message().find("end_unix_s"), std::string::npos);
  EXPECT_FALSE(
      decode_grid_target(R"({"start_unix_s":1,"end_unix_s":0,"correlation_id":"c"})", "k").ok());
}

TEST(Keys, GridScheduleRoundTripsAndReadsALoneTarget) {
  GridTarget a;
  a.value_w = 700;
  a.start_unix_s = 10;
  a.end_unix_s = 20;
  a.correlation_id = "a";
  GridTarget b = a;
  b.value_w = 500;
  b.correlation_id = "b#1";
  GridSchedule s;
  s.events = {a, b};
  auto back = decode_grid_schedule(encode(s), "k");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->events.size(), 2u);
  EXPECT_EQ(back->events[1].correlation_id, "b#1");
  auto lone = decode_grid_schedule(encode(a), "k");
  ASSERT_TRUE(lone.ok());
  ASSERT_EQ(lone->events.size(), 1u);
  EXPECT_DOUBLE_EQ(*lone->events[0].value_w, 700);
  auto bad = decode_grid_schedule(
      R"({"events":[{"value_w":-1,"start_unix_s":0,"end_unix_s":0,"correlation_id":"c"}]})", "k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("events[0]"), std::string::npos);
}

TEST(FleetKeys, JoinMarkerRoundTripAndErrors) {
  EXPECT_EQ(join_key("s1", "n7"), "/flexwatt/s1/join/n7");
  auto n = node_of_key("s1", "/flexwatt/s1/join/n7");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, "n7");
  JoinMarker m;
  m.min_w = 400;
  auto back = decode_join(encode(m), "k");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->min_w, 400);
  auto bad = decode_join(R"({"min_w":-1})", "/flexwatt/s1/join/n7");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/flexwatt/s1/join/n7: min_w"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(decode_join(R"({"min_w":1,"x":2})", "k").ok());
  EXPECT_FALSE(decode_join(R"({})", "k").ok());
}

}  // namespace
}  // namespace fw::fleet
