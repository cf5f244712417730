#include "core/config.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

const char* kDoc =
    "name: demo\n"
    "budget:\n"
    "  watts: 314.6\n"
    "  window_s: 30\n"
    "jobs:\n"
    "  - kind: grpo\n"
    "    group_size: 8\n"
    "  - kind: grpo\n"
    "    group_size: abc\n";

TEST(Config, ReadsTypedValues) {
  auto doc = ConfigNode::parse(kDoc, "s.yaml");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto w = (*doc)["budget"].get_double("watts", 0, 1, 1e6);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(*w, 314.6);
  EXPECT_EQ(*(*doc)["budget"].get_double("missing", 7.0), 7.0);
  EXPECT_EQ(*(*doc)["jobs"].at(0).get_int("group_size", 1), 8);
}

TEST(Config, ErrorsNameFileLineAndField) {
  auto doc = ConfigNode::parse(kDoc, "s.yaml");
  ASSERT_TRUE(doc.ok());
  auto g = (*doc)["jobs"].at(1).get_int("group_size", 1);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "s.yaml:9: jobs.1.group_size: 'abc' is not an integer");
  EXPECT_EQ(g.status().exit_code(), 2);
  auto r = (*doc)["budget"].get_double("watts", 0, 1, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("s.yaml:3: budget.watts: 314.6 is out of range"),
            std::string::npos);
}

TEST(Config, UnknownKeyListsValidOnes) {
  auto doc = ConfigNode::parse(kDoc, "s.yaml");
  Status s = (*doc)["budget"].reject_unknown({"watts"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "s.yaml:4: budget.window_s: unknown key 'window_s' (valid: watts)");
}

TEST(Config, SyntaxErrorNamesLine) {
  auto doc = ConfigNode::parse("a: 1\nb: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().message().rfind("bad.yaml:", 0), 0u);
}

TEST(Config, JsonIsAccepted) {
  auto doc = ConfigNode::parse(R"({"budget": {"watts": 250}})", "s.json");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(*(*doc)["budget"].get_double("watts", 0), 250);
}

TEST(Config, OverridesWalkMapsAndSequences) {
  auto doc = ConfigNode::parse(kDoc, "s.yaml");
  ASSERT_TRUE(apply_override(*doc, "jobs.0.group_size=4").ok());
  EXPECT_EQ(*(*doc)["jobs"].at(0).get_int("group_size", 1), 4);
  ASSERT_TRUE(apply_override(*doc, "budget.scope=gpu").ok());
  EXPECT_EQ(*(*doc)["budget"].get_string("scope", ""), "gpu");
  EXPECT_FALSE(apply_override(*doc, "jobs.5.group_size=4").ok());
  EXPECT_FALSE(apply_override(*doc, "nokey.x=1").ok());
  EXPECT_FALSE(apply_override(*doc, "novalue").ok());
}

TEST(Config, AKeyThatIsAMapIsAnErrorNotAnException) {
  // Found by fuzz/fuzz_scenario.cpp: "{coun}: 4" made yaml-cpp throw from reject_unknown.
  auto root = ConfigNode::parse("gpus:\n  - {model: a100, {coun}: 4}\n", "s.yaml");
  ASSERT_TRUE(root.ok());
  const ConfigNode gpu = (*root)["gpus"].at(0);
  const Status st = gpu.reject_unknown({"model", "count"});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("s.yaml:2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("a key must be a plain name"), std::string::npos) << st.message();
  EXPECT_EQ(gpu.keys(), std::vector<std::string>{"model"});
}

TEST(Config, SetErrorsNameTheArgument) {
  auto root = ConfigNode::parse("budget:\n  watts: 640\n", "s.yaml");
  ASSERT_TRUE(root.ok());
  ASSERT_TRUE(apply_override(*root, "budget.watts=abc").ok());
  const auto w = (*root)["budget"].get_double("watts", 0, 1, 1e9);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("--set budget.watts=abc: budget.watts:"), std::string::npos)
      << w.status().message();
}

}  // namespace
}  // namespace fw
