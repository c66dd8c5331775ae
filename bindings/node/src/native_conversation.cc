// NativeModel's conversation methods: edgellm::Conversation objects that live on the model's
// worker (by id) and share its one Session, so every call is a job on that worker, in call
// order with generate(). JS contract: index.d.ts (Conversation); design: docs/node.md.
#include "native_conversation.h"

#include "media_js.h"
#include "model_state.h"

namespace edgellm::node {
namespace {

napi_value history_array(napi_env env, const std::vector<ChatMessage>& h) {
  napi_value arr = nullptr;
  napi_create_array_with_length(env, h.size(), &arr);
  for (size_t i = 0; i < h.size(); ++i) {
    napi_value m = make_object(env);
    set(env, m, "role", h[i].role);
    set(env, m, "content", h[i].content);
    if (!h[i].reasoning.empty()) set(env, m, "reasoning", h[i].reasoning);
    if (!h[i].tool_call_id.empty()) set(env, m, "toolCallId", h[i].tool_call_id);
    if (!h[i].name.empty()) set(env, m, "name", h[i].name);
    if (!h[i].tool_calls.empty()) set(env, m, "toolCalls", tool_calls_array(env, h[i].tool_calls));
    // The turn's images and audio stay native (their bytes are not copied back): a count.
    if (!h[i].media.empty()) set(env, m, "mediaCount", static_cast<double>(h[i].media.size()));
    napi_set_element(env, arr, static_cast<uint32_t>(i), m);
  }
  return arr;
}

struct ConvOptions {
  ConversationOptions co;
  std::string cache_dir;
  double cache_bytes = 0;
};

bool read_conv_options(napi_env env, napi_value o, ConvOptions* out) {
  std::string overflow = "drop_oldest";
  if (!opt_string(env, o, "systemPrompt", &out->co.system_prompt) ||
      !opt_string(env, o, "overflow", &overflow) ||
      !opt_bool(env, o, "chatmlFallback", &out->co.chatml_fallback) ||
      !opt_bool(env, o, "keepSampledTokens", &out->co.keep_sampled_tokens) ||
      !opt_string(env, o, "promptCache", &out->cache_dir) ||
      !opt_number(env, o, "promptCacheBytes", &out->cache_bytes)) {
    return false;
  }
  Result<OverflowPolicy> p = overflow_policy_from_name(overflow);
  if (!p.ok()) {
    throw_status(env, p.status());
    return false;
  }
  out->co.overflow = *p;
  return true;
}

// The prompt cache for `o` (opened once per folder and model), into o.co.prompt_cache.
Status attach_cache(ModelState& s, ConvOptions& o) {
  if (o.cache_dir.empty()) return Status::Ok();
  auto it = s.prompt_caches.find(o.cache_dir);
  if (it == s.prompt_caches.end()) {
    PromptCacheOptions po;
    po.dir = o.cache_dir;
    if (o.cache_bytes > 0) po.max_bytes = static_cast<uint64_t>(o.cache_bytes);
    Result<std::unique_ptr<PromptCache>> c = PromptCache::Open(po);
    if (!c.ok()) return c.status();
    it = s.prompt_caches.emplace(o.cache_dir, std::move(*c)).first;
  }
  o.co.prompt_cache = it->second.get();
  return Status::Ok();
}

Result<Conversation*> find(ModelState& s, int64_t id) {
  auto it = s.conversations.find(id);
  if (it == s.conversations.end()) {
    return Status::FailedPrecondition("the conversation is disposed (or belongs to another model)");
  }
  return it->second.get();
}

bool read_id(napi_env env, napi_value v, int64_t* id) {
  if (get_integer(env, v, 1, 9007199254740991.0, id)) return true;
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "not a conversation id");
  return false;
}

// One method call: the model behind `this` and its arguments; with `with_id`, argv[0] is a
// conversation id. False with an exception pending.
template <size_t N>
struct Call {
  std::shared_ptr<ModelState> state;
  napi_value argv[N] = {};
  int64_t id = 0;
};

template <size_t N>
bool open_call(napi_env env, napi_callback_info cbinfo, Call<N>* c, bool with_id = true) {
  size_t argc = N;
  c->state = unwrap(env, cbinfo, &argc, c->argv);
  return c->state && (!with_id || read_id(env, c->argv[0], &c->id));
}

// A job on the worker with conversation `id` (kFailedPrecondition when it is gone).
napi_value conversation_job(napi_env env, const std::shared_ptr<ModelState>& state, int64_t id,
                            std::function<JobResult(Conversation& c)> fn) {
  return start_job(env, state, "edgellm.conversation", [id, fn = std::move(fn)](ModelState& s) {
    Result<Conversation*> c = find(s, id);
    if (!c.ok()) return JobResult{c.status(), nullptr};
    return fn(**c);
  });
}

// Registers a new conversation on the worker; the JS side gets {id, history, ...}.
JobResult registered(ModelState& s, Result<std::unique_ptr<Conversation>> c,
                     std::function<void(napi_env, napi_value)> more = {}) {
  if (!c.ok()) return {c.status(), nullptr};
  const int64_t id = s.next_conversation++;
  std::vector<ChatMessage> history = (*c)->history();
  const std::string system = (*c)->options().system_prompt;
  const std::string overflow = overflow_policy_name((*c)->options().overflow);
  s.conversations[id] = std::move(*c);
  return {Status::Ok(), [id, history, system, overflow, more](napi_env env) {
            napi_value r = make_object(env);
            set(env, r, "id", static_cast<double>(id));
            set(env, r, "history", history_array(env, history));
            set(env, r, "systemPrompt", system);
            set(env, r, "overflow", overflow);
            if (more) more(env, r);
            return r;
          }};
}

// conversationCreate(options) -> Promise<{id, history, systemPrompt, overflow}>
napi_value CreateJs(napi_env env, napi_callback_info cbinfo) {
  Call<1> c;
  ConvOptions o;
  if (!open_call(env, cbinfo, &c, false) || !read_conv_options(env, c.argv[0], &o)) return nullptr;
  return start_job(env, c.state, "edgellm.conversation", [o](ModelState& s) mutable {
    Status st = attach_cache(s, o);
    if (!st.ok()) return JobResult{st, nullptr};
    return registered(s, Conversation::Create(*s.session, o.co));
  });
}

// conversationLoad(path, options) -> Promise<{id, history, systemPrompt, overflow, restore}>
napi_value LoadJs(napi_env env, napi_callback_info cbinfo) {
  Call<2> c;
  std::string path;
  ConvOptions o;
  if (!open_call(env, cbinfo, &c, false) || !get_string(env, c.argv[0], "path", &path) ||
      !read_conv_options(env, c.argv[1], &o)) {
    return nullptr;
  }
  return start_job(env, c.state, "edgellm.conversation", [o, path](ModelState& s) mutable {
    Status st = attach_cache(s, o);
    if (!st.ok()) return JobResult{st, nullptr};
    RestoreInfo info;
    auto conv = Conversation::Load(*s.session, path, o.co, &info);
    return registered(s, std::move(conv), [info](napi_env env, napi_value r) {
      napi_value ri = make_object(env);
      set(env, ri, "kvRestored", info.kv_restored);
      set(env, ri, "nTokens", static_cast<double>(info.n_tokens));
      set(env, ri, "whyNot", info.why_not);
      set(env, r, "restore", ri);
    });
  });
}

// conversationSend(id, text | null, options, onBatch?) -> Promise<result & {history}>;
// null text regenerates the last reply.
napi_value SendJs(napi_env env, napi_callback_info cbinfo) {
  Call<4> c;
  if (!open_call(env, cbinfo, &c)) return nullptr;
  std::string text;
  const bool regenerate = is_nullish(env, c.argv[1]);
  GenerateOptions go;
  if ((!regenerate && !get_string(env, c.argv[1], "text", &text)) ||
      !parse_generate_options(env, c.argv[2], &go)) {
    return nullptr;
  }
  const int64_t id = c.id;
  return start_generation(
      env, c.state, c.argv[3], std::move(go),
      [id, text = std::move(text), regenerate](ModelState& s, GenerateOptions& o,
                                               const TextSink& sink) -> Result<Generation> {
        Result<Conversation*> c = find(s, id);
        if (!c.ok()) return c.status();
        return regenerate ? (*c)->Regenerate(o, sink) : (*c)->Send(text, o, sink);
      },
      [id](ModelState& s) -> Decorate {
        Result<Conversation*> c = find(s, id);
        if (!c.ok()) return {};
        return [history = (*c)->history()](napi_env env, napi_value out) {
          set(env, out, "history", history_array(env, history));
        };
      });
}

// conversationEdit(id, op, a, b) -> Promise<history>: op "truncate" (a = n), "edit" (a = index,
// b = text), "reset", "setHistory" (a = messages).
napi_value EditJs(napi_env env, napi_callback_info cbinfo) {
  Call<4> c;
  std::string op, text;
  double n = 0;
  std::vector<ChatMessage> messages;
  if (!open_call(env, cbinfo, &c) || !get_string(env, c.argv[1], "op", &op)) return nullptr;
  if (op == "truncate" || op == "edit") {
    napi_valuetype t = napi_undefined;
    napi_typeof(env, c.argv[2], &t);
    if (t != napi_number || napi_get_value_double(env, c.argv[2], &n) != napi_ok || n < 0 ||
        n != static_cast<double>(static_cast<int64_t>(n))) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "a message index must be a whole number");
      return nullptr;
    }
    if (op == "edit" && !get_string(env, c.argv[3], "text", &text)) return nullptr;
  } else if (op == "setHistory") {
    if (!read_messages(env, c.argv[2], &messages)) return nullptr;
  } else if (op != "reset") {
    return throw_status(env, Status::InvalidArgument("unknown conversation operation " + op));
  }
  return conversation_job(env, c.state, c.id, [op, n, text, messages](Conversation& conv) mutable {
    Status st;
    const size_t k = static_cast<size_t>(n);
    if (op == "truncate") st = conv.Truncate(k);
    if (op == "edit") st = conv.Edit(k, text);
    if (op == "reset") conv.Reset();
    if (op == "setHistory") st = conv.SetHistory(std::move(messages));
    return JobResult{st, [h = conv.history()](napi_env env) { return history_array(env, h); }};
  });
}

