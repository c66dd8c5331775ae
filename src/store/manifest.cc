// Manifest JSON: writing, and strict parsing that names the first bad field.
//
// A manifest arrives from outside (a server, a sideloaded folder), so every field is checked
// for type and range before anything trusts it: digests are exactly 64 lowercase hex digits,
// the chunk list matches the size, the file name cannot leave the package folder. Unknown
// keys are ignored, so a newer writer can add fields without breaking older readers.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "edgellm/manifest.h"

namespace edgellm {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kMinChunk = 64ull << 10;
constexpr uint64_t kMaxChunk = 1ull << 30;
constexpr size_t kMaxText = 16u << 20;  // a 1 TiB file in 64 KiB chunks is ~1.1 GiB: not a case
constexpr size_t kMaxIdLen = 64;
constexpr size_t kMaxFileLen = 255;   // NAME_MAX
constexpr size_t kMaxLabelLen = 256;  // quant, architecture, toolchain

Status bad(const std::string& field, const std::string& what) {
  return Status::CorruptData("manifest: " + field + " " + what);
}

bool is_hex_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool is_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool printable_ascii(const std::string& s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Reads `key` as an unsigned integer in [lo, hi] (JSON integers only: 1.0, -1, "1" fail).
Status get_uint(const Json& j, const char* key, uint64_t lo, uint64_t hi, uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return bad(key, "is missing");
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    return bad(key, "is negative (" + it->dump() + ")");
  }
  if (!it->is_number_unsigned()) return bad(key, "is not an unsigned integer (" + it->dump() + ")");
  const uint64_t v = it->get<uint64_t>();
  if (v < lo || v > hi) {
    return bad(key, "is " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." +
                        std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

Status get_string(const Json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end()) return bad(key, "is missing");
  if (!it->is_string()) return bad(key, "is not a string (" + it->dump() + ")");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status check_label(const std::string& s, const char* field) {
  if (s.empty() || s.size() > kMaxLabelLen || !printable_ascii(s)) {
    return bad(field, "must be 1.." + std::to_string(kMaxLabelLen) + " printable ASCII characters");
  }
  return Status::Ok();
}

template <typename T>
Status get_uint_as(const Json& j, const char* key, uint64_t lo, uint64_t hi, T* out) {
  uint64_t v = 0;
  EDGELLM_RETURN_IF_ERROR(get_uint(j, key, lo, hi, &v));
  *out = static_cast<T>(v);
  return Status::Ok();
}

}  // namespace

Status validate_manifest(const Manifest& m) {
  if (m.schema != 1) {
    return bad("schema",
               "is " + std::to_string(m.schema) + "; this edgellm reads schema 1: update edgellm");
  }
  if (m.id.empty() || m.id.size() > kMaxIdLen) {
    return bad("id", "must be 1.." + std::to_string(kMaxIdLen) + " characters");
  }
  for (char c : m.id) {
    if (!is_id_char(c)) return bad("id", "'" + m.id + "' may only use a-z 0-9 . _ -");
  }
  if (m.id[0] == '.' || m.id[0] == '_' || m.id[0] == '-') {
    return bad("id", "'" + m.id + "' must start with a letter or digit");
  }
  if (m.version < 1) return bad("version", "must be >= 1");
  if (m.file.empty() || m.file.size() > kMaxFileLen || !printable_ascii(m.file)) {
    return bad("file", "must be 1..255 printable ASCII characters");
  }
  if (m.file.find('/') != std::string::npos || m.file.find('\\') != std::string::npos ||
      m.file[0] == '.') {
    return bad("file", "'" + m.file + "' must be a plain file name (no '/', '\\', leading '.')");
  }
  if (m.file == kManifestFileName) return bad("file", "must not be " + m.file);
  if (m.size == 0) return bad("size", "must be > 0");
  if (!is_hex_digest(m.sha256)) return bad("sha256", "is not a 64-character lowercase hex sha256");
  if (m.chunk_size < kMinChunk || m.chunk_size > kMaxChunk) {
    return bad("chunk_size", "is " + std::to_string(m.chunk_size) + ", outside 64 KiB..1 GiB (" +
                                 std::to_string(kMinChunk) + ".." + std::to_string(kMaxChunk) +
                                 ")");
  }
  const uint64_t want = (m.size - 1) / m.chunk_size + 1;
  if (m.chunks.size() != want) {
    return bad("chunks", "has " + std::to_string(m.chunks.size()) + " entries; size " +
                             std::to_string(m.size) + " in chunks of " +
                             std::to_string(m.chunk_size) + " needs " + std::to_string(want));
  }
  for (size_t i = 0; i < m.chunks.size(); ++i) {
    if (!is_hex_digest(m.chunks[i])) {
      return bad("chunks[" + std::to_string(i) + "]", "is not a 64-character lowercase hex sha256");
    }
  }
  EDGELLM_RETURN_IF_ERROR(check_label(m.quant, "quant"));
  EDGELLM_RETURN_IF_ERROR(check_label(m.architecture, "architecture"));
  if (m.n_params == 0) return bad("n_params", "must be > 0");
  if (m.required_format_version < 1) return bad("required_format_version", "must be >= 1");
  EDGELLM_RETURN_IF_ERROR(check_label(m.toolchain, "toolchain"));
  if (m.plan_n_ctx < 1) return bad("plan_n_ctx", "must be >= 1");
  if (m.plan_ram_bytes == 0) return bad("plan_ram_bytes", "must be > 0");
  return Status::Ok();
}

Status check_manifest_supported(const Manifest& m) {
  if (m.required_format_version > kFormatVersion) {
    return Status::FailedPrecondition(
        "package " + m.id + " v" + std::to_string(m.version) + " needs model format version " +
        std::to_string(m.required_format_version) + "; this edgellm reads up to " +
        std::to_string(kFormatVersion) + ": update edgellm, or pick an older package version");
  }
  return Status::Ok();
}

std::string manifest_to_json(const Manifest& m) {
  nlohmann::ordered_json j;
  j["schema"] = m.schema;
  j["id"] = m.id;
  j["version"] = m.version;
  j["file"] = m.file;
  j["size"] = m.size;
  j["sha256"] = m.sha256;
  j["chunk_size"] = m.chunk_size;
  j["chunks"] = m.chunks;
  j["quant"] = m.quant;
  j["architecture"] = m.architecture;
  j["n_params"] = m.n_params;
  j["required_format_version"] = m.required_format_version;
  j["toolchain"] = m.toolchain;
  j["plan_n_ctx"] = m.plan_n_ctx;
  j["plan_ram_bytes"] = m.plan_ram_bytes;
  return j.dump(2) + "\n";
}

Result<Manifest> manifest_from_json(const std::string& text) {
  if (text.size() > kMaxText) {
    return Status::CorruptData("manifest: " + std::to_string(text.size()) +
                               " bytes, more than any manifest needs (16 MiB)");
  }
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return Status::CorruptData("manifest: not valid JSON (byte " + std::to_string(e.byte) +
                               "): check that the file is a manifest.json and was not cut short");
  }
  if (!j.is_object()) return Status::CorruptData("manifest: not a JSON object");

  constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
  constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t kI32 = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
  Manifest m;
  // Schema first: a future schema may change anything below, so say that rather than
  // complain about a field it renamed.
  EDGELLM_RETURN_IF_ERROR(get_uint_as(j, "schema", 0, kU32, &m.schema));
  if (m.schema != 1) return validate_manifest(m);
  EDGELLM_RETURN_IF_ERROR(get_string(j, "id", &m.id));
  EDGELLM_RETURN_IF_ERROR(get_uint_as(j, "version", 1, kU32, &m.version));
  EDGELLM_RETURN_IF_ERROR(get_string(j, "file", &m.file));
  EDGELLM_RETURN_IF_ERROR(get_uint(j, "size", 1, kU64, &m.size));
  EDGELLM_RETURN_IF_ERROR(get_string(j, "sha256", &m.sha256));
  EDGELLM_RETURN_IF_ERROR(get_uint(j, "chunk_size", 0, kU64, &m.chunk_size));
  auto chunks = j.find("chunks");
  if (chunks == j.end()) return bad("chunks", "is missing");
  if (!chunks->is_array()) return bad("chunks", "is not an array");
  m.chunks.reserve(chunks->size());
  for (size_t i = 0; i < chunks->size(); ++i) {
    if (!(*chunks)[i].is_string()) {
      return bad("chunks[" + std::to_string(i) + "]", "is not a 64-character lowercase hex sha256");
    }
    m.chunks.push_back((*chunks)[i].get<std::string>());
  }
  EDGELLM_RETURN_IF_ERROR(get_string(j, "quant", &m.quant));
  EDGELLM_RETURN_IF_ERROR(get_string(j, "architecture", &m.architecture));
  EDGELLM_RETURN_IF_ERROR(get_uint(j, "n_params", 1, kU64, &m.n_params));
  EDGELLM_RETURN_IF_ERROR(
      get_uint_as(j, "required_format_version", 1, kU32, &m.required_format_version));
  EDGELLM_RETURN_IF_ERROR(get_string(j, "toolchain", &m.toolchain));
  EDGELLM_RETURN_IF_ERROR(get_uint_as(j, "plan_n_ctx", 1, kI32, &m.plan_n_ctx));
  EDGELLM_RETURN_IF_ERROR(get_uint(j, "plan_ram_bytes", 1, kU64, &m.plan_ram_bytes));
  EDGELLM_RETURN_IF_ERROR(validate_manifest(m));
  return m;
}

}  // namespace edgellm
