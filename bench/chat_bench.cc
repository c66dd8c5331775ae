// edgellm-chatbench: what keeping the KV cache between turns buys, side by side in one run.
//
//  1. A scripted conversation (default 10 turns of ~120 user tokens, replies of 48 greedy tokens,
//     end-of-generation ignored) through a Conversation (prefix reuse) and, turn by turn in
//     alternation, through stateless Session::Generate calls that prefill the whole history.
//     Prints TTFT per turn for both and the turn-N / turn-1 ratios.
//  2. A cold start with a long system prompt (default ~600 tokens): TTFT of the first question
//     when the system prompt's KV cells come from the prompt cache on disk vs prefilling them,
//     on fresh sessions, alternating; and the cache file's bytes per token.
//  3. Two conversations on one session: the cost of switching between them.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"

namespace {

using json = nlohmann::json;

struct Args {
  std::string model;
  int threads = 2, ctx = 4096, turns = 10, user_tokens = 120, reply_tokens = 48;
  int system_tokens = 600, rounds = 5;
  std::string parts = "conversation,cold,switch";
  bool json = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The scripted sentences, shared with bench/node/chat_script.mjs.
const std::vector<std::string>& sentences() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> v;
    std::ifstream f(EDGELLM_BENCH_DIR "/chat_sentences.txt");
    for (std::string l; std::getline(f, l);) {
      if (!l.empty()) v.push_back(l);
    }
    if (v.empty()) {
      std::fprintf(stderr, "edgellm-chatbench: cannot read %s/chat_sentences.txt\n",
                   EDGELLM_BENCH_DIR);
      std::exit(1);
    }
    return v;
  }();
  return lines;
}

// About `tokens` tokens of mixed English and Chinese text, different per `seed`.
std::string text_of(const edgellm::Model& m, int tokens, int seed) {
  std::string t = "Question " + std::to_string(seed) + ":";
  for (int i = seed;; ++i) {
    auto n = m.Tokenize(t, false);
    if (!n.ok() || static_cast<int>(n->size()) >= tokens) break;
    t += " ";
    t += sentences()[static_cast<size_t>(i) % sentences().size()];
  }
  return t;
}

