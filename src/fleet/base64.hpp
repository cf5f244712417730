#pragma once
// Standard base64 (RFC 4648, alphabet "+/", '=' padding), as etcd's JSON gateway uses for
// every key and value. Decoding is strict: length a multiple of 4, padding only at the end,
// no whitespace, unused trailing bits zero.

#include <string>
#include <string_view>

#include "core/status.hpp"

namespace fw::fleet {

std::string base64_encode(std::string_view bytes);
Result<std::string> base64_decode(std::string_view text);

}  // namespace fw::fleet
