#include "core/config.hpp"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/csv.hpp"
#include "core/text_file.hpp"

namespace fw {
namespace {
std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}
}  // namespace

Result<ConfigNode> ConfigNode::parse(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  try {
    YAML::Node n = YAML::Load(text);
    if (!n.IsDefined() || n.IsNull()) return Status::InvalidArgument(name + ": empty document");
    return ConfigNode(n, file, "");
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Result<ConfigNode> ConfigNode::load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + ": is a directory, not a YAML file");
  }
  FW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse(text, path);
}

const std::string& ConfigNode::file() const {
  static const std::string kNone = "<config>";
  return file_ ? *file_ : kNone;
}

std::string ConfigNode::where() const {
  int line = node_.IsDefined() ? node_.Mark().line : -1;
  if (line < 0) line = parent_line_;
  if (line < 0) return file();
  return file() + ":" + std::to_string(line + 1);
}

Status ConfigNode::error(const std::string& message) const {
  for (const auto& [path, assignment] : *overrides_) {
    if (field_ == path || field_.rfind(path + ".", 0) == 0) {
      return Status::InvalidArgument("--set " + assignment + ": " + field_ + ": " + message);
    }
  }
  return Status::InvalidArgument(where() + ": " + (field_.empty() ? "" : field_ + ": ") + message);
}

void ConfigNode::note_override(const std::string& path, const std::string& assignment) {
  overrides_->emplace_back(path, assignment);
}

bool ConfigNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined();
}

ConfigNode ConfigNode::operator[](const std::string& key) const {
  YAML::Node child;
  if (node_.IsMap()) {
    const YAML::Node& c = node_;
    // A missing key yields an invalid ("zombie") node that cannot be assigned; keep the
    // default (null, undefined for defined()) node then.
    const YAML::Node found = c[key];
    if (found.IsDefined()) child = found;
  }
  ConfigNode out(child, file_, join_path(field_, key));
  out.overrides_ = overrides_;
  out.parent_line_ = node_.IsDefined() ? node_.Mark().line : parent_line_;
  return out;
}

ConfigNode ConfigNode::at(size_t i) const {
  YAML::Node child;
  if (node_.IsSequence() && i < node_.size()) {
    const YAML::Node& c = node_;
    child = c[i];
  }
  ConfigNode out(child, file_, join_path(field_, std::to_string(i)));
  out.overrides_ = overrides_;
  out.parent_line_ = node_.IsDefined() ? node_.Mark().line : parent_line_;
  return out;
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) {
    if (kv.first.IsScalar()) out.push_back(kv.first.Scalar());  // reject_unknown names others
  }
  return out;
}

Result<std::string> ConfigNode::as_string() const {
  if (!node_.IsDefined() || node_.IsNull()) return error("missing value");
  if (!node_.IsScalar()) return error("expected a single value");
  return node_.Scalar();
}

Result<double> ConfigNode::as_double(double min, double max) const {
  FW_ASSIGN_OR_RETURN(std::string s, as_string());
  double v;
  if (!parse_double(s, v) || !std::isfinite(v)) return error("'" + s + "' is not a number");
  if (v < min || v > max) {
    std::ostringstream os;
    os << s << " is out of range [" << min << ", " << max << "]";
    return error(os.str());
  }
  return v;
}

Result<int64_t> ConfigNode::as_int(int64_t min, int64_t max) const {
  FW_ASSIGN_OR_RETURN(std::string s, as_string());
  int64_t v;
  if (!parse_int64(s, v)) return error("'" + s + "' is not an integer");
  if (v < min || v > max) {
    return error(s + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

Result<bool> ConfigNode::as_bool() const {
  FW_ASSIGN_OR_RETURN(std::string s, as_string());
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  return error("'" + s + "' is not true or false");
}

Result<double> ConfigNode::get_double(const std::string& key, double fallback, double min,
                                      double max) const {
  if (!has(key)) return fallback;
  return (*this)[key].as_double(min, max);
}

Result<int64_t> ConfigNode::get_int(const std::string& key, int64_t fallback, int64_t min,
                                    int64_t max) const {
  if (!has(key)) return fallback;
  return (*this)[key].as_int(min, max);
}

Result<bool> ConfigNode::get_bool(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  return (*this)[key].as_bool();
}

Result<std::string> ConfigNode::get_string(const std::string& key,
                                           const std::string& fallback) const {
  if (!has(key)) return fallback;
  return (*this)[key].as_string();
}

Status ConfigNode::reject_unknown(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) return node_.IsDefined() ? error("expected a map of keys") : Status::Ok();
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {  // e.g. "{a}: 4": a map as a key
      ConfigNode child(kv.first, file_, field_);
      child.overrides_ = overrides_;
      return child.error("a key must be a plain name, not a list or map");
    }
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const auto& a : allowed) known = known || a == key;
    if (known) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    ConfigNode child(kv.second, file_, join_path(field_, key));
    child.overrides_ = overrides_;
    return child.error("unknown key '" + key + "' (valid: " + list + ")");
  }
  return Status::Ok();
}

Status apply_override(ConfigNode& root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument("--set " + assignment + ": expected key=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string value_text = assignment.substr(eq + 1);
  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("--set " + assignment + ": bad value: " + e.msg);
  }
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  YAML::Node cur = root.raw();
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    walked = walked.empty() ? p : walked + "." + p;
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      int64_t idx;
      if (!parse_int64(p, idx) || idx < 0 || static_cast<size_t>(idx) >= cur.size()) {
        return Status::InvalidArgument("--set " + path + ": " + walked + ": no such index (have " +
                                       std::to_string(cur.size()) + ")");
      }
      if (last) {
        cur[static_cast<size_t>(idx)] = value;
        root.note_override(path, assignment);
        return Status::Ok();
      }
      YAML::Node next = cur[static_cast<size_t>(idx)];
      cur.reset(next);
    } else if (cur.IsMap() || !cur.IsDefined() || cur.IsNull()) {
      if (last) {
        cur[p] = value;
        root.note_override(path, assignment);
        return Status::Ok();
      }
      if (!cur[p].IsDefined()) {
        return Status::InvalidArgument("--set " + path + ": " + walked + ": no such key");
      }
      YAML::Node next = cur[p];
      cur.reset(next);
    } else {
      return Status::InvalidArgument("--set " + path + ": " + walked + " is a value, not a map");
    }
  }
  return Status::Ok();
}

}  // namespace fw
