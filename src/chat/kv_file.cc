#include "chat/kv_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/atomic_file.h"
#include "edgellm/platform.h"
#include "engine/llama_glue.h"
#include "engine/session_impl.h"
#include "store/sha256.h"

namespace edgellm::chat {
namespace {

constexpr char kMagic[8] = {'E', 'D', 'G', 'E', 'L', 'L', 'K', 'V'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPrefixBytes = 8 + 4 + 8;
constexpr uint64_t kMaxHeaderBytes = 256ull << 20;  // tokens of a huge context + a history
constexpr uint64_t kMaxPayloadBytes = 16ull << 30;

struct Setup {
  std::string identity, kv_type, loras, build;
  uint64_t model_bytes = 0;
  int32_t n_ctx = 0;
};

// The text model's identity, or with media among `tokens` the text model's and the
// projector's together (the cells of media depend on both).
Result<std::string> identity_for(Session::Impl& s, bool media) {
  Result<std::string> id = s.model->identity();
  if (!id.ok() || !media) return id;
  if (!s.model->media) return Status::FailedPrecondition("media without a projector");
  const std::string both = *id + "|" + s.model->media->identity;
  return store::sha256_hex(both.data(), both.size());
}

Result<Setup> setup_of(Session::Impl& s, bool media = false) {
  Result<std::string> id = identity_for(s, media);
  if (!id.ok()) return id.status();
  Setup u;
  u.identity = *id;
  u.model_bytes = s.model->info.file_bytes;
  u.n_ctx = s.options.n_ctx;
  u.kv_type = "f16";  // Session contexts keep an F16 cache (engine::context_params)
  for (const auto& [adapter, scale] : s.loras) {
    u.loras += adapter->info().path + ":" + std::to_string(adapter->info().file_bytes) + ":" +
               std::to_string(scale) + ";";
  }
  u.build = llama_build();
  return u;
}

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& v) {
    u64(v.size());
    out_ += v;
  }
  void raw(const void* p, size_t n) {
    if (n > 0) out_.append(static_cast<const char*>(p), n);  // an empty vector's data() may be null
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& b, size_t pos) : b_(b), pos_(pos) {}
  bool u32(uint32_t* v) { return raw(v, 4); }
  bool u64(uint64_t* v) { return raw(v, 8); }
  bool str(std::string* v, uint64_t max) {
    uint64_t n = 0;
    if (!u64(&n) || n > max || n > b_.size() - pos_) return false;
    v->assign(b_, pos_, n);
    pos_ += n;
    return true;
  }
  bool raw(void* p, size_t n) {
    if (n == 0) return true;  // an empty vector's data() may be null: no memcpy
    if (n > b_.size() - pos_) return false;
    std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_;
};

std::string header_of(const Setup& u, const std::vector<llama_token>& tokens,
                      const std::string& app_data, const std::vector<uint8_t>& payload) {
  Writer w;
  w.raw(kMagic, sizeof(kMagic));
  w.u32(kVersion);
  w.u64(0);  // header bytes, set below
  w.str(u.identity);
  w.u64(u.model_bytes);
  w.u32(static_cast<uint32_t>(u.n_ctx));
  w.str(u.kv_type);
  w.str(u.loras);
  w.str(u.build);
  w.u64(tokens.size());
  w.raw(tokens.data(), tokens.size() * sizeof(llama_token));
  w.str(app_data);
  w.u64(payload.size());
  w.str(store::sha256_hex(payload.data(), payload.size()));
  const uint64_t total = w.bytes().size() + 8 + 64;  // + the checksum string
  std::memcpy(w.bytes().data() + 12, &total, 8);
  w.str(store::sha256_hex(w.bytes().data(), w.bytes().size()));
  return w.bytes();
}

Status write_file(const std::string& path, const std::string& header,
                  const std::vector<uint8_t>& payload) {
  AtomicFile file(path);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.path().c_str(), "wb"), &std::fclose);
  if (!f) return Status::Unavailable("cannot create " + file.path() + ": " + std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  // (An empty payload's data() may be null, which fwrite must not get even for 0 bytes.)
  ok = ok && (payload.empty() ||
              std::fwrite(payload.data(), 1, payload.size(), f.get()) == payload.size());
  ok = std::fflush(f.get()) == 0 && ok;
  const int err = errno;
  ok = std::fclose(f.release()) == 0 && ok;
  if (!ok) {
    return Status::ResourceExhausted("writing the KV state to " + file.path() + " failed (" +
                                     std::strerror(err) + "): free some disk space and retry");
  }
  return file.Commit("the KV state file");
}

KvFileRead verdict(KvFileVerdict v, std::string why) {
  KvFileRead r;
  r.verdict = v;
  r.why = std::move(why);
  return r;
}

}  // namespace

