#include "registry/controller_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/format.hpp"

namespace fw::registry {
namespace {

std::string num_text(double v) { return format_g(v); }

// The declared default as a number; 0 when there is none.
double default_number(const OptionDecl& d) {
  return d.default_text.empty() ? 0 : std::strtod(d.default_text.c_str(), nullptr);
}

std::string or_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  }
  return s;
}

}  // namespace

OptionDecl OptionDecl::number(std::string name, std::string def, double min, double max,
                              std::string help) {
  return {std::move(name), Kind::kNumber, std::move(def), min, max, {}, std::move(help)};
}

OptionDecl OptionDecl::integer(std::string name, std::string def, int min, int max,
                               std::string help) {
  return {std::move(name), Kind::kInteger, std::move(def), double(min), double(max), {},
          std::move(help)};
}

OptionDecl OptionDecl::choice(std::string name, std::string def, std::vector<std::string> choices,
                              std::string help) {
  return {std::move(name),    Kind::kChoice,  std::move(def), 0, 0,
          std::move(choices), std::move(help)};
}

OptionDecl OptionDecl::text(std::string name, std::string def, std::string help) {
  return {std::move(name), Kind::kText, std::move(def), 0, 0, {}, std::move(help)};
}

std::string OptionDecl::allowed() const {
  switch (kind) {
    case Kind::kNumber:
    case Kind::kInteger:
      return "[" + num_text(min) + ", " + num_text(max) + "]";
    case Kind::kChoice: {
      std::string s;
      for (const auto& c : choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case Kind::kText:
      break;
  }
  return "";
}

nlohmann::json OptionDecl::to_json() const {
  static const char* kKinds[] = {"number", "integer", "choice", "text"};
  nlohmann::json j = {{"name", name},
                      {"default", default_text},
                      {"type", kKinds[static_cast<int>(kind)]},
                      {"help", help}};
  if (kind == Kind::kNumber || kind == Kind::kInteger) {
    j["min"] = min;
    j["max"] = max;
  }
  if (kind == Kind::kChoice) j["choices"] = choices;
  return j;
}

Status DeclaredOptions::validate(bool takes_positional) const {
  std::vector<std::string> names;
  for (const auto& d : decls_) names.push_back(d.name);
  FW_RETURN_IF_ERROR(raw_.check(names, takes_positional));
  for (const auto& d : decls_) FW_RETURN_IF_ERROR(check(d));
  return Status::Ok();
}

Status DeclaredOptions::check(const OptionDecl& d) const {
  if (!raw_.has(d.name)) return Status::Ok();
  switch (d.kind) {
    case OptionDecl::Kind::kNumber:
      return raw_.get_double(d.name, 0, d.min, d.max).status();
    case OptionDecl::Kind::kInteger:
      return raw_.get_int(d.name, 0, static_cast<int>(d.min), static_cast<int>(d.max)).status();
    case OptionDecl::Kind::kChoice: {
      const std::string v = raw_.get_string(d.name, d.default_text);
      for (const auto& c : d.choices) {
        if (v == c) return Status::Ok();
      }
      return Status::InvalidArgument("controller '" + spec_.name + "': " + d.name + "=" + v +
                                     ": expected " + or_list(d.choices));
    }
    case OptionDecl::Kind::kText:
      break;
  }
  return Status::Ok();
}

const OptionDecl& DeclaredOptions::decl(const std::string& name) const {
  for (const auto& d : decls_) {
    if (d.name == name) return d;
  }
  throw std::logic_error("controller '" + spec_.name + "': option " + name + " not declared");
}

double DeclaredOptions::number(const std::string& name) const {
  const OptionDecl& d = decl(name);
  return raw_.get_double(name, default_number(d), d.min, d.max).value();
}

int DeclaredOptions::integer(const std::string& name) const {
  const OptionDecl& d = decl(name);
  return raw_
      .get_int(name, static_cast<int>(default_number(d)), static_cast<int>(d.min),
               static_cast<int>(d.max))
      .value();
}

nlohmann::json DeclaredOptions::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& d : decls_) {
    if (!has(d.name) && d.default_text.empty()) {
      j[d.name] = nullptr;
    } else if (d.kind == OptionDecl::Kind::kNumber) {
      j[d.name] = number(d.name);
    } else if (d.kind == OptionDecl::Kind::kInteger) {
      j[d.name] = integer(d.name);
    } else {
      j[d.name] = text(d.name);
    }
  }
  return j;
}

std::string DeclaredOptions::text(const std::string& name) const {
  return raw_.get_string(name, decl(name).default_text);
}

}  // namespace fw::registry
