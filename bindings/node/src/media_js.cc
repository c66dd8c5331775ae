// Media for a generation or a history message from JS: `images` and `audio`, arrays of file
// paths (strings) or encoded bytes (Uint8Array or ArrayBuffer). HarmonyOS has no
// Buffer: typed arrays only. The bytes are copied on the JS thread, before the work goes to the
// model's worker, so the caller may reuse its array at once.
#include "media_js.h"

#include <string>

namespace edgellm::node {
namespace {

bool copy_bytes(napi_env env, const void* data, size_t length, const char* what, uint32_t i,
                Media* m) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  m->bytes.assign(bytes, bytes + length);
  if (!m->bytes.empty()) return true;
  napi_throw_range_error(env, "ERR_INVALID_ARG_VALUE",
                         (std::string(what) + "[" + std::to_string(i) + "] is empty").c_str());
  return false;
}

bool read_list(napi_env env, napi_value list, const char* what, std::vector<Media>* out) {
  bool is_array = false;
  napi_is_array(env, list, &is_array);
  if (!is_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          (std::string(what) + " must be an array of paths or Uint8Arrays").c_str());
    return false;
  }
  uint32_t n = 0;
  napi_get_array_length(env, list, &n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value v = nullptr;
    napi_get_element(env, list, i, &v);
    napi_valuetype t = napi_undefined;
    napi_typeof(env, v, &t);
    Media m;
    bool is_typed = false, is_buffer = false;
    napi_is_typedarray(env, v, &is_typed);
    napi_is_arraybuffer(env, v, &is_buffer);
    if (t == napi_string) {
      if (!get_string(env, v, what, &m.path)) return false;
    } else if (is_buffer) {  // history messages reach here without index.js's conversion
      void* data = nullptr;
      size_t length = 0;
      napi_get_arraybuffer_info(env, v, &data, &length);
      if (!copy_bytes(env, data, length, what, i, &m)) return false;
    } else if (is_typed) {
      napi_typedarray_type type = napi_int8_array;
      size_t length = 0, offset = 0;
      void* data = nullptr;
      napi_value buffer = nullptr;
      napi_get_typedarray_info(env, v, &type, &length, &data, &buffer, &offset);
      if (type != napi_uint8_array) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                              (std::string(what) + "[" + std::to_string(i) +
                               "] must be a Uint8Array of the file's bytes").c_str());
        return false;
      }
      if (!copy_bytes(env, data, length, what, i, &m)) return false;
    } else {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                            (std::string(what) + "[" + std::to_string(i) +
                             "] must be a file path or a Uint8Array").c_str());
      return false;
    }
    out->push_back(std::move(m));
  }
  return true;
}

}  // namespace

bool read_media(napi_env env, napi_value options, std::vector<Media>* out) {
  if (auto images = get_prop(env, options, "images")) {
    if (!read_list(env, *images, "images", out)) return false;
  }
  if (auto audio = get_prop(env, options, "audio")) {
    if (!read_list(env, *audio, "audio", out)) return false;
  }
  return true;
}

void set_media_info(napi_env env, napi_value info, const ModelInfo& mi) {
  set(env, info, "vision", mi.vision);
  set(env, info, "audio", mi.audio);
  if (!mi.mmproj_path.empty()) {
    set(env, info, "mmprojPath", mi.mmproj_path);
    set(env, info, "mmprojBytes", static_cast<double>(mi.mmproj_bytes));
  }
}

void set_media_stats(napi_env env, napi_value stats, const Stats& s) {
  set(env, stats, "nMedia", static_cast<double>(s.n_media));
  set(env, stats, "nMediaTokens", static_cast<double>(s.n_media_tokens));
  set(env, stats, "mediaDecodeMs", s.media_decode_ms);
  set(env, stats, "mediaEncodeMs", s.media_encode_ms);
  set(env, stats, "mediaChunksCached", static_cast<double>(s.media_chunks_cached));
}

}  // namespace edgellm::node
