// --mmproj, --image, --audio and --image-max-tokens for `run` and `chat`.
#include <cstdio>

#include "common.h"

namespace cli {

void add_media_options(CLI::App* cmd, MediaArgs* m) {
  cmd->add_option("--mmproj", m->mmproj,
                  "The model's projector (mmproj .gguf): images and audio in the prompt");
  cmd->add_option("--image", m->images,
                  "An image for the prompt (JPEG, PNG, BMP, GIF; repeatable; needs --mmproj). "
                  "Placed at each <__media__> in the prompt, else before it");
  cmd->add_option("--audio", m->audio,
                  "An audio clip for the prompt (WAV, MP3, FLAC; repeatable; needs --mmproj)");
  cmd->add_option("--image-max-tokens", m->image_max_tokens,
                  "Tokens per image at most: fewer encode faster (default: the projector's)");
}

edgellm::Status apply_media(const MediaArgs& m, edgellm::LoadOptions* load,
                            edgellm::GenerateOptions* go) {
  if (m.mmproj.empty() && (!m.images.empty() || !m.audio.empty())) {
    return edgellm::Status::InvalidArgument(
        "--image and --audio need the model's projector: pass --mmproj FILE");
  }
  load->mmproj_path = m.mmproj;
  load->image_max_tokens = m.image_max_tokens;
  // Images first, then audio, each in the order given: the order of the prompt's markers.
  for (const std::string& p : m.images) go->media.push_back(edgellm::Media{p, {}});
  for (const std::string& p : m.audio) go->media.push_back(edgellm::Media{p, {}});
  return edgellm::Status::Ok();
}

std::string media_summary(const edgellm::Stats& s) {
  if (s.n_media <= 0) return {};
  char b[200];
  std::snprintf(b, sizeof b, " | media %d (%d tokens, decode %.0f ms, encode %.0f ms", s.n_media,
                s.n_media_tokens, s.media_decode_ms, s.media_encode_ms);
  std::string out = b;
  if (s.media_chunks_cached > 0) {
    out += ", " + std::to_string(s.media_chunks_cached) + " chunks from the encoded cache";
  }
  return out + ")";
}

}  // namespace cli
