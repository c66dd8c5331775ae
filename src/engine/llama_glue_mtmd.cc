// Every call into llama.cpp's tools/mtmd (llama_glue_mtmd.h).
#include "engine/llama_glue_mtmd.h"

#include <climits>
#include <map>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

#include "engine/llama_glue.h"
#include "mtmd-helper.h"
#include "mtmd.h"
// miniaudio, compiled here as mtmd's helper compiles it (decoding only, every function static):
// the helper keeps its copy private, and edgellm reads audio in bounded blocks itself.
#define MINIAUDIO_IMPLEMENTATION
#define MA_NO_ENCODING
#define MA_NO_DEVICE_IO
#define MA_NO_RESOURCE_MANAGER
#define MA_NO_NODE_GRAPH
#define MA_NO_ENGINE
#define MA_NO_GENERATION
#define MA_API static
// Its one global that MA_API does not make static, renamed so it cannot clash with the helper's.
#define ma_atomic_global_lock edgellm_ma_atomic_global_lock
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wshadow"
#include "miniaudio/miniaudio.h"
#pragma GCC diagnostic pop
#include "stb/stb_image.h"

namespace edgellm::engine {

struct Projector {
  mtmd_context* ctx = nullptr;
};
void ProjectorFree::operator()(Projector* p) const {
  if (p && p->ctx) mtmd_free(p->ctx);
  delete p;
}

struct Bitmap {
  mtmd_bitmap* bitmap = nullptr;
};
void BitmapFree::operator()(Bitmap* b) const {
  if (b && b->bitmap) mtmd_bitmap_free(b->bitmap);
  delete b;
}

const char* media_marker_text() { return mtmd_default_marker(); }

Result<ProjectorPtr> load_projector(const std::string& mmproj, const llama_model* text_model,
                                    int32_t n_threads, int32_t image_max_tokens,
                                    ProjectorInfo* info) {
  // mtmd and clip log through the same sink as libllama (their errors come back as Status).
  static std::once_flag once;
  std::call_once(once, [] {
    ggml_log_callback cb = nullptr;
    void* ud = nullptr;
    llama_log_get(&cb, &ud);
    mtmd_helper_log_set(cb, ud);
  });
  mtmd_context_params mp = mtmd_context_params_default();
  mp.use_gpu = false;
  mp.print_timings = false;
  mp.n_threads = n_threads;
  mp.warmup = false;  // a warm-up reserves a buffer for the largest image: the first use does
  if (image_max_tokens > 0) mp.image_max_tokens = image_max_tokens;
  take_llama_errors();
  mtmd_context* ctx = nullptr;
  try {
    ctx = mtmd_init_from_file(mmproj.c_str(), text_model, mp);
  } catch (const std::exception& e) {
    return Status::CorruptData("llama.cpp threw while loading the projector " + mmproj + ": " +
                               e.what());
  }
  if (!ctx) {
    const std::string why = take_llama_errors();
    return Status::CorruptData("llama.cpp could not load the projector " + mmproj +
                               (why.empty() ? std::string() : ": " + why));
  }
  ProjectorPtr p(new Projector{ctx});
  info->vision = mtmd_support_vision(ctx);
  info->audio = mtmd_support_audio(ctx);
  info->audio_sample_rate = mtmd_get_audio_sample_rate(ctx);
  info->mrope = mtmd_decode_use_mrope(ctx);
  return p;
}

Result<uint64_t> projector_memory(const std::string& mmproj, int32_t image_max_tokens) {
  mtmd_context_params mp = mtmd_context_params_default();
  mp.use_gpu = false;
  mp.print_timings = false;
  mp.warmup = true;  // the dry run sizes the encoder's compute buffer for the largest image
  if (image_max_tokens > 0) mp.image_max_tokens = image_max_tokens;
  take_llama_errors();
  std::map<ggml_backend_dev_t, size_t> usage;
  try {
    usage = mtmd_get_memory_usage(mmproj.c_str(), mp);
  } catch (const std::exception& e) {
    return Status::CorruptData("llama.cpp threw while sizing the projector " + mmproj + ": " +
                               e.what());
  }
  if (usage.empty()) {
    const std::string why = take_llama_errors();
    return Status::CorruptData("llama.cpp could not size the projector " + mmproj +
                               (why.empty() ? std::string() : ": " + why));
  }
  uint64_t total = 0;
  for (const auto& [dev, bytes] : usage) total += bytes;
  return total;
}

bool looks_like_audio(const uint8_t* b, size_t n) {
  auto at = [&](size_t i, const char* s) {
    return n >= i + std::strlen(s) && std::memcmp(b + i, s, std::strlen(s)) == 0;
  };
  if (at(0, "RIFF") && at(8, "WAVE")) return true;
  if (at(0, "fLaC") || at(0, "ID3")) return true;
  return n >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0;
}

Result<std::vector<float>> decode_audio_pcm(const uint8_t* data, size_t n, int sample_rate,
                                            double max_seconds) {
  ma_decoder_config cfg = ma_decoder_config_init(ma_format_f32, 1, static_cast<ma_uint32>(sample_rate));
  ma_decoder dec;
  if (ma_decoder_init_memory(data, n, &cfg, &dec) != MA_SUCCESS) {
    return Status::InvalidArgument("the audio could not be decoded (WAV, MP3 or FLAC expected): "
                                   "the file is damaged or of another kind");
  }
  const uint64_t max_frames = static_cast<uint64_t>(max_seconds * sample_rate);
  auto too_long = [&](double seconds) {
    return Status::InvalidArgument(
        "the audio is " + std::to_string(static_cast<int64_t>(seconds)) + " s long or more, over "
        "the limit of " + std::to_string(static_cast<int64_t>(max_seconds)) + " s: cut it first");
  };
  ma_uint64 claimed = 0;
  if (ma_decoder_get_length_in_pcm_frames(&dec, &claimed) == MA_SUCCESS && claimed > max_frames) {
    ma_decoder_uninit(&dec);
    return too_long(static_cast<double>(claimed) / sample_rate);
  }
  std::vector<float> pcm;
  const ma_uint64 block = static_cast<ma_uint64>(sample_rate);
  try {
    for (;;) {
      const size_t at = pcm.size();
      pcm.resize(at + block);
      ma_uint64 got = 0;
      const ma_result r = ma_decoder_read_pcm_frames(&dec, pcm.data() + at, block, &got);
      pcm.resize(at + got);
      if (pcm.size() > max_frames) {
        ma_decoder_uninit(&dec);
        return too_long(static_cast<double>(pcm.size()) / sample_rate);
      }
      if (r != MA_SUCCESS || got < block) break;
    }
  } catch (const std::exception& e) {  // std::bad_alloc
    ma_decoder_uninit(&dec);
    return Status::InvalidArgument(std::string("the audio could not be decoded: ") + e.what());
  }
  ma_decoder_uninit(&dec);
  if (pcm.empty()) return Status::InvalidArgument("the audio holds no samples");
  return pcm;
}

Result<BitmapPtr> decode_media(Projector* p, const uint8_t* data, size_t n, const std::string& id,
                               int64_t max_pixels, double max_audio_seconds, bool* is_audio) {
  const int sample_rate = mtmd_get_audio_sample_rate(p->ctx);
  if (sample_rate > 0 && looks_like_audio(data, n)) {
    *is_audio = true;
    Result<std::vector<float>> pcm = decode_audio_pcm(data, n, sample_rate, max_audio_seconds);
    if (!pcm.ok()) return pcm.status();
    mtmd_bitmap* b = mtmd_bitmap_init_from_audio(pcm->size(), pcm->data());
    if (!b) return Status::InvalidArgument("llama.cpp refused the audio's samples");
    mtmd_bitmap_set_id(b, id.c_str());
    return BitmapPtr(new Bitmap{b});
  }
  // The image's size from its header, before stb allocates the pixels.
  int px_w = 0, px_h = 0, comp = 0;
  if (n <= static_cast<size_t>(INT32_MAX) &&
      stbi_info_from_memory(data, static_cast<int>(n), &px_w, &px_h, &comp) != 0 &&
      static_cast<int64_t>(px_w) * px_h > max_pixels) {
    return Status::InvalidArgument("the image is " + std::to_string(px_w) + " x " +
                                   std::to_string(px_h) + " pixels, more than the limit of " +
                                   std::to_string(max_pixels / 1000000) +
                                   " megapixels: scale it down first");
  }
  take_llama_errors();
  mtmd_helper_bitmap_wrapper w{};
  try {
    w = mtmd_helper_bitmap_init_from_buf(p->ctx, data, n, /*placeholder=*/false,
                                         mtmd_helper_init_opt_default());
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the media could not be decoded: ") + e.what());
  }
  if (!w.bitmap) {
    const std::string why = take_llama_errors();
    return Status::InvalidArgument("the media is neither an image llama.cpp decodes (JPEG, PNG, "
                                   "BMP, GIF) nor audio (WAV, MP3, FLAC)" +
                                   (why.empty() ? std::string() : ": " + why));
  }
  mtmd_bitmap_set_id(w.bitmap, id.c_str());
  *is_audio = mtmd_bitmap_is_audio(w.bitmap);
  return BitmapPtr(new Bitmap{w.bitmap});
}

namespace {

// An M-RoPE media chunk's positions, as mtmd_helper_decode_image_chunk sets them: an image's
// from mtmd's decoder positions (time fixed, height and width along the tile grid), audio's
// one step per embedding in every section. Read at first positions 0 and 1 to tell which
// sections move with it.
void set_mrope_positions(const mtmd_input_chunk* c, PromptChunk* pc) {
  const int32_t n = pc->n_tokens;
  pc->mrope.assign(static_cast<size_t>(n) * 4, 0);
  const mtmd_image_tokens* img = mtmd_input_chunk_get_tokens_image(c);
  if (!img) {  // audio
    for (int32_t i = 0; i < n; ++i) {
      for (int k = 0; k < 4; ++k) pc->mrope[static_cast<size_t>(i) * 4 + k] = i;
    }
    pc->mrope_shift = 0xF;
    return;
  }
  uint8_t shift = 0;
  for (int32_t i = 0; i < n; ++i) {
    const mtmd_decoder_pos a = mtmd_image_tokens_get_decoder_pos(img, 0, static_cast<size_t>(i));
    const mtmd_decoder_pos b = mtmd_image_tokens_get_decoder_pos(img, 1, static_cast<size_t>(i));
    const uint32_t at[4] = {a.t, a.y, a.x, a.z}, bt[4] = {b.t, b.y, b.x, b.z};
    for (int k = 0; k < 4; ++k) {
      pc->mrope[static_cast<size_t>(i) * 4 + k] = static_cast<int32_t>(at[k]);
      if (bt[k] != at[k]) shift |= static_cast<uint8_t>(1u << k);
    }
  }
  pc->mrope_shift = shift;
}

}  // namespace

Result<PromptChunks> tokenize_with_media(Projector* p, const std::string& text,
                                         const std::vector<Bitmap*>& bitmaps, bool add_special) {
  std::shared_ptr<mtmd_input_chunks> chunks(mtmd_input_chunks_init(), mtmd_input_chunks_free);
  mtmd_input_text in{text.c_str(), text.size(), add_special, /*parse_special=*/true};
  std::vector<const mtmd_bitmap*> bms;
  for (Bitmap* b : bitmaps) bms.push_back(b->bitmap);
  take_llama_errors();
  int32_t rc = 0;
  try {
    rc = mtmd_tokenize(p->ctx, chunks.get(), &in, bms.data(), bms.size());
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the prompt with media could not be tokenized: ") +
                                   e.what());
  }
  if (rc == 1) {
    return Status::InvalidArgument("the prompt has a different number of media markers than media");
  }
  if (rc != 0) {
    const std::string why = take_llama_errors();
    return Status::InvalidArgument("the media could not be prepared for the projector" +
                                   (why.empty() ? std::string() : ": " + why));
  }
  PromptChunks out;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks.get(), i);
    PromptChunk pc;
    const auto type = mtmd_input_chunk_get_type(c);
    if (type == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
      pc.tokens.assign(t, t + n);
      pc.n_tokens = static_cast<int32_t>(n);
      pc.n_pos = pc.n_tokens;
    } else {
      pc.media = true;
      pc.audio = type == MTMD_INPUT_CHUNK_TYPE_AUDIO;
      pc.n_tokens = static_cast<int32_t>(mtmd_input_chunk_get_n_tokens(c));
      pc.n_pos = static_cast<int32_t>(mtmd_input_chunk_get_n_pos(c));
      const char* id = mtmd_input_chunk_get_id(c);
      pc.id = id ? id : "";
      pc.non_causal = mtmd_decode_use_non_causal(p->ctx, c);
      pc.handle = c;
      if (mtmd_decode_use_mrope(p->ctx)) set_mrope_positions(c, &pc);
    }
    out.chunks.push_back(std::move(pc));
  }
  out.owner = std::move(chunks);
  return out;
}

Status encode_media_chunk(Projector* p, const void* handle, int32_t n_embd,
                          std::vector<float>* out) {
  const auto* c = static_cast<const mtmd_input_chunk*>(handle);
  take_llama_errors();
  int32_t rc = 0;
  try {
    rc = mtmd_encode_chunk(p->ctx, c);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("the projector failed to encode the media: ") + e.what());
  }
  if (rc != 0) {
    return Status::Internal("the projector failed to encode the media: " + take_llama_errors());
  }
  const size_t n = static_cast<size_t>(mtmd_input_chunk_get_n_tokens(c)) * static_cast<size_t>(n_embd);
  const float* e = mtmd_get_output_embd(p->ctx);
  out->assign(e, e + n);
  return Status::Ok();
}

}  // namespace edgellm::engine
