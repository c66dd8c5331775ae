// The model store from JS: pull (download, verify, install, with progress and cancel), list,
// ensure (is the required version installed? what to serve meanwhile), verify (re-hash against
// the manifest) and remove. Each runs on a counted thread and settles a promise.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "edgellm/store.h"
#include "functions.h"
#include "napi_util.h"
#include "worker.h"

namespace edgellm::node {
namespace {

napi_value installed_object(napi_env env, const InstalledModel& m) {
  napi_value r = make_object(env);
  set(env, r, "id", m.id);
  set(env, r, "version", static_cast<double>(m.version));
  set(env, r, "active", m.active);
  set(env, r, "path", m.path);
  set(env, r, "quant", m.manifest.quant);
  set(env, r, "sizeBytes", static_cast<double>(m.manifest.size));
  return r;
}

// pull(manifestUrl, storeDir, onProgress?, cancelFlagHolder) -> Promise<InstalledModel>
// The JS layer passes an object whose `cancel()` method this sets up.
napi_value PullJs(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string url, store;
  if (!get_string(env, argv[0], "manifestUrl", &url) ||
      !get_string(env, argv[1], "store", &store)) {
    return nullptr;
  }
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  // argv[3]: an object that gets a cancel() method bound to this pull.
  if (!attach_cancel(env, argv[3], cancel)) return nullptr;
  return run_async(env, argv[2], "edgellm.pull", [url, store, cancel](Channel* ch) -> Settle {
    StoreOptions so;
    so.root = store;
    auto s = ModelStore::Open(so);
    if (!s.ok()) return reject_with(s.status());
    struct Progress {
      const char* stage = "manifest";
      DownloadProgress d;
    };
    auto last = std::make_shared<Progress>();
    auto emit = [ch, last] {
      Progress p = *last;
      ch->Post([p](napi_env env, napi_value cb) {
        if (!cb) return;
        napi_value o = make_object(env);
        set(env, o, "stage", p.stage);
        set(env, o, "bytesDone", static_cast<double>(p.d.bytes_done));
        set(env, o, "bytesTotal", static_cast<double>(p.d.bytes_total));
        set(env, o, "percent", p.d.percent);
        set(env, o, "bytesPerSecond", p.d.bytes_per_s);
        set(env, o, "etaSeconds", p.d.eta_s);
        call(env, cb, o);
      });
    };
    InstallOptions io;
    io.on_step = [&](const char* step) {
      last->stage = step;
      emit();
    };
    io.download.cancel = cancel.get();
    io.download.on_progress = [&](const DownloadProgress& d) {
      last->d = d;
      emit();
      return true;
    };
    auto got = (*s)->Install(url, io);
    if (!got.ok()) return reject_with(got.status());
    return [m = *got](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, installed_object(env, m));
    };
  });
}

napi_value ListModelsJs(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string store;
  if (!get_string(env, argv[0], "store", &store)) return nullptr;
  return run_async(env, nullptr, "edgellm.listModels", [store](Channel*) -> Settle {
    StoreOptions so;
    so.root = store;
    auto s = ModelStore::Open(so);
    if (!s.ok()) return reject_with(s.status());
    auto list = (*s)->List();
    if (!list.ok()) return reject_with(list.status());
    return [l = *list](napi_env env, napi_deferred d) {
      napi_value arr = nullptr;
      napi_create_array(env, &arr);
      for (size_t i = 0; i < l.size(); ++i) {
        napi_set_element(env, arr, static_cast<uint32_t>(i), installed_object(env, l[i]));
      }
      napi_resolve_deferred(env, d, arr);
    };
  });
}

// An optional version argument: undefined/null = none; otherwise a positive integer.
bool opt_version(napi_env env, napi_value v, std::optional<uint32_t>* out) {
  if (is_nullish(env, v)) return true;
  int64_t n = 0;
  if (!get_integer(env, v, 1, 4294967295.0, &n)) {
    throw_status(env, Status::InvalidArgument("version must be a positive integer"));
    return false;
  }
  *out = static_cast<uint32_t>(n);
  return true;
}

// Reads (store, id, version?) and runs `fn(store, id, version)` on a counted thread.
napi_value store_call(
    napi_env env, napi_callback_info info, const char* name, bool need_version,
    std::function<Settle(ModelStore&, const std::string&, std::optional<uint32_t>)> fn) {
  size_t argc = 3;
  napi_value argv[3] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string store, id;
  std::optional<uint32_t> version;
  if (!get_string(env, argv[0], "store", &store) || !get_string(env, argv[1], "id", &id) ||
      !opt_version(env, argv[2], &version)) {
    return nullptr;
  }
  if (need_version && !version) {
    return throw_status(env, Status::InvalidArgument("the required version is missing"));
  }
  return run_async(env, nullptr, name,
                   [store, id, version, fn = std::move(fn)](Channel*) -> Settle {
                     StoreOptions so;
                     so.root = store;
                     auto s = ModelStore::Open(so);
                     if (!s.ok()) return reject_with(s.status());
                     return fn(**s, id, version);
                   });
}

Settle resolve_undefined(const Status& st) {
  if (!st.ok()) return reject_with(st);
  return [](napi_env env, napi_deferred d) {
    napi_value u = nullptr;
    napi_get_undefined(env, &u);
    napi_resolve_deferred(env, d, u);
  };
}

// ensureModel(store, id, version) -> {installed, activeVersion, upgradeNeeded, path}
napi_value EnsureJs(napi_env env, napi_callback_info info) {
  return store_call(env, info, "edgellm.ensureModel", true,
                    [](ModelStore& s, const std::string& id, std::optional<uint32_t> v) -> Settle {
                      auto r = s.Ensure(id, *v);
                      if (!r.ok()) return reject_with(r.status());
                      return [e = *r](napi_env env, napi_deferred d) {
                        napi_value o = make_object(env);
                        set(env, o, "installed", e.installed);
                        set(env, o, "activeVersion", static_cast<double>(e.active_version));
                        set(env, o, "upgradeNeeded", e.upgrade_needed);
                        set(env, o, "path", e.path);
                        napi_resolve_deferred(env, d, o);
                      };
                    });
}

// verifyModel(store, id, version?) -> undefined, or ERR_CORRUPT_DATA naming the bad chunk.
napi_value VerifyJs(napi_env env, napi_callback_info info) {
  return store_call(env, info, "edgellm.verifyModel", false,
                    [](ModelStore& s, const std::string& id, std::optional<uint32_t> v) {
                      return resolve_undefined(s.Verify(id, v));
                    });
}

// removeModel(store, id, version?) -> undefined.
napi_value RemoveJs(napi_env env, napi_callback_info info) {
  return store_call(env, info, "edgellm.removeModel", false,
                    [](ModelStore& s, const std::string& id, std::optional<uint32_t> v) {
                      return resolve_undefined(s.Remove(id, v));
                    });
}

}  // namespace

bool define_store_functions(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"pull", nullptr, PullJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"listModels", nullptr, ListModelsJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"ensureModel", nullptr, EnsureJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"verifyModel", nullptr, VerifyJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"removeModel", nullptr, RemoveJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) == napi_ok;
}

}  // namespace edgellm::node
