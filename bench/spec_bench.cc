// edgellm-specbench: what speculative decoding gains, side by side in one run (greedy, the
// same prompts, speculation on and off alternating round by round, medians):
//
//  1. Jump-forward (--model, e.g. the 1.5B-shape fixture): a schema-heavy extraction answer
//     (10 keys) decoded with jump-forward (checked, and taken unchecked: jump_commit), without
//     it, and unconstrained; tok/s, time per answer (the unchecked split may take fewer
//     tokens) and ratios.
//  2. JSON whitespace (--model): compact vs free, tokens per answer and tok/s, for the
//     extraction schema and a tool call.
//  3. Prose with nothing to copy (--model, sampled at temperature 0.8 so no n-gram repeats):
//     speculation on (adaptive) vs off; the goal is >= 0.97x.
//  4. N-gram lookup on input-grounded work (--committed: the committed model's extraction,
//     summary and code tasks, whose answers copy the prompt): tok/s on vs off, acceptance.
//  5. A draft model: --draft FILE drafts for --model on the prose (random-weight fixtures
//     never agree: what a draft that guesses wrong costs with the adaptation on);
//     --committed-draft FILE (e.g. the committed model's own Q8_0 quantization) drafts for
//     --committed on its tasks: off, draft alone, all sources.
//
//  6. A model that copies (--copy: trained by `edgellm train` on the rewrite and record tasks,
//     docs/speculative.md): n-gram lookup on "replace a name" rewrites, whose answers copy the
//     prompt, and jump-forward on the eight-key record schema without whitespace.
//
// Every "on" text is checked against its "off" text (greedy): a difference is reported.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "edgellm/edgellm.h"

namespace {

using json = nlohmann::json;

// The record task's eight fields, in the order the model writes them (src/train/corpus.cc).
const char* kRecord = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":24},"city":{"type":"string","maxLength":24},
  "day":{"type":"string","maxLength":24},"time":{"type":"string","maxLength":5},
  "item":{"type":"string","maxLength":24},"count":{"type":"integer","minimum":0,"maximum":99},
  "place":{"type":"string","maxLength":24},"genre":{"type":"string","maxLength":24}},
  "required":["name","city","day","time","item","count","place","genre"],
  "additionalProperties":false})";

const char* kExtraction = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":16},"city":{"type":"string","maxLength":16},
  "country":{"type":"string","maxLength":16},"date":{"type":"string","maxLength":10},
  "time":{"type":"string","maxLength":5},"intent":{"enum":["book","cancel","ask","change"]},
  "seats":{"type":"integer","minimum":1,"maximum":9},"window":{"type":"boolean"},
  "meal":{"enum":["none","veg","halal","kids"]},"confirmed":{"type":"boolean"}},
  "required":["name","city","country","date","time","intent","seats","window","meal","confirmed"],
  "additionalProperties":false})";

struct Args {
  std::string model, committed, draft, committed_draft, copy;
  int threads = 2, tokens = 160, rounds = 3;
  bool json = false;
};

struct Measure {
  std::vector<double> tps, answer_ms;
  double tokens = 0, drafted = 0, accepted = 0, forced = 0, calls = 0, draft_ms = 0;
  int runs = 0, mismatches = 0;
  void Add(const edgellm::Generation& g) {
    tps.push_back(g.stats.decode_tps);
    answer_ms.push_back(g.stats.ttft_ms + g.stats.decode_ms);
    tokens += g.stats.n_gen;
    drafted += g.stats.spec_drafted;
    accepted += g.stats.spec_accepted;
    draft_ms += g.stats.spec_draft_ms;
    forced += g.stats.spec_forced;
    calls += g.stats.decode_calls;
    ++runs;
  }
  double median_tps() const { return bench::median(tps); }
  double median_ms() const { return bench::median(answer_ms); }
  json Json() const {
    return {{"decode_tps", median_tps()},
            {"ms_per_answer", median_ms()},
            {"tokens_per_answer", runs ? tokens / runs : 0},
            {"drafted", drafted},
            {"accepted", accepted},
            {"forced", forced},
            {"acceptance", drafted > 0 ? accepted / drafted : 0},
            {"tokens_per_decode", calls > 0 ? tokens / calls : 0},
            {"draft_model_ms_per_answer", runs ? draft_ms / runs : 0},
            {"mismatches", mismatches}};
  }
};

