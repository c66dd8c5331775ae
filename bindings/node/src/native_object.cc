// NativeObject and NativeClass: see native_object.h.
#include "native_object.h"

#include <string>
#include <utility>
#include <vector>

#include "napi_util.h"

namespace edgellm::node {

std::shared_ptr<std::atomic<bool>> CallFlags::Begin() {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(flag);
  return flag;
}

void CallFlags::End(const std::shared_ptr<std::atomic<bool>>& flag) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(flag);
}

void CallFlags::CancelAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : live_) *f = true;
}

bool NativeObject::Close(const std::shared_ptr<NativeObject>& self, std::function<void()> done) {
  self->closed = true;
  self->calls.CancelAll();
  self->Cancel();
  if (self->close_posted.exchange(true)) return false;
  self->worker->Close([self, done = std::move(done)] {
    self->Free();
    if (done) done();
  });
  return true;
}

napi_value NativeClass::Define(napi_env env, const napi_property_descriptor* methods, size_t n) {
  napi_value cls = nullptr;
  if (napi_define_class(env, name_, NAPI_AUTO_LENGTH, New, this, n, methods, &cls) != napi_ok) {
    return nullptr;
  }
  return cls;
}

napi_value NativeClass::New(napi_env env, napi_callback_info info) {
  napi_value self = nullptr;
  void* data = nullptr;
  NAPI_OK(env, napi_get_cb_info(env, info, nullptr, nullptr, &self, &data));
  auto* owner = static_cast<NativeClass*>(data);
  auto* w = new Wrapper{owner->make_(), owner};
  w->state->env = env;
  if (napi_wrap(env, self, w, Finalize, nullptr, nullptr) != napi_ok) {
    NativeObject::Close(w->state, nullptr);
    delete w;
    throw_last_error(env, "napi_wrap");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(owner->mu_);
  owner->wrappers_.insert(w);
  owner->live_.insert(w->state);
  return self;
}

// Garbage-collected without dispose(): free on the worker, never blocking, never calling JS.
void NativeClass::Finalize(napi_env, void* data, void*) {
  auto* w = static_cast<Wrapper*>(data);
  std::shared_ptr<NativeObject> state = w->state;
  {
    std::lock_guard<std::mutex> lock(w->owner->mu_);
    w->owner->wrappers_.erase(w);
    w->owner->live_.erase(state);
  }
  delete w;
  NativeObject::Close(state, nullptr);
}

std::shared_ptr<NativeObject> NativeClass::Of(napi_env env, napi_value v) {
  napi_valuetype t = napi_undefined;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_object) return nullptr;
  void* data = nullptr;
  // napi_unwrap of an object wrapped by another class gives its pointer: only ours count.
  if (napi_unwrap(env, v, &data) != napi_ok || !data) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto* w = static_cast<Wrapper*>(data);
  return wrappers_.count(w) ? w->state : nullptr;
}

std::shared_ptr<NativeObject> NativeClass::This(napi_env env, napi_callback_info info,
                                                size_t* argc, napi_value* argv) {
  napi_value self = nullptr;
  std::shared_ptr<NativeObject> s;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) == napi_ok) s = Of(env, self);
  if (!s) {
    const std::string msg = std::string("not a ") + name_;
    napi_throw_type_error(env, "ERR_INVALID_THIS", msg.c_str());
  }
  return s;
}

void NativeClass::Forget(const std::shared_ptr<NativeObject>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(state);
}

napi_value NativeClass::Dispose(napi_env env, const std::shared_ptr<NativeObject>& state) {
  Forget(state);
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, nullptr, "edgellm.dispose");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  auto settle = [ch, d = p.deferred] {
    ch->Post([d](napi_env env, napi_value) {
      napi_value undefined = nullptr;
      napi_get_undefined(env, &undefined);
      napi_resolve_deferred(env, d, undefined);
    });
    ch->Release();
  };
  // Disposed before: nothing is left to wait for.
  if (!NativeObject::Close(state, settle)) settle();
  return p.promise;
}

void NativeClass::CloseAll(napi_env env) {
  std::vector<std::shared_ptr<NativeObject>> states;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = live_.begin(); it != live_.end();) {
      if (env == nullptr || (*it)->env == env) {
        states.push_back(*it);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& s : states) NativeObject::Close(s, nullptr);
}

}  // namespace edgellm::node
