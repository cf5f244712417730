#include "agent/auth.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fw::agent {
namespace {

bool equal_constant_time(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = a.size() > b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

std::string_view scope_name(Scope s) {
  switch (s) {
    case Scope::kRead:
      return "read";
    case Scope::kControl:
      return "control";
    case Scope::kAdmin:
      return "admin";
    case Scope::kNone:
      break;
  }
  return "none";
}

bool scope_from_name(std::string_view name, Scope& out) {
  for (Scope s : {Scope::kRead, Scope::kControl, Scope::kAdmin}) {
    if (name == scope_name(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

Result<TokenStore> TokenStore::load(const std::string& path) {
  // Every way the file is unusable is a configuration error (exit 2) that says what to do.
  const std::string fix =
      "; create it with one 'SUBJECT SCOPE TOKEN' line per token, owned by "
      "the agent's user, and chmod 600 it (or unset server.token_file)";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument(path + ": cannot read the token file (" + std::strerror(errno) +
                                   ")" + fix);
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": the token file is not a regular file" + fix);
  }
  if ((st.st_mode & 077) != 0) {
    std::ostringstream m;
    m << path << ": token file mode is 0" << std::oct << (st.st_mode & 0777)
      << "; group and others must have no access, since whoever reads it can act as any "
         "token's user: chmod 600 "
      << path;
    return Status::InvalidArgument(m.str());
  }
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(path + ": cannot open the token file" + fix);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

Result<TokenStore> TokenStore::parse(std::string_view text, const std::string& origin) {
  TokenStore store;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string subject, scope, token, extra;
    if (!(fields >> subject)) continue;  // blank or comment line
    std::string where = origin + ":" + std::to_string(n) + ": ";
    if (!(fields >> scope >> token) || (fields >> extra)) {
      return Status::InvalidArgument(where + "expected 'SUBJECT SCOPE TOKEN'");
    }
    Entry e;
    e.who.subject = subject;
    if (!scope_from_name(scope, e.who.scope)) {
      return Status::InvalidArgument(where + "scope '" + scope +
                                     "' is not one of read, control, admin");
    }
    if (token.size() < 16) {
      return Status::InvalidArgument(where + "token is shorter than 16 characters");
    }
    for (const auto& other : store.entries_) {
      if (other.token == token) return Status::InvalidArgument(where + "duplicate token");
    }
    e.token = token;
    store.entries_.push_back(std::move(e));
  }
  if (store.entries_.empty()) return Status::InvalidArgument(origin + ": no tokens");
  return store;
}

std::optional<Principal> TokenStore::find(std::string_view token) const {
  std::optional<Principal> found;
  for (const auto& e : entries_) {  // no early exit: the time does not depend on the match
    if (equal_constant_time(e.token, token) && !found) found = e.who;
  }
  return found;
}

std::string_view bearer_token(std::string_view v) {
  // credentials = auth-scheme 1*SP token68; the scheme is case-insensitive (RFC 7235).
  constexpr std::string_view kScheme = "bearer";
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (v.size() <= kScheme.size() || !blank(v[kScheme.size()])) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return {};
  }
  v.remove_prefix(kScheme.size());
  while (!v.empty() && blank(v.front())) v.remove_prefix(1);
  while (!v.empty() && (blank(v.back()) || v.back() == '\r')) v.remove_suffix(1);
  for (char c : v) {
    if (blank(c)) return {};  // a token68 has no blank
  }
  return v;
}

}  // namespace fw::agent
