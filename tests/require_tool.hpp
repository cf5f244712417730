#pragma once
// FW_REQUIRE_TOOL(present, what): a test that needs an external tool (etcd, Prometheus,
// promtool, python3) calls it first. Without the tool the test is skipped on a developer
// machine, and FAILS under CI=true: CI installs every tool (`make deps`, .ci/run), so a skip
// there would hide a broken setup as a green run. Use in a TEST body or a fixture's SetUp
// (both return void); a helper that calls it must let its caller check the outcome.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fw::testing_tools {

// True when the environment says CI (CI=true, as GitHub Actions and .ci/run set it).
inline bool in_ci() {
  const char* c = std::getenv("CI");
  return c != nullptr && std::string(c) == "true";
}

// True when `name` is an executable found on PATH.
inline bool on_path(const std::string& name) {
  return std::system(("command -v " + name + " > /dev/null 2>&1").c_str()) == 0;
}

// The path in environment variable `env` when set (empty when that file does not exist),
// else `fallback` when it exists, else empty.
inline std::string tool_path(const char* env, const std::string& fallback) {
  if (const char* e = std::getenv(env); e != nullptr && *e != '\0') {
    return std::filesystem::exists(e) ? std::string(e) : std::string();
  }
  return std::filesystem::exists(fallback) ? fallback : std::string();
}

}  // namespace fw::testing_tools

#define FW_REQUIRE_TOOL(present, what)                                                \
  do {                                                                                \
    if (!(present)) {                                                                 \
      if (::fw::testing_tools::in_ci()) {                                             \
        FAIL() << what                                                                \
               << " not installed: under CI=true a missing tool is a failure, not a " \
                  "skip (make deps installs it)";                                     \
      }                                                                               \
      GTEST_SKIP() << what << " not installed (make deps installs it)";               \
    }                                                                                 \
  } while (0)
