// The module's free functions: device profile, memory usage, memory plan, versions, and the
// helpers every asynchronous free function uses (run_async: a counted thread and a Channel that
// settles the promise). The model store's functions are in store_js.cc.
#include "functions.h"

#include <string>
#include <utility>

#include "edgellm/device.h"
#include "edgellm/edgellm.h"
#include "edgellm/planner.h"
#include "napi_util.h"
#include "worker.h"

namespace edgellm::node {

// Runs `work` on a counted thread. `work` may post progress through the Channel (whose JS
// callback is `progress_cb`) and returns the closure that settles the promise on the JS thread.
napi_value run_async(napi_env env, napi_value progress_cb, const char* name,
                     std::function<Settle(Channel*)> work) {
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, progress_cb, name);
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  start_thread([ch, d = p.deferred, work = std::move(work)] {
    Settle settle = work(ch);
    ch->Post([d, settle = std::move(settle)](napi_env env, napi_value) { settle(env, d); });
    ch->Release();
  });
  return p.promise;
}

Settle reject_with(const Status& st) {
  return [st](napi_env env, napi_deferred d) { napi_reject_deferred(env, d, make_error(env, st)); };
}

void call(napi_env env, napi_value cb, napi_value arg) {
  napi_value undefined = nullptr;
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, cb, 1, &arg, nullptr);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) {
    napi_value ignored = nullptr;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

namespace {

napi_value DeviceProfileJs(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  DeviceOptions o;
  if (!opt_string(env, argv[0], "root", &o.root) ||
      !opt_string(env, argv[0], "diskPath", &o.disk_path)) {
    return nullptr;
  }
  auto p = read_device_profile(o);
  if (!p.ok()) return throw_status(env, p.status());
  napi_value r = make_object(env);
  set(env, r, "totalRamBytes", static_cast<double>(p->total_ram_bytes));
  set(env, r, "availableRamBytes", static_cast<double>(p->available_ram_bytes));
  set(env, r, "nCpus", static_cast<double>(p->n_cpus));
  set(env, r, "bigCores", static_cast<double>(p->big_cores()));
  napi_value clusters = nullptr;
  napi_create_array(env, &clusters);
  for (size_t i = 0; i < p->clusters.size(); ++i) {
    napi_value c = make_object(env), cpus = nullptr;
    set(env, c, "maxFreqKhz", static_cast<double>(p->clusters[i].max_freq_khz));
    napi_create_array(env, &cpus);
    for (size_t k = 0; k < p->clusters[i].cpus.size(); ++k) {
      napi_set_element(env, cpus, static_cast<uint32_t>(k),
                       make_number(env, p->clusters[i].cpus[k]));
    }
    set(env, c, "cpus", cpus);
    napi_set_element(env, clusters, static_cast<uint32_t>(i), c);
  }
  set(env, r, "clusters", clusters);
  napi_value thermal = nullptr;
  napi_create_array(env, &thermal);
  for (size_t i = 0; i < p->thermal.size(); ++i) {
    napi_value z = make_object(env);
    set(env, z, "zone", p->thermal[i].zone);
    set(env, z, "type", p->thermal[i].type);
    set(env, z, "tempC", p->thermal[i].temp_c);
    set(env, z, "valid", p->thermal[i].valid);
    napi_set_element(env, thermal, static_cast<uint32_t>(i), z);
  }
  set(env, r, "thermal", thermal);
  set(env, r, "maxTempC", p->max_temp_c());
  set(env, r, "platform", p->platform);
  set(env, r, "socModel", p->soc_model);
  set(env, r, "diskFreeBytes", static_cast<double>(p->disk_free_bytes));
  set(env, r, "diskPath", p->disk_path);
  return r;
}

napi_value MemoryUsageJs(napi_env env, napi_callback_info) {
  napi_value r = make_object(env);
  set(env, r, "rssBytes", static_cast<double>(current_rss_bytes()));
  set(env, r, "peakRssBytes", static_cast<double>(peak_rss_bytes()));
  return r;
}

// planMemory(path, {ctx, batch, ramBytes, budgetFraction, mmprojPath, imageMaxTokens})
// -> Promise<plan>
napi_value PlanMemoryJs(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string path;
  PlanOptions o;
  double ram = 0;
  if (!get_string(env, argv[0], "path", &path) || !opt_int(env, argv[1], "ctx", &o.n_ctx) ||
      !opt_int(env, argv[1], "batch", &o.n_batch) || !opt_number(env, argv[1], "ramBytes", &ram) ||
      !opt_number(env, argv[1], "budgetFraction", &o.budget_fraction) ||
      !opt_string(env, argv[1], "mmprojPath", &o.mmproj_path) ||
      !opt_string(env, argv[1], "draftPath", &o.draft_path) ||
      !opt_int(env, argv[1], "imageMaxTokens", &o.image_max_tokens)) {
    return nullptr;
  }
  if (ram > 0) o.ram_bytes = static_cast<uint64_t>(ram);
  return run_async(env, nullptr, "edgellm.planMemory", [path, o](Channel*) -> Settle {
    auto plan = plan_memory(path, o);
    if (!plan.ok()) return reject_with(plan.status());
    return [m = *plan](napi_env env, napi_deferred d) {
      napi_value r = make_object(env);
      set(env, r, "ctx", static_cast<double>(m.n_ctx));
      set(env, r, "batch", static_cast<double>(m.n_batch));
      set(env, r, "quant", m.quant);
      set(env, r, "ramBytes", static_cast<double>(m.ram_bytes));
      set(env, r, "budgetBytes", static_cast<double>(m.budget_bytes));
      set(env, r, "formulaBytes", static_cast<double>(m.formula_bytes));
      set(env, r, "weightsBytes", static_cast<double>(m.weights_bytes));
      set(env, r, "kvBytes", static_cast<double>(m.kv_bytes));
      set(env, r, "computeBytes", static_cast<double>(m.compute_bytes));
      set(env, r, "overheadBytes", static_cast<double>(m.overhead_bytes));
      set(env, r, "projectorBytes", static_cast<double>(m.projector_bytes));
      set(env, r, "draftBytes", static_cast<double>(m.draft_bytes));
      set(env, r, "totalBytes", static_cast<double>(m.total_bytes));
      set(env, r, "fits", m.fits);
      set(env, r, "maxCtxThatFits", static_cast<double>(m.max_ctx_that_fits));
      set(env, r, "advice", m.advice);
      napi_resolve_deferred(env, d, r);
    };
  });
}

}  // namespace

bool define_functions(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"deviceProfile", nullptr, DeviceProfileJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"memoryUsage", nullptr, MemoryUsageJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"planMemory", nullptr, PlanMemoryJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok) {
    return false;
  }
  napi_value v = make_object(env);
  set(env, v, "edgellm", version());
  set(env, v, "commit", git_commit());
  set(env, v, "llama", llama_build());
  set(env, v, "napi", static_cast<double>(NAPI_VERSION));
  set(env, exports, "version", v);
  return define_store_functions(env, exports);
}

}  // namespace edgellm::node
