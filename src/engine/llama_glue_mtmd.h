// The llama.cpp glue for images and audio in the prompt: every call into tools/mtmd (the
// projector, media decoding, tokenizing a prompt with media, encoding). Like llama_glue.h it
// keeps mtmd's types out of the rest of edgellm: a llama.cpp upgrade touches
// llama_glue_mtmd.cc only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgellm/status.h"
#include "llama.h"

namespace edgellm::engine {

// A loaded projector (an mtmd context over the text model).
struct Projector;
struct ProjectorFree {
  void operator()(Projector* p) const;
};
using ProjectorPtr = std::unique_ptr<Projector, ProjectorFree>;

struct ProjectorInfo {
  bool vision = false;
  bool audio = false;
  int32_t audio_sample_rate = -1;
  // Positions follow M-RoPE (Qwen2-VL): a media chunk's positions differ from its tokens.
  bool mrope = false;
};

// Loads `mmproj` for `text_model`. n_threads: the encoder's threads; image_max_tokens: -1 for
// the projector's own limit. Errors: kCorruptData with mtmd's reason.
Result<ProjectorPtr> load_projector(const std::string& mmproj, const llama_model* text_model,
                                    int32_t n_threads, int32_t image_max_tokens,
                                    ProjectorInfo* info);

// Whether bytes are audio by their first bytes (WAV, FLAC, MP3 with an ID3 tag or a frame
// sync), as mtmd's helper tells audio from images.
bool looks_like_audio(const uint8_t* data, size_t n);

// The memory `mmproj` takes once loaded: its weights and the encoder's compute buffer for the
// largest image (mtmd's own dry run: no weights are read). Check the file first
// (check_projector): clip.cpp aborts on keys of the wrong type.
Result<uint64_t> projector_memory(const std::string& mmproj, int32_t image_max_tokens);

// The marker mtmd replaces with a media item's chunks.
const char* media_marker_text();

// One decoded media item (an image's pixels or an audio clip's samples).
struct Bitmap;
struct BitmapFree {
  void operator()(Bitmap* b) const;
};
using BitmapPtr = std::unique_ptr<Bitmap, BitmapFree>;

// Decodes encoded bytes (JPEG, PNG, BMP, GIF with mtmd's helper; WAV, MP3, FLAC with
// miniaudio as the helper does, for a projector that takes audio). `id` becomes the bitmap's
// id. kInvalidArgument when the bytes are neither, when an image's header says it has more
// than `max_pixels` (checked before decoding), or when audio runs longer than
// `max_audio_seconds` (by its header, else while decoding: never more is decoded).
Result<BitmapPtr> decode_media(Projector* p, const uint8_t* data, size_t n, const std::string& id,
                               int64_t max_pixels, double max_audio_seconds, bool* is_audio);
// Audio (WAV, MP3, FLAC) as mono f32 samples at `sample_rate`, as mtmd's helper decodes it, but
// read in one-second blocks: more than `max_seconds` (by the header's claim, else by what
// decodes) is a kInvalidArgument naming both, and never more is decoded.
Result<std::vector<float>> decode_audio_pcm(const uint8_t* data, size_t n, int sample_rate,
                                            double max_seconds);

// A prompt with media, tokenized: text chunks carry their tokens, media chunks the number of
// embeddings they add; `handle` is the chunk, for encode_media_chunk (valid while the
// PromptChunks lives).
struct PromptChunk {
  bool media = false;
  bool audio = false;
  std::vector<llama_token> tokens;
  int32_t n_tokens = 0;
  int32_t n_pos = 0;
  std::string id;  // media: the bitmap's id
  bool non_causal = false;  // media: decoded with non-causal attention (Gemma 3)
  // media, for an M-RoPE text model (ProjectorInfo::mrope): each embedding's 4 positions in
  // llama_batch's section order (time, height, width, fourth) with the chunk's first position
  // at 0; bit c of mrope_shift set when section c moves with that first position.
  std::vector<int32_t> mrope;
  uint8_t mrope_shift = 0;
  const void* handle = nullptr;
};
struct PromptChunks {
  std::vector<PromptChunk> chunks;
  std::shared_ptr<void> owner;  // the mtmd chunks the handles point into
};

// Tokenizes `text` (one marker per bitmap, in order) with `bitmaps`. add_special: the
// vocabulary's BOS where it wants one; special tokens in the text are parsed.
Result<PromptChunks> tokenize_with_media(Projector* p, const std::string& text,
                                         const std::vector<Bitmap*>& bitmaps, bool add_special);

// Encodes one media chunk; `out` gets n_tokens x n_embd floats. Not thread-safe per Projector.
Status encode_media_chunk(Projector* p, const void* handle, int32_t n_embd,
                          std::vector<float>* out);

}  // namespace edgellm::engine
