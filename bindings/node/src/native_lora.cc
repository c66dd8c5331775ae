// NativeModel's LoRA methods: load an adapter file against the model, apply it at a scale,
// remove it, clear all. Each is a job on the model's worker, so it takes effect between
// generations, in call order. Adapters follow the model through a memory-pressure unload
// (signals.cc reloads and re-applies them).
#include "native_lora.h"

#include <algorithm>
#include <string>

#include "model_state.h"
#include "napi_util.h"

namespace edgellm::node {
namespace {

struct Args {
  std::shared_ptr<ModelState> state;
  napi_value argv[2] = {};
};

bool open_args(napi_env env, napi_callback_info info, size_t n, Args* a) {
  size_t argc = n;
  a->state = unwrap(env, info, &argc, a->argv);
  return a->state != nullptr;
}

bool read_id(napi_env env, napi_value v, int64_t* id) {
  if (get_integer(env, v, 1, 9007199254740991.0, id)) return true;
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "not a LoRA adapter of this model");
  return false;
}

Result<LoadedLora*> find(ModelState& s, int64_t id) {
  auto it = s.loras.find(id);
  if (it == s.loras.end()) {
    return Status::NotFound("LoRA adapter " + std::to_string(id) + " is not loaded on this model");
  }
  return &it->second;
}

// loraLoad(path) -> Promise<{id, path, arch, rank, alpha, nPairs, fileBytes, loadMs}>
napi_value LoadJs(napi_env env, napi_callback_info info) {
  Args a;
  std::string path;
  if (!open_args(env, info, 1, &a) || !get_string(env, a.argv[0], "path", &path)) return nullptr;
  return start_job(env, a.state, "edgellm.lora", [path](ModelState& s) -> JobResult {
    auto adapter = LoraAdapter::Load(*s.model, path);
    if (!adapter.ok()) return {adapter.status(), nullptr};
    const int64_t id = s.next_lora++;
    const LoraInfo li = (*adapter)->info();
    s.loras[id] = {path, std::move(*adapter)};
    return {Status::Ok(), [id, li](napi_env env) {
              napi_value o = make_object(env);
              set(env, o, "id", static_cast<double>(id));
              set(env, o, "path", li.path);
              set(env, o, "arch", li.arch);
              set(env, o, "rank", static_cast<double>(li.rank));
              set(env, o, "alpha", static_cast<double>(li.alpha));
              set(env, o, "nPairs", static_cast<double>(li.n_pairs));
              set(env, o, "fileBytes", static_cast<double>(li.file_bytes));
              set(env, o, "loadMs", li.load_ms);
              return o;
            }};
  });
}

void forget_applied(ModelState& s, int64_t id) {
  auto& v = s.applied_loras;
  v.erase(std::remove_if(v.begin(), v.end(), [id](const auto& p) { return p.first == id; }),
          v.end());
}

// loraSet(id, scale) -> Promise<void>: applies at `scale` (0 removes).
napi_value SetJs(napi_env env, napi_callback_info info) {
  Args a;
  int64_t id = 0;
  if (!open_args(env, info, 2, &a) || !read_id(env, a.argv[0], &id)) return nullptr;
  double scale = 1.0;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, a.argv[1], &t);
  if (t != napi_undefined &&
      (t != napi_number || napi_get_value_double(env, a.argv[1], &scale) != napi_ok ||
       !(scale >= -100 && scale <= 100))) {
    return throw_status(env, Status::InvalidArgument("LoRA scale must be a number in [-100, 100]"));
  }
  return start_job(env, a.state, "edgellm.lora", [id, scale](ModelState& s) -> JobResult {
    Result<LoadedLora*> l = find(s, id);
    if (!l.ok()) return {l.status(), nullptr};
    Status st = s.session->SetLora((*l)->adapter, static_cast<float>(scale));
    if (!st.ok()) return {st, nullptr};
    auto it = std::find_if(s.applied_loras.begin(), s.applied_loras.end(),
                           [id](const auto& p) { return p.first == id; });
    if (scale == 0) {
      forget_applied(s, id);
    } else if (it != s.applied_loras.end()) {
      it->second = static_cast<float>(scale);
    } else {
      s.applied_loras.emplace_back(id, static_cast<float>(scale));
    }
    return {Status::Ok(), nullptr};
  });
}

// loraRemove(id) -> Promise<void>: un-applies it (if applied) and frees it.
napi_value RemoveJs(napi_env env, napi_callback_info info) {
  Args a;
  int64_t id = 0;
  if (!open_args(env, info, 1, &a) || !read_id(env, a.argv[0], &id)) return nullptr;
  return start_job(env, a.state, "edgellm.lora", [id](ModelState& s) -> JobResult {
    Result<LoadedLora*> l = find(s, id);
    if (!l.ok()) return {l.status(), nullptr};
    Status st = s.session->RemoveLora(*(*l)->adapter);
    if (!st.ok() && st.code() != Code::kNotFound) return {st, nullptr};
    forget_applied(s, id);
    s.loras.erase(id);
    return {Status::Ok(), nullptr};
  });
}

// loraClear() -> Promise<void>: un-applies every adapter (they stay loaded).
napi_value ClearJs(napi_env env, napi_callback_info info) {
  Args a;
  if (!open_args(env, info, 0, &a)) return nullptr;
  return start_job(env, a.state, "edgellm.lora", [](ModelState& s) -> JobResult {
    Status st = s.session->ClearLora();
    if (st.ok()) s.applied_loras.clear();
    return {st, nullptr};
  });
}

}  // namespace

std::vector<napi_property_descriptor> lora_methods() {
  auto m = [](const char* name, napi_callback cb) {
    return napi_property_descriptor{name,    nullptr, cb,           nullptr,
                                    nullptr, nullptr, napi_default, nullptr};
  };
  return {m("loraLoad", LoadJs), m("loraSet", SetJs), m("loraRemove", RemoveJs),
          m("loraClear", ClearJs)};
}

}  // namespace edgellm::node
