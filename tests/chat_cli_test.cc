// `edgellm chat`: a five-turn conversation on the committed model with reuse in its stats,
// the slash commands, and --session surviving a SIGKILL between turns.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testutil/fixtures.h"

namespace {

using json = nlohmann::json;

const std::string kModel = std::string(EDGELLM_TEST_SOURCE_DIR) + "/assets/edgellm-tiny-F32.gguf";

// Runs `edgellm chat ARGS` with `input` on stdin; returns the JSON lines of stdout.
std::vector<json> Chat(const std::string& args, const std::string& input, std::string* err) {
  const std::string in = testutil::scratch_dir("chat-in") + "/in.txt";
  testutil::write_file(in, input);
  testutil::CliRun r = testutil::run_cli("chat -m " + kModel + " --temp 0 -n 48 --json " + args +
                                         " < " + in);
  EXPECT_EQ(r.rc, 0) << r.err;
  if (err) *err = r.err;
  std::vector<json> out;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    if (!l.empty() && l[0] == '{') out.push_back(json::parse(l));
  }
  return out;
}

TEST(ChatCliTest, FiveTurnsOnTheCommittedModelReuseTheCache) {
  std::string err;
  const auto turns = Chat("", "用一句话介绍端侧大模型。\nSay it in English.\n意图：明天上海会下雨吗\n"
                              "city: Wang Fang flies to Chengdu on Friday.\n87加99等于多少？\n",
                          &err);
  ASSERT_EQ(turns.size(), 5u) << err;
  // The first turn reuses only what chat prepared ahead (the template's header: BOS here).
  EXPECT_LT(turns[0]["n_cached"].get<int>(), turns[0]["n_prefilled"].get<int>());
  for (size_t i = 1; i < turns.size(); ++i) {
    EXPECT_GT(turns[i]["n_cached"].get<int>(), turns[i]["n_prefilled"].get<int>()) << i;
    EXPECT_EQ(turns[i]["n_prompt"].get<int>(),
              turns[i]["n_cached"].get<int>() + turns[i]["n_prefilled"].get<int>());
  }
  // The trained model answers its tasks inside a conversation too.
  EXPECT_NE(turns[0]["text"].get<std::string>().find("端侧"), std::string::npos) << turns[0];
  EXPECT_EQ(turns[2]["text"], "weather") << turns[2];
  EXPECT_EQ(turns[3]["text"], "Chengdu") << turns[3];
  EXPECT_NE(err.find("reused"), std::string::npos) << err;
}

TEST(ChatCliTest, SlashCommands) {
  const std::string dir = testutil::scratch_dir("chat-slash");
  std::string err;
  const auto turns = Chat("", "意图：明天上海会下雨吗\n/regen\n/save " + dir + "/a.kv\n/reset\n"
                              "/history\n意图：明天上海会下雨吗\n/exit\nnot read\n",
                          &err);
  ASSERT_EQ(turns.size(), 3u) << err;
  EXPECT_EQ(turns[1]["text"], turns[0]["text"]);        // /regen, greedy
  EXPECT_GT(turns[1]["n_cached"].get<int>(), 0);
  EXPECT_EQ(turns[2]["text"], turns[0]["text"]);        // after /reset: the first turn again
  EXPECT_GT(testutil::read_file(dir + "/a.kv").size(), 1000u);
  EXPECT_NE(err.find("[reset]"), std::string::npos);
  testutil::CliRun bad = testutil::run_cli("chat -m " + kModel + " --overflow sometimes < /dev/null");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("drop_oldest"), std::string::npos) << bad.err;
}

TEST(ChatCliTest, ASessionFileSurvivesAKill) {
  const std::string dir = testutil::scratch_dir("chat-kill");
  const std::string session = dir + "/s.kv";
  // The reference: three turns in one process.
  const auto whole = Chat("", "用一句话介绍端侧大模型。\nSay it in English.\n意图：明天上海会下雨吗\n", nullptr);
  ASSERT_EQ(whole.size(), 3u);

  // Two turns, then SIGKILL: nothing gets to run at exit.
  int in_pipe[2], out_pipe[2];
  ASSERT_EQ(::pipe(in_pipe), 0);
  ASSERT_EQ(::pipe(out_pipe), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::execl(EDGELLM_CLI, EDGELLM_CLI, "chat", "-m", kModel.c_str(), "--temp", "0", "-n", "48",
            "--json", "-q", "--session", session.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  const std::string two = "用一句话介绍端侧大模型。\nSay it in English.\n";
  ASSERT_EQ(::write(in_pipe[1], two.data(), two.size()), static_cast<ssize_t>(two.size()));
  std::string got;
  char buf[4096];
  int lines = 0;
  while (lines < 2) {
    const ssize_t n = ::read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
    lines = static_cast<int>(std::count(got.begin(), got.end(), '\n'));
  }
  ASSERT_EQ(lines, 2) << got;
  // chat saves the session before it prints a turn: two lines read, two turns on disk.
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(in_pipe[1]);
  ::close(out_pipe[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  std::string err;
  const auto resumed = Chat("--session " + session, "意图：明天上海会下雨吗\n", &err);
  ASSERT_EQ(resumed.size(), 1u) << err;
  EXPECT_NE(err.find("KV cache restored"), std::string::npos) << err;
  EXPECT_EQ(resumed[0]["text"], whole[2]["text"]);
  EXPECT_GT(resumed[0]["n_cached"].get<int>(), 0);
}

}  // namespace
