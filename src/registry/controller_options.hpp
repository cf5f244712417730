#pragma once
// Declared controller options: each option of a controller is written once (name, kind,
// default, valid range or choices, help) and that declaration drives parsing, validation,
// `flexwatt eval --list` (text and JSON) and the defaults the factories read.
//
// Validation errors are InvalidArgument naming the controller, the option and what is
// allowed (the range, or the choices).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/controller_spec.hpp"
#include "core/status.hpp"

namespace fw::registry {

struct OptionDecl {
  enum class Kind { kNumber, kInteger, kChoice, kText };
  std::string name;
  Kind kind = Kind::kNumber;
  // As shown by --list, and parsed for the default value; empty: no default (the factory
  // then reads the option only when it is given, or treats 0 / "" as "unset").
  std::string default_text;
  double min = -1e300, max = 1e300;  // kNumber, kInteger: inclusive range
  std::vector<std::string> choices;  // kChoice
  std::string help;

  static OptionDecl number(std::string name, std::string def, double min, double max,
                           std::string help);
  static OptionDecl integer(std::string name, std::string def, int min, int max, std::string help);
  static OptionDecl choice(std::string name, std::string def, std::vector<std::string> choices,
                           std::string help);
  // Free text checked by the factory (e.g. an actuator name, which depends on the plant).
  static OptionDecl text(std::string name, std::string def, std::string help);

  // "[0, 1000]", "peak|mean" or "" (text), for --list.
  std::string allowed() const;
  nlohmann::json to_json() const;
};

// A controller spec read through its declarations. validate() checks every given option
// against its declaration (unknown key, not a number, out of range, not a choice); the
// accessors then return the given value or the declared default.
class DeclaredOptions {
 public:
  DeclaredOptions(const ControllerSpec& spec, const std::vector<OptionDecl>& decls)
      : spec_(spec), decls_(decls), raw_(spec) {}
  Status validate(bool takes_positional) const;
  bool has(const std::string& name) const { return raw_.has(name); }
  // REQUIRE: validate() returned Ok and `name` is declared with a matching kind.
  double number(const std::string& name) const;
  int integer(const std::string& name) const;
  std::string text(const std::string& name) const;  // kChoice or kText
  const ControllerSpec& spec() const { return spec_; }
  // {name: value} for every declaration: numbers as numbers, the rest as text; null when
  // neither given nor defaulted. REQUIRE: validate() returned Ok.
  nlohmann::json to_json() const;

 private:
  const OptionDecl& decl(const std::string& name) const;
  Status check(const OptionDecl& d) const;
  const ControllerSpec& spec_;
  const std::vector<OptionDecl>& decls_;
  ControllerOptions raw_;
};

}  // namespace fw::registry