// conversationPrepare(id) -> Promise<{nTokens, restored, ms, stateBytes, whyNotRestored}>
napi_value PrepareJs(napi_env env, napi_callback_info cbinfo) {
  Call<1> c;
  if (!open_call(env, cbinfo, &c)) return nullptr;
  return conversation_job(env, c.state, c.id, [](Conversation& conv) {
    Result<PrepareStats> p = conv.Prepare();
    if (!p.ok()) return JobResult{p.status(), nullptr};
    return JobResult{Status::Ok(), [ps = *p](napi_env env) {
                       napi_value r = make_object(env);
                       set(env, r, "nTokens", static_cast<double>(ps.n_tokens));
                       set(env, r, "restored", ps.restored);
                       set(env, r, "ms", ps.ms);
                       set(env, r, "stateBytes", static_cast<double>(ps.state_bytes));
                       set(env, r, "whyNotRestored", ps.why_not_restored);
                       return r;
                     }};
  });
}

// conversationSave(id, path) -> Promise<void>
napi_value SaveJs(napi_env env, napi_callback_info cbinfo) {
  Call<2> c;
  std::string path;
  if (!open_call(env, cbinfo, &c) || !get_string(env, c.argv[1], "path", &path)) return nullptr;
  return conversation_job(env, c.state, c.id,
                          [path](Conversation& conv) { return JobResult{conv.Save(path), nullptr}; });
}