std::unique_ptr<edgellm::Session> session(const edgellm::Model& m, const Args& a) {
  edgellm::SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = a.ctx;
  auto s = edgellm::Session::Create(m, so);
  if (!s.ok()) {
    std::fprintf(stderr, "edgellm-chatbench: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

edgellm::GenerateOptions reply_options(const Args& a) {
  edgellm::GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = a.reply_tokens;
  g.ignore_eos = true;
  return g;
}

json turns_part(const edgellm::Model& m, const Args& a) {
  auto reuse_s = session(m, a);
  auto fresh_s = session(m, a);
  auto conv = edgellm::Conversation::Create(*reuse_s).value();
  std::vector<edgellm::ChatMessage> history;
  json rows = json::array();
  for (int t = 0; t < a.turns; ++t) {
    const std::string user = text_of(m, a.user_tokens, t);
    const bool reuse_first = t % 2 == 0;  // alternate which side runs first
    edgellm::Generation with, without;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == reuse_first) {
        with = conv->Send(user, reply_options(a)).value();
      } else {
        edgellm::GenerateOptions g = reply_options(a);
        g.chat = true;
        g.history = history;
        without = fresh_s->Generate(user, g).value();
      }
    }
    // The stateless side gets the conversation's own history, so both prefill the same prompt.
    history = conv->history();
    rows.push_back({{"turn", t + 1},
                    {"prompt_tokens", with.stats.n_prompt + with.stats.n_cached},
                    {"cached_tokens", with.stats.n_cached},
                    {"ttft_ms_reuse", with.stats.ttft_ms},
                    {"ttft_ms_fresh", without.stats.ttft_ms},
                    {"same_reply", with.text == without.text}});
    if (!a.json) {
      std::fprintf(stderr, "  turn %2d: prompt %5d tok (reused %5d) | TTFT reuse %8.1f ms | "
                           "fresh %8.1f ms\n",
                   t + 1, with.stats.n_prompt + with.stats.n_cached, with.stats.n_cached,
                   with.stats.ttft_ms, without.stats.ttft_ms);
    }
  }
  const double r1 = rows.front()["ttft_ms_reuse"], rn = rows.back()["ttft_ms_reuse"];
  const double f1 = rows.front()["ttft_ms_fresh"], fn = rows.back()["ttft_ms_fresh"];
  return {{"turns", rows},
          {"reuse_last_over_first", rn / r1},
          {"fresh_last_over_first", fn / f1},
          {"fresh_over_reuse_last", fn / rn}};
}

json cold_start_part(const edgellm::Model& m, const Args& a) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("edgellm-chatbench-" + std::to_string(::getpid()));
  auto cache = edgellm::PromptCache::Open({dir.string(), 1ull << 30}).value();
  edgellm::ConversationOptions co;
  co.system_prompt = text_of(m, a.system_tokens, 100);
  const std::string question = text_of(m, 24, 7);
  {  // fill the cache once
    auto s = session(m, a);
    co.prompt_cache = cache.get();
    auto c = edgellm::Conversation::Create(*s, co).value();
    if (!c->Prepare().ok()) std::exit(1);
  }
  std::vector<double> restored, prefilled, restore_ms;
  int32_t n_tokens = 0;
  uint64_t bytes = 0;
  for (int r = 0; r < a.rounds; ++r) {
    for (int side = 0; side < 2; ++side) {
      const bool use_cache = (side == 0) == (r % 2 == 0);
      auto s = session(m, a);
      edgellm::ConversationOptions o = co;
      o.prompt_cache = use_cache ? cache.get() : nullptr;
      auto c = edgellm::Conversation::Create(*s, o).value();
      // From a fresh session to the answer's first token: restoring is part of it.
      double prepare_ms = 0;
      if (use_cache) {
        auto p = c->Prepare().value();
        if (!p.restored) {
          std::fprintf(stderr, "edgellm-chatbench: not restored: %s\n", p.why_not_restored.c_str());
          std::exit(1);
        }
        prepare_ms = p.ms;
        restore_ms.push_back(p.ms);
        n_tokens = p.n_tokens;
        bytes = p.state_bytes;
      }
      auto g = c->Send(question, reply_options(a)).value();
      (use_cache ? restored : prefilled).push_back(prepare_ms + g.stats.ttft_ms);
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  const double rm = median(restored), pm = median(prefilled);
  return {{"system_tokens", n_tokens},
          {"ttft_ms_restored", rm},
          {"restore_ms", median(restore_ms)},
          {"ttft_ms_prefilled", pm},
          {"prefilled_over_restored", pm / rm},
          {"state_file_bytes", bytes},
          {"state_bytes_per_token", n_tokens ? static_cast<double>(bytes) / n_tokens : 0}};
}

// Two conversations on one session: TTFT of a turn right after the same conversation's turn
// (its cells are in the cache) vs right after the other one's: its history is prefilled
// again, or, with a prompt cache, its cells are restored from the file they were stashed in.
json switch_once(const edgellm::Model& m, const Args& a, edgellm::PromptCache* cache) {
  auto s = session(m, a);
  edgellm::ConversationOptions oa, ob;
  oa.system_prompt = "You are assistant A. 回答要简短。";
  ob.system_prompt = "You are assistant B, another persona. 请用英文回答。";
  oa.prompt_cache = ob.prompt_cache = cache;
  auto ca = edgellm::Conversation::Create(*s, oa).value();
  auto cb = edgellm::Conversation::Create(*s, ob).value();
  for (int t = 0; t < 4; ++t) {
    ca->Send(text_of(m, a.user_tokens, t), reply_options(a)).value();
    cb->Send(text_of(m, a.user_tokens, t + 50), reply_options(a)).value();
  }
  std::vector<double> stay, switched;
  int32_t history = 0;
  for (int r = 0; r < a.rounds; ++r) {
    auto g1 = ca->Send(text_of(m, 24, 90 + r), reply_options(a)).value();  // after B: a switch
    auto g2 = ca->Send(text_of(m, 24, 95 + r), reply_options(a)).value();  // after A: stays
    switched.push_back(g1.stats.ttft_ms);
    stay.push_back(g2.stats.ttft_ms);
    history = g1.stats.n_prompt + g1.stats.n_cached;
    cb->Send(text_of(m, 24, 99 + r), reply_options(a)).value();
  }
  const double sw = median(switched), st = median(stay);
  return {{"history_tokens", history}, {"ttft_ms_same", st}, {"ttft_ms_after_switch", sw},
          {"switch_cost_ms", sw - st}, {"switch_over_same", sw / st}};
}

json switch_part(const edgellm::Model& m, const Args& a) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("edgellm-chatbench-sw-" + std::to_string(::getpid()));
  auto cache = edgellm::PromptCache::Open({dir.string(), 2ull << 30}).value();
  json out = {{"reprefill", switch_once(m, a, nullptr)},
              {"prompt_cache", switch_once(m, a, cache.get())}};
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"edgellm-chatbench: TTFT per turn with and without KV reuse, and a cold start "
               "restoring a system prompt from the prompt cache vs prefilling it"};
  app.add_option("-m,--model", a.model, "GGUF model with a chat template")->required();
  app.add_option("--threads", a.threads, "Threads (default 2)");
  app.add_option("--ctx", a.ctx, "Context (default 4096)");
  app.add_option("--turns", a.turns, "Turns of the scripted conversation (default 10)");
  app.add_option("--user-tokens", a.user_tokens, "Tokens per user turn (default 120)");
  app.add_option("--reply-tokens", a.reply_tokens, "Tokens per reply (default 48)");
  app.add_option("--system-tokens", a.system_tokens, "System prompt tokens (default 600)");
  app.add_option("--rounds", a.rounds, "Cold-start rounds per side (default 5)");
  app.add_option("--parts", a.parts, "conversation,cold,switch (default all)");
  app.add_flag("--json", a.json, "One JSON object on stdout");
  CLI11_PARSE(app, argc, argv);
  edgellm::TuneAllocator();
  auto m = edgellm::Model::Load(a.model);
  if (!m.ok()) {
    std::fprintf(stderr, "edgellm-chatbench: %s\n", m.status().ToString().c_str());
    return 1;
  }
  json out = {{"model", a.model}, {"threads", a.threads}, {"ctx", a.ctx}};
  if (a.parts.find("conversation") != std::string::npos) {
    if (!a.json) std::fprintf(stderr, "conversation, %d turns:\n", a.turns);
    out["conversation"] = turns_part(**m, a);
  }
  if (a.parts.find("cold") != std::string::npos) out["cold_start"] = cold_start_part(**m, a);
  if (a.parts.find("switch") != std::string::npos) out["switch"] = switch_part(**m, a);
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (out.contains("conversation")) {
    const json& turns = out["conversation"];
    std::printf("TTFT turn %d / turn 1: with reuse %.2fx, without %.2fx; at turn %d without/with "
              "reuse %.2fx\n",
              a.turns, turns["reuse_last_over_first"].get<double>(),
              turns["fresh_last_over_first"].get<double>(), a.turns,
              turns["fresh_over_reuse_last"].get<double>());
  }
  if (out.contains("switch")) {
    for (const char* way : {"reprefill", "prompt_cache"}) {
      const json& sw = out["switch"][way];
      std::printf("switching conversations (%d-token history, %s): TTFT %.1f ms after the same "
                  "one, %.1f ms after the other: %.2fx, +%.0f ms\n",
                  sw["history_tokens"].get<int>(), way, sw["ttft_ms_same"].get<double>(),
                  sw["ttft_ms_after_switch"].get<double>(), sw["switch_over_same"].get<double>(),
                  sw["switch_cost_ms"].get<double>());
    }
  }
  if (!out.contains("cold_start")) return 0;
  const json& cold = out["cold_start"];
  std::printf("cold start, %d-token system prompt: first TTFT restored %.1f ms (restore %.1f "
              "ms), prefilled %.1f ms: %.1fx; state file %.0f bytes per token\n",
              cold["system_tokens"].get<int>(), cold["ttft_ms_restored"].get<double>(),
              cold["restore_ms"].get<double>(),
              cold["ttft_ms_prefilled"].get<double>(),
              cold["prefilled_over_restored"].get<double>(),
              cold["state_bytes_per_token"].get<double>());
  return 0;
}