edgellm::GenerateOptions base(int tokens, bool spec) {
  edgellm::GenerateOptions o;
  o.temperature = 0;
  o.max_tokens = tokens;
  o.chat = true;
  if (!spec) o.speculative.max_draft = 0;
  return o;
}

bool gen(edgellm::Session& s, const std::string& p, const edgellm::GenerateOptions& o,
         edgellm::Generation* out) {
  auto r = s.Generate(p, o);
  if (!r.ok()) {
    std::fprintf(stderr, "edgellm-specbench: %s\n", r.status().ToString().c_str());
    return false;
  }
  *out = std::move(r.value());
  return true;
}

std::unique_ptr<edgellm::Session> session_for(const edgellm::Model& m, int threads,
                                              const edgellm::Model* draft = nullptr) {
  edgellm::SessionOptions so;
  so.n_threads = threads;
  so.n_ctx = -1;  // min(the model's training context, 2048)
  so.draft_model = draft;
  auto s = edgellm::Session::Create(m, so);
  if (!s.ok()) {
    std::fprintf(stderr, "edgellm-specbench: %s\n", s.status().ToString().c_str());
    return nullptr;
  }
  return std::move(s.value());
}

// `variants` measured on `prompts`, round by round; variant 0 is the reference text.
bool compare(edgellm::Session& s, const std::vector<std::string>& prompts,
             const std::vector<edgellm::GenerateOptions>& variants, int rounds,
             std::vector<Measure>* out) {
  out->assign(variants.size(), Measure{});
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& p : prompts) {
      std::string reference;
      for (size_t v = 0; v < variants.size(); ++v) {
        edgellm::Generation g;
        if (!gen(s, p, variants[v], &g)) return false;
        (*out)[v].Add(g);
        if (v == 0) reference = g.text;
        if (v > 0 && variants[v].temperature == 0 && variants[v].json_schema ==
            variants[0].json_schema && g.text != reference) {
          ++(*out)[v].mismatches;
        }
      }
    }
  }
  return true;
}

// A conversation of rewrites: each turn asks to replace a name in the previous reply, so the
// answer copies text that is in the history twice. Each variant runs its own conversation.
bool conversation(edgellm::Session& s, const std::vector<edgellm::GenerateOptions>& variants,
                  int rounds, std::vector<Measure>* out) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"Li Lei", "Anna"}, {"Anna", "Tom"}, {"Tom", "Zhang Wei"}, {"Zhang Wei", "Chen Jing"}};
  const std::string first = "Li Lei flies to Chengdu on Friday. Li Lei bought 4 tickets in Tokyo. "
                            "The meeting with Li Lei starts at 9:30 tomorrow.";
  out->assign(variants.size(), Measure{});
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::string> reference;
    for (size_t v = 0; v < variants.size(); ++v) {
      auto c = edgellm::Conversation::Create(s);
      if (!c.ok()) {
        std::fprintf(stderr, "edgellm-specbench: %s\n", c.status().ToString().c_str());
        return false;
      }
      std::string text = first;
      for (size_t t = 0; t < names.size(); ++t) {
        auto g = (*c)->Send("replace " + names[t].first + " with " + names[t].second + ": " + text,
                            variants[v]);
        if (!g.ok()) {
          std::fprintf(stderr, "edgellm-specbench: %s\n", g.status().ToString().c_str());
          return false;
        }
        (*out)[v].Add(*g);
        text = g->text;
        if (v == 0) reference.push_back(text);
        if (v > 0 && text != reference[t]) {
          ++(*out)[v].mismatches;
          std::fprintf(stderr, "round %d turn %zu, variant %zu differs:\n  %s\n  %s\n", r, t, v,
                       reference[t].c_str(), text.c_str());
        }
      }
    }
  }
  return true;
}

