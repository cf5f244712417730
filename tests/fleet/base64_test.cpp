#include "fleet/base64.hpp"

#include <gtest/gtest.h>

namespace fw::fleet {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> v[] = {{"", ""},
                                                   {"f", "Zg=="},
                                                   {"fo", "Zm8="},
                                                   {"foo", "Zm9v"},
                                                   {"foob", "Zm9vYg=="},
                                                   {"fooba", "Zm9vYmE="},
                                                   {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, enc] : v) {
    EXPECT_EQ(base64_encode(plain), enc);
    auto d = base64_decode(enc);
    ASSERT_TRUE(d.ok()) << enc;
    EXPECT_EQ(*d, plain);
  }
}

TEST(Base64, BinaryRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string s = all.substr(0, n);
    EXPECT_EQ(*base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_encode(std::string("\0", 1)), "AA==");  // etcd's "all keys" start key
  EXPECT_EQ(base64_encode("\xff\xfe"), "//4=");            // '+' and '/' alphabet
}

TEST(Base64, StrictDecoding) {
  EXPECT_FALSE(base64_decode("Zg=").ok());       // length not a multiple of 4
  EXPECT_FALSE(base64_decode("Z===").ok());      // too much padding
  EXPECT_FALSE(base64_decode("Zg==Zg==").ok());  // padding in the middle
  EXPECT_FALSE(base64_decode("Zm9v\n").ok());
  EXPECT_FALSE(base64_decode("Zm-v").ok());  // URL alphabet is not etcd's
  EXPECT_FALSE(base64_decode("Zh==").ok());  // non-zero trailing bits
  EXPECT_FALSE(base64_decode("Zm=v").ok());
  auto e = base64_decode("Zm9$");
  EXPECT_NE(e.status().message().find("offset 3"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace fw::fleet
