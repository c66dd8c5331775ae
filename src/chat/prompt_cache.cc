// PromptCache (KV state files of prepared prefixes, least recently used out) and
// Conversation::Prepare, which fills and uses it.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "chat/chat_impl.h"
#include "core/sys.h"
#include "store/sha256.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;
constexpr const char* kExt = ".kv";

struct Entry {
  fs::path path;
  uint64_t bytes;
  fs::file_time_type used;
};

std::vector<Entry> list(const std::string& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != kExt) continue;
    out.push_back({e.path(), static_cast<uint64_t>(e.file_size(ec)), e.last_write_time(ec)});
  }
  return out;
}

}  // namespace

Result<std::string> PromptCache::Impl::PathFor(Session::Impl& s,
                                               const std::vector<llama_token>& tokens) const {
  Result<std::string> fp = chat::session_fingerprint(s, tokens);
  if (!fp.ok()) return fp.status();
  store::Sha256 h;
  h.Update(fp->data(), fp->size());
  h.Update(tokens.data(), tokens.size() * sizeof(llama_token));
  return (fs::path(options.dir) / (h.HexDigest().substr(0, 32) + kExt)).string();
}

bool PromptCache::Impl::Restore(Session::Impl& s, const std::vector<llama_token>& tokens,
                                std::string* why, uint64_t* file_bytes) {
  Result<std::string> path = PathFor(s, tokens);
  if (!path.ok()) {
    *why = path.status().message();
    return false;
  }
  std::lock_guard<std::mutex> lock(mu);
  chat::KvFileRead r = chat::read_kv_file(s, *path);
  if (r.verdict == chat::KvFileVerdict::kOk && s.cached == tokens) {
    std::error_code ec;
    fs::last_write_time(*path, fs::file_time_type::clock::now(), ec);  // recently used
    *file_bytes = r.file_bytes;
    return true;
  }
  *why = r.verdict == chat::KvFileVerdict::kOk ? *path + " holds other tokens" : r.why;
  if (r.verdict != chat::KvFileVerdict::kMissing) {
    std::error_code ec;
    fs::remove(*path, ec);  // never trusted again: the prefix is prefilled and stored anew
    s.ClearKv();
  }
  return false;
}

Status PromptCache::Impl::Store(Session::Impl& s, const std::vector<llama_token>& tokens,
                                uint64_t* file_bytes) {
  if (s.cached != tokens) return Status::FailedPrecondition("the cache holds other tokens");
  if (!s.kv_pos.IsIdentity()) {  // write_kv_file would write no cells
    return Status::FailedPrecondition("M-RoPE media cells are not stored in prompt-cache files");
  }
  Result<std::string> path = PathFor(s, tokens);
  if (!path.ok()) return path.status();
  std::lock_guard<std::mutex> lock(mu);
  EDGELLM_RETURN_IF_ERROR(chat::write_kv_file(s, *path, ""));
  std::error_code ec;
  *file_bytes = static_cast<uint64_t>(fs::file_size(*path, ec));
  Evict();
  return Status::Ok();
}

void PromptCache::Impl::Evict() {
  std::vector<Entry> entries = list(options.dir);
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.bytes;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  std::error_code ec;
  for (const Entry& e : entries) {
    if (total <= options.max_bytes) break;
    fs::remove(e.path, ec);
    total -= e.bytes;
  }
}

PromptCache::PromptCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PromptCache::~PromptCache() = default;

Result<std::unique_ptr<PromptCache>> PromptCache::Open(const PromptCacheOptions& options) {
  if (options.dir.empty()) return Status::InvalidArgument("the prompt cache needs a folder");
  if (options.max_bytes == 0) return Status::InvalidArgument("the prompt cache's budget is 0 bytes");
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (!fs::is_directory(options.dir, ec)) {
    return Status::Unavailable("cannot use " + options.dir + " as the prompt cache folder" +
                               (ec ? ": " + ec.message() : std::string()));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->Evict();
  return std::unique_ptr<PromptCache>(new PromptCache(std::move(impl)));
}

uint64_t PromptCache::size_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  uint64_t total = 0;
  for (const Entry& e : list(impl_->options.dir)) total += e.bytes;
  return total;
}

int32_t PromptCache::entries() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int32_t>(list(impl_->options.dir).size());
}

const PromptCacheOptions& PromptCache::options() const { return impl_->options; }

Result<PrepareStats> Conversation::Prepare() {
  return guarded(impl_->session, [&] { return PrepareNow(); });
}

Result<PrepareStats> Conversation::PrepareNow() {
  const auto t0 = std::chrono::steady_clock::now();
  Session::Impl* s = impl_->session;
  Result<std::vector<llama_token>> prefix = impl_->Tokens(0, 0, /*open_reply=*/false);
  if (!prefix.ok()) return prefix.status();
  PrepareStats ps;
  ps.n_tokens = static_cast<int32_t>(prefix->size());
  if (prefix->empty()) return ps;
  impl_->Own();
  PromptCache* cache = impl_->options.prompt_cache;
  const bool in_memory = s->cached.size() >= prefix->size() &&
                         std::equal(prefix->begin(), prefix->end(), s->cached.begin());
  if (!in_memory && cache && cache->impl()->Restore(*s, *prefix, &ps.why_not_restored,
                                                    &ps.state_bytes)) {
    ps.restored = true;
    ps.ms = ms_since(t0);
    return ps;
  }
  if (!in_memory) {
    Result<Stats> st = s->Prefill(*prefix);
    if (!st.ok()) return st.status();
    if (cache) {
      Status stored = cache->impl()->Store(*s, *prefix, &ps.state_bytes);
      if (!stored.ok()) ps.why_not_restored += "; not stored: " + stored.message();
    }
  }
  ps.ms = ms_since(t0);
  return ps;
}

}  // namespace edgellm
