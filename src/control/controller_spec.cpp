#include "control/controller_spec.hpp"

#include <cmath>

#include "core/csv.hpp"

namespace fw {
namespace {
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}
bool valid_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}
}  // namespace

Result<ControllerSpec> parse_controller_spec(std::string_view text) {
  ControllerSpec spec;
  spec.text = std::string(trim(text));
  const std::string_view t = trim(text);
  const size_t colon = t.find(':');
  spec.name = std::string(trim(t.substr(0, colon)));
  if (!valid_name(spec.name)) {
    return Status::InvalidArgument("controller '" + spec.text +
                                   "': expected NAME[:KEY=VALUE,...], e.g. pid:kp=0.5");
  }
  if (colon == std::string_view::npos) return spec;
  for (std::string_view item : split(t.substr(colon + 1), ',')) {
    if (item.empty()) {
      return Status::InvalidArgument("controller '" + spec.text + "': empty option");
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (!spec.positional.empty()) {
        return Status::InvalidArgument("controller '" + spec.text +
                                       "': more than one argument without '='");
      }
      spec.positional = std::string(item);
      continue;
    }
    const std::string key(trim(item.substr(0, eq)));
    const std::string value(trim(item.substr(eq + 1)));
    if (key.empty() || value.empty()) {
      return Status::InvalidArgument("controller '" + spec.text + "': option '" +
                                     std::string(item) + "' needs KEY=VALUE");
    }
    for (const auto& kv : spec.options) {
      if (kv.first == key) {
        return Status::InvalidArgument("controller '" + spec.text + "': option '" + key +
                                       "' given twice");
      }
    }
    spec.options.emplace_back(key, value);
  }
  return spec;
}

Result<std::vector<ControllerSpec>> parse_controller_list(std::string_view text) {
  std::vector<std::string> groups;
  for (std::string_view item : split(text, ',')) {
    const size_t eq = item.find('=');
    const size_t colon = item.find(':');
    const bool continues =
        eq != std::string_view::npos && (colon == std::string_view::npos || colon > eq);
    if (continues) {
      if (groups.empty()) {
        return Status::InvalidArgument("controllers '" + std::string(text) + "': option '" +
                                       std::string(item) + "' before any controller name");
      }
      groups.back() += (groups.back().find(':') == std::string::npos ? ":" : ",");
      groups.back() += std::string(item);
    } else {
      groups.emplace_back(item);
    }
  }
  std::vector<ControllerSpec> out;
  for (const std::string& g : groups) {
    FW_ASSIGN_OR_RETURN(ControllerSpec s, parse_controller_spec(g));
    out.push_back(std::move(s));
  }
  if (out.empty()) return Status::InvalidArgument("no controller given");
  return out;
}

Status ControllerOptions::check(const std::vector<std::string>& valid,
                                bool takes_positional) const {
  std::string list;
  for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
  if (list.empty()) list = "none";
  for (const auto& kv : spec_.options) {
    bool ok = false;
    for (const auto& v : valid) ok = ok || v == kv.first;
    if (!ok) {
      return Status::InvalidArgument("controller '" + spec_.name + "': unknown option '" +
                                     kv.first + "' (valid: " + list + ")");
    }
  }
  if (!takes_positional && !spec_.positional.empty()) {
    return Status::InvalidArgument("controller '" + spec_.name + "' takes no argument '" +
                                   spec_.positional + "' (options are KEY=VALUE; valid: " + list +
                                   ")");
  }
  return Status::Ok();
}

const std::string* ControllerOptions::find(const std::string& key) const {
  for (const auto& kv : spec_.options) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

bool ControllerOptions::has(const std::string& key) const { return find(key) != nullptr; }

Status ControllerOptions::bad(const std::string& key, const std::string& why) const {
  return Status::InvalidArgument("controller '" + spec_.name + "': option " + key + "=" +
                                 *find(key) + ": " + why);
}

Result<double> ControllerOptions::get_double(const std::string& key, double fallback, double min,
                                             double max) const {
  const std::string* v = find(key);
  if (v == nullptr) return fallback;
  double d;
  if (!parse_double(*v, d) || !std::isfinite(d)) return bad(key, "not a number");
  if (d < min || d > max) {
    return bad(key, "out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return d;
}

Result<int> ControllerOptions::get_int(const std::string& key, int fallback, int min,
                                       int max) const {
  const std::string* v = find(key);
  if (v == nullptr) return fallback;
  int64_t i;
  if (!parse_int64(*v, i)) return bad(key, "not an integer");
  if (i < min || i > max) {
    return bad(key, "out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int>(i);
}

Result<bool> ControllerOptions::get_bool(const std::string& key, bool fallback) const {
  const std::string* v = find(key);
  if (v == nullptr) return fallback;
  if (*v == "1" || *v == "true" || *v == "yes" || *v == "on") return true;
  if (*v == "0" || *v == "false" || *v == "no" || *v == "off") return false;
  return bad(key, "not a boolean (true/false)");
}

std::string ControllerOptions::get_string(const std::string& key,
                                          const std::string& fallback) const {
  const std::string* v = find(key);
  return v ? *v : fallback;
}

}  // namespace fw
