// check_image_header: an image's format, size and completeness from its bytes alone, before
// any decoder allocates pixels (media.h). stb's decoders fill a cut JPEG or BMP with grey
// instead of failing, and stb refuses a huge PNG with "Image too large to decode", which says
// nothing of its size: the checks here name both.
#include <cstring>
#include <string>

#include "engine/media.h"

namespace edgellm::engine {
namespace {

uint32_t be16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) << 8 | p[1]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }
uint32_t le16(const uint8_t* p) { return static_cast<uint32_t>(p[1]) << 8 | p[0]; }
uint32_t le32(const uint8_t* p) { return le16(p + 2) << 16 | le16(p); }

// The last index of `pat` in b[from, n), or -1.
int64_t rfind(const std::vector<uint8_t>& b, size_t from, const char* pat, size_t len) {
  for (size_t i = b.size() >= len ? b.size() - len + 1 : 0; i-- > from;) {
    if (std::memcmp(b.data() + i, pat, len) == 0) return static_cast<int64_t>(i);
  }
  return -1;
}

// JPEG: the frame header (SOFn) gives the size; the image is complete when an end-of-image
// marker (FF D9) follows the last start-of-scan (FF DA): entropy-coded data stuffs every FF
// with 00, and an EXIF thumbnail's own markers come before the main scan.
bool jpeg(const std::vector<uint8_t>& b, ImageHeader* h) {
  size_t i = 2;
  while (i + 9 <= b.size()) {
    if (b[i] != 0xFF) return false;
    const uint8_t m = b[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      h->height = be16(&b[i + 5]);
      h->width = be16(&b[i + 7]);
      break;
    }
    if (m == 0xDA || m == 0xD9) return false;  // a scan before any frame header
    i += 2 + be16(&b[i + 2]);
  }
  if (h->width == 0) return false;
  const int64_t sos = rfind(b, 2, "\xFF\xDA", 2);
  const int64_t eoi = rfind(b, 2, "\xFF\xD9", 2);
  h->complete = sos >= 0 && eoi > sos;
  return true;
}

}  // namespace

bool check_image_header(const std::vector<uint8_t>& b, ImageHeader* h) {
  *h = ImageHeader{};
  const size_t n = b.size();
  if (n >= 24 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0 &&
      std::memcmp(&b[12], "IHDR", 4) == 0) {
    h->format = "PNG";
    h->width = be32(&b[16]);
    h->height = be32(&b[20]);
    h->complete = rfind(b, 24, "IEND", 4) >= 0;
    return true;
  }
  if (n >= 4 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    h->format = "JPEG";
    return jpeg(b, h);
  }
  if (n >= 10 && (std::memcmp(b.data(), "GIF87a", 6) == 0 || std::memcmp(b.data(), "GIF89a", 6) == 0)) {
    h->format = "GIF";
    h->width = le16(&b[6]);
    h->height = le16(&b[8]);
    h->complete = b.back() == 0x3B || rfind(b, 10, "\x3B", 1) + 16 >= static_cast<int64_t>(n);
    return true;
  }
  if (n >= 26 && b[0] == 'B' && b[1] == 'M') {
    h->format = "BMP";
    h->width = le32(&b[18]);
    const int32_t height = static_cast<int32_t>(le32(&b[22]));  // negative: top-down rows
    h->height = height < 0 ? 0u - static_cast<uint32_t>(height) : static_cast<uint32_t>(height);
    h->complete = le32(&b[2]) <= n;  // the header's own file size
    return true;
  }
  return false;
}

}  // namespace edgellm::engine