Result<std::string> session_fingerprint(Session::Impl& s, const std::vector<llama_token>& tokens) {
  Result<Setup> u = setup_of(s, engine::has_media(tokens));
  if (!u.ok()) return u.status();
  return u->identity + "|" + std::to_string(u->model_bytes) + "|" + std::to_string(u->n_ctx) +
         "|" + u->kv_type + "|" + u->loras + "|" + u->build;
}

Status write_kv_file(Session::Impl& s, const std::string& path, const std::string& app_data) {
  Result<Setup> u = setup_of(s, engine::has_media(s.cached));
  if (!u.ok()) return u.status();
  std::vector<uint8_t> payload;
  // M-RoPE media cells (Qwen2-VL's images) sit at positions other than their indices, which
  // the file does not record yet: such a file holds the history without the cells.
  if (s.ctx && !s.cached.empty() && s.kv_pos.IsIdentity()) payload = engine::kv_state_get(s.ctx);
  if (payload.empty()) return write_kv_file_without_state(s, path, app_data);
  return write_file(path, header_of(*u, s.cached, app_data, payload), payload);
}

Status write_kv_file_without_state(Session::Impl& s, const std::string& path,
                                   const std::string& app_data) {
  Result<Setup> u = setup_of(s);
  if (!u.ok()) return u.status();
  return write_file(path, header_of(*u, {}, app_data, {}), {});
}

