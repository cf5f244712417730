#include "registry/controller_registry.hpp"

#include <algorithm>

namespace fw::registry {
namespace {

std::string valid_names() {
  std::vector<std::string> n;
  for (const auto& e : controller_registry())
    n.push_back(e.name + (e.positional.empty() ? "" : ":" + e.positional));
  std::sort(n.begin(), n.end());
  std::string s;
  for (const auto& x : n) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

const std::vector<ControllerEntry>& controller_registry() {
  static const std::vector<ControllerEntry> r = builtin_controllers();
  return r;
}

Result<PreparedController> prepare_controller(const ControllerSpec& spec,
                                              const ControllerEnv& env) {
  for (const ControllerEntry& e : controller_registry()) {
    if (e.name != spec.name) continue;
    const DeclaredOptions o(spec, e.options);
    FW_RETURN_IF_ERROR(o.validate(!e.positional.empty()));
    if (!e.positional.empty() && spec.positional.empty()) {
      return Status::InvalidArgument("controller '" + e.name + "' needs an argument: " + e.name +
                                     ":" + e.positional);
    }
    FW_ASSIGN_OR_RETURN(PreparedController p, e.prepare(o, env));
    p.options = o.to_json();
    return p;
  }
  return Status::InvalidArgument("unknown controller '" + spec.name + "' (valid: " + valid_names() +
                                 "; see flexwatt eval --list)");
}

std::string controller_list_text() {
  auto entries = controller_registry();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::string s;
  for (const auto& e : entries) {
    s += e.name + (e.positional.empty() ? "" : ":" + e.positional) + "\n    " + e.summary + "\n";
    for (const auto& o : e.options) {
      const std::string allowed = o.allowed();
      s += "    " + o.name + "=" + (o.default_text.empty() ? "-" : o.default_text) + "  " + o.help +
           (allowed.empty() ? "" : (o.choices.empty() ? "; range " : "; one of ") + allowed) + "\n";
    }
  }
  return s;
}

nlohmann::json controller_list_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : controller_registry()) {
    nlohmann::json opts = nlohmann::json::array();
    for (const auto& o : e.options) opts.push_back(o.to_json());
    out.push_back({{"name", e.name},
                   {"summary", e.summary},
                   {"positional", e.positional},
                   {"options", opts}});
  }
  return out;
}

}  // namespace fw::registry
