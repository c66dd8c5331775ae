// What the addon's worker-backed classes share (NativeEmbedder, NativeIndex): a state object
// with its own Worker thread and per-call cancel flags, and a NativeClass that wraps states in
// JS objects, recognizes its own objects, disposes them, frees the ones garbage-collected
// without dispose and closes every live one at teardown.
//
// Thread safety: NativeClass's methods run on the JS thread, except CloseAll (any thread);
// CallFlags and NativeObject::Close may be called from any thread.
#pragma once

#include "napi.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "worker.h"

namespace edgellm::node {

// Per-call cancel flags of one object, so dispose() and teardown cancel what is running.
class CallFlags {
 public:
  std::shared_ptr<std::atomic<bool>> Begin();
  void End(const std::shared_ptr<std::atomic<bool>>& flag);
  void CancelAll();

 private:
  std::mutex mu_;
  std::set<std::shared_ptr<std::atomic<bool>>> live_;
};

struct NativeObject {
  virtual ~NativeObject() = default;
  napi_env env = nullptr;
  std::shared_ptr<Worker> worker = Worker::Start();
  CallFlags calls;
  std::atomic<bool> closed{false};
  std::atomic<bool> close_posted{false};

  // Cancels every call, then runs Free() and `done` (may be empty) on the worker after the
  // jobs already queued. Only the first call does this and returns true.
  static bool Close(const std::shared_ptr<NativeObject>& self, std::function<void()> done);

 protected:
  virtual void Cancel() {}  // beyond the call flags (a load in progress)
  virtual void Free() = 0;  // worker thread: frees what the object holds
};

// "Keep going" for a progress callback: neither the call's flag nor the object's closed flag.
inline bool keep_going(const std::atomic<bool>& flag, const std::atomic<bool>& closed) {
  return !flag.load() && !closed.load();
}

class NativeClass {
 public:
  using Factory = std::function<std::shared_ptr<NativeObject>()>;
  NativeClass(const char* name, Factory make) : name_(name), make_(std::move(make)) {}

  // The JS class with these methods, or nullptr with an exception pending.
  napi_value Define(napi_env env, const napi_property_descriptor* methods, size_t n);
  // The state behind `v` when it is one of this class's objects, else nullptr (nothing thrown).
  std::shared_ptr<NativeObject> Of(napi_env env, napi_value v);
  // `this` of a method call (and its arguments), or nullptr with a TypeError pending.
  std::shared_ptr<NativeObject> This(napi_env env, napi_callback_info info, size_t* argc,
                                     napi_value* argv);
  // dispose()/close(): a promise resolved once the object is freed on its worker.
  napi_value Dispose(napi_env env, const std::shared_ptr<NativeObject>& state);
  // Teardown: closes every live object of `env` (nullptr: of every environment).
  void CloseAll(napi_env env);

 private:
  struct Wrapper {
    std::shared_ptr<NativeObject> state;
    NativeClass* owner;
  };
  static napi_value New(napi_env env, napi_callback_info info);
  static void Finalize(napi_env env, void* data, void* hint);
  void Forget(const std::shared_ptr<NativeObject>& state);

  const char* name_;
  Factory make_;
  std::mutex mu_;
  std::set<Wrapper*> wrappers_;
  std::set<std::shared_ptr<NativeObject>> live_;
};

}  // namespace edgellm::node
