// Media in a prompt: reading, bounds, tokenizing into placeholder runs, and the prefill's
// evaluation of a run (media.h).
#include "engine/media.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/sys.h"
#include "engine/decode_control.h"
#include "engine/model_impl.h"

namespace edgellm::engine {
namespace {

constexpr uint32_t kMask = 0x3FFFFFFF;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// The item's bytes: `bytes`, or the file at `path`, within kMaxMediaBytes.
Status read_media(const Media& m, size_t index, std::vector<uint8_t>* storage,
                  const std::vector<uint8_t>** bytes) {
  const std::string which = "media item " + std::to_string(index + 1);
  if (!m.bytes.empty()) {
    if (m.bytes.size() > kMaxMediaBytes) {
      return Status::InvalidArgument(which + " is " + std::to_string(m.bytes.size()) +
                                     " bytes, more than the limit of " +
                                     std::to_string(kMaxMediaBytes >> 20) + " MiB");
    }
    *bytes = &m.bytes;
    return Status::Ok();
  }
  if (m.path.empty()) return Status::InvalidArgument(which + " has neither a path nor bytes");
  struct stat st {};
  if (::stat(m.path.c_str(), &st) != 0) {
    return Status::NotFound("cannot read " + m.path + " (" + which + "): no such file");
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(m.path + " is not a regular file");
  if (st.st_size == 0) return Status::InvalidArgument(m.path + " is empty (0 bytes): not an image or audio file");
  if (static_cast<uint64_t>(st.st_size) > kMaxMediaBytes) {
    return Status::InvalidArgument(m.path + " is " + std::to_string(st.st_size) +
                                   " bytes, more than the limit of " +
                                   std::to_string(kMaxMediaBytes >> 20) + " MiB for one media item");
  }
  std::ifstream f(m.path, std::ios::binary);
  storage->resize(static_cast<size_t>(st.st_size));
  if (!f.read(reinterpret_cast<char*>(storage->data()), st.st_size)) {
    return Status::Unavailable("reading " + m.path + " failed");
  }
  *bytes = storage;
  return Status::Ok();
}

}  // namespace

llama_token media_token(uint64_t hash, int32_t i) {
  return -2 - static_cast<llama_token>((static_cast<uint32_t>(hash) + static_cast<uint32_t>(i)) & kMask);
}

std::shared_ptr<const std::vector<float>> MediaCache::Find(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void MediaCache::Put(uint64_t key, std::shared_ptr<const std::vector<float>> embd) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t size = embd->size() * sizeof(float);
  if (size > budget_ || index_.count(key)) return;
  lru_.emplace_front(key, std::move(embd));
  index_[key] = lru_.begin();
  bytes_ += size;
  while (bytes_ > budget_) {
    bytes_ -= lru_.back().second->size() * sizeof(float);
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

size_t MediaCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool has_media(const std::vector<llama_token>& tokens) {
  return std::any_of(tokens.begin(), tokens.end(), is_media_token);
}

bool has_media(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    if (!m.media.empty()) return true;
  }
  return false;
}

Status place_markers(std::string* content, size_t n_media, const std::string& which) {
  const std::string marker = media_marker();
  size_t markers = 0;
  for (size_t at = content->find(marker); at != std::string::npos;
       at = content->find(marker, at + 1)) {
    ++markers;
  }
  if (markers == n_media) return Status::Ok();
  if (markers == 0) {
    std::string head;
    for (size_t i = 0; i < n_media; ++i) head += marker;
    *content = head + *content;
    return Status::Ok();
  }
  return Status::InvalidArgument(which + " has " + std::to_string(markers) + " media markers (" +
                                 marker + ") for " + std::to_string(n_media) +
                                 " media items: put one marker per item, or none (then they all "
                                 "go before the text)");
}

namespace {

// Reads, bounds and decodes one item, and tokenizes it alone: its shape and its chunks.
Status decode_item(ProjectorState& ps, const std::vector<uint8_t>& bytes, uint64_t content,
                   const std::string& which, MediaShape* shape,
                   std::shared_ptr<PromptChunks>* chunks) {
  if (looks_like_audio(bytes.data(), bytes.size()) && !ps.info.audio) {
    return Status::InvalidArgument(which + " is audio, but this projector encodes images only");
  }
  ImageHeader ih;
  if (check_image_header(bytes, &ih)) {
    if (static_cast<int64_t>(ih.width) * ih.height > kMaxImagePixels) {
      return Status::InvalidArgument(
          which + " is a " + ih.format + " of " + std::to_string(ih.width) + " x " +
          std::to_string(ih.height) + " pixels, more than the limit of " +
          std::to_string(kMaxImagePixels / 1000000) + " megapixels: scale it down first");
    }
    if (ih.width == 0 || ih.height == 0) {
      return Status::InvalidArgument(which + " is a " + ih.format + " of " +
                                     std::to_string(ih.width) + " x " +
                                     std::to_string(ih.height) + " pixels: nothing to see");
    }
    if (!ih.complete) {
      return Status::InvalidArgument(which + " is a " + ih.format +
                                     " that is cut short (it does not end as one must): the "
                                     "file is truncated or damaged");
    }
  }
  const std::string id = hex64(content);
  bool audio = false;
  Result<BitmapPtr> b =
      decode_media(ps.projector.get(), bytes.data(), bytes.size(), id, kMaxImagePixels,
                   kMaxAudioSeconds, &audio);
  if (!b.ok()) return Status(b.status().code(), which + ": " + b.status().message());
  if (audio && !ps.info.audio) {
    return Status::InvalidArgument(which + " is audio, but this projector encodes images only");
  }
  if (!audio && !ps.info.vision) {
    return Status::InvalidArgument(which + " is an image, but this projector encodes audio only");
  }
  Result<PromptChunks> tokenized =
      tokenize_with_media(ps.projector.get(), media_marker_text(), {b->get()}, false);
  if (!tokenized.ok()) return Status(tokenized.status().code(), which + ": " + tokenized.status().message());
  shape->content = content;
  shape->audio = audio;
  int32_t slice = 0;
  for (const PromptChunk& c : tokenized->chunks) {
    if (!c.media) {
      shape->tokens.insert(shape->tokens.end(), c.tokens.begin(), c.tokens.end());
      continue;
    }
    if (c.non_causal) {
      return Status::FailedPrecondition("this projector's media need non-causal attention "
                                        "(Gemma 3 and its kind), which edgellm does not support yet");
    }
    MediaRun run;
    run.hash = mix(content ^ mix(static_cast<uint64_t>(slice++) + 1));
    run.n_tokens = c.n_tokens;
    run.audio = c.audio;
    run.n_pos = c.n_pos;
    if (!c.mrope.empty()) {
      run.mrope = std::make_shared<const std::vector<int32_t>>(c.mrope);
      run.mrope_shift = c.mrope_shift;
    }
    for (int32_t i = 0; i < c.n_tokens; ++i) shape->tokens.push_back(media_token(run.hash, i));
    shape->runs.push_back(run);
  }
  *chunks = std::make_shared<PromptChunks>(std::move(tokenized).value());
  return Status::Ok();
}

std::shared_ptr<const MediaShape> find_shape(ProjectorState& ps, uint64_t content) {
  std::lock_guard<std::mutex> lock(ps.shapes_mu);
  auto it = ps.shapes.find(content);
  if (it == ps.shapes.end()) return nullptr;
  it->second.second = ++ps.shapes_clock;
  return it->second.first;
}

void keep_shape(ProjectorState& ps, std::shared_ptr<const MediaShape> shape) {
  std::lock_guard<std::mutex> lock(ps.shapes_mu);
  if (ps.shapes.size() >= ProjectorState::kMaxShapes) {
    auto oldest = ps.shapes.begin();
    for (auto it = ps.shapes.begin(); it != ps.shapes.end(); ++it) {
      if (it->second.second < oldest->second.second) oldest = it;
    }
    ps.shapes.erase(oldest);
  }
  const uint64_t key = shape->content;
  ps.shapes[key] = {std::move(shape), ++ps.shapes_clock};
}

}  // namespace

Result<std::vector<llama_token>> media_prompt_tokens(ProjectorState& ps, const llama_vocab* vocab,
                                                     const std::string& text,
                                                     std::vector<Media> media,
                                                     bool add_special, MediaPrompt* out) {
  if (media.size() > kMaxMediaItems) {
    return Status::InvalidArgument(std::to_string(media.size()) + " media items in one prompt: " +
                                   "at most " + std::to_string(kMaxMediaItems));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string marker = media_marker_text();
  std::vector<llama_token> toks;
  size_t from = 0;
  for (size_t i = 0; i <= media.size(); ++i) {
    const size_t at = i < media.size() ? text.find(marker, from) : std::string::npos;
    if (i < media.size() && at == std::string::npos) {
      return Status::InvalidArgument("the prompt has fewer media markers than its " +
                                     std::to_string(media.size()) + " media items");
    }
    const std::string part = text.substr(from, at == std::string::npos ? std::string::npos : at - from);
    if (!part.empty() || (i == 0 && add_special)) {
      Result<std::vector<int32_t>> t = tokenize(vocab, part, i == 0 && add_special, true);
      if (!t.ok()) return t.status();
      toks.insert(toks.end(), t->begin(), t->end());
    }
    if (i == media.size()) break;
    if (text.find(marker, at + marker.size()) != std::string::npos && i + 1 == media.size()) {
      return Status::InvalidArgument("the prompt has more media markers than its " +
                                     std::to_string(media.size()) + " media items");
    }
    from = at + marker.size();
    MediaPrompt::Item item;
    item.name = media[i].path.empty() ? "media item " + std::to_string(i + 1) : media[i].path;
    std::vector<uint8_t> storage;
    const std::vector<uint8_t>* bytes = nullptr;
    EDGELLM_RETURN_IF_ERROR(read_media(media[i], i, &storage, &bytes));
    const uint64_t content = fnv1a(bytes->data(), bytes->size());
    item.bytes = std::make_shared<const std::vector<uint8_t>>(
        bytes == &storage ? std::move(storage) : std::move(media[i].bytes));
    item.shape = find_shape(ps, content);
    if (!item.shape) {
      auto shape = std::make_shared<MediaShape>();
      EDGELLM_RETURN_IF_ERROR(decode_item(ps, *item.bytes, content, item.name, shape.get(), &item.chunks));
      keep_shape(ps, shape);
      item.shape = std::move(shape);
    }
    toks.insert(toks.end(), item.shape->tokens.begin(), item.shape->tokens.end());
    for (const MediaRun& r : item.shape->runs) out->n_media_tokens += r.n_tokens;
    out->items.push_back(std::move(item));
  }
  out->n_media = static_cast<int32_t>(media.size());
  out->decode_ms = ms_since(t0);
  return toks;
}

Result<FinishReason> eval_media(ProjectorState& ps, const MediaPrompt& prompt, int32_t n_embd,
                                const llama_token* tokens, int32_t avail, int32_t n_batch,
                                DecodeControl& control, Stats* st, int32_t* n) {
  *n = 0;
  const uint32_t base = static_cast<uint32_t>(-2 - tokens[0]);
  const MediaPrompt::Item* item = nullptr;
  const MediaRun* run = nullptr;
  size_t index = 0;  // of the run in its item
  int32_t k = 0, m = 0;
  for (const MediaPrompt::Item& it : prompt.items) {
    for (size_t j = 0; j < it.shape->runs.size() && !run; ++j) {
      const MediaRun& r = it.shape->runs[j];
      const int32_t off = static_cast<int32_t>((base - static_cast<uint32_t>(r.hash)) & kMask);
      if (off >= r.n_tokens) continue;
      int32_t len = 0;
      while (len < avail && off + len < r.n_tokens &&
             tokens[len] == media_token(r.hash, off + len)) {
        ++len;
      }
      if (len > 0) {
        item = &it;
        run = &r;
        index = j;
        k = off;
        m = len;
      }
    }
    if (run) break;
  }
  if (!run) return Status::Internal("the prompt holds a media placeholder without its media");
  std::shared_ptr<const std::vector<float>> embd = ps.cache.Find(run->hash);
  if (embd) {
    ++st->media_chunks_cached;
  } else {
    if (control.cancelled()) return FinishReason::kCancelled;
    control.Govern();
    if (!item->chunks) {  // placed by its shape alone: decode it again for its chunks
      const auto t0 = std::chrono::steady_clock::now();
      MediaShape again;
      EDGELLM_RETURN_IF_ERROR(decode_item(ps, *item->bytes, item->shape->content, item->name,
                                          &again, &item->chunks));
      if (again.tokens != item->shape->tokens) {
        return Status::Internal(item->name + " tokenized differently the second time");
      }
      st->media_decode_ms += ms_since(t0);
    }
    const void* handle = nullptr;
    size_t seen = 0;
    for (const PromptChunk& c : item->chunks->chunks) {
      if (c.media && seen++ == index) handle = c.handle;
    }
    if (!handle) return Status::Internal(item->name + ": a media chunk is missing");
    const auto t0 = std::chrono::steady_clock::now();
    auto fresh = std::make_shared<std::vector<float>>();
    {
      std::lock_guard<std::mutex> lock(ps.encode_mu);
      EDGELLM_RETURN_IF_ERROR(encode_media_chunk(ps.projector.get(), handle, n_embd, fresh.get()));
    }
    st->media_encode_ms += ms_since(t0);
    ps.cache.Put(run->hash, fresh);
    embd = std::move(fresh);
  }
  // The run's first position: where the next token goes, or where its part already cached
  // sits (a prefill that stopped inside the run).
  const KvPositions& pos = control.positions();
  const llama_pos start =
      k == 0 ? pos.next : pos.cell[pos.cell.size() - static_cast<size_t>(k)];
  for (int32_t done = 0; done < m;) {
    if (control.cancelled()) return FinishReason::kCancelled;
    control.Govern();
    const int32_t c = std::min(n_batch, m - done);
    const int32_t at = k + done;  // offset in the run
    const float* e = embd->data() + static_cast<size_t>(at) * static_cast<size_t>(n_embd);
    Result<FinishReason> r =
        run->mrope
            ? control.DecodeEmbd(e, tokens + done, c, start,
                                 run->mrope->data() + static_cast<size_t>(at) * 4,
                                 run->mrope_shift, start + run->n_pos, "media prefill")
            : control.DecodeEmbd(e, tokens + done, c, start + at, nullptr, 0, start + at + c,
                                 "media prefill");
    if (!r.ok() || *r != FinishReason::kNone) return r;
    done += c;
    *n = done;
  }
  return FinishReason::kNone;
}

}  // namespace edgellm::engine
