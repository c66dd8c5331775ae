// edgellm chat -m MODEL [--system S] [--ctx N] [--session FILE] ...: a conversation that keeps
// its KV cache. User turns come from stdin (a "> " prompt on a terminal, one line per turn
// when piped); replies stream to stdout, per-turn stats to stderr (--json: one JSON line per
// turn on stdout). /reset, /regen, /save FILE, /history, /image FILE, /audio FILE, /exit.
// --session FILE resumes that conversation and saves it after every turn, so a killed process
// loses nothing. --mmproj loads the model's projector; --image/--audio (and /image, /audio)
// attach media to the next turn, whose KV cells later turns reuse.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "common.h"

namespace cli {
namespace {

struct ChatArgs {
  std::string model, system, session_file, overflow = "drop_oldest", prompt_cache;
  std::string index, embedding_model, index_mode = "hybrid";
  int32_t index_k = 3;
  edgellm::SessionOptions so;
  int32_t max_tokens = 256;
  float temperature = 0.8f;
  int64_t seed = -1;
  bool json = false, no_shift = false, quiet = false;
  ConstraintArgs constraint;
  MediaArgs media;
  SpecArgs spec;
};

nlohmann::json turn_json(const edgellm::Generation& g) {
  const edgellm::Stats& s = g.stats;
  return {{"text", g.text},
          {"finish_reason", edgellm::finish_reason_name(g.finish_reason)},
          {"n_prompt", s.n_prompt + s.n_cached},
          {"n_cached", s.n_cached},
          {"n_prefilled", s.n_prompt},
          {"n_gen", s.n_gen},
          {"ttft_ms", s.ttft_ms},
          {"prefill_ms", s.prefill_ms},
          {"decode_tps", s.decode_tps},
          {"turns_dropped", s.turns_dropped},
          {"tokens_dropped", s.tokens_dropped},
          {"n_media", s.n_media},
          {"n_media_tokens", s.n_media_tokens},
          {"media_decode_ms", s.media_decode_ms},
          {"media_encode_ms", s.media_encode_ms},
          {"media_chunks_cached", s.media_chunks_cached},
          {"spec_drafted", s.spec_drafted},
          {"spec_accepted", s.spec_accepted},
          {"spec_forced", s.spec_forced},
          {"spec_draft_drafted", s.spec_draft_drafted},
          {"spec_draft_accepted", s.spec_draft_accepted},
          {"spec_draft_ms", s.spec_draft_ms},
          {"decode_calls", s.decode_calls}};
}

void print_stats(const edgellm::Generation& g) {
  const edgellm::Stats& s = g.stats;
  const std::string media = media_summary(s) + spec_summary(s);
  std::fprintf(stderr,
               "--- %s | reused %d of %d prompt tokens, prefilled %d | TTFT %.0f ms | gen %d tok, "
               "%.1f tok/s%s%s\n",
               edgellm::finish_reason_name(g.finish_reason), s.n_cached, s.n_cached + s.n_prompt,
               s.n_prompt, s.ttft_ms, s.n_gen, s.decode_tps, media.c_str(),
               s.turns_dropped ? (" | dropped " + std::to_string(s.turns_dropped) + " turns (" +
                                  std::to_string(s.tokens_dropped) + " tokens)")
                                     .c_str()
                               : "");
}

int chat(ChatArgs& a) {
  auto overflow = edgellm::overflow_policy_from_name(a.overflow);
  if (!overflow.ok()) return fail(overflow.status());
  edgellm::LoadOptions lo;
  edgellm::GenerateOptions first;  // --image/--audio: the first turn's media
  if (auto st = apply_media(a.media, &lo, &first); !st.ok()) return fail(st);
  std::vector<edgellm::Media> pending = std::move(first.media);
  auto model = edgellm::Model::Load(a.model, lo);
  if (!model.ok()) return fail(model.status());
  a.so.context_shift = !a.no_shift;
  std::unique_ptr<edgellm::Model> draft;
  if (auto st = load_spec_draft(a.spec, a.model, a.so.n_ctx, &draft); !st.ok()) return fail(st);
  a.so.draft_model = draft.get();
  auto session = edgellm::Session::Create(**model, a.so);
  if (!session.ok()) return fail(session.status());

  std::unique_ptr<edgellm::PromptCache> cache;
  if (!a.prompt_cache.empty()) {
    auto c = edgellm::PromptCache::Open({a.prompt_cache});
    if (!c.ok()) return fail(c.status());
    cache = std::move(*c);
  }
  edgellm::ConversationOptions co;
  co.system_prompt = a.system;
  co.overflow = *overflow;
  co.prompt_cache = cache.get();
  std::unique_ptr<edgellm::Conversation> conv;
  if (!a.session_file.empty() && ::access(a.session_file.c_str(), F_OK) == 0) {
    edgellm::RestoreInfo info;
    auto c = edgellm::Conversation::Load(**session, a.session_file, co, &info);
    if (!c.ok()) return fail(c.status());
    conv = std::move(*c);
    std::fprintf(stderr, "[session] resumed %s: %zu messages, %s\n", a.session_file.c_str(),
                 conv->history().size(),
                 info.kv_restored
                     ? ("KV cache restored (" + std::to_string(info.n_tokens) + " tokens)").c_str()
                     : ("KV cache recomputed: " + info.why_not).c_str());
  } else {
    auto c = edgellm::Conversation::Create(**session, co);
    if (!c.ok()) return fail(c.status());
    conv = std::move(*c);
    auto p = conv->Prepare();
    if (!p.ok()) return fail(p.status());
    if ((!a.system.empty() || cache) && !a.quiet) {
      std::fprintf(stderr, "[prepare] system prompt %d tokens %s in %.0f ms%s\n", p->n_tokens,
                   p->restored ? "restored from the prompt cache" : "prefilled", p->ms,
                   cache && !p->restored ? (" (" + p->why_not_restored + ")").c_str() : "");
    }
  }

  // --index: each turn is asked with the index's best chunks before it (grounded answers).
  std::unique_ptr<edgellm::Embedder> embedder;
  std::unique_ptr<edgellm::DocumentIndex> index;
  edgellm::GroundOptions ground;
  if (!a.index.empty()) {
    auto mode = edgellm::search_mode_from_name(a.index_mode);
    if (!mode.ok()) return fail(mode.status());
    if (a.embedding_model.empty() && *mode != edgellm::SearchMode::kLexical) {
      return fail(edgellm::Status::InvalidArgument(
          "--index with " + a.index_mode + " search needs the index's --embedding-model, or "
          "--index-mode lexical"));
    }
    if (!a.embedding_model.empty()) {
      auto e = edgellm::Embedder::Load(a.embedding_model);
      if (!e.ok()) return fail(e.status());
      embedder = std::move(*e);
    }
    edgellm::IndexOptions io;
    io.read_only = true;
    auto idx = edgellm::DocumentIndex::Open(a.index, embedder.get(), io);
    if (!idx.ok()) return fail(idx.status());
    index = std::move(*idx);
    ground.search.mode = *mode;
    ground.search.top_k = a.index_k;
  }
  edgellm::GenerateOptions go;
  go.max_tokens = a.max_tokens;
  go.temperature = a.temperature;
  if (a.seed >= 0) go.seed = static_cast<uint32_t>(a.seed);
  if (auto st = load_constraint(a.constraint, &go); !st.ok()) return fail(st);
  if (auto st = apply_spec(a.spec, &go); !st.ok()) return fail(st);
  const bool tty = ::isatty(STDIN_FILENO);
  auto save = [&](const std::string& path) {
    edgellm::Status st = conv->Save(path);
    if (!st.ok()) std::fprintf(stderr, "edgellm: warning: not saved: %s\n", st.message().c_str());
    return st.ok();
  };
  auto sink = [&](std::string_view piece) {
    if (!a.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  std::string line;
  for (;;) {
    if (tty) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      conv->Reset();
      std::fprintf(stderr, "[reset] history cleared\n");
      continue;
    }
    if (line == "/history") {
      for (const auto& m : conv->history()) {
        std::printf("%s: %s%s\n", m.role.c_str(),
                    m.media.empty() ? "" : ("[" + std::to_string(m.media.size()) + " media] ").c_str(),
                    m.content.c_str());
      }
      continue;
    }
    if (line.rfind("/image", 0) == 0 || line.rfind("/audio", 0) == 0) {
      const std::string path = line.size() > 7 ? line.substr(7) : "";
      const edgellm::ModelInfo& mi = (*model)->info();
      if (path.empty()) {
        std::fprintf(stderr, "usage: %s FILE (attached to your next turn)\n", line.substr(0, 6).c_str());
      } else if (mi.mmproj_path.empty()) {
        std::fprintf(stderr, "edgellm: error: this model was loaded without its projector: "
                             "restart chat with --mmproj FILE\n");
      } else if (::access(path.c_str(), R_OK) != 0) {
        std::fprintf(stderr, "edgellm: error: cannot read %s\n", path.c_str());
      } else {
        pending.push_back(edgellm::Media{path, {}});
        std::fprintf(stderr, "[media] %s attached to your next turn (%zu pending)\n",
                     path.c_str(), pending.size());
      }
      continue;
    }
    if (line.rfind("/save", 0) == 0) {
      const std::string path = line.size() > 6 ? line.substr(6) : a.session_file;
      if (path.empty()) {
        std::fprintf(stderr, "usage: /save FILE\n");
      } else if (save(path)) {
        std::fprintf(stderr, "[save] %s\n", path.c_str());
      }
      continue;
    }
    std::vector<edgellm::SearchHit> cited;
    if (index && line != "/regen") {
      auto g = edgellm::ground_question(*index, line, ground);
      if (!g.ok()) {
        fail(g.status());
        continue;
      }
      cited = g->cited;
      line = g->prompt;
    }
    if (line != "/regen") go.media = std::move(pending);
    pending.clear();
    edgellm::Result<edgellm::Generation> r =
        line == "/regen" ? conv->Regenerate(go, sink) : conv->Send(line, go, sink);
    go.media.clear();
    if (!r.ok()) {
      fail(r.status());
      if (r.status().code() == edgellm::Code::kInvalidArgument ||
          r.status().code() == edgellm::Code::kFailedPrecondition ||
          r.status().code() == edgellm::Code::kResourceExhausted) {
        continue;  // the conversation is as before: the user can go on
      }
      return 1;
    }
    // Saved before the turn is reported: whatever printed its reply survives a kill.
    if (!a.session_file.empty()) save(a.session_file);
    if (a.json) {
      nlohmann::json j = turn_json(*r);
      add_json_result(*r, &j);
      if (index) {
        nlohmann::json sources = nlohmann::json::array();
        for (size_t k = 0; k < cited.size(); ++k) {
          const edgellm::SearchHit& h = cited[k];
          sources.push_back({{"n", k + 1}, {"source", h.source}, {"start", h.start},
                             {"end", h.end}, {"found_by", h.found_by}, {"text", h.text}});
        }
        j["sources"] = std::move(sources);
      }
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("\n");
      for (size_t k = 0; k < cited.size(); ++k) {
        std::printf("  [%zu] %s, bytes %zu-%zu (%s)\n", k + 1, cited[k].source.c_str(),
                    cited[k].start, cited[k].end, cited[k].found_by.c_str());
      }
      warn_json_state(*r);
    }
    std::fflush(stdout);
    if (!a.quiet) print_stats(*r);
  }
  if (!a.session_file.empty()) save(a.session_file);
  return 0;
}

}  // namespace

Action add_chat(CLI::App& app) {
  static ChatArgs a;
  auto* cmd = app.add_subcommand("chat", "A conversation that keeps its KV cache between turns");
  cmd->add_option("-m,--model", a.model,
                  "GGUF model with a chat template (default: edgellm's own, "
                  "edgellm-tiny-F32.gguf, from the install's share/edgellm/)");
  cmd->add_option("--system", a.system, "System prompt");
  cmd->add_option("--ctx", a.so.n_ctx, "Context length (default: min(n_ctx_train, 2048))");
  cmd->add_option("--threads", a.so.n_threads, "Threads (default: physical cores)");
  cmd->add_option("--batch", a.so.n_batch, "Prefill chunk size (default 512)");
  cmd->add_option("-n,--max-tokens", a.max_tokens, "Tokens per reply at most (default 256)");
  cmd->add_option("--temp", a.temperature, "Temperature, 0 = greedy (default 0.8)");
  cmd->add_option("--seed", a.seed, "Sampling seed (default random)");
  cmd->add_option("--session", a.session_file,
                  "Resume this conversation file if it exists; save it after every turn");
  cmd->add_option("--overflow", a.overflow,
                  "When the context is full: drop_oldest (default) or fail");
  cmd->add_flag("--no-shift", a.no_shift,
                "Prefill kept turns again instead of shifting their KV cells");
  cmd->add_option("--prompt-cache", a.prompt_cache,
                  "Folder that keeps the system prompt's KV cells between runs");
  add_constraint_options(cmd, &a.constraint);
  add_spec_options(cmd, &a.spec);
  add_media_options(cmd, &a.media);
  cmd->add_option("--index", a.index,
                  "Answer from a document index (edgellm index add): each turn gets its best "
                  "chunks, and the reply lists them");
  cmd->add_option("--embedding-model", a.embedding_model, "The index's embedding model");
  cmd->add_option("--index-mode", a.index_mode, "hybrid (default), vector or lexical");
  cmd->add_option("--index-k", a.index_k, "Chunks per turn, at most (default 3)");
  cmd->add_flag("--json", a.json, "One JSON line per turn on stdout instead of the text");
  cmd->add_flag("-q,--quiet", a.quiet, "No per-turn stats");
  return [] {
    if (auto st = use_default_model(&a.model, a.quiet); !st.ok()) return fail(st);
    return chat(a);
  };
}

}  // namespace cli
