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

// WAV, FLAC or MP3 by their first bytes (as mtmd's helper tells audio from images).
bool looks_like_audio(const std::vector<uint8_t>& b) {
  auto at = [&](size_t i, const char* s) { return b.size() >= i + std::strlen(s) &&
                                                  std::memcmp(b.data() + i, s, std::strlen(s)) == 0; };
  if (at(0, "RIFF") && at(8, "WAVE")) return true;
  if (at(0, "fLaC") || at(0, "ID3")) return true;
  return b.size() >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0;
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

Result<std::vector<llama_token>> media_prompt_tokens(ProjectorState& ps, const std::string& text,
                                                     const std::vector<Media>& media,
                                                     bool add_special, MediaPrompt* out) {
  if (media.size() > kMaxMediaItems) {
    return Status::InvalidArgument(std::to_string(media.size()) + " media items in one prompt: " +
                                   "at most " + std::to_string(kMaxMediaItems));
  }
  if (ps.info.mrope) {
    return Status::FailedPrecondition("this projector's text model places media with M-RoPE "
                                 "(Qwen2-VL and its kind), which edgellm does not support yet");
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<BitmapPtr> bitmaps;
  std::vector<Bitmap*> raw;
  std::map<std::string, uint64_t> hash_of;  // bitmap id -> content hash
  for (size_t i = 0; i < media.size(); ++i) {
    std::vector<uint8_t> storage;
    const std::vector<uint8_t>* bytes = nullptr;
    EDGELLM_RETURN_IF_ERROR(read_media(media[i], i, &storage, &bytes));
    const std::string which = media[i].path.empty() ? "media item " + std::to_string(i + 1)
                                                    : media[i].path;
    if (looks_like_audio(*bytes) && !ps.info.audio) {
      return Status::InvalidArgument(which + " is audio, but this projector encodes images only");
    }
    ImageHeader ih;
    if (check_image_header(*bytes, &ih)) {
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
    const uint64_t h = fnv1a(bytes->data(), bytes->size());
    const std::string id = hex64(h) + "-" + std::to_string(i);
    bool audio = false;
    Result<BitmapPtr> b = decode_media(ps.projector.get(), bytes->data(), bytes->size(), id,
                                       kMaxImagePixels, &audio);
    if (!b.ok()) return Status(b.status().code(), which + ": " + b.status().message());
    if (audio && !ps.info.audio) {
      return Status::InvalidArgument(which + " is audio, but this projector encodes images only");
    }
    if (!audio && !ps.info.vision) {
      return Status::InvalidArgument(which + " is an image, but this projector encodes audio only");
    }
    hash_of[id] = h;
    raw.push_back(b->get());
    bitmaps.push_back(std::move(b).value());
  }
  out->n_media = static_cast<int32_t>(media.size());
  Result<PromptChunks> chunks = tokenize_with_media(ps.projector.get(), text, raw, add_special);
  if (!chunks.ok()) return chunks.status();
  out->decode_ms = ms_since(t0);
  std::vector<llama_token> toks;
  std::map<std::string, int32_t> slices;  // chunks seen per item
  for (const PromptChunk& c : chunks->chunks) {
    if (!c.media) {
      toks.insert(toks.end(), c.tokens.begin(), c.tokens.end());
      continue;
    }
    if (c.non_causal) {
      return Status::FailedPrecondition("this projector's media need non-causal attention "
                                   "(Gemma 3 and its kind), which edgellm does not support yet");
    }
    const auto it = hash_of.find(c.id);
    if (it == hash_of.end()) return Status::Internal("a media chunk of unknown origin '" + c.id + "'");
    MediaRun run;
    run.hash = mix(it->second ^ mix(static_cast<uint64_t>(slices[c.id]++) + 1));
    run.n_tokens = c.n_tokens;
    run.audio = c.audio;
    run.handle = c.handle;
    for (int32_t i = 0; i < c.n_tokens; ++i) toks.push_back(media_token(run.hash, i));
    out->n_media_tokens += c.n_tokens;
    out->runs.push_back(run);
  }
  out->chunks = std::move(chunks).value();
  return toks;
}

Result<FinishReason> eval_media(ProjectorState& ps, const MediaPrompt& prompt, int32_t n_embd,
                                const llama_token* tokens, int32_t avail, int32_t n_batch,
                                DecodeControl& control, Stats* st, int32_t* n) {
  *n = 0;
  const uint32_t base = static_cast<uint32_t>(-2 - tokens[0]);
  const MediaRun* run = nullptr;
  int32_t k = 0, m = 0;
  for (const MediaRun& r : prompt.runs) {
    const int32_t off = static_cast<int32_t>((base - static_cast<uint32_t>(r.hash)) & kMask);
    if (off >= r.n_tokens) continue;
    int32_t len = 0;
    while (len < avail && off + len < r.n_tokens && tokens[len] == media_token(r.hash, off + len)) {
      ++len;
    }
    if (len > 0) {
      run = &r;
      k = off;
      m = len;
      break;
    }
  }
  if (!run) return Status::Internal("the prompt holds a media placeholder without its media");
  std::shared_ptr<const std::vector<float>> embd = ps.cache.Find(run->hash);
  if (embd) {
    ++st->media_chunks_cached;
  } else {
    if (control.cancelled()) return FinishReason::kCancelled;
    control.Govern();
    const auto t0 = std::chrono::steady_clock::now();
    auto fresh = std::make_shared<std::vector<float>>();
    {
      std::lock_guard<std::mutex> lock(ps.encode_mu);
      EDGELLM_RETURN_IF_ERROR(encode_media_chunk(ps.projector.get(), run->handle, n_embd, fresh.get()));
    }
    st->media_encode_ms += ms_since(t0);
    ps.cache.Put(run->hash, fresh);
    embd = std::move(fresh);
  }
  for (int32_t done = 0; done < m;) {
    if (control.cancelled()) return FinishReason::kCancelled;
    control.Govern();
    const int32_t c = std::min(n_batch, m - done);
    const float* e = embd->data() + static_cast<size_t>(k + done) * static_cast<size_t>(n_embd);
    Result<FinishReason> r = control.DecodeEmbd(e, tokens + done, c, n_embd, "media prefill");
    if (!r.ok() || *r != FinishReason::kNone) return r;
    done += c;
    *n = done;
  }
  return FinishReason::kNone;
}

}  // namespace edgellm::engine
