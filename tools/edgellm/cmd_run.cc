// edgellm run -m MODEL -p PROMPT ...: streams a generation, with staged progress and timings.
// Routed through Runtime: the device when it can (memory plan, whitelist), else --fallback
// (an OpenAI-compatible URL) unless --private/--offline, else a refusal with the reason (exit 3).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common.h"

namespace cli {
namespace {

struct RunArgs {
  std::string model, prompt, prompt_file, system, load_mode = "auto";
  std::vector<std::string> stop;
  edgellm::SessionOptions so;
  edgellm::GenerateOptions go;
  bool json = false, no_warmup = false, verbose = false, quiet = false;
  int64_t seed = -1;
  double thermal_limit = 0;
  int32_t yield_ms = 0;
  std::string sysfs_root;
  std::vector<std::string> lora;
  std::vector<float> lora_scale;
  MediaArgs media;
  // Routing.
  std::string fallback, cloud_model, ram, device_root, whitelist;
  bool private_data = false, offline = false;
  double latency_ms = 0;
  ConstraintArgs constraint;
  SpecArgs spec;
};

nlohmann::json result_json(const edgellm::Generation& g) {
  const edgellm::Stats& s = g.stats;
  return {{"text", g.text},
          {"finish_reason", edgellm::finish_reason_name(g.finish_reason)},
          {"n_prompt", s.n_prompt},
          {"n_gen", s.n_gen},
          {"load_ms", s.load_ms},
          {"warmup_ms", s.warmup_ms},
          {"prefill_ms", s.prefill_ms},
          {"prefill_tps", s.prefill_tps},
          {"ttft_ms", s.ttft_ms},
          {"decode_ms", s.decode_ms},
          {"decode_tps", s.decode_tps},
          {"peak_rss_bytes", s.peak_rss_bytes},
          {"n_threads", s.n_threads},
          {"n_ctx", s.n_ctx},
          {"n_batch", s.n_batch},
          {"prompt_truncated", s.prompt_truncated},
          {"thread_changes", s.thread_changes},
          {"min_threads", s.min_threads},
          {"paused_ms", s.paused_ms},
          {"grammar_ms", s.grammar_ms},
          {"grammar_resamples", s.grammar_resamples},
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

int run(RunArgs& a) {
  if (!a.prompt_file.empty()) {
    std::ifstream f(a.prompt_file, std::ios::binary);
    if (!f) return fail(edgellm::Status::NotFound("prompt file not found: " + a.prompt_file));
    std::ostringstream ss;
    ss << f.rdbuf();
    a.prompt = ss.str();
  }
  if (auto st = load_constraint(a.constraint, &a.go); !st.ok()) return fail(st);
  if (auto st = apply_spec(a.spec, &a.go); !st.ok()) return fail(st);
  const bool show = !a.quiet;
  edgellm::RuntimeOptions ro;
  ro.model_path = a.model;
  ro.load.verbose = a.verbose;
  ro.load.mode = a.load_mode == "mmap"   ? edgellm::LoadMode::kMmap
                 : a.load_mode == "read" ? edgellm::LoadMode::kRead
                                         : edgellm::LoadMode::kAuto;
  if (show) {
    ro.load.on_progress = [](float p) {
      progress_line("1/3 loading model", p, p >= 1.0f);
      return true;
    };
  }
  if (auto st = apply_media(a.media, &ro.load, &a.go); !st.ok()) return fail(st);
  a.so.warmup = !a.no_warmup;
  ro.session = a.so;
  if (a.spec.sources != "off") ro.draft_model_path = spec_draft_path(a.spec);
  ro.cloud.base_url = a.fallback;
  if (!a.cloud_model.empty()) ro.cloud.model = a.cloud_model;
  ro.privacy_required = a.private_data;
  ro.offline = a.offline;
  ro.latency_target_ms = a.latency_ms;
  ro.prefer_on_device = true;  // run: the device whenever it can; the cloud is the fallback
  ro.device_root = a.device_root;
  if (!a.ram.empty()) {
    auto r = parse_size(a.ram);
    if (!r.ok()) return fail(r.status());
    ro.ram_bytes = *r;
  }
  if (!a.whitelist.empty()) {
    auto w = edgellm::load_whitelist(a.whitelist);
    if (!w.ok()) return fail(w.status());
    ro.whitelist = *w;
  }
  ro.on_route = [show](const edgellm::RouteReport& r) {
    if (show && r.fallback) {
      std::fprintf(stderr, "[route] %s (fallback): %s\n", edgellm::route_name(r.route),
                   r.reason.c_str());
    }
  };
  auto rt = edgellm::Runtime::Create(ro);
  if (!rt.ok()) return fail(rt.status());
  const edgellm::PolicyDecision& d = (*rt)->decision();
  if (d.route == edgellm::Route::kRefuse && a.fallback.empty() &&
      (*rt)->inputs().model_state == edgellm::ModelState::kMissing) {
    return fail(edgellm::Status::NotFound("model file not found: " + a.model +
                                          " (make one with `edgellm synth` or fetch it with "
                                          "`edgellm pull`; or pass --fallback URL)"));
  }
  if (d.route == edgellm::Route::kRefuse) {
    if (a.json) {
      std::printf("%s\n", nlohmann::json{{"route", "refuse"}, {"reason", d.reason}}.dump().c_str());
    }
    std::fprintf(stderr, "edgellm: refused: %s\n", d.reason.c_str());
    return 3;
  }
  if (show) std::fprintf(stderr, "[route] %s: %s\n", edgellm::route_name(d.route), d.reason.c_str());

  if (d.route == edgellm::Route::kOnDevice) {
    edgellm::Status prep = (*rt)->Prepare();
    const bool can_fall_back = !a.fallback.empty() && !a.private_data && !a.offline;
    if (!prep.ok() && !can_fall_back) return fail(prep);
    if (!prep.ok() && show) {
      std::fprintf(stderr, "      on-device load failed: %s\n", prep.ToString().c_str());
    }
    if (prep.ok()) {
      const edgellm::ModelInfo& info = (*rt)->model()->info();
      edgellm::Session* session = (*rt)->session();
      if (show) {
        std::fprintf(stderr, "      %s, %s, %s via %s in %.0f ms\n", info.description.c_str(),
                     info.quant.c_str(), human_bytes(info.file_bytes).c_str(),
                     edgellm::load_mode_name(info.load_mode), info.load_ms);
        std::fprintf(stderr, "[2/3 preparing engine] context, threads%s\n",
                     a.no_warmup ? "" : ", warm-up inference");
      }
      if (a.lora_scale.size() > a.lora.size()) {
        return fail(edgellm::Status::InvalidArgument("more --lora-scale values than --lora adapters"));
      }
      for (size_t i = 0; i < a.lora.size(); ++i) {
        auto adapter = edgellm::LoraAdapter::Load(*(*rt)->model(), a.lora[i]);
        if (!adapter.ok()) return fail(adapter.status());
        const float scale = i < a.lora_scale.size() ? a.lora_scale[i] : 1.0f;
        edgellm::Status st = session->SetLora(*adapter, scale);
        if (!st.ok()) return fail(st);
        if (show) {
          const edgellm::LoraInfo& li = (*adapter)->info();
          std::fprintf(stderr, "      LoRA %s: rank %d, %d matrices, scale %g, loaded in %.1f ms\n",
                       li.path.c_str(), li.rank, li.n_pairs, static_cast<double>(scale),
                       li.load_ms);
        }
      }
      if (show) {
        std::fprintf(stderr, "      n_ctx %d, n_batch %d, %d threads, warm-up %.0f ms\n",
                     session->n_ctx(), session->n_batch(), session->n_threads(),
                     session->warmup_ms());
        std::fprintf(stderr, "[3/3 generating]\n");
      }
    }
  } else if (show) {
    if (!a.lora.empty()) std::fprintf(stderr, "      --lora ignored: the cloud serves this request\n");
    std::fprintf(stderr, "[cloud] streaming from %s\n", a.fallback.c_str());
  }

  edgellm::GovernorOptions gopt;
  if (a.thermal_limit > 0) gopt.thermal_limit_c = a.thermal_limit;
  gopt.yield_ms = a.yield_ms;
  gopt.sysfs_root = a.sysfs_root;
  edgellm::PowerGovernor governor(gopt);
  if (a.thermal_limit > 0 || a.yield_ms > 0) a.go.governor = &governor;
  a.go.stop = a.stop;
  a.go.system_prompt = a.system;
  if (a.seed >= 0) a.go.seed = static_cast<uint32_t>(a.seed);
  edgellm::TextSink sink;
  if (!a.json && !a.quiet) {  // a reasoning model's thinking, apart from the answer
    a.go.reasoning_sink = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stderr);
      return true;
    };
  }
  if (!a.json) {
    sink = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  }
  auto routed = (*rt)->Generate(a.prompt, a.go, sink);
  if (!routed.ok()) return fail(routed.status());
  if ((*rt)->session()) (*rt)->session()->ReleaseKv();
  const edgellm::Generation& gen = routed->generation;
  const edgellm::Stats& s = gen.stats;
  const bool cloud = routed->route == edgellm::Route::kCloud;
  if (a.json) {
    nlohmann::json j = result_json(gen);
    add_json_result(gen, &j);
    j["route"] = edgellm::route_name(routed->route);
    j["reason"] = routed->reason;
    j["fell_back"] = routed->fell_back;
    if (routed->fell_back) j["failure"] = routed->failure;
    if (cloud) j["served_by"] = a.fallback;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    if (!gen.tool_calls.empty()) {
      std::printf("%s\n", tool_calls_json(gen.tool_calls).dump().c_str());
    }
    warn_json_state(gen);
  }
  if (show && cloud) {
    std::fprintf(stderr,
                 "\n--- %s | served by the cloud at %s%s | TTFT %.1f ms | gen %d tok, %.2f tok/s\n",
                 edgellm::finish_reason_name(gen.finish_reason), a.fallback.c_str(),
                 routed->fell_back ? " (fallback)" : "", s.ttft_ms, s.n_gen, s.decode_tps);
  } else if (show) {
    std::fprintf(stderr,
                 "\n--- %s | prompt %d tok, prefill %.1f ms (%.1f tok/s) | TTFT %.1f ms | "
                 "gen %d tok, decode %.2f tok/s | load %.0f ms, warm-up %.0f ms | peak RSS %s%s%s\n",
                 edgellm::finish_reason_name(gen.finish_reason), s.n_prompt, s.prefill_ms,
                 s.prefill_tps, s.ttft_ms, s.n_gen, s.decode_tps, s.load_ms, s.warmup_ms,
                 human_bytes(static_cast<uint64_t>(s.peak_rss_bytes)).c_str(),
                 media_summary(s).c_str(), spec_summary(s).c_str());
  }
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  static RunArgs a;
  auto* cmd = app.add_subcommand("run", "Stream a generation from a GGUF model");
  cmd->add_option("-m,--model", a.model,
                  "GGUF model file (default: edgellm's own, edgellm-tiny-F32.gguf, from the "
                  "install's share/edgellm/)");
  auto* p = cmd->add_option("-p,--prompt", a.prompt, "Prompt text");
  auto* pf = cmd->add_option("-f,--file", a.prompt_file, "Read the prompt from a file");
  p->excludes(pf);
  cmd->add_option("-n,--max-tokens", a.go.max_tokens, "Tokens to generate at most (default 256)");
  cmd->add_option("--temp", a.go.temperature, "Temperature, 0 = greedy (default 0.8)");
  cmd->add_option("--top-k", a.go.top_k, "Top-k, 0 = off (default 40)");
  cmd->add_option("--top-p", a.go.top_p, "Top-p, 1 = off (default 0.95)");
  cmd->add_option("--min-p", a.go.min_p, "Min-p, 0 = off (default 0.05)");
  cmd->add_option("--repeat-penalty", a.go.repeat_penalty, "Repetition penalty, 1 = off");
  cmd->add_option("--seed", a.seed, "Sampling seed (default random)");
  cmd->add_option("--threads", a.so.n_threads, "Threads (default: physical cores, never more)");
  cmd->add_option("--ctx", a.so.n_ctx, "Context length (default min(train ctx, 2048))");
  cmd->add_option("--batch", a.so.n_batch, "Prefill chunk size in tokens (default 512)");
  cmd->add_flag("--chat", a.go.chat, "Format the prompt with the model's chat template");
  cmd->add_option("--system", a.system, "System prompt (with --chat)");
  cmd->add_option("--stop", a.stop, "Stop string (repeatable)");
  cmd->add_option("--stream-every", a.go.stream_every_tokens, "Tokens per streamed piece (default 4)");
  cmd->add_flag("--truncate", a.go.truncate_prompt, "Drop the oldest prompt tokens when it does not fit");
  cmd->add_flag("--ignore-eos", a.go.ignore_eos,
                "Keep generating past end-of-generation tokens (benchmarks)");
  cmd->add_option("--load-mode", a.load_mode, "auto (mmap below 500 MiB), mmap or read")
      ->check(CLI::IsMember({"auto", "mmap", "read"}));
  cmd->add_flag("--no-warmup", a.no_warmup, "Skip the warm-up inference");
  cmd->add_option("--thermal-limit", a.thermal_limit,
                  "Halve threads while the hottest thermal zone is at/above this (°C, e.g. 42)")
      ->check(CLI::Range(1.0, 150.0));
  cmd->add_option("--yield-ms", a.yield_ms, "Sleep this long after each streamed piece")
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--sysfs-root", a.sysfs_root, "Read thermal zones under this root (testing)");
  cmd->add_option("--fallback", a.fallback,
                  "OpenAI-compatible URL (e.g. an `edgellm serve`) that serves the request when "
                  "this device cannot (does not fit, not whitelisted, load fails)");
  cmd->add_option("--cloud-model", a.cloud_model, "the \"model\" sent to --fallback (default \"default\")");
  cmd->add_flag("--private", a.private_data,
                "the prompt may not leave the device: never use --fallback (refuse instead)");
  cmd->add_flag("--offline", a.offline, "no network: never use --fallback");
  cmd->add_option("--latency-ms", a.latency_ms, "first-token target, ms (routing)")
      ->check(CLI::Range(0.0, 1e7));
  cmd->add_option("--ram", a.ram, "plan for this much RAM (e.g. 2G; default: this device's)");
  cmd->add_option("--device-root", a.device_root,
                  "read the device profile under DIR (a device fixture tree)");
  cmd->add_option("--whitelist", a.whitelist, "platform whitelist JSON (default: built-in)");
  add_media_options(cmd, &a.media);
  cmd->add_option("--lora", a.lora, "Apply this GGUF LoRA adapter (repeatable)");
  cmd->add_option("--lora-scale", a.lora_scale, "Scale of each --lora, in order (default 1)");
  add_constraint_options(cmd, &a.constraint);
  add_spec_options(cmd, &a.spec);
  cmd->add_flag("--json", a.json, "Print one JSON object with the text and every stat");
  cmd->add_flag("-q,--quiet", a.quiet, "No progress or timings on stderr");
  cmd->add_flag("-v,--verbose", a.verbose, "Show llama.cpp's log");
  return [] {
    if (a.prompt.empty() && a.prompt_file.empty()) {
      return fail(edgellm::Status::InvalidArgument("no prompt: pass -p TEXT or -f FILE"));
    }
    if (auto st = use_default_model(&a.model, a.quiet); !st.ok()) return fail(st);
    return run(a);
  };
}

}  // namespace cli
