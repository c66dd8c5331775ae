// download(): validation, journal re-verification, the worker pool with retries, progress on
// the calling thread, and the final whole-file check. HTTP: download_fetch.cc; files:
// download_journal.cc; design: docs/download.md.
#include "edgellm/download.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/sys.h"
#include "store/download_fetch.h"
#include "store/download_journal.h"
#include "store/sha256.h"

namespace edgellm {
namespace {

using store::FetchOutcome;
using store::FetchResult;
using store::PartialFile;
using store::RangeFetcher;

constexpr int kMaxBackoffMs = 10000;
constexpr auto kProgressEvery = std::chrono::milliseconds(200);

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status validate(const DownloadSpec& s, const DownloadOptions& o) {
  const std::string scheme = s.url.substr(0, s.url.find("://") + 3);
  if (scheme != "http://" && scheme != "https://") {
    return Status::InvalidArgument("download URL '" + s.url +
                                   "' must start with http:// or https://");
  }
  if (s.dest.empty() || s.dest.back() == '/') {
    return Status::InvalidArgument("download destination '" + s.dest + "' must be a file path");
  }
  if (s.chunk_size == 0) return Status::InvalidArgument("chunk_size must be > 0");
  const uint64_t n_chunks = s.size / s.chunk_size + (s.size % s.chunk_size ? 1 : 0);
  if (s.chunks.size() != n_chunks) {
    return Status::InvalidArgument("the spec lists " + std::to_string(s.chunks.size()) +
                                   " chunk hashes but " + std::to_string(s.size) + " bytes in " +
                                   std::to_string(s.chunk_size) + "-byte chunks need " +
                                   std::to_string(n_chunks));
  }
  if (n_chunks > 100'000'000)
    return Status::InvalidArgument("too many chunks: use a larger chunk_size");
  if (!is_hex64(s.sha256)) {
    return Status::InvalidArgument("sha256 '" + s.sha256 + "' is not 64 lowercase hex digits");
  }
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    if (!is_hex64(s.chunks[i])) {
      return Status::InvalidArgument("chunk " + std::to_string(i) + " hash '" + s.chunks[i] +
                                     "' is not 64 lowercase hex digits");
    }
  }
  if (o.concurrency < 1 || o.concurrency > 64)
    return Status::InvalidArgument("concurrency must be in 1..64");
  if (o.max_retries < 0 || o.max_retries > 1000)
    return Status::InvalidArgument("max_retries must be in 0..1000");
  if (o.backoff_ms < 0) return Status::InvalidArgument("backoff_ms must be >= 0");
  if (o.stall_seconds < 1) return Status::InvalidArgument("stall_seconds must be >= 1");
  if (o.connect_timeout_s < 1) return Status::InvalidArgument("connect_timeout_s must be >= 1");
  return Status::Ok();
}

class Downloader {
 public:
  Downloader(const DownloadSpec& spec, const DownloadOptions& options, PartialFile* file)
      : spec_(spec), opt_(options), file_(file) {
    fetch_.url = spec.url;
    fetch_.file_size = spec.size;
    fetch_.fd = file->Fd();
    fetch_.path = file->path();
    fetch_.connect_timeout_s = options.connect_timeout_s;
    fetch_.stall_seconds = options.stall_seconds;
    fetch_.stop = [this] { return Stopping(); };
    fetch_.bytes_fetched = &bytes_fetched_;
    fetch_.hash_us = &hash_us_;
  }

  Result<DownloadReport> Run();

 private:
  uint64_t ChunkOffset(int i) const { return static_cast<uint64_t>(i) * spec_.chunk_size; }
  uint64_t ChunkLength(int i) const {
    return std::min<uint64_t>(spec_.chunk_size, spec_.size - ChunkOffset(i));
  }
  bool Stopping() const { return stop_.load() || (opt_.cancel && opt_.cancel->load()); }
  Status VerifyJournal();
  void Transfer();
  void Worker();
  Status FetchChunk(RangeFetcher& fetcher, int index);
  FetchResult CheckAndRecord(int index, const std::string& sha256);
  bool WholeReady();
  Status AdvanceWhole();
  bool SleepBackoff(int attempt) const;
  bool EmitProgress();

