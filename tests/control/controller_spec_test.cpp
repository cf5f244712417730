#include "control/controller_spec.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

TEST(ControllerSpec, ParsesNameOptionsAndPositional) {
  auto s = parse_controller_spec("pid:kp=0.5,ki=0.1,knob=gen_concurrency");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "pid");
  ASSERT_EQ(s->options.size(), 3u);
  EXPECT_EQ(s->options[2].first, "knob");
  EXPECT_EQ(s->options[2].second, "gen_concurrency");
  auto p = parse_controller_spec("ppo:policies/x.json");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->positional, "policies/x.json");
  EXPECT_TRUE(p->options.empty());
}

TEST(ControllerSpec, Errors) {
  EXPECT_FALSE(parse_controller_spec("").ok());
  EXPECT_FALSE(parse_controller_spec("pi d").ok());
  EXPECT_FALSE(parse_controller_spec("pid:kp=").ok());
  EXPECT_FALSE(parse_controller_spec("pid:=1").ok());
  EXPECT_FALSE(parse_controller_spec("pid:kp=1,kp=2").ok());
  EXPECT_FALSE(parse_controller_spec("pid:a,b").ok());
  EXPECT_FALSE(parse_controller_spec("pid:kp=1,,ki=2").ok());
  EXPECT_EQ(parse_controller_spec("pid:kp=1,kp=2").status().code(), StatusCode::kInvalidArgument);
}

TEST(ControllerSpec, ListSplitsOptionsToTheirController) {
  auto l = parse_controller_list("uncontrolled,pid:kp=1,ki=2,threshold,zeus:eta=0.3,ppo:a/b.json");
  ASSERT_TRUE(l.ok()) << l.status().message();
  ASSERT_EQ(l->size(), 5u);
  EXPECT_EQ((*l)[0].name, "uncontrolled");
  EXPECT_EQ((*l)[1].options.size(), 2u);
  EXPECT_EQ((*l)[1].options[1].first, "ki");
  EXPECT_EQ((*l)[2].name, "threshold");
  EXPECT_EQ((*l)[3].options[0].second, "0.3");
  EXPECT_EQ((*l)[4].positional, "a/b.json");
  EXPECT_FALSE(parse_controller_list("kp=1,pid").ok());
  EXPECT_FALSE(parse_controller_list("").ok());
}

TEST(ControllerOptions, UnknownOptionListsValidOnes) {
  auto s = parse_controller_spec("pid:kx=1");
  ASSERT_TRUE(s.ok());
  ControllerOptions o(*s);
  const Status st = o.check({"kp", "ki", "kd"});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("kx"), std::string::npos);
  EXPECT_NE(st.message().find("kp, ki, kd"), std::string::npos);
  auto pos = parse_controller_spec("pid:file.json");
  ControllerOptions po(*pos);
  EXPECT_FALSE(po.check({"kp"}).ok());
  EXPECT_TRUE(po.check({"kp"}, /*takes_positional=*/true).ok());
}

TEST(ControllerOptions, TypedValuesAndRanges) {
  auto s = parse_controller_spec("x:a=0.5,b=7,c=true,d=abc,e=2");
  ASSERT_TRUE(s.ok());
  ControllerOptions o(*s);
  EXPECT_DOUBLE_EQ(*o.get_double("a", 0), 0.5);
  EXPECT_DOUBLE_EQ(*o.get_double("zz", 3), 3);  // absent: fallback
  EXPECT_EQ(*o.get_int("b", 0, 0, 10), 7);
  EXPECT_FALSE(o.get_int("b", 0, 0, 5).ok());
  EXPECT_TRUE(*o.get_bool("c", false));
  EXPECT_FALSE(o.get_double("d", 0).ok());
  EXPECT_FALSE(o.get_double("e", 0, 0, 1).ok());
  EXPECT_EQ(o.get_string("d", ""), "abc");
}

}  // namespace
}  // namespace fw
