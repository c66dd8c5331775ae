// Base64 (RFC 4648, standard alphabet with padding): media in conversation files and data:
// URLs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

std::string base64_encode(const uint8_t* data, size_t n);
// False when `text` is not base64 (a character outside the alphabet, a bad length or
// padding). ASCII whitespace is skipped, as MIME line breaks are.
bool base64_decode(std::string_view text, std::vector<uint8_t>* out);

}  // namespace edgellm
