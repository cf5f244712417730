#pragma once
// Loading human-written configuration (YAML; JSON is accepted as YAML) with errors that
// name the file, the line and the field: "scenarios/x.yaml:12: jobs.0.group_size: ...".
//
// ConfigNode is a cheap handle on one node of a loaded document plus its dotted field
// path. Typed getters return Result and check ranges; reject_unknown() turns a typo
// into an error listing the valid keys. apply_override() implements `--set key=value`.

#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.hpp"

namespace fw {

class ConfigNode {
 public:
  ConfigNode() = default;
  // YAML::Node has no move constructor: it is copied (a shared handle, cheap).
  ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string field)
      : node_(node), file_(std::move(file)), field_(std::move(field)) {}

  // Loads a file or parses text (the name is used in messages only).
  static Result<ConfigNode> load_file(const std::string& path);
  static Result<ConfigNode> parse(const std::string& text, const std::string& name);

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool defined() const { return node_.IsDefined() && !node_.IsNull(); }
  size_t size() const { return node_.size(); }

  bool has(const std::string& key) const;
  // Child of a map (undefined node when absent) and element of a sequence.
  ConfigNode operator[](const std::string& key) const;
  ConfigNode at(size_t i) const;
  std::vector<std::string> keys() const;

  Result<double> as_double(double min = -1e300, double max = 1e300) const;
  Result<int64_t> as_int(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  Result<bool> as_bool() const;
  Result<std::string> as_string() const;
  // Value of a child, or `fallback` when the child is absent.
  Result<double> get_double(const std::string& key, double fallback, double min = -1e300,
                            double max = 1e300) const;
  Result<int64_t> get_int(const std::string& key, int64_t fallback, int64_t min = INT64_MIN,
                          int64_t max = INT64_MAX) const;
  Result<bool> get_bool(const std::string& key, bool fallback) const;
  Result<std::string> get_string(const std::string& key, const std::string& fallback) const;
  // Error when this map has a key not in `allowed`; the message lists the valid ones.
  Status reject_unknown(const std::vector<std::string>& allowed) const;

  // Error naming this node: "file:line: field: message" (InvalidArgument).
  Status error(const std::string& message) const;
  // "file:line" of this node.
  std::string where() const;
  const std::string& field() const { return field_; }
  const std::string& file() const;
  YAML::Node& raw() { return node_; }
  const YAML::Node& raw() const { return node_; }
  // Records that `path` was set by the command-line `assignment` ("--set path=value"):
  // errors about it, or about anything below it, then name the argument, not a file line.
  void note_override(const std::string& path, const std::string& assignment);

 private:
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  // (path, assignment) of the --set overrides, shared by every node of one document.
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> overrides_ =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();
  std::string field_;
  int parent_line_ = -1;  // 0-based line of the parent, for messages about a missing child
};

// Applies "a.b.0.c=value" to a loaded document: walks maps by key and sequences by
// index, creating a missing final map key. The value is parsed as YAML (so numbers,
// booleans, lists "[1,2]" work). Errors name the override and the failing part.
Status apply_override(ConfigNode& root, const std::string& assignment);

}  // namespace fw
