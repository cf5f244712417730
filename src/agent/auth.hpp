#pragma once
// Bearer tokens with scopes, read from a token file.
//
// File format: one token per line, "SUBJECT SCOPE TOKEN", separated by blanks; '#' starts
// a comment. SCOPE is read, control or admin; each scope includes the ones before it
// (admin > control > read). TOKEN is at least 16 printable characters without blanks.
// The file must be a regular file with no permission bits for group or others (chmod
// 0600): load() refuses it otherwise, because anyone who can read it can act as any user.
// Every unusable file (absent, unreadable, too open, malformed) is InvalidArgument, a
// configuration error, with the path and what to do.
//
// Lookups compare against every token in constant time per byte, so the time taken
// does not reveal how much of a guess matched.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace fw::agent {

enum class Scope : int { kNone = 0, kRead = 1, kControl = 2, kAdmin = 3 };
std::string_view scope_name(Scope s);
bool scope_from_name(std::string_view name, Scope& out);

struct Principal {
  std::string subject;
  Scope scope = Scope::kNone;
};

class TokenStore {
 public:
  // Reads and checks the file (permissions, then syntax: "path:line: message").
  static Result<TokenStore> load(const std::string& path);
  static Result<TokenStore> parse(std::string_view text, const std::string& origin);

  // The token's principal; nullopt when no token matches.
  std::optional<Principal> find(std::string_view token) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string token;
    Principal who;
  };
  std::vector<Entry> entries_;
};

// The token of an "Authorization: Bearer TOKEN" header value (scheme in any case, then
// blanks); empty when malformed.
std::string_view bearer_token(std::string_view header_value);

}  // namespace fw::agent
