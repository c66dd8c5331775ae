// The edgellm binary as a user runs it: exit codes, stdout/stderr split, --json, --help.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "testutil/fixtures.h"
#include "testutil/serve_process.h"

namespace {

using testutil::CliRun;
CliRun Cli(const std::string& args) { return testutil::run_cli(args); }

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = testutil::synth_model("tiny", "Q8_0"); }
  static inline std::string model_;
};

TEST_F(CliTest, RunJsonCarriesTextAndEveryStat) {
  CliRun r = Cli("run -m " + model_ + " -p 'Hello there' -n 8 --temp 0 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"text", "n_prompt", "n_gen", "load_ms", "warmup_ms", "prefill_ms",
                        "prefill_tps", "ttft_ms", "decode_tps", "peak_rss_bytes",
                        "finish_reason"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["n_gen"], 8);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_GT(j["peak_rss_bytes"].get<int64_t>(), 0);
  // Greedy: the same text as the streamed (non-JSON) run.
  CliRun plain = Cli("run -m " + model_ + " -p 'Hello there' -n 8 --temp 0");
  ASSERT_EQ(plain.rc, 0);
  EXPECT_EQ(plain.out, j["text"].get<std::string>() + "\n");
  EXPECT_NE(plain.err.find("[1/3 loading model]"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("[3/3 generating]"), std::string::npos);
  EXPECT_NE(plain.err.find("decode"), std::string::npos);
}

TEST_F(CliTest, InfoJson) {
  CliRun r = Cli("info " + model_ + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["arch"], "qwen2");
  EXPECT_EQ(j["quant"], "Q8_0");
  EXPECT_EQ(j["n_vocab"], 151936);
}

TEST_F(CliTest, ErrorsAreClearAndNonZero) {
  CliRun missing = Cli("run -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("not_found"), std::string::npos) << missing.err;
  CliRun threads = Cli("run -m " + model_ + " -p hi --threads 0");
  EXPECT_EQ(threads.rc, 1);
  EXPECT_NE(threads.err.find("n_threads"), std::string::npos) << threads.err;
  CliRun ctx = Cli("run -m " + model_ + " -p hi --ctx -5");
  EXPECT_EQ(ctx.rc, 1);
  EXPECT_NE(ctx.err.find("n_ctx"), std::string::npos);
  CliRun noprompt = Cli("run -m " + model_);
  EXPECT_EQ(noprompt.rc, 1);
  EXPECT_NE(noprompt.err.find("no prompt"), std::string::npos);
  CliRun junk = Cli("run -m " + model_ + " -p hi --ctx lots");
  EXPECT_NE(junk.rc, 0);
  CliRun nosub = Cli("");
  EXPECT_NE(nosub.rc, 0);
}

TEST_F(CliTest, PlanJsonAndBadRam) {
  CliRun r = Cli("plan " + model_ + " --ram 8G --ctx 4096 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["n_ctx"], 4096);
  EXPECT_EQ(j["ram_bytes"], 8ull << 30);
  EXPECT_TRUE(j["fits"].get<bool>());
  CliRun bad = Cli("plan " + model_ + " --ram lots");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("not a memory size"), std::string::npos) << bad.err;
  CliRun kv = Cli("plan " + model_ + " --kv-type fp8");
  EXPECT_EQ(kv.rc, 1);
  EXPECT_NE(kv.err.find("q8_0"), std::string::npos);
}

TEST_F(CliTest, PlanTaskTiersAndMissingModel) {
  CliRun code = Cli("plan " + model_ + " --ram 8G --task code --json");
  ASSERT_EQ(code.rc, 0) << code.err;
  auto c = nlohmann::json::parse(code.out);
  EXPECT_EQ(c["task"]["quant"], "Q8_0");
  EXPECT_TRUE(c["task"]["model_matches"].get<bool>());  // the fixture is Q8_0
  CliRun chat = Cli("plan " + model_ + " --ram 8G --task chat");
  ASSERT_EQ(chat.rc, 0) << chat.err;
  EXPECT_NE(chat.out.find("Q4_K_M advised"), std::string::npos) << chat.out;
  EXPECT_EQ(Cli("plan " + model_ + " --task poetry").rc, 1);
  CliRun none = Cli("plan");
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("--tiers"), std::string::npos) << none.err;
  EXPECT_EQ(Cli("plan --tiers --tier-ram 6,lots").rc, 1);

  CliRun t = Cli("plan --tiers --tier-ram 6,12 --task chat --json");
  ASSERT_EQ(t.rc, 0) << t.err;
  auto j = nlohmann::json::parse(t.out);
  EXPECT_EQ(j["ram_gib"].size(), 2u);
  EXPECT_EQ(j["rows"].size(), 16u);  // 5 presets x 2 quants, 3 formula-only sizes x 2
  // A 12 GB device fits a larger model for chat than a 6 GB one, or the same.
  const auto best = j["task"]["best_per_tier"];
  ASSERT_EQ(best.size(), 2u);
  EXPECT_FALSE(best[0].get<std::string>().empty());
  EXPECT_GE(best[1].get<std::string>(), best[0].get<std::string>());  // "qwen2.5-Nb" names
}

TEST_F(CliTest, BenchThreadsReportsWallAndCpuPerToken) {
  CliRun r = Cli("bench threads " + model_ + " --tokens 8 --rounds 1 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const int cores = j["physical_cores"].get<int>();
  ASSERT_EQ(static_cast<int>(j["rows"].size()), cores);
  for (int i = 0; i < cores; ++i) {
    const auto& row = j["rows"][i];
    EXPECT_EQ(row["threads"], i + 1);
    EXPECT_GT(row["wall_ms_per_token"].get<double>(), 0);
    EXPECT_GT(row["cpu_ms_per_token"].get<double>(), 0);
  }
  EXPECT_DOUBLE_EQ(j["rows"][0]["wall_ratio_vs_1"].get<double>(), 1.0);
  EXPECT_EQ(Cli("bench threads " + model_ + " --tokens 0").rc, 1);
  EXPECT_EQ(Cli("bench threads /no/such.gguf").rc, 1);
}

TEST_F(CliTest, LoraSynthRunAndBench) {
  const std::string dir = testutil::scratch_dir("cli_lora");
  const std::string lora = dir + "/tiny-lora.gguf";
  CliRun w = Cli("synth --preset tiny --lora -o " + lora);
  ASSERT_EQ(w.rc, 0) << w.err;
  const std::string gen = "run -m " + model_ + " -p 'Hello there' -n 12 --temp 0 --ignore-eos --json";
  CliRun base = Cli(gen);
  CliRun on = Cli(gen + " --lora " + lora);
  CliRun zero = Cli(gen + " --lora " + lora + " --lora-scale 0");
  ASSERT_EQ(base.rc, 0) << base.err;
  ASSERT_EQ(on.rc, 0) << on.err;
  ASSERT_EQ(zero.rc, 0) << zero.err;
  const std::string base_text = nlohmann::json::parse(base.out)["text"];
  EXPECT_NE(nlohmann::json::parse(on.out)["text"], base_text);
  EXPECT_EQ(nlohmann::json::parse(zero.out)["text"], base_text);
  CliRun bad = Cli("run -m " + model_ + " -p hi --lora " + model_);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("not a LoRA adapter"), std::string::npos) << bad.err;

  CliRun b = Cli("bench lora " + model_ + " --lora " + lora + " --rounds 2 --tokens 8 --json");
  ASSERT_EQ(b.rc, 0) << b.err;
  auto j = nlohmann::json::parse(b.out);
  EXPECT_EQ(j["rank"], 8);
  EXPECT_GT(j["load_ms"].get<double>(), 0);
  EXPECT_GT(j["apply_us"].get<double>(), 0);
  EXPECT_GT(j["decode_tps_lora"].get<double>(), 0);
  EXPECT_GT(j["ttft_first_after_apply_ms"].get<double>(), 0);
}

// The issue's "Done when": on a device profile that cannot fit the model, `run --fallback`
// streams from `edgellm serve` and says so; with --private it refuses with the reason.
TEST_F(CliTest, RunFallbackStreamsFromServeAndPrivateRefuses) {
  testutil::ServeProcess server(model_, {"--ctx", "512"});
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string gen = "run -m " + model_ + " -p 'Hello there' --chat -n 12 --temp 0 --ctx 512";
  CliRun local = Cli(gen);
  ASSERT_EQ(local.rc, 0) << local.err;
  EXPECT_NE(local.err.find("[route] on-device"), std::string::npos) << local.err;

  // 64 MiB of RAM: the tiny model's plan does not fit 40% of it.
  CliRun cloud = Cli(gen + " --ram 64M --fallback " + server.url());
  ASSERT_EQ(cloud.rc, 0) << cloud.err;
  EXPECT_NE(cloud.err.find("[route] cloud: the device cannot run it (memory plan"),
            std::string::npos) << cloud.err;
  EXPECT_NE(cloud.err.find("served by the cloud at " + server.url()), std::string::npos);
  EXPECT_EQ(cloud.err.find("[1/3 loading model]"), std::string::npos);  // nothing loaded here
  EXPECT_EQ(cloud.out, local.out);  // the same model behind serve: the same text

  CliRun j = Cli(gen + " --ram 64M --fallback " + server.url() + " --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["route"], "cloud");
  EXPECT_EQ(js["served_by"], server.url());
  EXPECT_EQ(js["text"].get<std::string>() + "\n", local.out);

  CliRun priv = Cli(gen + " --ram 64M --fallback " + server.url() + " --private");
  EXPECT_EQ(priv.rc, 3);
  EXPECT_TRUE(priv.out.empty());
  EXPECT_NE(priv.err.find("refused: privacy required"), std::string::npos) << priv.err;
  EXPECT_NE(priv.err.find("memory plan"), std::string::npos);
  CliRun nocloud = Cli(gen + " --ram 64M");
  EXPECT_EQ(nocloud.rc, 3);
  EXPECT_NE(nocloud.err.find("no cloud endpoint"), std::string::npos) << nocloud.err;

  // serve logs a request once its response is out; the runs since took over a second.
  EXPECT_NE(server.log().find("POST /v1/chat/completions -> 200"), std::string::npos);

  // A dead fallback server: a clear error after the retries, not a hang or a crash.
  server.Kill();
  CliRun dead = Cli(gen + " --ram 64M --fallback " + server.url());
  EXPECT_EQ(dead.rc, 1);
  EXPECT_NE(dead.err.find("did not answer"), std::string::npos) << dead.err;
}

TEST_F(CliTest, TokensCountsOnModelsAndVocabFiles) {
  CliRun r = Cli("tokens " + model_ + " 'hello world' --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"], 2);
  EXPECT_EQ(j["chars"], 11);
  // A vocabulary-only GGUF (no tensors) works too; Chinese costs fewer tokens than bytes.
  CliRun zh = Cli("tokens " + testutil::vocab_path() + " '端侧大模型的内存与功耗' --json");
  ASSERT_EQ(zh.rc, 0) << zh.err;
  auto z = nlohmann::json::parse(zh.out);
  EXPECT_EQ(z["chars"], 11);
  EXPECT_GT(z["tokens"].get<int>(), 0);
  EXPECT_LT(z["tokens"].get<int>(), z["bytes"].get<int>());
  CliRun none = Cli("tokens " + model_);
  EXPECT_EQ(none.rc, 1);
}

TEST_F(CliTest, HelpEverywhere) {
  for (const char* sub : {"", "run ", "info ", "synth ", "plan ", "tokens ", "bench ",
                          "bench threads ", "caps ", "route ", "serve "}) {
    CliRun r = Cli(std::string(sub) + "--help");
    EXPECT_EQ(r.rc, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << r.out;
  }
  CliRun list = Cli("synth --list");
  EXPECT_EQ(list.rc, 0);
  EXPECT_NE(list.out.find("qwen2.5-1.5b"), std::string::npos);
}

TEST_F(CliTest, CapsAndRoute) {
  CliRun caps = Cli("caps --json");
  ASSERT_EQ(caps.rc, 0) << caps.err;
  auto c = nlohmann::json::parse(caps.out);
  EXPECT_NE(std::find(c["backends"].begin(), c["backends"].end(), "CPU"), c["backends"].end());
  EXPECT_FALSE(c["verdict"]["reason"].get<std::string>().empty());

  // The tiny model fits 8 GB: with a cloud and no demand the seed's Decision 1 picks the cloud,
  // --prefer-device the device.
  CliRun r = Cli("route -m " + model_ + " --ram 8G --cloud http://127.0.0.1:1 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["route"], "cloud");
  r = Cli("route -m " + model_ + " --ram 8G --cloud http://127.0.0.1:1 --prefer-device --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["route"], "on-device");
  // In 32 MiB it does not fit: the cloud, and with --private a refusal (exit 3) saying why.
  r = Cli("route -m " + model_ + " --ram 32M --cloud http://127.0.0.1:1 --prefer-device --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["route"], "cloud");
  EXPECT_FALSE(j["plan"]["fits"].get<bool>());
  r = Cli("route -m " + model_ + " --ram 32M --cloud http://127.0.0.1:1 --private");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("refuse: privacy required"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory plan"), std::string::npos) << r.out;
  r = Cli("route -m /nonexistent.gguf --latency-ms 50 --json");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(nlohmann::json::parse(r.out)["local_why"].get<std::string>().find("not on the device"),
            std::string::npos);
  r = Cli("route -m " + model_ + " --whitelist /nonexistent.json");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot be opened"), std::string::npos) << r.err;
}

// A TCP connection to 127.0.0.1:port, or -1.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A plain HTTP/1.1 exchange over a loopback socket (Connection: close); returns the raw reply.
std::string Http(int port, const std::string& method, const std::string& path,
                 const std::string& body = "") {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                          "Content-Type: application/json\r\nConnection: close\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

std::string HttpBody(const std::string& reply) {
  const size_t p = reply.find("\r\n\r\n");
  return p == std::string::npos ? "" : reply.substr(p + 4);
}

TEST_F(CliTest, ServeOpenAiCompatible) {
  const std::string out = testutil::fixture_dir() + "/serve-" + std::to_string(::getpid());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    (void)!std::freopen(out.c_str(), "w", stdout);
    (void)!std::freopen((out + ".err").c_str(), "w", stderr);
    ::execl(EDGELLM_CLI, EDGELLM_CLI, "serve", "-m", model_.c_str(), "--port", "0", "--ctx",
            "256", "--queue", "0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int port = 0;
  for (int i = 0; i < 600 && port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string url = testutil::read_file(out);
    const size_t colon = url.rfind(':');
    if (url.find('\n') != std::string::npos && colon != std::string::npos) {
      port = std::atoi(url.c_str() + colon + 1);
    }
  }
  ASSERT_GT(port, 0) << testutil::read_file(out + ".err");

  auto health = nlohmann::json::parse(HttpBody(Http(port, "GET", "/health")));
  EXPECT_EQ(health["status"], "ok");
  auto models = nlohmann::json::parse(HttpBody(Http(port, "GET", "/v1/models")));
  ASSERT_EQ(models["data"].size(), 1u);

  // Greedy chat, not streamed, twice: the same text; then streamed: the deltas add up to it.
  const std::string chat =
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},)"
      R"({"role":"assistant","content":"hello"},{"role":"user","content":"and now?"}],)"
      R"("max_tokens":12,"temperature":0)";
  auto a = nlohmann::json::parse(HttpBody(Http(port, "POST", "/v1/chat/completions", chat + "}")));
  auto b = nlohmann::json::parse(HttpBody(Http(port, "POST", "/v1/chat/completions", chat + "}")));
  const std::string text = a["choices"][0]["message"]["content"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(b["choices"][0]["message"]["content"], text);
  EXPECT_EQ(a["usage"]["completion_tokens"].get<int>() + a["usage"]["prompt_tokens"].get<int>(),
            a["usage"]["total_tokens"].get<int>());
  const std::string sse = Http(port, "POST", "/v1/chat/completions", chat + R"(,"stream":true})");
  EXPECT_NE(sse.find("text/event-stream"), std::string::npos);
  std::string streamed;
  int deltas = 0;
  bool done = false;
  std::string finish;
  for (size_t p = sse.find("data: "); p != std::string::npos; p = sse.find("data: ", p + 6)) {
    const std::string line = sse.substr(p + 6, sse.find('\n', p) - p - 6);
    if (line == "[DONE]") {
      done = true;
      continue;
    }
    auto j = nlohmann::json::parse(line);
    const auto& c = j["choices"][0];
    if (c["delta"].contains("content")) {
      streamed += c["delta"]["content"].get<std::string>();
      ++deltas;
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(finish, "length");
  EXPECT_GE(deltas, 3);  // the role chunk and at least two pieces
  EXPECT_EQ(streamed, text);

  auto c = nlohmann::json::parse(HttpBody(
      Http(port, "POST", "/v1/completions", R"({"prompt":"Once upon","max_tokens":4,"temperature":0})")));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["usage"]["completion_tokens"], 4);

  // Bad requests: clear 400s in the OpenAI error shape.
  for (const char* bad : {"nope", R"({"messages":[]})",
                          R"({"messages":[{"role":"assistant","content":"x"}]})",
                          R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})",
                          R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"}) {
    const std::string r = Http(port, "POST", "/v1/chat/completions", bad);
    EXPECT_NE(r.find(" 400 "), std::string::npos) << bad << r;
    EXPECT_TRUE(nlohmann::json::parse(HttpBody(r))["error"].contains("message")) << bad;
  }

  // --queue 0: while a streamed generation runs, another request gets 429 at once; once the
  // streaming client has gone, requests are served again.
  {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    const std::string body =
        R"({"prompt":"a long story","max_tokens":100000,"temperature":0,"stream":true})";
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    std::string first;
    char buf[4096];
    while (first.find("data: ") == std::string::npos) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      ASSERT_GT(n, 0);
      first.append(buf, static_cast<size_t>(n));
    }
    const std::string busy = Http(port, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":1})");
    EXPECT_NE(busy.find(" 429 "), std::string::npos) << busy;
    EXPECT_NE(busy.find("Retry-After"), std::string::npos) << busy;
    ::close(fd);
    std::string again;
    for (int i = 0; i < 200; ++i) {
      again = Http(port, "POST", "/v1/completions", R"({"prompt":"x","max_tokens":1})");
      if (again.find(" 429 ") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(again.find(" 200 "), std::string::npos) << again;
  }

  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::remove(out.c_str());
  std::remove((out + ".err").c_str());
}

}  // namespace
