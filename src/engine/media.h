// Media in a prompt (GenerateOptions::media): each item read and bounded, decoded and tokenized
// with the model's projector, and put into the prompt's tokens as a run of placeholder tokens
// per media chunk (an image tile, an audio window). A placeholder is negative (no vocabulary
// id is) and derived from the chunk's content hash, so the KV-cache prefix reuse that compares
// tokens compares media by content too: the same image at the same place is not encoded or
// decoded again. The prefill evaluates a run by encoding the chunk (or taking its embeddings
// from the model's cache of encoded chunks) and decoding the embeddings into the context.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "edgellm/session.h"
#include "engine/llama_glue_mtmd.h"
#include "llama.h"

namespace edgellm::engine {

class DecodeControl;

inline bool is_media_token(llama_token t) { return t <= -2; }
// The placeholder for position `i` of the chunk whose content hash is `hash`.
llama_token media_token(uint64_t hash, int32_t i);

// Bounds on one media item, checked before anything is decoded.
inline constexpr size_t kMaxMediaBytes = size_t{64} << 20;
inline constexpr int64_t kMaxImagePixels = 40'000'000;
inline constexpr size_t kMaxMediaItems = 32;
inline constexpr double kMaxAudioSeconds = 600;  // ten minutes: 20 of a whisper encoder's windows

// What an image file's header says (media_bounds.cc): PNG, JPEG, GIF or BMP; its size; and
// whether the file ends as such a file must (a cut file decodes to grey in stb, not an error).
struct ImageHeader {
  const char* format = "";
  uint32_t width = 0, height = 0;
  bool complete = false;
};
// False when the bytes are none of those formats (or a JPEG without a frame header).
bool check_image_header(const std::vector<uint8_t>& bytes, ImageHeader* h);

// Encoded chunks by content, least recently used first out, within a byte budget. Thread-safe.
class MediaCache {
 public:
  explicit MediaCache(size_t budget_bytes) : budget_(budget_bytes) {}
  std::shared_ptr<const std::vector<float>> Find(uint64_t key);
  void Put(uint64_t key, std::shared_ptr<const std::vector<float>> embd);
  size_t bytes() const;

 private:
  using Entry = std::pair<uint64_t, std::shared_ptr<const std::vector<float>>>;
  mutable std::mutex mu_;
  size_t budget_, bytes_ = 0;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
};

// One media chunk of a prompt (an image tile, an audio window): the run of placeholders it
// takes, keyed by the item's content and the chunk's index in the item.
struct MediaRun {
  uint64_t hash = 0;
  int32_t n_tokens = 0;
  bool audio = false;
  // The positions the run advances (n_tokens, but an M-RoPE image's max(rows, columns)), and
  // under M-RoPE its embeddings' positions (PromptChunk::mrope, mrope_shift).
  int32_t n_pos = 0;
  std::shared_ptr<const std::vector<int32_t>> mrope;
  uint8_t mrope_shift = 0;
};

// One media item tokenized alone: the text tokens mtmd wraps it in (an image's begin/end
// tokens, a tile grid's row markers) and a run of placeholders per chunk. mtmd tokenizes the
// text between markers apart from the media, so a prompt's tokens are its text parts' tokens
// with each item's shape in place of its marker.
struct MediaShape {
  uint64_t content = 0;  // FNV-1a of the encoded bytes
  bool audio = false;
  std::vector<llama_token> tokens;
  std::vector<MediaRun> runs;
};

// What a model loaded with a projector holds for it (Model::Impl::media).
struct ProjectorState {
  ProjectorPtr projector;
  ProjectorInfo info;
  // sha256 of the projector's header and tensor table, its size and image_max_tokens: what KV
  // cells computed from its media depend on besides the text model (kv_file.cc).
  std::string identity;
  std::mutex encode_mu;  // mtmd encodes one chunk at a time per context
  MediaCache cache{size_t{64} << 20};
  // Shapes by content, so a conversation's later turns place an earlier image without
  // decoding it again (at most kMaxShapes, the least recently used go).
  std::mutex shapes_mu;
  std::unordered_map<uint64_t, std::pair<std::shared_ptr<const MediaShape>, uint64_t>> shapes;
  uint64_t shapes_clock = 0;
  static constexpr size_t kMaxShapes = 256;
};

// The media of one prompt, in order.
struct MediaPrompt {
  struct Item {
    std::shared_ptr<const MediaShape> shape;
    std::shared_ptr<const std::vector<uint8_t>> bytes;  // encoded, to decode again if needed
    std::string name;                                   // for errors: the path or "media item N"
    // The decoded chunks (mtmd's, for encoding): kept from tokenizing when the item was
    // decoded for this prompt, else decoded on the first chunk the encoded cache lacks.
    mutable std::shared_ptr<PromptChunks> chunks;
  };
  std::vector<Item> items;
  int32_t n_media = 0;         // items
  int32_t n_media_tokens = 0;  // placeholders in the prompt
  double decode_ms = 0;        // reading, decoding and tokenizing those not known by content
};

// Whether any message carries media; whether any token is a media placeholder.
bool has_media(const std::vector<llama_token>& tokens);
bool has_media(const std::vector<ChatMessage>& messages);
// Puts one media_marker() per item before the text of a content that has none; kInvalidArgument
// when it has markers but not one per item.
Status place_markers(std::string* content, size_t n_media, const std::string& which);

// The prompt's tokens for `text` (one marker per item, in order) and `media`: the text parts'
// tokens (the first with the vocabulary's BOS when add_special) and each item's shape in
// place of its marker; `out` gets the items and the counts.
// The items' bytes move into `out` (a path's are read).
Result<std::vector<llama_token>> media_prompt_tokens(ProjectorState& ps, const llama_vocab* vocab,
                                                     const std::string& text,
                                                     std::vector<Media> media, bool add_special,
                                                     MediaPrompt* out);

// Evaluates the placeholders at tokens[0..avail) that belong to one chunk of `prompt` through
// `control` (encoding it first unless the cache has it): `*n` gets how many it decoded.
// kNone, or why it stopped (cancel, a full context); an unknown placeholder is kInternal.
Result<FinishReason> eval_media(ProjectorState& ps, const MediaPrompt& prompt, int32_t n_embd,
                                const llama_token* tokens, int32_t avail, int32_t n_batch,
                                DecodeControl& control, Stats* st, int32_t* n);

}  // namespace edgellm::engine
