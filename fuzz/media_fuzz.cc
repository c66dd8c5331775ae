// libFuzzer target for the media input path: the bytes an app or a `serve` client sends as an
// image or an audio clip, through what edgellm does with them before any encoding: the header
// bounds (media_bounds.cc: size and completeness of PNG/JPEG/GIF/BMP), then llama.cpp's mtmd
// helpers decoding them (stb for images, miniaudio for WAV/MP3/FLAC, compiled into this binary
// with coverage), then mtmd tokenizing the prompt with the item (preprocessing: resizing and
// tiling). Any input must come back as an error or chunks, never a crash, an abort, a hang or
// an unbounded allocation (ASan + UBSan, -rss_limit_mb).
//
// The projector and its text model are the SmolVLM-256M-shape fixture pair, named by the
// environment (EDGELLM_FUZZ_MODEL, EDGELLM_FUZZ_MMPROJ), loaded once.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/llama_glue.h"
#include "engine/llama_glue_mtmd.h"
#include "engine/media.h"
#include "llama.h"

namespace {

edgellm::engine::Projector* g_projector = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* model_path = std::getenv("EDGELLM_FUZZ_MODEL");
  const char* mmproj = std::getenv("EDGELLM_FUZZ_MMPROJ");
  if (!model_path || !mmproj) {
    std::fprintf(stderr, "set EDGELLM_FUZZ_MODEL and EDGELLM_FUZZ_MMPROJ to the fixture pair\n");
    std::exit(2);
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(model_path, mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", model_path);
    std::exit(2);
  }
  edgellm::engine::ProjectorInfo info;
  auto p = edgellm::engine::load_projector(mmproj, model, 1, 64, &info);
  if (!p.ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", mmproj, p.status().message().c_str());
    std::exit(2);
  }
  g_projector = p->release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  // What media.cc's decode_item checks before decoding.
  edgellm::engine::ImageHeader h;
  if (edgellm::engine::check_image_header(bytes, &h)) {
    if (static_cast<int64_t>(h.width) * h.height > edgellm::engine::kMaxImagePixels ||
        h.width == 0 || h.height == 0 || !h.complete) {
      return 0;
    }
  }
  bool audio = false;
  auto b = edgellm::engine::decode_media(g_projector, bytes.data(), bytes.size(), "fuzz",
                                         edgellm::engine::kMaxImagePixels,
                                         edgellm::engine::kMaxAudioSeconds, &audio);
  if (!b.ok()) {
    if (b.status().message().empty()) std::abort();  // an error always says why
    return 0;
  }
  if (audio) return 0;  // this projector encodes images only (media.cc refuses audio here)
  auto chunks = edgellm::engine::tokenize_with_media(
      g_projector, std::string("<|im_start|>User:") + edgellm::engine::media_marker_text() + "hi",
      {b->get()}, true);
  if (!chunks.ok() && chunks.status().message().empty()) std::abort();
  return 0;
}
