// Runtime routing against real paths: the tiny fixture on-device, `edgellm serve` on loopback as
// the cloud, device RAM set small so the model does not fit, a model file damaged after the
// decision, a dead cloud, privacy and offline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"
#include "testutil/serve_process.h"

namespace edgellm {
namespace {

constexpr uint64_t kSmallRam = 64ull << 20;  // 40% budget: 25.6 MiB; the tiny model needs more

size_t CountRequestsNow(const std::string& log) {
  size_t n = 0;
  for (size_t p = log.find("POST /v1/chat/completions"); p != std::string::npos;
       p = log.find("POST /v1/chat/completions", p + 1)) {
    ++n;
  }
  return n;
}

class RuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_path_ = testutil::synth_model("tiny", "Q8_0");
    server_ = new testutil::ServeProcess(model_path_, {"--ctx", "512"});
    // The reference: the same request on a plain local session.
    reference_ = testutil::generate_locally(model_path_, "hello", Greedy()).text;
  }
  static void TearDownTestSuite() { delete server_; }
  // serve logs a request after its response went out, so a count read right after a reply
  // may still miss it: count until the log has been still for 300 ms.
  static size_t Requests() {
    size_t n = CountRequestsNow(server_->log());
    for (int still = 0; still < 6;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const size_t m = CountRequestsNow(server_->log());
      still = m == n ? still + 1 : 0;
      n = m;
    }
    return n;
  }

  static GenerateOptions Greedy() {
    GenerateOptions g;
    g.temperature = 0;
    g.max_tokens = 12;
    g.chat = true;
    return g;
  }
  static RuntimeOptions Options() {
    RuntimeOptions o;
    o.model_path = model_path_;
    o.session.n_ctx = 512;
    o.cloud.base_url = server_->url();
    o.cloud.backoff_initial_s = 0.05;
    o.prefer_on_device = true;
    return o;
  }
  struct Run {
    Result<RoutedGeneration> result = Status::Internal("not run");
    std::vector<RouteReport> reports;
    std::string streamed;
  };
  static Run Go(RuntimeOptions o, std::unique_ptr<Runtime>* keep = nullptr) {
    Run r;
    o.on_route = [&r](const RouteReport& rep) { r.reports.push_back(rep); };
    auto rt = Runtime::Create(o);
    EXPECT_TRUE(rt.ok()) << rt.status().ToString();
    if (!rt.ok()) return r;
    r.result = (*rt)->Generate("hello", Greedy(), [&r](std::string_view p) {
      r.streamed += p;
      return true;
    });
    if (keep) *keep = std::move(*rt);
    return r;
  }
  static inline std::string model_path_, reference_;
  static inline testutil::ServeProcess* server_ = nullptr;
};

TEST_F(RuntimeTest, FitsAndRunsOnDevice) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  const size_t before = Requests();
  Run r = Go(Options());
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(r.result->route, Route::kOnDevice);
  EXPECT_FALSE(r.result->fell_back);
  EXPECT_EQ(r.result->generation.text, reference_);
  EXPECT_EQ(r.streamed, reference_);
  ASSERT_EQ(r.reports.size(), 1u);
  EXPECT_EQ(r.reports[0].route, Route::kOnDevice);
  EXPECT_EQ(Requests(), before);  // the cloud was not asked
}

TEST_F(RuntimeTest, DoesNotFitStreamsFromTheCloudAndSaysWhy) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  RuntimeOptions o = Options();
  o.ram_bytes = kSmallRam;
  std::unique_ptr<Runtime> rt;
  Run r = Go(o, &rt);
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(r.result->route, Route::kCloud);
  EXPECT_NE(r.result->reason.find("memory plan"), std::string::npos) << r.result->reason;
  EXPECT_FALSE(rt->decision().local_possible);
  // The cloud runs the same model: the same text as the device would have given.
  EXPECT_EQ(r.result->generation.text, reference_);
  EXPECT_EQ(r.streamed, reference_);
  EXPECT_EQ(rt->model(), nullptr);  // nothing was loaded on the device
}

