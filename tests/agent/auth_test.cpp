#include "agent/auth.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fw::agent {
namespace {

constexpr const char* kTokens =
    "# subject scope token\n"
    "alice admin aaaaaaaaaaaaaaaaaaaa\n"
    "ops   control cccccccccccccccccccc  # operators\n"
    "\n"
    "grafana read rrrrrrrrrrrrrrrrrrrr\n";

TEST(TokenStore, ParsesSubjectsAndScopes) {
  auto s = TokenStore::parse(kTokens, "tokens");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->size(), 3u);
  auto a = s->find("aaaaaaaaaaaaaaaaaaaa");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->subject, "alice");
  EXPECT_EQ(a->scope, Scope::kAdmin);
  EXPECT_EQ(s->find("cccccccccccccccccccc")->scope, Scope::kControl);
  EXPECT_EQ(s->find("rrrrrrrrrrrrrrrrrrrr")->subject, "grafana");
  EXPECT_FALSE(s->find("aaaaaaaaaaaaaaaaaaa"));  // a prefix is not a match
  EXPECT_FALSE(s->find(""));
}

TEST(TokenStore, ErrorsNameTheLine) {
  auto bad_scope = TokenStore::parse("a superuser 0123456789abcdef\n", "t");
  ASSERT_FALSE(bad_scope.ok());
  EXPECT_EQ(bad_scope.status().message(),
            "t:1: scope 'superuser' is not one of read, control, admin");
  auto short_token = TokenStore::parse("\na read short\n", "t");
  ASSERT_FALSE(short_token.ok());
  EXPECT_EQ(short_token.status().message(), "t:2: token is shorter than 16 characters");
  EXPECT_FALSE(TokenStore::parse("a read\n", "t").ok());
  EXPECT_FALSE(TokenStore::parse("# nothing\n", "t").ok());
  EXPECT_FALSE(TokenStore::parse("a read 0123456789abcdef\nb admin 0123456789abcdef\n", "t").ok());
}

TEST(TokenStore, RefusesAFileOthersCanRead) {
  auto dir = std::filesystem::temp_directory_path() / ("fw_auth_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "tokens").string();
  std::ofstream(path) << kTokens;
  ::chmod(path.c_str(), 0644);
  auto open = TokenStore::load(path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), StatusCode::kInvalidArgument);  // a config error (exit 2)
  EXPECT_NE(open.status().message().find("0644"), std::string::npos) << open.status().message();
  ::chmod(path.c_str(), 0640);
  EXPECT_FALSE(TokenStore::load(path).ok());
  ::chmod(path.c_str(), 0600);
  EXPECT_TRUE(TokenStore::load(path).ok());
  std::filesystem::remove_all(dir);
}

// Defect: a missing token file was a config error (exit 2) but a group/world-readable one a
// run-time failure (exit 1). Both are config errors naming the file and the fix.
TEST(TokenStore, UnusableFilesAreConfigErrorsThatSayWhatToDo) {
  auto dir = std::filesystem::temp_directory_path() / ("fw_auth2_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "tokens").string();
  std::ofstream(path) << kTokens;
  ::chmod(path.c_str(), 0644);
  auto loose = TokenStore::load(path);
  ASSERT_FALSE(loose.ok());
  EXPECT_EQ(loose.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(loose.status().exit_code(), 2);
  EXPECT_NE(loose.status().message().find(path), std::string::npos);
  EXPECT_NE(loose.status().message().find("chmod 600"), std::string::npos);
  auto absent = TokenStore::load((dir / "absent").string());
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(absent.status().message().find((dir / "absent").string()), std::string::npos);
  EXPECT_NE(absent.status().message().find("chmod 600"), std::string::npos)
      << absent.status().message();
  std::filesystem::remove_all(dir);
}

TEST(BearerToken, ParsesTheHeader) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("Bearer   abc "), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token(""), "");
}

// Defect: "bearer" in lower case was refused; the scheme is case-insensitive (RFC 7235).
TEST(BearerToken, SchemeIsCaseInsensitive) {
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER abc"), "abc");
  EXPECT_EQ(bearer_token("bEaReR\tabc"), "abc");
  EXPECT_EQ(bearer_token("Bearerabc"), "");
  EXPECT_EQ(bearer_token("Bearer abc def"), "");  // a token68 has no blank
}

TEST(Scope, NamesRoundTrip) {
  for (Scope s : {Scope::kRead, Scope::kControl, Scope::kAdmin}) {
    Scope back = Scope::kNone;
    ASSERT_TRUE(scope_from_name(scope_name(s), back));
    EXPECT_EQ(back, s);
  }
  Scope x;
  EXPECT_FALSE(scope_from_name("none", x));
}

}  // namespace
}  // namespace fw::agent