// conversationFree(id) -> Promise<void>
napi_value FreeJs(napi_env env, napi_callback_info cbinfo) {
  Call<1> c;
  if (!open_call(env, cbinfo, &c)) return nullptr;
  if (c.state->closed) return nullptr;  // dispose() frees every conversation with the model
  return start_job(env, c.state, "edgellm.conversation", [id = c.id](ModelState& s) {
    s.conversations.erase(id);
    return JobResult{Status::Ok(), nullptr};
  });
}

}  // namespace

bool read_messages(napi_env env, napi_value v, std::vector<ChatMessage>* out) {
  bool is_array = false;
  napi_is_array(env, v, &is_array);
  if (!is_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "messages must be an array");
    return false;
  }
  uint32_t n = 0;
  napi_get_array_length(env, v, &n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value e = nullptr;
    napi_get_element(env, v, i, &e);
    ChatMessage m;
    auto role = get_prop(env, e, "role");
    auto content = get_prop(env, e, "content");
    if (!role || !content || !get_string(env, *role, "role", &m.role) ||
        !get_string(env, *content, "content", &m.content)) {
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (!pending) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                              "each message needs a string role and a string content");
      }
      return false;
    }
    // Tool turns (index.js normalizes them): an assistant's calls, a tool's result.
    if (!opt_string(env, e, "reasoning", &m.reasoning) ||
        !opt_string(env, e, "toolCallId", &m.tool_call_id) || !opt_string(env, e, "name", &m.name) ||
        !read_tool_calls(env, e, &m.tool_calls) || !read_media(env, e, &m.media)) {
      return false;
    }
    out->push_back(std::move(m));
  }
  return true;
}

bool read_tool_calls(napi_env env, napi_value msg, std::vector<ToolCall>* out) {
  auto calls = get_prop(env, msg, "toolCalls");
  if (!calls) return true;
  bool is_array = false;
  napi_is_array(env, *calls, &is_array);
  if (!is_array) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "toolCalls must be an array");
    return false;
  }
  uint32_t n = 0;
  napi_get_array_length(env, *calls, &n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value c = nullptr;
    napi_get_element(env, *calls, i, &c);
    ToolCall call;
    if (!opt_string(env, c, "id", &call.id) || !opt_string(env, c, "name", &call.name) ||
        !opt_string(env, c, "arguments", &call.arguments)) {
      return false;
    }
    out->push_back(std::move(call));
  }
  return true;
}

std::vector<napi_property_descriptor> conversation_methods() {
  auto m = [](const char* name, napi_callback cb) {
    return napi_property_descriptor{name, nullptr, cb, nullptr, nullptr, nullptr, napi_default,
                                    nullptr};
  };
  return {m("conversationCreate", CreateJs), m("conversationLoad", LoadJs),
          m("conversationSend", SendJs),     m("conversationEdit", EditJs),
          m("conversationPrepare", PrepareJs), m("conversationSave", SaveJs),
          m("conversationFree", FreeJs)};
}

}  // namespace edgellm::node
