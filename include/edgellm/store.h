// ModelStore: versioned models in a persistent data folder, installed from a manifest URL
// with a verified, resumable download, switched atomically, and kept usable during upgrades.
//
// Layout under the root (default $XDG_DATA_HOME/edgellm, else ~/.local/share/edgellm; on a
// phone, the app's files directory, never its cache directory, which the system clears):
//   models/<id>/<version>/manifest.json + the model file   complete, verified versions
//   models/<id>/active -> <version>                        symlink, switched by rename()
//   staging/<id>-<version>/                                 a download in progress (resumable)
//
// Install: fetch manifest -> refuse what this build cannot run -> check free disk -> download
// into staging (chunked, verified, journaled) -> fsync -> rename into models/ -> fsync ->
// switch `active` -> fsync -> gc. A crash at any step leaves the previous active version
// complete and active, or the new one complete and active; never a mix.
//
// Thread safety: one ModelStore per root per process; its methods are not concurrent.
// Two processes installing into one root is not supported.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "edgellm/download.h"
#include "edgellm/manifest.h"
#include "edgellm/status.h"

namespace edgellm {

struct StoreOptions {
  std::string root;       // "" = $XDG_DATA_HOME/edgellm or ~/.local/share/edgellm
  int keep_versions = 2;  // versions kept per model after an install (the active one always)
  // Accept packages produced by another llama.cpp build than this runtime's (by default a
  // manifest whose toolchain differs is refused, as the second seed's toolchain alignment).
  bool allow_other_toolchain = false;
};

struct InstalledModel {
  std::string id;
  uint32_t version = 0;
  bool active = false;
  std::string path;  // the model file
  Manifest manifest;
};

struct InstallOptions {
  DownloadOptions download;
  // Called when a stage starts: "manifest", "download", "verify", "commit", "activate",
  // "gc", "done". Tests use it to crash the process at each step.
  std::function<void(const char* step)> on_step;
  DownloadReport* report = nullptr;  // filled with the download's figures when non-null
};

struct EnsureResult {
  bool installed = false;          // some version of the model is active
  uint32_t active_version = 0;
  bool upgrade_needed = false;     // active_version < the required version
  std::string path;                // the active model file: keep serving it meanwhile
};

class ModelStore {
 public:
  static Result<std::unique_ptr<ModelStore>> Open(const StoreOptions& options = {});
  ~ModelStore();

  const std::string& root() const;

  // Installs the package whose manifest is at `manifest_url` (http(s):// or file://); the
  // model file is fetched from the same folder. Resumes a previous partial download.
  Result<InstalledModel> Install(const std::string& manifest_url, const InstallOptions& options = {});

  // The active version of `id` (kNotFound if none).
  Result<InstalledModel> Active(const std::string& id) const;
  Result<std::vector<InstalledModel>> List() const;
  // Reports whether `id` is at least `required_version`, and what to serve meanwhile.
  Result<EnsureResult> Ensure(const std::string& id, uint32_t required_version) const;
  // Re-hashes a version's file against its manifest (every chunk and the whole file).
  Status Verify(const std::string& id, std::optional<uint32_t> version = std::nullopt) const;
  // Removes one version (not the active one unless it is the only one) or, without a version,
  // the whole model.
  Status Remove(const std::string& id, std::optional<uint32_t> version = std::nullopt);
  // Keeps the `keep` newest versions of `id` and the active one.
  Status Gc(const std::string& id, int keep);

 private:
  explicit ModelStore(std::string root, StoreOptions options);
  std::string root_;
  StoreOptions options_;
};

}  // namespace edgellm
