// Shared bits of the edgellm CLI subcommands. Public API only.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "edgellm/edgellm.h"

namespace cli {

// Each subcommand registers itself on `app` and returns the action to run when chosen.
using Action = std::function<int()>;
Action add_run(CLI::App& app);
// chat (a conversation that keeps its KV cache)
Action add_chat(CLI::App& app);
Action add_info(CLI::App& app);
Action add_synth(CLI::App& app);
Action add_plan(CLI::App& app);
Action add_tokens(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_quantize(CLI::App& app);
Action add_pack(CLI::App& app);
Action add_serve(CLI::App& app);
// pull, models, rm, verify (the model store)
Action add_store(CLI::App& app);
// caps, route (capabilities, whitelist and scenario policy)
Action add_caps(CLI::App& app);
Action add_route(CLI::App& app);
// serve (OpenAI-compatible server over the local engine)
Action add_serve_llm(CLI::App& app);
// train (edgellm's own model)
Action add_train(CLI::App& app);
Action add_eval(CLI::App& app);
// imatrix, quant-study, advise (quantization measured per task)
Action add_imatrix(CLI::App& app);
Action add_quant_study(CLI::App& app);
Action add_advise(CLI::App& app);
// embed, rerank (embedding and rerank models), index (the document index)
Action add_embed(CLI::App& app);
Action add_rerank(CLI::App& app);
Action add_index(CLI::App& app);

// The model `run` and `chat` use without -m: edgellm's own, installed in PREFIX/share/edgellm/
// (EDGELLM_DATA_DIR overrides; a CLI in a build folder finds the source tree's assets/). An
// empty *model becomes its path, said on stderr unless quiet; kNotFound says where it looked.
inline constexpr const char* kDefaultModel = "edgellm-tiny-F32.gguf";
edgellm::Status use_default_model(std::string* model, bool quiet);
// llama.cpp's ggml-vocab-qwen2.gguf for `synth` and `plan`, found the same way.
std::string default_vocab();

// "8G", "6GB", "12GiB", "512M", "1024" (bytes) -> bytes. kInvalidArgument otherwise.
edgellm::Result<uint64_t> parse_size(const std::string& text);

// Prints "edgellm: error: <code>: <message>" to stderr; returns exit code 1.
int fail(const edgellm::Status& st);
// The first `max_bytes` of `text` cut at a UTF-8 character boundary, newlines as spaces, with
// "..." when cut.
std::string preview(const std::string& text, size_t max_bytes);
// "1.23 GiB", "512.0 MiB", ...
std::string human_bytes(uint64_t bytes);
// A one-line progress bar on stderr ("\r[load] ####----  42%"); done=true ends the line.
void progress_line(const char* stage, float fraction, bool done = false);
nlohmann::json info_json(const edgellm::ModelInfo& info);

// --json-schema FILE|JSON and --grammar FILE (run, chat): the constraint's text into `go`.
// A value that starts with `{` (or is `true`) is the schema itself, else a file to read.
struct ConstraintArgs {
  std::string json_schema, grammar;
  std::string tools, tool_choice = "auto", reasoning = "separate";
  std::string json_whitespace = "compact";
};
void add_constraint_options(CLI::App* cmd, ConstraintArgs* c);
edgellm::Status load_constraint(const ConstraintArgs& c, edgellm::GenerateOptions* go);
// --tools FILE: an OpenAI `tools` array (or one tool) as ToolSpecs; kInvalidArgument naming
// what is wrong.
edgellm::Result<std::vector<edgellm::ToolSpec>> parse_tools(const nlohmann::json& tools);
// The tool calls as OpenAI's message.tool_calls.
nlohmann::json tool_calls_json(const std::vector<edgellm::ToolCall>& calls);
// "json_state" and, when complete, "json" (the parsed value) for --json reports; also
// "reasoning" and "tool_calls" when there are.
void add_json_result(const edgellm::Generation& g, nlohmann::json* out);
// Warns on stderr when a schema's output did not complete.
void warn_json_state(const edgellm::Generation& g);

// --mmproj FILE, --image FILE / --audio FILE (repeatable), --image-max-tokens N (run, chat):
// the projector into the load options, the media into the generation (media_args.cc).
struct MediaArgs {
  std::string mmproj;
  std::vector<std::string> images, audio;
  int32_t image_max_tokens = -1;
};
void add_media_options(CLI::App* cmd, MediaArgs* m);
edgellm::Status apply_media(const MediaArgs& m, edgellm::LoadOptions* load,
                            edgellm::GenerateOptions* go);
// " | media N (T tokens, decode D ms, encode E ms)" for a summary line; empty without media.
std::string media_summary(const edgellm::Stats& s);

// --spec SOURCES|off, --spec-max N, --spec-fixed (run, chat): speculative decoding's options
// into the generation (spec_args.cc).
struct SpecArgs {
  std::string sources = "ngram,jump";
  int32_t max_draft = 8;
  bool fixed = false;
};
void add_spec_options(CLI::App* cmd, SpecArgs* s);
edgellm::Status apply_spec(const SpecArgs& s, edgellm::GenerateOptions* go);
// The FILE of a draft:FILE source in --spec, "" when none.
std::string spec_draft_path(const SpecArgs& s);
// With a draft:FILE source: plans `model` with it at `n_ctx` (-1: the session's default) on
// this device (a draft that does not fit is an error with the planner's advice), then loads it
// into *out. Nothing without one.
edgellm::Status load_spec_draft(const SpecArgs& s, const std::string& model, int32_t n_ctx,
                                std::unique_ptr<edgellm::Model>* out);
// " | spec A/D kept (F forced), T tok/decode" for a summary line; empty when nothing was guessed.
std::string spec_summary(const edgellm::Stats& s);

}  // namespace cli
