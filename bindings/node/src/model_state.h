// What NativeModel's methods share (native_model.cc: load, generate, dispose, ...;
// native_conversation.cc: the conversation methods). JS thread unless a comment says otherwise.
#pragma once

#include "napi.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "napi_util.h"
#include "worker.h"

namespace edgellm::node {

// A conversation whose model was unloaded under memory pressure: what recreates it.
struct ParkedConversation {
  ConversationOptions options;
  std::vector<ChatMessage> history;
};

// A LoRA adapter loaded from JS (native_lora.cc), by id.
struct LoadedLora {
  std::string path;
  std::shared_ptr<LoraAdapter> adapter;  // null while the model is unloaded
};

// Everything one model needs, shared by the JS wrapper and the jobs on its worker.
struct ModelState {
  napi_env env = nullptr;  // the environment that created it (for teardown)
  std::shared_ptr<Worker> worker;
  // The app's signals (signals.cc): thermal level and pause act on this model's generations
  // through its own governor (a governor serves one generation at a time).
  PowerGovernor governor;
  // Worker thread only (set by the load job, reset by the close job).
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft;  // load()'s draftPath: speculative decoding's draft model
  std::unique_ptr<Session> session;
  // Conversations by id, and prompt caches by folder (native_conversation.cc).
  std::map<int64_t, std::unique_ptr<Conversation>> conversations;
  std::map<std::string, std::unique_ptr<PromptCache>> prompt_caches;
  int64_t next_conversation = 1;
  // LoRA adapters by id, and the ones applied with their scales in the order applied.
  std::map<int64_t, LoadedLora> loras;
  std::vector<std::pair<int64_t, float>> applied_loras;
  int64_t next_lora = 1;
  // What load() was given, so that a model unloaded at memory level CRITICAL reloads on its
  // next request (Unload / EnsureLoaded, signals.cc), with its conversations parked meanwhile.
  std::string path, draft_path;
  LoadOptions load_options;
  SessionOptions session_options;
  bool unloaded = false;
  std::map<int64_t, ParkedConversation> parked;
  int32_t reloads = 0;
  // Any thread.
  std::mutex mu;                                 // guards session_for_cancel, current
  Session* session_for_cancel = nullptr;         // valid until the close job resets it
  std::shared_ptr<std::atomic<bool>> current;    // cancel flag of the newest generation
  std::atomic<bool> load_cancel{false};
  std::atomic<bool> closed{false};
  std::atomic<bool> close_posted{false};

  void CancelAll() {
    load_cancel = true;
    std::lock_guard<std::mutex> lock(mu);
    if (current) *current = true;
    if (session_for_cancel) session_for_cancel->Cancel();
  }
  // Worker thread. OK when a session is there, reloading the model first when memory pressure
  // unloaded it; kFailedPrecondition before load().
  Status EnsureLoaded();
  // Worker thread. Frees the session and the weights, parking the conversations (their
  // options and history); the next EnsureLoaded() loads them again. False when not loaded.
  bool Unload();

  // Cancels, then frees model and session on the worker after the queued jobs, then runs
  // `done` there. Only the first call does this and returns true.
  bool Close(const std::shared_ptr<ModelState>& self, std::function<void()> done) {
    closed = true;
    // Leaves the app's signals: a generation parked by pause() must not wait for a resume()
    // that no longer reaches this model.
    governor.Resume();
    (void)governor.SetThermalLevel(-1);
    CancelAll();
    if (close_posted.exchange(true)) return false;
    worker->Close([self, done = std::move(done)] {
      {
        std::lock_guard<std::mutex> lock(self->mu);
        self->session_for_cancel = nullptr;
      }
      self->conversations.clear();
      self->parked.clear();
      self->prompt_caches.clear();
      self->session.reset();
      self->loras.clear();  // adapters belong to the model: free them before it
      self->model.reset();
      self->draft.reset();
      // Give the freed heap back to the system now: each worker thread's allocations sit in
      // their own malloc arena, which glibc otherwise keeps. Measured over load/generate/
      // dispose cycles of a 41 MiB model: RSS 98 -> 252 MiB after 150 cycles without this,
      // 55 -> 57 MiB after 200 with it.
      ReturnFreedMemory();
      if (done) done();
    });
    return true;
  }
};

struct Wrapper {
  std::shared_ptr<ModelState> state;
};

// The model behind `this`, or nullptr with a TypeError pending.
std::shared_ptr<ModelState> unwrap(napi_env env, napi_callback_info info, size_t* argc,
                                   napi_value* argv);

// [{role, content}, ...] from JS; false with a TypeError pending (native_conversation.cc).
bool read_messages(napi_env env, napi_value v, std::vector<ChatMessage>* out);
// A message's toolCalls ([{id, name, arguments}]) into `out`; absent: none.
bool read_tool_calls(napi_env env, napi_value msg, std::vector<ToolCall>* out);
// Tool calls as [{id, name, arguments (JSON text), args (parsed)}].
napi_value tool_calls_array(napi_env env, const std::vector<ToolCall>& calls);

// The JS generate options (maxTokens, temperature, ...) into `go`; false with a TypeError.
bool parse_generate_options(napi_env env, napi_value o, GenerateOptions* go);

// Per generation, on the JS thread: the delivery latency of each batch.
struct Delivery {
  std::vector<double> latency_us;
};
napi_value result_object(napi_env env, const Generation& g, double queued_ms, const Delivery& dl);

// A generation on the model's worker, streamed to `on_batch` (may be undefined) and settling
// the returned promise: `call` runs on the worker with the options (prefill cancel and token
// count wired in) and the sink; `decorate` (may be empty) runs on the JS thread to add
// fields to the result object before it resolves.
using GenerationCall =
    std::function<Result<Generation>(ModelState& state, GenerateOptions& go, const TextSink& sink)>;
using Decorate = std::function<void(napi_env env, napi_value result)>;
napi_value start_generation(napi_env env, const std::shared_ptr<ModelState>& state,
                            napi_value on_batch, GenerateOptions go, GenerationCall call,
                            std::function<Decorate(ModelState& state)> after = {});

// A job on the model's worker that settles the returned promise: `job` returns the status and
// a closure that builds the resolved value on the JS thread.
using JobResult = std::pair<Status, std::function<napi_value(napi_env)>>;
napi_value start_job(napi_env env, const std::shared_ptr<ModelState>& state, const char* name,
                     std::function<JobResult(ModelState& state)> job);

}  // namespace edgellm::node
