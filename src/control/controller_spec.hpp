#pragma once
// Controller specifications as written on the command line: NAME[:ARG][,KEY=VALUE…]
// after the colon, e.g. "pid:kp=0.5,ki=0.1,knob=gen_concurrency" or "ppo:policies/x.json".
// After the colon, items are comma-separated; an item without '=' is the positional
// argument (at most one). A list "a,pid:kp=1,ki=2,b" splits on commas; an item holding '='
// (and no ':' before it) continues the previous controller's options.
//
// ControllerOptions gives typed access and turns unknown keys into errors listing the
// valid ones (InvalidArgument → exit code 2).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.hpp"

namespace fw {

struct ControllerSpec {
  std::string name;
  std::string positional;  // empty when absent
  std::vector<std::pair<std::string, std::string>> options;
  std::string text;  // as written
};

Result<ControllerSpec> parse_controller_spec(std::string_view text);
Result<std::vector<ControllerSpec>> parse_controller_list(std::string_view text);

class ControllerOptions {
 public:
  explicit ControllerOptions(const ControllerSpec& spec) : spec_(spec) {}
  // Error when an option is not in `valid` (message lists them), or when a positional
  // argument is given to a controller that takes none (takes_positional false).
  Status check(const std::vector<std::string>& valid, bool takes_positional = false) const;
  bool has(const std::string& key) const;
  Result<double> get_double(const std::string& key, double fallback, double min = -1e300,
                            double max = 1e300) const;
  Result<int> get_int(const std::string& key, int fallback, int min, int max) const;
  Result<bool> get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  const ControllerSpec& spec() const { return spec_; }

 private:
  const std::string* find(const std::string& key) const;
  Status bad(const std::string& key, const std::string& why) const;
  const ControllerSpec& spec_;
};

}  // namespace fw