int run(const Args& a) {
  json report = json::object();
  auto print = [&](const char* what, const std::vector<std::string>& names,
                   const std::vector<Measure>& m) {
    json j = json::object();
    for (size_t i = 0; i < m.size(); ++i) j[names[i]] = m[i].Json();
    report[what] = j;
    if (a.json) return;
    std::printf("%s\n", what);
    for (size_t i = 0; i < m.size(); ++i) {
      std::printf("  %-14s %7.2f tok/s  %6.1f tok/answer  %7.0f ms/answer  %5.2f tok/decode  "
                  "kept %4.0f/%-4.0f (%3.0f forced)  x%.3f (time x%.3f)%s\n", names[i].c_str(),
                  m[i].median_tps(), m[i].runs ? m[i].tokens / m[i].runs : 0, m[i].median_ms(),
                  m[i].calls > 0 ? m[i].tokens / m[i].calls : 0, m[i].accepted, m[i].drafted,
                  m[i].forced, m[0].median_tps() > 0 ? m[i].median_tps() / m[0].median_tps() : 0,
                  m[i].median_ms() > 0 ? m[0].median_ms() / m[i].median_ms() : 0,
                  m[i].mismatches ? "  TEXT DIFFERS" : "");
    }
  };
  if (!a.model.empty()) {
    auto model = edgellm::Model::Load(a.model);
    if (!model.ok()) {
      std::fprintf(stderr, "edgellm-specbench: %s\n", model.status().ToString().c_str());
      return 1;
    }
    auto s = session_for(**model, a.threads);
    if (!s) return 1;
    const std::vector<std::string> asks = {
        "Book for Wang Fang: Chengdu, China, 2026-12-18 at 08:30, two seats, window, veg meal.",
        "Li Lei cancels his Beijing trip on 2027-01-04 at 19:05, one seat, no meal."};
    // 1. Jump-forward.
    edgellm::GenerateOptions off = base(a.tokens, false), jump = base(a.tokens, true),
                             free_run = base(a.tokens, false);
    off.json_schema = jump.json_schema = kExtraction;
    jump.speculative.ngram = false;
    edgellm::GenerateOptions commit = jump;
    commit.speculative.jump_commit = true;
    free_run.ignore_eos = true;  // the same number of tokens, nothing constrained
    std::vector<Measure> m;
    if (!compare(*s, asks, {off, jump, commit, free_run}, a.rounds, &m)) return 1;
    print("jump-forward (extraction schema, 10 keys)", {"constrained", "jump-forward",
          "jump-commit", "unconstrained"}, m);
    // 2. Whitespace: compact (the default) vs free, with and without speculation.
    edgellm::GenerateOptions compact = off, loose = off, loose_jump = jump;
    loose.json_whitespace = loose_jump.json_whitespace = edgellm::JsonWhitespace::kFree;
    if (!compare(*s, asks, {compact, loose, jump, loose_jump}, a.rounds, &m)) return 1;
    print("JSON whitespace (extraction schema)", {"compact", "free", "compact+jump",
          "free+jump"}, m);
    edgellm::ToolSpec tool;
    tool.name = "book_flight";
    tool.description = "Book a flight";
    tool.parameters = R"({"type":"object","properties":{"city":{"type":"string","maxLength":16},
        "date":{"type":"string","maxLength":10},"seats":{"type":"integer","minimum":1,
        "maximum":9}},"required":["city","date","seats"]})";
    edgellm::GenerateOptions t_compact = base(a.tokens, false);
    t_compact.tools = {tool};
    t_compact.tool_choice = "required";
    edgellm::GenerateOptions t_free = t_compact, t_jump = t_compact;
    t_free.json_whitespace = edgellm::JsonWhitespace::kFree;
    t_jump.speculative = edgellm::SpeculativeOptions{};
    if (!compare(*s, asks, {t_compact, t_free, t_jump}, a.rounds, &m)) return 1;
    print("JSON whitespace (a required tool call)", {"compact", "free", "compact+spec"}, m);
    // 3. Prose, sampled: nothing repeats, so speculation must cost nothing.
    edgellm::GenerateOptions p_off = base(a.tokens, false), p_on = base(a.tokens, true);
    p_off.temperature = p_on.temperature = 0.8f;
    p_off.ignore_eos = p_on.ignore_eos = true;
    if (!compare(*s, {"Write a short story about a lighthouse keeper."}, {p_off, p_on},
                 a.rounds * 2, &m)) {
      return 1;
    }
    print("prose, temperature 0.8 (goal >= 0.97x)", {"off", "on"}, m);
    if (!a.draft.empty()) {
      auto d = edgellm::Model::Load(a.draft);
      if (!d.ok()) {
        std::fprintf(stderr, "edgellm-specbench: %s\n", d.status().ToString().c_str());
        return 1;
      }
      auto sd = session_for(**model, a.threads, d->get());
      if (!sd) return 1;
      edgellm::GenerateOptions d_on = p_on;
      d_on.speculative.ngram = d_on.speculative.jump = false;
      if (!compare(*sd, {"Write a short story about a lighthouse keeper."}, {p_off, d_on},
                   a.rounds * 2, &m)) {
        return 1;
      }
      print("prose, temperature 0.8, the draft model (goal >= 0.97x)", {"off", "draft"}, m);
    }
  }
  if (!a.committed.empty()) {
    auto model = edgellm::Model::Load(a.committed);
    if (!model.ok()) {
      std::fprintf(stderr, "edgellm-specbench: %s\n", model.status().ToString().c_str());
      return 1;
    }
    auto s = session_for(**model, a.threads);
    if (!s) return 1;
    // 4. Tasks whose answers copy the prompt.
    const std::vector<std::string> tasks = {
        "summary: Wang Fang will visit Chengdu on Friday and call Li Lei.",
        "city: Zhang Wei flies to Hangzhou on Monday.",
        "name: Chen Jing meets us in Wuhan tomorrow.", "x=3; x=x+4; print(x)",
        "summary: Liu Yang will visit Shanghai on Sunday and call Chen Jing."};
    edgellm::GenerateOptions off = base(64, false), on = base(64, true);
    std::vector<Measure> m;
    if (!compare(*s, tasks, {off, on}, a.rounds, &m)) return 1;
    print("n-gram lookup, the committed model's copying tasks", {"off", "on"}, m);
    if (!a.committed_draft.empty()) {
      auto d = edgellm::Model::Load(a.committed_draft);
      if (!d.ok()) {
        std::fprintf(stderr, "edgellm-specbench: %s\n", d.status().ToString().c_str());
        return 1;
      }
      auto sd = session_for(**model, a.threads, d->get());
      if (!sd) return 1;
      edgellm::GenerateOptions d_only = on;
      d_only.speculative.ngram = d_only.speculative.jump = false;
      if (!compare(*sd, tasks, {off, d_only, on}, a.rounds, &m)) return 1;
      print("draft model, the committed model's tasks", {"off", "draft", "all"}, m);
    }
  }
  if (!a.copy.empty()) {
    auto model = edgellm::Model::Load(a.copy);
    if (!model.ok()) {
      std::fprintf(stderr, "edgellm-specbench: %s\n", model.status().ToString().c_str());
      return 1;
    }
    auto s = session_for(**model, a.threads);
    if (!s) return 1;
    // 6a. Rewrites: the answer is the prompt's text with one name replaced.
    const std::vector<std::string> rewrites = {
        "replace Li Lei with Anna: Li Lei flies to Chengdu on Friday. The meeting with Li Lei "
        "starts at 9:30 tomorrow. Li Lei bought 4 tickets in Tokyo.",
        "replace Zhang Wei with Tom: Zhang Wei takes a taxi to the museum. Zhang Wei likes "
        "folk music.",
        "把王芳换成刘洋：王芳周五要去杭州出差。王芳在巴黎买了3个杯子。和王芳的会议明天10:15开始。",
        "replace Chen Jing with Wang Fang: The meeting with Chen Jing starts at 14:45 on Monday. "
        "Chen Jing bought 7 shirts in Berlin. Chen Jing flies to Suzhou this weekend."};
    edgellm::GenerateOptions off = base(160, false), on = base(160, true), fixed = on;
    fixed.speculative.adaptive = false;
    std::vector<Measure> m;
    if (!compare(*s, rewrites, {off, on, fixed}, a.rounds, &m)) return 1;
    print("n-gram lookup, rewrites that copy the prompt (--copy)", {"off", "on", "every-guess"},
          m);
    if (!conversation(*s, {off, on, fixed}, a.rounds, &m)) return 1;
    print("n-gram lookup, a 4-turn conversation of rewrites (--copy)", {"off", "on",
          "every-guess"}, m);
    // 6b. The record schema without whitespace: keys, quotes, colons and commas forced.
    const std::vector<std::string> records = {
        "record: name Tom; city Nanjing; day on Friday; time 8:45; item pens; count 6; place "
        "the hospital; genre rock",
        "记录：姓名韩梅梅；城市重庆；日期周末；时间17:30；物品苹果；数量2；地点机场；音乐古典",
        "record: name Liu Yang; city Paris; day today; time 12:00; item books; count 9; place "
        "the park; genre jazz"};
    edgellm::GenerateOptions c_off = base(160, false), c_jump = base(160, true),
                             c_all = base(160, true), c_free = base(160, false);
    c_off.json_schema = c_jump.json_schema = c_all.json_schema = kRecord;
    c_off.json_whitespace = c_jump.json_whitespace = c_all.json_whitespace =
        edgellm::JsonWhitespace::kNone;
    c_jump.speculative.ngram = false;
    if (!compare(*s, records, {c_off, c_jump, c_all, c_free}, a.rounds, &m)) return 1;
    print("jump-forward, the record schema without whitespace (--copy)", {"constrained",
          "jump-forward", "jump+ngram", "unconstrained"}, m);
  }
  if (a.json) std::printf("%s\n", report.dump(2).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgellm-specbench: speculative decoding (jump-forward, n-gram) vs plain decode"};
  Args a;
  app.add_option("-m,--model", a.model, "GGUF for jump-forward, whitespace and prose (e.g. the "
                                        "1.5B-shape fixture)");
  app.add_option("--committed", a.committed, "the committed model, for the copying tasks");
  app.add_option("--draft", a.draft, "a draft model for --model (same tokenizer)");
  app.add_option("--committed-draft", a.committed_draft,
                 "a draft model for --committed (e.g. its Q8_0 quantization)");
  app.add_option("--copy", a.copy, "a model trained on the rewrite and record tasks "
                                   "(docs/speculative.md), for n-gram and jump-forward");
  app.add_option("--threads", a.threads, "threads (default 2)")->check(CLI::Range(1, 256));
  app.add_option("-n,--tokens", a.tokens, "tokens per answer at most (default 160)")
      ->check(CLI::Range(8, 4096));
  app.add_option("--rounds", a.rounds, "rounds (default 3)")->check(CLI::Range(1, 100));
  app.add_flag("--json", a.json, "one JSON report");
  CLI11_PARSE(app, argc, argv);
  if (a.model.empty() && a.committed.empty() && a.copy.empty()) {
    std::fprintf(stderr, "edgellm-specbench: pass --model FILE, --committed FILE and/or --copy FILE\n");
    return 2;
  }
  return run(a);
}
