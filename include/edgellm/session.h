// Session: one inference context over a Model (llama.cpp context + KV cache).
//
// Thread safety: a Session is used by one thread at a time, except Cancel(),
// which may be called from any thread at any moment. Callbacks (sink, prefill
// progress) run on the thread that called Generate() and must not block.
// Speed: make a process's model calls (Session::Create, Generate, Embedder calls) from as few
// threads as it has models, ideally one. Built with OpenMP (the default here), each thread
// that decodes keeps its own pool of worker threads, and once the process holds more of them
// than there are CPUs the workers sleep between steps instead of spinning: a small model
// decoded 1.2x slower in `edgellm serve` (docs/engine.md, "Threads").
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/lora.h"
#include "edgellm/model.h"
#include "edgellm/platform.h"  // physical_cores() and the RSS readers, long declared here
#include "edgellm/power.h"
#include "edgellm/status.h"

namespace edgellm {

// Per-context options. Lifetime: the Session.
struct SessionOptions {
  // Context length in tokens. -1 = auto: min(model's n_ctx_train, 2048).
  int32_t n_ctx = -1;
  // Worker threads. -1 = auto: the number of physical cores. Never more than the physical cores:
  // larger values are clamped (the value used is readable from Session::n_threads()).
  int32_t n_threads = -1;
  // Largest number of prompt tokens decoded in one llama_decode call (chunked prefill). Default 512.
  int32_t n_batch = 512;
  // Run a short inference right after creating the context so the first real request
  // does not pay one-time costs. Default: true.
  bool warmup = true;
  // When a conversation outgrows the context, keep the cells of the turns it keeps by moving
  // them (a KV shift, where the model's memory allows it) instead of decoding them again.
  // A shift is much faster; decoding again is a fresh prefill's computation (bit-identical
  // where ggml's CPU kernels sum any batch size alike; on AVX-512 machines the last bits can
  // differ, and with them a near-tie of greedy sampling).
  // Default: true.
  bool context_shift = true;
  // A draft model for speculative decoding (SpeculativeOptions::draft): a smaller model with
  // this model's tokenizer (Qwen2.5-0.5B for Qwen2.5-1.5B or 7B) whose greedy guesses each
  // decode checks. It gets a context of its own, n_ctx tokens (plan it with
  // PlanOptions::draft_path). Not owned; must outlive the Session. A model with another
  // vocabulary, or one trained for fewer than n_ctx tokens, is kInvalidArgument naming the
  // difference. Default none.
  const Model* draft_model = nullptr;
};

enum class FinishReason {
  kNone,         // still running (never returned)
  kStop,         // end-of-generation token or a stop string
  kLength,       // max_tokens reached
  kCancelled,    // Cancel() or a sink/progress callback returned false
  kContextFull,  // the context has no room for another token
  kToolCalls,    // the model called tools (GenerateOptions::tools): Generation::tool_calls
};
const char* finish_reason_name(FinishReason reason);

// Receives streamed text. Each piece is valid UTF-8 and never ends inside a
// character; the concatenation of all pieces equals Generation::text.
// Return false to cancel the generation.
using TextSink = std::function<bool(std::string_view piece)>;

// A tool call the model made: `arguments` is JSON text (an object). In a generation cut short
// (finish reason kLength, kContextFull or kCancelled) the last call may be as far as the model
// got: its name, and its arguments up to the cut (not JSON yet); never run such a call.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// A tool the model may call, as OpenAI's `tools` describe one: `parameters` is a JSON Schema
// (JSON text) of its arguments object.
struct ToolSpec {
  std::string name;
  std::string description;
  std::string parameters = R"({"type":"object","properties":{}})";
};

// An image or an audio clip for a prompt (GenerateOptions::media): a file, or its encoded
// bytes (when `bytes` is not empty). Images: JPEG, PNG, BMP, GIF; audio: WAV, MP3, FLAC, as
// llama.cpp's mtmd decodes them.
struct Media {
  std::string path;
  std::vector<uint8_t> bytes;
};
// The text that places a media item in a prompt: "<__media__>".
const char* media_marker();
// The bytes of a base64 data: URL ("data:image/jpeg;base64,..." as OpenAI's image_url parts
// and a browser's FileReader give them) as a Media. kInvalidArgument when it is not a base64
// data: URL, its base64 is damaged, it is empty, or it decodes to more than `max_bytes`.
Result<Media> media_from_data_url(std::string_view url, size_t max_bytes = size_t{64} << 20);

struct ChatMessage {
  std::string role;     // "system", "user", "assistant" or "tool"
  std::string content;
  std::string reasoning;              // assistant: its reasoning (templates drop earlier ones)
  std::vector<ToolCall> tool_calls;   // assistant: the calls it made
  std::string tool_call_id;           // tool: the call this message answers
  std::string name;                   // tool: the tool's name
  // user: images or audio clips of the turn, one per media_marker() in `content`, in order;
  // content without markers gets them all before its text. Needs a projector.
  std::vector<Media> media;
};

// What becomes of a reasoning model's thinking (DeepSeek-R1's <think>...</think>).
enum class Reasoning {
  kSeparate,  // apart from the answer: Generation::reasoning, GenerateOptions::reasoning_sink
  kHide,      // dropped: neither streamed nor returned
  kInline,    // left in the text as the model wrote it
};

// Bounds on a grammar or JSON schema, checked before anything is compiled: a request from an
// untrusted client cannot make generation hang or exhaust memory. A limit that is exceeded is
// a kInvalidArgument naming it. The defaults suit an app's own schemas; `serve` sets smaller
// ones (its --max-schema-* flags).
struct GrammarLimits {
  size_t max_bytes = 256 * 1024;  // the grammar or schema text. Default 256 KiB
  int32_t max_depth = 64;         // nesting of a schema's objects and arrays. Default 64
  int32_t max_rules = 4096;       // rules of the grammar, given or converted. Default 4096
};

// The whitespace a JSON schema's grammar (GenerateOptions::json_schema, and the grammar of a
// tool call's arguments) lets the model write between JSON's tokens: after `{`, `[`, `:`, `,`
// and before `}`, `]`.
enum class JsonWhitespace {
  kCompact,  // at most one space at each of those places, no newline (the default)
  kNone,     // none at all: the fewest tokens, and more of them forced by the grammar
  kFree,     // llama.cpp's converter's own: up to two newlines and 20 spaces or tabs at each
};
// "compact", "none", "free".
const char* json_whitespace_name(JsonWhitespace w);
// The policy a name gives; false when the name is none of the three.
bool parse_json_whitespace(std::string_view name, JsonWhitespace* out);

// What became of the JSON a schema asked for (Generation::json_state).
enum class JsonState {
  kNone,        // no json_schema was set
  kComplete,    // the output ended at the end of the schema: Generation::json holds it
  kIncomplete,  // generation stopped first (max_tokens, a full context, a cancel): not JSON
  kInvalid,     // a stop string ended the output before the schema's end: not its JSON
};
const char* json_state_name(JsonState state);

// Speculative decoding (GenerateOptions::speculative): each decode step also checks the tokens
// a draft source guesses come next, in the same batch (on a CPU a batch of a few tokens costs
// about as much as one), and keeps those the model itself picks there: sampled in order, as
// without speculation, so the output is the same (greedy: up to the last bits in which ggml's
// batched and one-token logits can differ; sampling: the same draws from the same seed).
struct SpeculativeOptions {
  // Guesses from the context (prompt lookup): the tokens that followed the last ngram_max ..
  // ngram_min tokens where they last appeared in the prompt, the history or the reply so far.
  // Pays where the answer copies its input (extraction, rewriting, code). Default on.
  bool ngram = true;
  int32_t ngram_min = 2;  // default 2, at least 1
  int32_t ngram_max = 4;  // default 4, ngram_min .. 8
  // With a grammar or JSON schema: the text the grammar forces next (keys, quotes, colons),
  // guessed as its tokens (jump-forward). Default on.
  bool jump = true;
  // With jump: take the forced text without checking it, in the tokenizer's own split
  // (SGLang's jump-forward), decoded with the next step's batch and never rejected — the one
  // source that pays on a device where a check batch costs nearly as much as its tokens one by
  // one. The bytes are the grammar's; the tokens may not be the ones the model would have
  // picked to spell them, so the reply after them may differ from a decode without it (it
  // does for the committed model and the random-weight fixtures: docs/speculative.md).
  // The last forced token, whose split depends on the text after it, is checked as a guess.
  // Default off: forced text is a guess checked like any other, the output exactly the model's.
  bool jump_commit = false;
  // Guesses from the session's draft model (SessionOptions::draft_model), when it has one, where
  // the n-gram lookup has none: greedy, one draft decode per guessed token, stopping at a token
  // the draft model gives less than draft_p_min. Not for prompts with media (the draft model
  // cannot see them). Default on.
  bool draft = true;
  float draft_p_min = 0.6f;  // default 0.6, 0 .. 1
  // Tokens guessed per step at most: 0 turns speculation off. Default 8, at most 16.
  int32_t max_draft = 8;
  // Guess fewer tokens, or none, when the acceptance measured in this generation and the batch
  // cost measured on this machine say guessing loses time. Default on; off guesses max_draft
  // whenever a source has a guess (benchmarks).
  bool adaptive = true;
};

// Per-call options. Lifetime: one Generate() call.
struct GenerateOptions {
  int32_t max_tokens = 256;      // new tokens at most. Default 256; must be >= 1
  float temperature = 0.8f;      // 0 = greedy. Default 0.8
  int32_t top_k = 40;            // 0 = off. Default 40
  float top_p = 0.95f;           // 1 = off. Default 0.95
  float min_p = 0.05f;           // 0 = off. Default 0.05
  float repeat_penalty = 1.0f;   // 1 = off. Default 1.0
  int32_t repeat_last_n = 64;    // window of the repetition penalty. Default 64
  uint32_t seed = 0xFFFFFFFFu;   // sampling seed; 0xFFFFFFFF = random. Default random
  // Format the prompt as one user turn with the model's chat template. Default false (plain).
  bool chat = false;
  std::string system_prompt;     // used only with chat; empty = none
  // Used only with chat: earlier turns, oldest first, placed between the system prompt and
  // the prompt's user turn. Roles as the model's template knows them ("user", "assistant",
  // "system"). Default none.
  std::vector<ChatMessage> history;
  // Generation ends (reason kStop) when the text would contain one of these; the stop
  // string itself is not part of the output.
  std::vector<std::string> stop;
  // Streaming: the first text goes to the sink as soon as it is decoded (so time to first text
  // is TTFT), then a piece every `stream_every_tokens` tokens (default 4) or when
  // `stream_every_ms` (default 100) passed since the last piece, whichever comes first.
  int32_t stream_every_tokens = 4;
  int32_t stream_every_ms = 100;
  // When the prompt does not fit the context: false (default) fails with kInvalidArgument
  // before any decode; true keeps the beginning-of-sequence token and the most recent
  // prompt tokens, leaving room for max_tokens (at least a quarter of the context).
  bool truncate_prompt = false;
  // Keep generating past end-of-generation tokens (benchmarks). Default false.
  bool ignore_eos = false;
  // Constrained output. `grammar`: a GBNF grammar (llama.cpp's dialect; the start rule is
  // `root`). `json_schema`: a JSON Schema as JSON text, converted to a grammar with llama.cpp's
  // converter; the result then carries the parsed JSON (Generation::json). At most one of the
  // two; both empty (default): free text. Every token the model writes is one the grammar
  // allows, on every path (greedy, sampling, conversations, stop strings). A grammar that
  // does not parse, refers to an undefined rule, can never finish, or exceeds
  // `grammar_limits`, and a schema that is not JSON or uses what the converter cannot do, fail
  // with kInvalidArgument naming the problem, before any decode.
  std::string grammar;
  std::string json_schema;
  GrammarLimits grammar_limits;
  // The whitespace json_schema's grammar and tool calls' grammars allow. Default kCompact: a
  // schema's answer never spends its token budget on newlines and indentation.
  JsonWhitespace json_whitespace = JsonWhitespace::kCompact;
  // Tool calls (with chat): the tools the model may call, rendered by the model's own chat
  // template (Qwen2.5's <tool_call> format, ...; a template without a tool format gets the
  // generic JSON format {"tool_call": ...} / {"response": ...}, and the log says so).
  // tool_choice: "auto" (default: the model decides; the grammar applies from the model's
  // tool-call opening on), "required"
  // (a call from the first token), "none", or a tool's name (a call to that one). Calls come
  // back in Generation::tool_calls with finish reason kToolCalls, their arguments following the
  // tool's schema; the text then holds what the model wrote besides them. Not with grammar or
  // json_schema. Default none.
  std::vector<ToolSpec> tools;
  std::string tool_choice = "auto";
  bool parallel_tool_calls = false;
  // Reasoning models, with chat: kSeparate (default) streams the thinking to reasoning_sink
  // (may be empty) and returns it in Generation::reasoning, the sink and text get the answer.
  Reasoning reasoning = Reasoning::kSeparate;
  TextSink reasoning_sink;
  // Keep the longest token prefix that this session's KV cache already holds from its last
  // call (compared token by token) and prefill only the rest: a chat that sends its whole
  // history every turn pays only for the new turn. The output is the same as from an empty
  // cache. Default false (every call starts from an empty cache). Conversations always reuse.
  bool reuse_prefix = false;
  // Images and audio for the prompt (the model must be loaded with a projector): one per
  // media_marker() in the prompt, in order; a prompt without markers gets them all before its
  // text (with chat: at the start of the user's turn). Each item is decoded, tiled and encoded
  // by the projector, then decoded into the context in place of its marker; Stats say how
  // long each part took and how many tokens the media took. Default none.
  std::vector<Media> media;
  // Speculative decoding: n-gram lookup and jump-forward on by default.
  SpeculativeOptions speculative;
  // Called after each prefill chunk with (tokens done, tokens total). Return false to cancel.
  std::function<bool(int32_t done, int32_t total)> on_prefill;
  // Thermal throttling, yield and pause/resume, applied between decode steps. Not owned; must
  // outlive the call. Default none.
  PowerGovernor* governor = nullptr;
  // When set, holds the number of tokens generated so far, updated before the token's text
  // reaches the streamer (so a sink can tell how many tokens a piece covers). Not owned; must
  // outlive the call. Default none.
  std::atomic<int32_t>* n_gen_out = nullptr;
};

// Timings and counts of one generation (and of the session's setup).
struct Stats {
  double load_ms = 0;       // model load (copied from ModelInfo)
  double warmup_ms = 0;     // session warm-up (0 when disabled)
  int32_t n_prompt = 0;     // prompt tokens decoded (prefilled) by this call
  int32_t n_cached = 0;     // prompt tokens reused from the KV cache (the prompt: both)
  double prefill_ms = 0;
  double prefill_tps = 0;   // prompt tokens per second
  double ttft_ms = 0;       // from Generate() entry to the first generated token
  int32_t n_gen = 0;        // tokens generated (sampled)
  double decode_ms = 0;     // from the first sampled token to the last
  double decode_tps = 0;    // tokens generated per second in that span (after the first); 0 if none
  int64_t peak_rss_bytes = 0;  // process peak resident set (VmHWM) at the end
  int32_t n_threads = 0;
  int32_t n_ctx = 0;
  int32_t n_batch = 0;
  bool prompt_truncated = false;
  // With a governor: how often the thread count changed, the fewest threads used, and the
  // time spent paused.
  int32_t thread_changes = 0;
  int32_t min_threads = 0;
  double paused_ms = 0;
  // Conversations: whole turns (a user message and its reply) dropped to make room in the
  // context for this turn, and their tokens.
  int32_t turns_dropped = 0;
  int32_t tokens_dropped = 0;
  // Constrained output: the time to compile the grammar (a schema converted and parsed), and
  // the tokens whose first draw the grammar rejected (each then drawn again from the allowed
  // set: the expensive path).
  double grammar_ms = 0;
  int32_t grammar_resamples = 0;
  // Media (GenerateOptions::media): items, the context positions their embeddings took
  // (also counted in n_prompt / n_cached), the time to read and decode the files into pixels
  // or samples, and the projector's encoding time; chunks taken from the encoded-media cache
  // instead of encoding them again.
  int32_t n_media = 0;
  int32_t n_media_tokens = 0;
  double media_decode_ms = 0;
  double media_encode_ms = 0;
  int32_t media_chunks_cached = 0;
  // Speculative decoding: tokens guessed and checked, those the model kept, how many of those
  // the grammar forced (jump-forward; with jump_commit, those taken unchecked are counted in all
  // three), and the generation's llama_decode calls (n_gen / decode_calls: tokens per decode;
  // 1 without speculation).
  int32_t spec_drafted = 0;
  int32_t spec_accepted = 0;
  int32_t spec_forced = 0;
  int32_t decode_calls = 0;
  // With a draft model: tokens it guessed (part of spec_drafted), those kept (part of
  // spec_accepted), and the time its decodes took (part of decode_ms).
  int32_t spec_draft_drafted = 0;
  int32_t spec_draft_accepted = 0;
  double spec_draft_ms = 0;
};

struct Generation {
  std::string text;
  FinishReason finish_reason = FinishReason::kNone;
  Stats stats;
  // With GenerateOptions::json_schema: kComplete when the output ended where the schema
  // ends, and then `json` holds it as JSON text (it parses, and follows the schema's
  // structure: the grammar allowed nothing else; whitespace around it trimmed); kIncomplete
  // when generation stopped first (finish reason kLength, kContextFull or kCancelled): `json`
  // is empty, never a half object.
  JsonState json_state = JsonState::kNone;
  std::string json;
  // With chat on a reasoning model (Reasoning::kSeparate): its thinking, apart from `text`.
  std::string reasoning;
  // With tools: the calls the model made (finish reason kToolCalls).
  std::vector<ToolCall> tool_calls;
};

// Compiles o.grammar / o.json_schema for `model` as Generate() would, and drops the result:
// kInvalidArgument naming the problem, Ok when there is nothing to compile. For a server that
// answers a bad schema with an error before it starts streaming.
Status CheckOutputConstraint(const Model& model, const GenerateOptions& o);

class Session {
 public:
  // Creates a context over `model`, which must outlive the Session.
  static Result<std::unique_ptr<Session>> Create(const Model& model,
                                                 const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Generates a continuation of `prompt`. Each call starts from an empty KV cache, unless
  // options.reuse_prefix keeps what the last call left there.
  // Cancellation is not an error: the partial Generation comes back with reason kCancelled.
  Result<Generation> Generate(std::string_view prompt, const GenerateOptions& options = {},
                              const TextSink& sink = {});

  // Stops the generation in flight, from any thread: a running prefill chunk is aborted
  // through llama.cpp's abort callback, decode stops before the next token. A call while
  // nothing runs has no effect. The session stays usable.
  void Cancel();

  // Frees the KV cache and compute buffers now (the context is rebuilt on the next
  // Generate). Use it after a generation to give memory back without dropping the model.
  void ReleaseKv();
  bool kv_allocated() const;

  int32_t n_ctx() const;
  int32_t n_threads() const;
  int32_t n_batch() const;
  double warmup_ms() const;

  // LoRA adapters, applied between generations (a call while Generate() runs on another
  // thread fails with kFailedPrecondition). SetLora adds `adapter` at `scale` or changes its
  // scale; scale 0 removes it. The next Generate() uses the new set; removing every adapter
  // gives the base model's output exactly. The adapter must belong to this session's Model
  // (else kInvalidArgument). The session keeps the adapters it uses alive.
  Status SetLora(std::shared_ptr<const LoraAdapter> adapter, float scale = 1.0f);
  Status RemoveLora(const LoraAdapter& adapter);  // kNotFound when not applied
  Status ClearLora();
  // The adapters in use with their scales, in the order they were added.
  std::vector<std::pair<std::shared_ptr<const LoraAdapter>, float>> loras() const;

  // Formats `user` (and an optional system prompt) with the model's chat template.
  Result<std::string> FormatChat(std::string_view user, std::string_view system = {}) const;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