KvFileRead read_kv_file(Session::Impl& s, const std::string& path, bool want_state) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    if (errno == ENOENT) return verdict(KvFileVerdict::kMissing, path + " does not exist");
    return verdict(KvFileVerdict::kDamaged,
                   "cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode)) {
    return verdict(KvFileVerdict::kDamaged, path + " is not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string head(kPrefixBytes, '\0');
  if (size < kPrefixBytes || std::fread(head.data(), 1, head.size(), f.get()) != head.size() ||
      std::memcmp(head.data(), kMagic, sizeof(kMagic)) != 0) {
    return verdict(KvFileVerdict::kDamaged, path + " is not an edgellm KV state file");
  }
  uint32_t version = 0;
  uint64_t header_bytes = 0;
  std::memcpy(&version, head.data() + 8, 4);
  std::memcpy(&header_bytes, head.data() + 12, 8);
  if (version != kVersion) {
    return verdict(KvFileVerdict::kOtherSetup, path + " is KV format version " +
                                                   std::to_string(version) + ", this edgellm reads " +
                                                   std::to_string(kVersion));
  }
  if (header_bytes < kPrefixBytes + 72 || header_bytes > kMaxHeaderBytes || header_bytes > size) {
    return verdict(KvFileVerdict::kDamaged, path + " is cut short or its header size is damaged");
  }
  head.resize(header_bytes);
  if (std::fread(head.data() + kPrefixBytes, 1, header_bytes - kPrefixBytes, f.get()) !=
      header_bytes - kPrefixBytes) {
    return verdict(KvFileVerdict::kDamaged, "cannot read the header of " + path);
  }
  const size_t sum_at = header_bytes - 72;
  std::string sum;
  Reader tail(head, sum_at);
  if (!tail.str(&sum, 64) || sum != store::sha256_hex(head.data(), sum_at)) {
    return verdict(KvFileVerdict::kDamaged, path + "'s header checksum does not match: damaged");
  }
  Setup got;
  uint32_t n_ctx = 0;
  uint64_t n_tokens = 0, payload_bytes = 0;
  std::string payload_sum;
  KvFileRead r;
  Reader rd(head, kPrefixBytes);
  std::vector<llama_token> tokens;
  bool ok = rd.str(&got.identity, 128) && rd.u64(&got.model_bytes) && rd.u32(&n_ctx) &&
            rd.str(&got.kv_type, 64) && rd.str(&got.loras, 1 << 20) && rd.str(&got.build, 256) &&
            rd.u64(&n_tokens) && n_tokens <= (sum_at - rd.pos()) / sizeof(llama_token);
  if (ok) {
    tokens.resize(n_tokens);
    ok = rd.raw(tokens.data(), n_tokens * sizeof(llama_token)) &&
         rd.str(&r.app_data, kMaxHeaderBytes) && rd.u64(&payload_bytes) &&
         rd.str(&payload_sum, 64) && rd.pos() == sum_at;
  }
  if (!ok) return verdict(KvFileVerdict::kDamaged, path + "'s header does not parse: damaged");
  if (payload_bytes > kMaxPayloadBytes || header_bytes + payload_bytes != size) {
    KvFileRead bad = verdict(KvFileVerdict::kDamaged,
                             path + " is " + std::to_string(size) + " bytes, its header says " +
                                 std::to_string(header_bytes + payload_bytes) + ": cut short");
    return bad;
  }
  r.file_bytes = size;
  got.n_ctx = static_cast<int32_t>(n_ctx);

  Result<Setup> want = setup_of(s);
  if (!want.ok()) return verdict(KvFileVerdict::kOtherSetup, want.status().message());
  auto other = [&](std::string why) {
    r.verdict = KvFileVerdict::kOtherSetup;
    r.why = path + " was made " + why;
    return r;
  };
  const bool media = engine::has_media(tokens);
  if (media) {  // cells computed from media: the projector must be this session's too
    if (!s.model->media) {
      return other("with images or audio in it: load the model with its projector (mmproj)");
    }
    Result<std::string> id = identity_for(s, true);
    if (!id.ok()) return verdict(KvFileVerdict::kOtherSetup, id.status().message());
    want->identity = *id;
  }
  if (got.identity != want->identity || got.model_bytes != want->model_bytes) {
    return other(media ? "for another model file or projector than " + s.model->info.path + " with " +
                             s.model->info.mmproj_path
                       : "for another model file than " + s.model->info.path);
  }
  if (got.n_ctx != want->n_ctx || got.kv_type != want->kv_type) {
    return other("with context " + std::to_string(got.n_ctx) + " (" + got.kv_type +
                 "), this session has " + std::to_string(want->n_ctx) + " (" + want->kv_type +
                 ")");
  }
  if (got.loras != want->loras) return other("with other LoRA adapters than this session's");
  if (got.build != want->build) {
    return other("by llama.cpp " + got.build + ", this is " + want->build);
  }
  for (llama_token t : tokens) {
    if (t == -1 || t >= s.model->info.n_vocab) {
      return verdict(KvFileVerdict::kDamaged, path + " holds a token outside the vocabulary");
    }
  }
  if (static_cast<int32_t>(n_tokens) >= want->n_ctx) {
    return verdict(KvFileVerdict::kDamaged, path + " holds more tokens than its context");
  }
  r.verdict = KvFileVerdict::kOk;
  if (!want_state || payload_bytes == 0) return r;

  std::vector<uint8_t> payload(payload_bytes);
  if (std::fread(payload.data(), 1, payload.size(), f.get()) != payload.size() ||
      store::sha256_hex(payload.data(), payload.size()) != payload_sum) {
    r.verdict = KvFileVerdict::kDamaged;
    r.why = path + "'s KV cells do not match their checksum: damaged";
    return r;
  }
  Status ctx_ok = s.EnsureContext();
  if (!ctx_ok.ok()) {
    r.verdict = KvFileVerdict::kOtherSetup;
    r.why = ctx_ok.message();
    return r;
  }
  s.ClearKv();
  if (!engine::kv_state_set(s.ctx, payload) ||
      engine::kv_pos_max(s.ctx) != static_cast<int32_t>(n_tokens) - 1) {
    s.ClearKv();
    r.verdict = KvFileVerdict::kDamaged;
    r.why = "llama.cpp refused the KV cells of " + path;
    return r;
  }
  s.cached = std::move(tokens);
  s.kv_pos.Identity(s.cached.size());
  r.n_tokens = static_cast<int32_t>(s.cached.size());
  return r;
}

}  // namespace edgellm::chat
