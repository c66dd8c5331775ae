// PowerGovernor on fixture thermal trees, and wired into real generations.
#include "edgellm/power.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "edgellm/edgellm.h"
#include "testutil/fake_device.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class PowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testutil::scratch_dir("power");
    testutil::make_phone_tree(root_);  // hottest zone 38.5 °C
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  GovernorOptions Opts() {
    GovernorOptions o;
    o.sysfs_root = root_;
    o.check_every_tokens = 1;
    return o;
  }
  std::string root_;
};

TEST_F(PowerTest, ThreadsDropAtLimitAndComeBackAfterHysteresis) {
  PowerGovernor g(Opts());
  EXPECT_EQ(g.ThreadsFor(4), 4);
  EXPECT_DOUBLE_EQ(g.last_temp_c(), 38.5);
  testutil::set_zone_temp(root_, 0, 42.0);
  EXPECT_EQ(g.ThreadsFor(4), 2);
  testutil::set_zone_temp(root_, 0, 40.0);  // below 42 but not below 42 - 3
  EXPECT_EQ(g.ThreadsFor(4), 2);
  testutil::set_zone_temp(root_, 0, 38.9);
  EXPECT_EQ(g.ThreadsFor(4), 4);
  testutil::set_zone_temp(root_, 3, 55.0);  // any zone counts (skin here)
  EXPECT_EQ(g.ThreadsFor(1), 1);            // never below one thread
  EXPECT_EQ(g.ThreadsFor(8), 4);
}

TEST_F(PowerTest, ReducedThreadsOptionAndUnreadableZones) {
  GovernorOptions o = Opts();
  o.reduced_threads = 3;
  PowerGovernor g(o);
  testutil::set_zone_temp(root_, 1, 50.0);
  EXPECT_EQ(g.ThreadsFor(4), 3);
  GovernorOptions none = Opts();
  none.sysfs_root = root_ + "/missing";  // no zones at all: never hot, never a crash
  PowerGovernor cold(none);
  EXPECT_EQ(cold.ThreadsFor(4), 4);
}

class GovernedGenerationTest : public PowerTest {
 protected:
  void SetUp() override {
    PowerTest::SetUp();
    auto m = Model::Load(testutil::synth_model("tiny", "Q8_0"));
    ASSERT_TRUE(m.ok());
    model_ = std::move(m.value());
    SessionOptions so;
    so.n_threads = 2;
    so.n_ctx = 4096;
    auto s = Session::Create(*model_, so);
    ASSERT_TRUE(s.ok());
    session_ = std::move(s.value());
  }
  GenerateOptions Greedy(int n) {
    GenerateOptions g;
    g.temperature = 0;
    // Every guess checked: the same greedy text run after run (docs/speculative.md).
    g.speculative.adaptive = false;
    g.max_tokens = n;
    g.stream_every_tokens = 1;
    return g;
  }
  std::unique_ptr<Model> model_;
  std::unique_ptr<Session> session_;
};

TEST_F(GovernedGenerationTest, HotDeviceThrottlesAndReports) {
  const int32_t n = session_->n_threads();  // 2 here; a 1-core machine cannot throttle
  testutil::set_zone_temp(root_, 0, 45.0);
  PowerGovernor g(Opts());
  GenerateOptions o = Greedy(24);
  o.governor = &g;
  auto hot = session_->Generate("Keep cool", o);
  ASSERT_TRUE(hot.ok());
  EXPECT_EQ(hot->stats.thread_changes, n >= 2 ? 1 : 0);
  EXPECT_EQ(hot->stats.min_threads, std::max(1, n / 2));
  // Once the device has cooled, the next generation runs with all its threads again.
  testutil::set_zone_temp(root_, 0, 30.0);
  auto cool = session_->Generate("Keep cool", o);
  ASSERT_TRUE(cool.ok());
  EXPECT_EQ(cool->stats.thread_changes, 0);
  EXPECT_EQ(cool->stats.min_threads, n);
  // Thread count does not change greedy results: rows are split between threads, not reordered.
  EXPECT_EQ(hot->text, cool->text);
}

TEST_F(GovernedGenerationTest, PauseResumeKeepsOutputIdentical) {
  auto plain = session_->Generate("Once upon a time", Greedy(40));
  ASSERT_TRUE(plain.ok());
  PowerGovernor g(Opts());
  GenerateOptions o = Greedy(40);
  o.governor = &g;
  // The screen goes off right after the fifth piece reaches the UI (Pause() from the sink,
  // so the test does not race a decode step in flight) and comes back 150 ms later from
  // another thread. The engine must not decode while paused.
  std::atomic<bool> paused_once{false};
  std::thread screen([&] {
    while (!paused_once.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    EXPECT_TRUE(g.paused());
    g.Resume();  // screen on
  });
  int pieces = 0, seen_while_paused = 0;
  auto r = session_->Generate("Once upon a time", o, [&](std::string_view) {
    if (g.paused()) ++seen_while_paused;
    if (++pieces == 5) {
      g.Pause();  // screen off
      paused_once.store(true);
    }
    return true;
  });
  paused_once.store(true);  // lets the screen thread finish even if fewer than 5 pieces came
  screen.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, plain->text);
  EXPECT_EQ(r->finish_reason, FinishReason::kLength);
  EXPECT_GE(r->stats.paused_ms, 100);
  EXPECT_EQ(seen_while_paused, 0);  // no piece is produced while paused
}

TEST_F(GovernedGenerationTest, CancelWhilePausedReturnsPromptly) {
  PowerGovernor g(Opts());
  g.Pause();
  GenerateOptions o = Greedy(40);
  o.governor = &g;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session_->Cancel();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = session_->Generate("Hello", o);
  canceller.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(GovernedGenerationTest, YieldSleepsBetweenPieces) {
  PowerGovernor g([&] {
    GovernorOptions o = Opts();
    o.yield_ms = 20;
    return o;
  }());
  GenerateOptions o = Greedy(10);
  o.governor = &g;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = session_->Generate("Hello", o);
  ASSERT_TRUE(r.ok());
  // 10 pieces, a 20 ms yield after each but the last flush.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(180));
}

}  // namespace
}  // namespace edgellm
