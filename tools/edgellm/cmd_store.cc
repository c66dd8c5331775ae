// edgellm pull URL | models | rm ID[@VERSION] | verify ID[@VERSION]: the model store.
#include <chrono>
#include <cstdio>
#include <optional>

#include "common.h"
#include "edgellm/store.h"

namespace cli {
namespace {

struct StoreArgs {
  std::string store, url, target;
  int concurrency = 3, keep = 2;
  bool json = false, any_toolchain = false;
};

StoreArgs& args() {
  static StoreArgs a;
  return a;
}

void add_store_option(CLI::App* cmd) {
  cmd->add_option("--store", args().store,
                  "Store folder (default $XDG_DATA_HOME/edgellm or ~/.local/share/edgellm)");
}

edgellm::Result<std::unique_ptr<edgellm::ModelStore>> open_store() {
  edgellm::StoreOptions so;
  so.root = args().store;
  so.keep_versions = args().keep;
  so.allow_other_toolchain = args().any_toolchain;
  return edgellm::ModelStore::Open(so);
}

// "id" or "id@3".
edgellm::Status parse_target(const std::string& t, std::string* id, std::optional<uint32_t>* v) {
  const size_t at = t.find('@');
  *id = t.substr(0, at);
  if (id->empty()) return edgellm::Status::InvalidArgument("give a model id, e.g. qwen2.5-1.5b or qwen2.5-1.5b@2");
  if (at != std::string::npos) {
    const std::string n = t.substr(at + 1);
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) {
      return edgellm::Status::InvalidArgument("'" + n + "' is not a version number");
    }
    *v = static_cast<uint32_t>(std::stoul(n));
  }
  return edgellm::Status::Ok();
}

nlohmann::json model_json(const edgellm::InstalledModel& m) {
  return {{"id", m.id},          {"version", m.version},
          {"active", m.active},  {"path", m.path},
          {"size", m.manifest.size}, {"sha256", m.manifest.sha256},
          {"quant", m.manifest.quant}, {"architecture", m.manifest.architecture},
          {"plan_ram_bytes", m.manifest.plan_ram_bytes}};
}

int run_pull() {
  auto& a = args();
  auto store = open_store();
  if (!store.ok()) return fail(store.status());
  edgellm::InstallOptions io;
  io.download.concurrency = a.concurrency;
  io.on_step = [&](const char* step) {
    if (!a.json && std::string(step) != "done") std::fprintf(stderr, "[%s]\n", step);
  };
  io.download.on_progress = [&](const edgellm::DownloadProgress& p) {
    if (a.json) return true;
    char line[160];
    std::snprintf(line, sizeof(line), "\r  %5.1f%%  %s / %s  %6.1f MiB/s  ETA %4.0f s   ", p.percent,
                  human_bytes(p.bytes_done).c_str(), human_bytes(p.bytes_total).c_str(),
                  p.bytes_per_s / (1024.0 * 1024.0), p.eta_s);
    std::fputs(line, stderr);
    return true;
  };
  auto m = (*store)->Install(a.url, io);
  if (!a.json) std::fputs("\n", stderr);
  if (!m.ok()) return fail(m.status());
  if (a.json) {
    std::printf("%s\n", model_json(*m).dump(2).c_str());
  } else {
    std::printf("installed %s v%u (%s, %s) at %s\n", m->id.c_str(), m->version,
                m->manifest.quant.c_str(), human_bytes(m->manifest.size).c_str(), m->path.c_str());
  }
  return 0;
}

int run_models() {
  auto store = open_store();
  if (!store.ok()) return fail(store.status());
  auto list = (*store)->List();
  if (!list.ok()) return fail(list.status());
  if (args().json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& m : *list) j.push_back(model_json(m));
    std::printf("%s\n", nlohmann::json{{"store", (*store)->root()}, {"models", j}}.dump(2).c_str());
    return 0;
  }
  std::printf("store %s\n", (*store)->root().c_str());
  if (list->empty()) std::printf("(no models: edgellm pull URL)\n");
  for (const auto& m : *list) {
    std::printf("%c %-24s v%-4u %-8s %10s  %s\n", m.active ? '*' : ' ', m.id.c_str(), m.version,
                m.manifest.quant.c_str(), human_bytes(m.manifest.size).c_str(), m.path.c_str());
  }
  return 0;
}

int run_rm() {
  std::string id;
  std::optional<uint32_t> v;
  edgellm::Status st = parse_target(args().target, &id, &v);
  if (!st.ok()) return fail(st);
  auto store = open_store();
  if (!store.ok()) return fail(store.status());
  st = (*store)->Remove(id, v);
  if (!st.ok()) return fail(st);
  std::printf("removed %s\n", args().target.c_str());
  return 0;
}

int run_verify() {
  std::string id;
  std::optional<uint32_t> v;
  edgellm::Status st = parse_target(args().target, &id, &v);
  if (!st.ok()) return fail(st);
  auto store = open_store();
  if (!store.ok()) return fail(store.status());
  const auto t0 = std::chrono::steady_clock::now();
  st = (*store)->Verify(id, v);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (args().json) {
    std::printf("%s\n", nlohmann::json{{"target", args().target},
                                       {"ok", st.ok()},
                                       {"error", st.ok() ? "" : st.ToString()},
                                       {"seconds", s}}
                            .dump(2)
                            .c_str());
    return st.ok() ? 0 : 1;
  }
  if (!st.ok()) return fail(st);
  std::printf("%s: every chunk and the whole file match the manifest (%.1f s)\n",
              args().target.c_str(), s);
  return 0;
}

}  // namespace

Action add_store(CLI::App& app) {
  auto& a = args();
  auto* pull = app.add_subcommand("pull", "Download, verify and activate a model package");
  pull->add_option("url", a.url, "URL of the package's manifest.json (http, https or file)")->required();
  add_store_option(pull);
  pull->add_option("--concurrency", a.concurrency, "Chunks fetched at once (default 3)");
  pull->add_option("--keep", a.keep, "Versions kept per model (default 2)");
  pull->add_flag("--any-toolchain", a.any_toolchain,
                 "Accept packages produced by another llama.cpp build");
  pull->add_flag("--json", a.json, "Print one JSON object");

  auto* models = app.add_subcommand("models", "List installed models (* = active)");
  add_store_option(models);
  models->add_flag("--json", a.json, "Print one JSON object");

  auto* rm = app.add_subcommand("rm", "Remove a model, or one version of it (ID@VERSION)");
  rm->add_option("target", a.target, "ID or ID@VERSION")->required();
  add_store_option(rm);

  auto* verify = app.add_subcommand("verify", "Re-hash an installed model against its manifest");
  verify->add_option("target", a.target, "ID or ID@VERSION")->required();
  add_store_option(verify);
  verify->add_flag("--json", a.json, "Print one JSON object");

  return [&app] {
    if (app.got_subcommand("pull")) return run_pull();
    if (app.got_subcommand("models")) return run_models();
    if (app.got_subcommand("rm")) return run_rm();
    return run_verify();
  };
}

}  // namespace cli