  const DownloadSpec& spec_;
  const DownloadOptions& opt_;
  PartialFile* file_;
  store::FetchConfig fetch_;
  DownloadReport report_;
  std::chrono::steady_clock::time_point transfer_start_ = std::chrono::steady_clock::now();

  std::mutex mu_;  // guards pending_, next_, running_, error_, verified_
  std::condition_variable cv_;  // a worker ended or a chunk was verified
  std::vector<int> pending_;
  size_t next_ = 0;
  int running_ = 0;
  Status error_;  // the first real failure of a worker
  bool cancelled_ = false;
  std::vector<char> verified_;  // per chunk: on disk, hash matched, journaled
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_fetched_{0}, bytes_done_{0};
  std::atomic<int> chunks_done_{0}, retries_{0}, refetches_{0};
  std::atomic<int64_t> hash_us_{0}, sync_us_{0};

  // The whole-file SHA-256, fed in file order by the calling thread while the workers fetch:
  // chunk whole_next_ as soon as it and every chunk before it are verified. Calling thread only.
  store::Sha256 whole_;
  size_t whole_next_ = 0;
};

// Adds the time since construction to a microsecond counter.
class TimeInto {
 public:
  explicit TimeInto(std::atomic<int64_t>* us) : us_(us) {}
  ~TimeInto() {
    *us_ += std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::steady_clock::now() - t0_)
                .count();
  }
  TimeInto(const TimeInto&) = delete;
  TimeInto& operator=(const TimeInto&) = delete;

 private:
  std::atomic<int64_t>* us_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Journal entries are claims, not facts: each is re-hashed from the file's bytes. Spread over
// `concurrency` threads since a multi-GB resume would otherwise hash on one core.
Status Downloader::VerifyJournal() {
  const std::vector<int>& listed = file_->journaled();
  std::vector<char> ok(listed.size(), 0);
  std::vector<Status> errors(static_cast<size_t>(opt_.concurrency));
  std::vector<std::thread> threads;
  for (int t = 0; t < opt_.concurrency && static_cast<size_t>(t) < listed.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = static_cast<size_t>(t); k < listed.size();
           k += static_cast<size_t>(opt_.concurrency)) {
        TimeInto timer(&hash_us_);
        auto h = file_->HashRange(ChunkOffset(listed[k]), ChunkLength(listed[k]));
        if (!h.ok() && h.status().code() != Code::kCorruptData) {
          errors[static_cast<size_t>(t)] = h.status();
          return;
        }
        ok[k] = h.ok() && *h == spec_.chunks[static_cast<size_t>(listed[k])];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : errors) EDGELLM_RETURN_IF_ERROR(st);
  std::vector<int> verified;
  std::vector<char> done(spec_.chunks.size(), 0);
  for (size_t k = 0; k < listed.size(); ++k) {
    if (!ok[k]) continue;
    verified.push_back(listed[k]);
    done[static_cast<size_t>(listed[k])] = 1;
    verified_[static_cast<size_t>(listed[k])] = 1;
    bytes_done_ += ChunkLength(listed[k]);
  }
  report_.chunks_reused = static_cast<int>(verified.size());
  report_.journal_rejected = static_cast<int>(listed.size() - verified.size());
  chunks_done_ = report_.chunks_reused;
  for (size_t i = 0; i < done.size(); ++i) {
    if (!done[i]) pending_.push_back(static_cast<int>(i));
  }
  return file_->RewriteJournal(verified);
}

bool Downloader::SleepBackoff(int attempt) const {
  const int64_t ms =
      std::min<int64_t>(kMaxBackoffMs, int64_t{opt_.backoff_ms} << std::min(attempt, 20));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (Stopping()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        until - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
  }
  return !Stopping();
}

// The bytes count only once they are durable and their hash (taken as they were written)
// matches the manifest.
FetchResult Downloader::CheckAndRecord(int index, const std::string& sha256) {
  Status st;
  {
    TimeInto timer(&sync_us_);
    st = file_->Sync();
  }
  if (!st.ok()) return {FetchOutcome::kFatal, st, {}};
  const uint64_t off = ChunkOffset(index), len = ChunkLength(index);
  if (sha256 != spec_.chunks[static_cast<size_t>(index)]) {
    ++refetches_;
    return {FetchOutcome::kTransient,
            Status::CorruptData("chunk " + std::to_string(index) + " (bytes " +
                                std::to_string(off) + "-" + std::to_string(off + len - 1) +
                                ") from " + spec_.url + " has SHA-256 " + sha256 +
                                ", the manifest says " + spec_.chunks[static_cast<size_t>(index)]),
            {}};
  }
  {
    TimeInto timer(&sync_us_);
    st = file_->AppendJournal(index);
  }
  if (!st.ok()) return {FetchOutcome::kFatal, st, {}};
  bytes_done_ += len;
  ++chunks_done_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    verified_[static_cast<size_t>(index)] = 1;
  }
  cv_.notify_all();
  return {FetchOutcome::kOk, Status::Ok(), {}};
}

