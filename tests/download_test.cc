// The chunked, resumable downloader against an in-process HTTP server with injected faults
// (testutil/http_server.h), including a kill -9 mid-download, and `edgellm serve-models`.
// The fault matrix with the test covering each row: docs/download.md.
#include "edgellm/download.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "store/sha256.h"
#include "testutil/fixtures.h"
#include "testutil/http_server.h"

namespace fs = std::filesystem;
using edgellm::Code;
using edgellm::DownloadOptions;
using edgellm::DownloadProgress;
using edgellm::DownloadSpec;

namespace {

constexpr uint64_t kChunk = 1 << 20;
constexpr uint64_t kSize = 24 * kChunk - 1000;  // 24 chunks, the last one short
constexpr int kChunks = 24;

// The same bytes in every process (the kill -9 child rebuilds them).
const std::string& Body() {
  static const std::string body = [] {
    std::mt19937_64 rng(20240611);
    std::string b(kSize, '\0');
    for (size_t i = 0; i < b.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(&b[i], &v, std::min<size_t>(8, b.size() - i));
    }
    return b;
  }();
  return body;
}

DownloadSpec MakeSpec(const std::string& url, const std::string& dest) {
  DownloadSpec s;
  s.url = url;
  s.dest = dest;
  s.size = kSize;
  s.chunk_size = kChunk;
  s.sha256 = edgellm::store::sha256_hex(Body().data(), Body().size());
  for (uint64_t off = 0; off < kSize; off += kChunk) {
    s.chunks.push_back(
        edgellm::store::sha256_hex(Body().data() + off, std::min(kChunk, kSize - off)));
  }
  return s;
}

// Quick retries so the fault tests stay fast (also under ASan).
DownloadOptions FastOptions() {
  DownloadOptions o;
  o.backoff_ms = 10;
  o.stall_seconds = 2;
  return o;
}

// Complete journal entries (lines after the header that end in '\n').
std::vector<int> JournalEntries(const std::string& dest) {
  const std::string text = testutil::read_file(dest + ".journal");
  std::vector<int> out;
  size_t pos = text.find('\n');
  if (pos == std::string::npos) return out;
  for (++pos; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    out.push_back(std::atoi(text.substr(pos, nl - pos).c_str()));
    pos = nl + 1;
  }
  return out;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class DownloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new testutil::TestHttpServer(Body(), kChunk); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    server_->set_faults({});
    dir_ = testutil::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    dest_ = dir_ + "/model.gguf";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  DownloadSpec Spec() const { return MakeSpec(server_->url(), dest_); }
  void ExpectDone() const {
    EXPECT_TRUE(testutil::read_file(dest_) == Body()) << "dest differs from the served file";
    EXPECT_FALSE(fs::exists(dest_ + ".partial"));
    EXPECT_FALSE(fs::exists(dest_ + ".journal"));
  }
  // Runs with the server throttled and cancels from on_progress at >= 40%.
  std::vector<int> RunAndCancel() {
    testutil::HttpFaults slow;
    slow.delay_ms = 150;  // ~1.2 s in all: progress (every 200 ms) sees 40% well before the end
    server_->set_faults(slow);
    DownloadOptions o = FastOptions();
    o.on_progress = [](const DownloadProgress& p) { return p.percent < 40; };
    auto r = edgellm::download(Spec(), o);
    EXPECT_EQ(r.status().code(), Code::kCancelled) << r.status().ToString();
    EXPECT_FALSE(fs::exists(dest_));
    EXPECT_TRUE(fs::exists(dest_ + ".partial"));
    server_->set_faults({});
    return JournalEntries(dest_);
  }

  static inline testutil::TestHttpServer* server_ = nullptr;
  std::string dir_, dest_;
};

TEST_F(DownloadTest, CleanDownloadMatchesTheFile) {
  DownloadOptions o = FastOptions();
  std::vector<DownloadProgress> seen;
  o.on_progress = [&](const DownloadProgress& p) {
    seen.push_back(p);
    return true;
  };
  auto r = edgellm::download(Spec(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->chunks_total, kChunks);
  EXPECT_EQ(r->chunks_fetched, kChunks);
  EXPECT_EQ(r->chunks_reused, 0);
  EXPECT_EQ(r->retries, 0);
  EXPECT_EQ(r->bytes_fetched, kSize);
  EXPECT_EQ(server_->requests(), kChunks);
  ASSERT_GE(seen.size(), 2u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_done, seen[i - 1].bytes_done);
  EXPECT_EQ(seen.back().bytes_done, kSize);
  EXPECT_DOUBLE_EQ(seen.back().percent, 100.0);
  EXPECT_EQ(seen.back().chunks_done, kChunks);

  // Again: the file is there and verifies, so nothing is fetched.
  server_->set_faults({});
  auto again = edgellm::download(Spec(), o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->bytes_fetched, 0u);
  EXPECT_EQ(again->chunks_reused, kChunks);
  EXPECT_EQ(server_->requests(), 0);
  ExpectDone();
}

TEST_F(DownloadTest, ResumesAfterCancelFetchingOnlyWhatIsMissing) {
  const std::vector<int> journal = RunAndCancel();
  ASSERT_GE(journal.size(), 8u);
  ASSERT_LT(journal.size(), static_cast<size_t>(kChunks));
  auto r = edgellm::download(Spec(), FastOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->chunks_reused, static_cast<int>(journal.size()));
  EXPECT_EQ(r->chunks_reused + r->chunks_fetched, kChunks);
  EXPECT_EQ(r->journal_rejected, 0);
  const uint64_t missing = kSize - journal.size() * kChunk +
                           (std::count(journal.begin(), journal.end(), kChunks - 1) ? 1000 : 0);
  EXPECT_EQ(r->bytes_fetched, missing);
  for (int j : journal) EXPECT_EQ(server_->requests_for_chunk(j), 0) << "chunk " << j;
}

TEST_F(DownloadTest, JournalEntryWithCorruptBytesIsFetchedAgain) {
  const std::vector<int> journal = RunAndCancel();
  ASSERT_GE(journal.size(), 2u);
  const int bad = journal[1];
  {
    const int fd = ::open((dest_ + ".partial").c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char x = static_cast<char>(Body()[bad * kChunk + 7] ^ 1);
    ASSERT_EQ(::pwrite(fd, &x, 1, static_cast<off_t>(bad * kChunk + 7)), 1);
    ::close(fd);
    std::ofstream(dest_ + ".journal", std::ios::app) << "1";  // a torn append: ignored
  }
  auto r = edgellm::download(Spec(), FastOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->journal_rejected, 1);
  EXPECT_EQ(r->chunks_reused, static_cast<int>(journal.size()) - 1);
  EXPECT_EQ(server_->requests_for_chunk(bad), 1);
}

TEST_F(DownloadTest, ChunkCorruptedInTransitIsDetectedAndRefetched) {
  testutil::HttpFaults f;
  f.corrupt_chunk = 5;
  f.corrupt_first_n = 1;
  server_->set_faults(f);
  auto r = edgellm::download(Spec(), FastOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->refetches, 1);
  EXPECT_EQ(r->retries, 1);
  EXPECT_EQ(server_->requests_for_chunk(5), 2);
  EXPECT_EQ(r->bytes_fetched, kSize + kChunk);
}

TEST_F(DownloadTest, ServerIgnoringRangeIsAnErrorWithoutRetries) {
  testutil::HttpFaults f;
  f.ignore_range = true;
  server_->set_faults(f);
  auto r = edgellm::download(Spec(), FastOptions());
  ASSERT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Range"), std::string::npos) << r.status().message();
  EXPECT_FALSE(fs::exists(dest_));
  EXPECT_EQ(fs::file_size(dest_ + ".partial"), kSize);  // never written past the chunk
  EXPECT_LE(server_->requests(), 3);
}

TEST_F(DownloadTest, WrongContentRangeFailsAfterRetries) {
  testutil::HttpFaults f;
  f.wrong_content_range = true;
  server_->set_faults(f);
  DownloadOptions o = FastOptions();
  o.concurrency = 1;
  o.max_retries = 2;
  auto r = edgellm::download(Spec(), o);
  ASSERT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Content-Range"), std::string::npos) << r.status().message();
  EXPECT_EQ(server_->requests_for_chunk(0), 3);
  EXPECT_EQ(server_->requests(), 3);
  EXPECT_FALSE(fs::exists(dest_));
  EXPECT_EQ(fs::file_size(dest_ + ".partial"), kSize);
}

// Two faulty answers, then good ones: the download completes after exactly two retries.
void ExpectTwoRetries(testutil::TestHttpServer* server, const DownloadSpec& spec,
                      const testutil::HttpFaults& f) {
  server->set_faults(f);
  auto r = edgellm::download(spec, FastOptions());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->retries, 2);
  EXPECT_EQ(server->requests(), kChunks + 2);
}

TEST_F(DownloadTest, TruncatedBodiesAreRetried) {
  testutil::HttpFaults f;
  f.truncate_first_n = 2;
  ExpectTwoRetries(server_, Spec(), f);
  ExpectDone();
}

TEST_F(DownloadTest, ServerErrorsAreRetried) {
  testutil::HttpFaults f;
  f.error_5xx_first_n = 2;
  ExpectTwoRetries(server_, Spec(), f);
  ExpectDone();
}

TEST_F(DownloadTest, NotFoundFailsFastWithoutRetries) {
  testutil::HttpFaults f;
  f.not_found = true;
  server_->set_faults(f);
  DownloadOptions o;  // default retries and backoff: none may be used
  o.concurrency = 1;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = edgellm::download(Spec(), o);
  ASSERT_EQ(r.status().code(), Code::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find(server_->url()), std::string::npos);
  EXPECT_NE(r.status().message().find("404"), std::string::npos);
  EXPECT_EQ(server_->requests(), 1);
  EXPECT_LT(Seconds(t0), 1.0);
  EXPECT_FALSE(fs::exists(dest_));
}

TEST_F(DownloadTest, StallIsDetectedWithinStallSecondsAndRetried) {
  testutil::HttpFaults f;
  f.stall_chunk = 3;
  f.stall_first_n = 1;
  f.stall_ms = 8000;
  server_->set_faults(f);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = edgellm::download(Spec(), FastOptions());  // stall_seconds = 2
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->retries, 1);
  EXPECT_EQ(server_->requests_for_chunk(3), 2);
  EXPECT_LT(Seconds(t0), 2 + 2.5);  // the check runs about once a second
}

TEST_F(DownloadTest, WholeFileHashMismatchDeletesEverything) {
  DownloadSpec spec = Spec();
  spec.sha256 = edgellm::store::sha256_hex("other", 5);
  auto r = edgellm::download(spec, FastOptions());
  ASSERT_EQ(r.status().code(), Code::kCorruptData) << r.status().ToString();
  EXPECT_FALSE(fs::exists(dest_));
  EXPECT_FALSE(fs::exists(dest_ + ".partial"));
  EXPECT_FALSE(fs::exists(dest_ + ".journal"));
}

TEST_F(DownloadTest, BadSpecIsRejectedBeforeAnyRequest) {
  DownloadSpec spec = Spec();
  spec.chunks.pop_back();
  EXPECT_EQ(edgellm::download(spec).status().code(), Code::kInvalidArgument);
  spec = Spec();
  spec.url = "ftp://127.0.0.1/model.bin";
  EXPECT_EQ(edgellm::download(spec).status().code(), Code::kInvalidArgument);
  spec = Spec();
  spec.chunks[3] = "XYZ";
  EXPECT_EQ(edgellm::download(spec).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(server_->requests(), 0);
}

// The child half of KillDashNineResumes: a plain download, killed by the parent.
TEST(DownloadChild, Run) {
  const char* url = std::getenv("EDGELLM_DL_CHILD_URL");
  const char* dest = std::getenv("EDGELLM_DL_CHILD_DEST");
  if (!url || !dest) GTEST_SKIP() << "helper process of DownloadTest.KillDashNineResumes";
  auto r = edgellm::download(MakeSpec(url, dest), FastOptions());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(DownloadTest, KillDashNineResumes) {
  testutil::HttpFaults slow;
  slow.delay_ms = 80;
  server_->set_faults(slow);
  // Everything the child needs is built before fork: the parent has threads (the server),
  // so the child may only make async-signal-safe calls before exec.
  std::vector<std::string> env_strings = {"EDGELLM_DL_CHILD_URL=" + server_->url(),
                                          "EDGELLM_DL_CHILD_DEST=" + dest_};
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  char arg0[] = "download_test", arg1[] = "--gtest_filter=DownloadChild.Run";
  char* argv[] = {arg0, arg1, nullptr};
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, STDOUT_FILENO);
    ::execve("/proc/self/exe", argv, envp.data());
    ::_exit(127);
  }
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  bool exited = false;
  while (JournalEntries(dest_).size() < 3 && Seconds(t0) < 20) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(exited) << "the child ended before it could be killed, status " << status;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // server handlers notice
  const uint64_t served_to_child = server_->bytes_served();
  const size_t journaled = JournalEntries(dest_).size();
  ASSERT_GE(journaled, 3u);
  ASSERT_LT(journaled, static_cast<size_t>(kChunks));

  server_->set_faults({});
  DownloadOptions o = FastOptions();
  auto r = edgellm::download(Spec(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectDone();
  EXPECT_EQ(r->chunks_reused, static_cast<int>(journaled));
  EXPECT_EQ(r->journal_rejected, 0);
  // Only the chunks in flight at the kill are fetched twice.
  EXPECT_LE(r->bytes_fetched, kSize - served_to_child + o.concurrency * kChunk)
      << "served to the child " << served_to_child << ", journaled " << journaled;
}

// `edgellm serve-models` as the other end of a real download. Skipped until the subcommand is
// registered in the CLI.
TEST(ServeModels, ServesRangesHeadAndRefusesTraversal) {
  if (std::system((std::string(EDGELLM_CLI) + " --help 2>&1 | grep -q serve-models").c_str()) !=
      0) {
    GTEST_SKIP() << "edgellm serve-models is not registered in this build";
  }
  const std::string dir = testutil::scratch_dir("serve-models");
  fs::create_directories(dir + "/models");
  testutil::write_file(dir + "/models/model.gguf", Body());
  testutil::write_file(dir + "/secret.txt", "secret");
  const std::string log = dir + "/serve.log", models = dir + "/models";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // async-signal-safe calls only (see KillDashNineResumes)
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    ::execl(EDGELLM_CLI, "edgellm", "serve-models", models.c_str(), "--port", "0", nullptr);
    ::_exit(127);
  }
  int port = 0;
  for (int i = 0; i < 500 && port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::string text = testutil::read_file(log);
    const size_t at = text.find("http://127.0.0.1:");
    if (at != std::string::npos) port = std::atoi(text.c_str() + at + 17);
  }
  ASSERT_GT(port, 0) << testutil::read_file(log);
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  auto r = edgellm::download(MakeSpec(base + "/model.gguf", dir + "/got.gguf"), FastOptions());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(testutil::read_file(dir + "/got.gguf") == Body());

  auto head = testutil::http_request(port, "HEAD", "/model.gguf");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.content_length, std::to_string(kSize));
  EXPECT_TRUE(head.body.empty());
  auto part = testutil::http_request(port, "GET", "/model.gguf", "bytes=10-19");
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.content_range, "bytes 10-19/" + std::to_string(kSize));
  EXPECT_EQ(part.body, Body().substr(10, 10));
  auto tail = testutil::http_request(port, "GET", "/model.gguf", "bytes=-5");
  EXPECT_EQ(tail.status, 206);
  EXPECT_EQ(tail.body, Body().substr(kSize - 5));
  EXPECT_EQ(
      testutil::http_request(port, "GET", "/model.gguf", "bytes=" + std::to_string(kSize) + "-")
          .status,
      416);
  EXPECT_EQ(testutil::http_request(port, "GET", "/model.gguf", "bytes=9-3").status, 416);
  for (const char* bad :
       {"/../secret.txt", "/%2e%2e/secret.txt", "/models/../../secret.txt", "/nope.gguf", "/"}) {
    auto res = testutil::http_request(port, "GET", bad);
    EXPECT_TRUE(res.status == 404 || res.status == 400 || res.status == 403)
        << bad << " -> " << res.status;
    EXPECT_EQ(res.body.find("secret"), std::string::npos) << bad;
  }
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string text = testutil::read_file(log);
  EXPECT_NE(text.find("GET /model.gguf"), std::string::npos) << text;
  EXPECT_NE(text.find(" 206 "), std::string::npos) << text;
  fs::remove_all(dir);
}

}  // namespace