TEST_F(RuntimeTest, PrivacyAndOfflineRefuseInsteadOfLeaving) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  const size_t before = Requests();
  RuntimeOptions o = Options();
  o.ram_bytes = kSmallRam;
  o.privacy_required = true;
  Run r = Go(o);
  EXPECT_EQ(r.result.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.result.status().message().find("privacy"), std::string::npos)
      << r.result.status().message();
  EXPECT_NE(r.result.status().message().find("memory plan"), std::string::npos);
  EXPECT_TRUE(r.streamed.empty());
  o.privacy_required = false;
  o.offline = true;
  Run off = Go(o);
  EXPECT_EQ(off.result.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(Requests(), before);  // not one request left the device
}

TEST_F(RuntimeTest, LoadFailureFallsBackUnlessPrivate) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  const std::string dir = testutil::scratch_dir("runtime_load_failure");
  const std::string copy = dir + "/model.gguf";
  for (bool privacy : {false, true}) {
    std::filesystem::copy_file(model_path_, copy, std::filesystem::copy_options::overwrite_existing);
    RuntimeOptions o = Options();
    o.model_path = copy;
    o.privacy_required = privacy;
    Run r;
    o.on_route = [&r](const RouteReport& rep) { r.reports.push_back(rep); };
    auto rt = Runtime::Create(o);
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ((*rt)->decision().route, Route::kOnDevice);
    // The file is damaged after the decision (a disk error, a half-finished copy).
    std::filesystem::resize_file(copy, std::filesystem::file_size(copy) / 2);
    r.result = (*rt)->Generate("hello", Greedy(), [&r](std::string_view p) {
      r.streamed += p;
      return true;
    });
    if (privacy) {
      EXPECT_EQ(r.result.status().code(), Code::kCorruptData) << r.result.status().ToString();
      ASSERT_EQ(r.reports.size(), 1u);
      continue;
    }
    ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
    EXPECT_EQ(r.result->route, Route::kCloud);
    EXPECT_TRUE(r.result->fell_back);
    EXPECT_NE(r.result->failure.find("shorter than"), std::string::npos) << r.result->failure;
    EXPECT_EQ(r.result->generation.text, reference_);
    ASSERT_EQ(r.reports.size(), 2u);
    EXPECT_EQ(r.reports[0].route, Route::kOnDevice);
    EXPECT_EQ(r.reports[1].route, Route::kCloud);
    EXPECT_TRUE(r.reports[1].fallback);
    // The failure is remembered: the next request goes straight to the cloud path.
    auto again = (*rt)->Generate("hello", Greedy());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->fell_back);
  }
}

TEST_F(RuntimeTest, DeadCloudFallsBackToTheDevice) {
  RuntimeOptions o = Options();
  o.prefer_on_device = false;  // the seed's Decision 1: the cloud unless something demands it
  o.cloud.base_url = "http://127.0.0.1:1";
  o.cloud.max_retries = 1;
  Run r = Go(o);
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(r.result->route, Route::kOnDevice);
  EXPECT_TRUE(r.result->fell_back);
  EXPECT_NE(r.result->failure.find("did not answer"), std::string::npos) << r.result->failure;
  EXPECT_EQ(r.result->generation.text, reference_);
  ASSERT_EQ(r.reports.size(), 2u);
  EXPECT_EQ(r.reports[0].route, Route::kCloud);
}

TEST_F(RuntimeTest, MissingModelAndCancel) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  RuntimeOptions o = Options();
  o.model_path = testutil::fixture_dir() + "/no-such-model.gguf";
  Run r = Go(o);
  ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(r.result->route, Route::kCloud);
  o.cloud.base_url.clear();
  Run none = Go(o);
  EXPECT_EQ(none.result.status().code(), Code::kFailedPrecondition);

  // A sink that stops is a cancel on either path, never a reason to fall back.
  for (uint64_t ram : {uint64_t{0}, kSmallRam}) {
    RuntimeOptions c = Options();
    c.ram_bytes = ram;
    auto rt = Runtime::Create(c);
    ASSERT_TRUE(rt.ok());
    GenerateOptions g = Greedy();
    g.max_tokens = 64;
    g.ignore_eos = true;
    g.stream_every_tokens = 1;
    int pieces = 0;
    auto out = (*rt)->Generate("count", g, [&](std::string_view) { return ++pieces < 2; });
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->generation.finish_reason, FinishReason::kCancelled);
    EXPECT_FALSE(out->fell_back);
  }
  RuntimeOptions bad = Options();
  bad.cloud.base_url = "not-a-url";
  EXPECT_EQ(Runtime::Create(bad).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace edgellm