// Under mu_: the next chunk of the whole-file hash is verified.
bool Downloader::WholeReady() {
  return whole_next_ < verified_.size() && verified_[whole_next_];
}

// Feeds chunk whole_next_ (verified) into the whole-file hash, read back from the file.
Status Downloader::AdvanceWhole() {
  const int i = static_cast<int>(whole_next_);
  TimeInto timer(&hash_us_);
  EDGELLM_RETURN_IF_ERROR(file_->HashInto(&whole_, ChunkOffset(i), ChunkLength(i)));
  ++whole_next_;
  return Status::Ok();
}

Status Downloader::FetchChunk(RangeFetcher& fetcher, int index) {
  for (int attempt = 0;; ++attempt) {
    if (Stopping()) return Status::Cancelled("stopped");
    FetchResult r = fetcher.Fetch(ChunkOffset(index), ChunkLength(index));
    if (r.outcome == FetchOutcome::kOk) r = CheckAndRecord(index, r.sha256);
    if (r.outcome == FetchOutcome::kOk) return Status::Ok();
    if (r.outcome != FetchOutcome::kTransient) return r.status;
    if (attempt >= opt_.max_retries) {
      return Status(r.status.code(),
                    "chunk " + std::to_string(index) + " failed " + std::to_string(attempt + 1) +
                        " times, last: " + r.status.message() +
                        "; run the download again later, it resumes from the verified chunks");
    }
    ++retries_;
    if (!SleepBackoff(attempt)) return Status::Cancelled("stopped");
  }
}

void Downloader::Worker() {
  RangeFetcher fetcher(fetch_);
  for (;;) {
    int index = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ < pending_.size() && !Stopping()) index = pending_[next_++];
    }
    if (index < 0) break;
    Status st = FetchChunk(fetcher, index);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (st.code() != Code::kCancelled && error_.ok()) error_ = st;
      stop_ = true;
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  cv_.notify_all();
}

bool Downloader::EmitProgress() {
  if (!opt_.on_progress) return true;
  DownloadProgress p;
  p.bytes_done = bytes_done_;
  p.bytes_total = spec_.size;
  p.percent = spec_.size
                  ? 100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(spec_.size)
                  : 100.0;
  p.bytes_fetched = bytes_fetched_;
  const double secs = ms_since(transfer_start_) / 1000.0;
  p.bytes_per_s = secs > 0 ? static_cast<double>(p.bytes_fetched) / secs : 0;
  const uint64_t left = spec_.size - p.bytes_done;
  p.eta_s = left == 0 ? 0 : (p.bytes_per_s > 0 ? static_cast<double>(left) / p.bytes_per_s : -1);
  p.chunks_done = chunks_done_;
  p.chunks_total = static_cast<int>(spec_.chunks.size());
  return opt_.on_progress(p);
}

// Workers pull chunk indices; this (the caller's) thread advances the whole-file hash over
// the verified front of the file, reports progress and watches cancel.
void Downloader::Transfer() {
  transfer_start_ = std::chrono::steady_clock::now();
  if (!EmitProgress()) cancelled_ = true;
  if (cancelled_ || Stopping()) return;
  const int n =
      static_cast<int>(std::min<size_t>(static_cast<size_t>(opt_.concurrency), pending_.size()));
  std::vector<std::thread> workers;
  running_ = n;
  for (int i = 0; i < n; ++i) workers.emplace_back([this] { Worker(); });
  auto next_emit = std::chrono::steady_clock::now() + kProgressEvery;
  std::unique_lock<std::mutex> lock(mu_);
  while (running_ > 0) {
    const bool ready = !Stopping() && WholeReady();
    lock.unlock();
    if (ready) {
      Status st = AdvanceWhole();
      if (!st.ok()) {
        std::lock_guard<std::mutex> g(mu_);
        if (error_.ok()) error_ = st;
        stop_ = true;
      }
    }
    if (std::chrono::steady_clock::now() >= next_emit) {
      next_emit = std::chrono::steady_clock::now() + kProgressEvery;
      if (!EmitProgress()) {
        cancelled_ = true;
        stop_ = true;
      }
    }
    lock.lock();
    cv_.wait_until(lock, next_emit,
                   [this] { return running_ == 0 || (!Stopping() && WholeReady()); });
  }
  lock.unlock();
  for (auto& w : workers) w.join();
}

Result<DownloadReport> Downloader::Run() {
  const auto t0 = std::chrono::steady_clock::now();
  verified_.assign(spec_.chunks.size(), 0);
  EDGELLM_RETURN_IF_ERROR(file_->Preallocate());
  EDGELLM_RETURN_IF_ERROR(VerifyJournal());
  Transfer();
  report_.chunks_total = static_cast<int>(spec_.chunks.size());
  report_.bytes_fetched = bytes_fetched_;
  report_.retries = retries_;
  report_.refetches = refetches_;
  report_.chunks_fetched = chunks_done_ - report_.chunks_reused;
  if (!error_.ok()) return error_;
  if (cancelled_ || (opt_.cancel && opt_.cancel->load()) ||
      chunks_done_ < static_cast<int>(spec_.chunks.size())) {
    return Status::Cancelled(
        "download of " + spec_.dest + " cancelled with " + std::to_string(chunks_done_.load()) +
        " of " + std::to_string(spec_.chunks.size()) + " chunks verified; run it again to resume");
  }
  const auto tail0 = std::chrono::steady_clock::now();
  while (whole_next_ < verified_.size()) EDGELLM_RETURN_IF_ERROR(AdvanceWhole());
  const std::string whole = whole_.HexDigest();
  if (whole != spec_.sha256) {
    file_->Discard();
    return Status::CorruptData("downloaded " + spec_.dest + " has SHA-256 " + whole +
                               " but the manifest says " + spec_.sha256 +
                               " although every chunk matched: the manifest is inconsistent; "
                               "the partial file was deleted");
  }
  {
    TimeInto timer(&sync_us_);
    EDGELLM_RETURN_IF_ERROR(file_->Commit());
  }
  report_.tail_seconds = ms_since(tail0) / 1000.0;
  EmitProgress();
  report_.seconds = ms_since(t0) / 1000.0;
  report_.hash_seconds = static_cast<double>(hash_us_.load()) / 1e6;
  report_.sync_seconds = static_cast<double>(sync_us_.load()) / 1e6;
  return report_;
}

// A dest that already is the file (an earlier call finished, perhaps killed between the
// rename and removing the journal) is verified instead of fetched again.
bool already_complete(const DownloadSpec& spec, DownloadReport* report) {
  std::error_code ec;
  if (std::filesystem::exists(spec.dest + ".partial", ec) ||
      std::filesystem::file_size(spec.dest, ec) != spec.size || ec) {
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto h = store::sha256_file(spec.dest);
  if (!h.ok() || *h != spec.sha256) return false;
  std::filesystem::remove(spec.dest + ".journal", ec);
  report->chunks_total = report->chunks_reused = static_cast<int>(spec.chunks.size());
  report->seconds = report->hash_seconds = ms_since(t0) / 1000.0;
  return true;
}

}  // namespace

Result<DownloadReport> download(const DownloadSpec& spec, const DownloadOptions& options) {
  EDGELLM_RETURN_IF_ERROR(validate(spec, options));
  DownloadReport done;
  if (already_complete(spec, &done)) return done;
  store::curl_init_once();
  auto file = PartialFile::Open(spec);
  if (!file.ok()) return file.status();
  Downloader d(spec, options, file->get());
  return d.Run();
}

}  // namespace edgellm
