// ModelStore: see include/edgellm/store.h for the layout and the install protocol.
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/atomic_file.h"
#include "edgellm/platform.h"
#include "edgellm/gguf_check.h"
#include "edgellm/store.h"
#include "store/download_fetch.h"
#include "store/sha256.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxManifestBytes = 1 << 20;

std::string default_root() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/edgellm";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/edgellm";
  return "./edgellm-data";
}

// fsync a file or a folder (a rename is durable only once its folder is synced).
Status sync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable("cannot open " + p.string() + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Unavailable("fsync " + p.string() + ": " + std::strerror(errno));
  return Status::Ok();
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > kMaxManifestBytes) return 0;  // aborts the transfer
  out->append(data, size * n);
  return size * n;
}

Result<std::string> fetch_text(const std::string& url) {
  if (url.rfind("file://", 0) == 0) {
    const std::string path = url.substr(7);
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status::NotFound("no manifest at " + url);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("unsupported URL '" + url + "': use http://, https:// or file://");
  }
  store::curl_init_once();
  CURL* c = curl_easy_init();
  if (!c) return Status::Internal("curl_easy_init failed");
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(c);
  long http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    if (rc == CURLE_WRITE_ERROR) return Status::CorruptData(url + " is larger than 1 MiB: not a manifest");
    return Status::Unavailable("cannot fetch " + url + ": " + curl_easy_strerror(rc) +
                               ": check the address and the network, then retry");
  }
  if (http == 404 || http == 410) return Status::NotFound("no manifest at " + url + " (HTTP " + std::to_string(http) + ")");
  if (http != 200) {
    return Status::Unavailable("fetching " + url + " gave HTTP " + std::to_string(http));
  }
  return body;
}

// "models/<id>/<version>" version folders, numeric names only.
std::vector<uint32_t> versions_in(const fs::path& model_dir) {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(model_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n.size() > 9 || !std::all_of(n.begin(), n.end(), ::isdigit)) continue;
    if (!fs::exists(e.path() / "manifest.json")) continue;
    out.push_back(static_cast<uint32_t>(std::stoul(n)));
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

uint64_t free_bytes(const fs::path& p) {
  struct statvfs v {};
  if (::statvfs(p.c_str(), &v) != 0) return UINT64_MAX;  // unknown: let the write tell
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

std::string mib(uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

ModelStore::ModelStore(std::string root, StoreOptions options)
    : root_(std::move(root)), options_(std::move(options)) {}
ModelStore::~ModelStore() = default;

const std::string& ModelStore::root() const { return root_; }

Result<std::unique_ptr<ModelStore>> ModelStore::Open(const StoreOptions& options) {
  const std::string root = options.root.empty() ? default_root() : options.root;
  if (options.keep_versions < 1) return Status::InvalidArgument("keep_versions must be >= 1");
  std::error_code ec;
  fs::create_directories(fs::path(root) / "models", ec);
  if (!ec) fs::create_directories(fs::path(root) / "staging", ec);
  if (ec) {
    return Status::Unavailable("cannot create the model store at " + root + ": " + ec.message() +
                               ": pass a writable folder (--store)");
  }
  // A crash between creating and renaming the new `active` link leaves active.tmp behind.
  for (const auto& e : fs::directory_iterator(fs::path(root) / "models", ec)) {
    std::error_code ignore;
    fs::remove(e.path() / "active.tmp", ignore);
  }
  return std::unique_ptr<ModelStore>(new ModelStore(root, options));
}

Result<InstalledModel> ModelStore::Install(const std::string& manifest_url,
                                           const InstallOptions& o) {
  auto step = [&](const char* s) {
    if (o.on_step) o.on_step(s);
  };
  step("manifest");
  auto text = fetch_text(manifest_url);
  if (!text.ok()) return text.status();
  auto parsed = manifest_from_json(*text);
  if (!parsed.ok()) {
    return Status::CorruptData("the manifest at " + manifest_url + " is invalid: " +
                               parsed.status().message());
  }
  const Manifest& m = *parsed;
  if (m.required_format_version > kFormatVersion) {
    return Status::FailedPrecondition(
        m.id + " v" + std::to_string(m.version) + " needs edgellm format version " +
        std::to_string(m.required_format_version) + ", this runtime reads up to " +
        std::to_string(kFormatVersion) + ": update the app, or install a package made for it");
  }
  if (!options_.allow_other_toolchain && !m.toolchain.empty() && m.toolchain != llama_build()) {
    return Status::FailedPrecondition(
        m.id + " v" + std::to_string(m.version) + " was produced by llama.cpp " + m.toolchain +
        ", this runtime is built on " + llama_build() +
        ": re-convert the model with this toolchain (edgellm quantize + pack)");
  }

  const fs::path model_dir = fs::path(root_) / "models" / m.id;
  const fs::path final_dir = model_dir / std::to_string(m.version);
  const fs::path stage_dir = fs::path(root_) / "staging" / (m.id + "-" + std::to_string(m.version));
  std::error_code ec;
  if (fs::exists(final_dir / "manifest.json")) {
    auto have = fetch_text("file://" + (final_dir / "manifest.json").string());
    auto hm = have.ok() ? manifest_from_json(*have) : Result<Manifest>(have.status());
    if (!hm.ok() || hm->sha256 != m.sha256) {
      return Status::FailedPrecondition(
          m.id + " v" + std::to_string(m.version) + " is already installed with other contents: "
          "remove it first (edgellm rm " + m.id + "@" + std::to_string(m.version) + ")");
    }
  } else {
    // Free disk: the new file coexists with the old versions at the peak.
    fs::create_directories(stage_dir, ec);
    if (ec) return Status::Unavailable("cannot create " + stage_dir.string() + ": " + ec.message());
    const fs::path partial = stage_dir / (m.file + ".partial");
    struct stat st {};
    const uint64_t allocated =
        ::stat(partial.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
    const uint64_t need = m.size > allocated ? m.size - allocated : 0;
    const uint64_t have = free_bytes(stage_dir);
    if (have < need + (1 << 20)) {
      return Status::ResourceExhausted(
          "installing " + m.id + " v" + std::to_string(m.version) + " needs " + mib(need) +
          " more in " + root_ + ", only " + mib(have) +
          " are free: free space or remove old versions (edgellm rm)");
    }
    step("download");
    DownloadSpec spec;
    const size_t slash = manifest_url.rfind('/');
    spec.url = (slash == std::string::npos ? std::string() : manifest_url.substr(0, slash + 1)) + m.file;
    spec.dest = (stage_dir / m.file).string();
    spec.size = m.size;
    spec.sha256 = m.sha256;
    spec.chunk_size = m.chunk_size;
    spec.chunks = m.chunks;
    auto got = download(spec, o.download);
    if (!got.ok()) return got.status();
    if (o.report) *o.report = *got;

    step("verify");
    const GgufCheckResult gc = check_gguf_file(spec.dest);
    if (!gc.ok()) {
      fs::remove_all(stage_dir, ec);
      return Status::CorruptData("the downloaded " + m.file + " matches its manifest but is not a "
                                 "valid GGUF (" + gc.status.message() + "): the package is broken");
    }
    EDGELLM_RETURN_IF_ERROR(sync_path(spec.dest));
    EDGELLM_RETURN_IF_ERROR(
        write_file_atomically((stage_dir / "manifest.json").string(), manifest_to_json(m),
                              "the manifest"));

    step("commit");
    fs::create_directories(model_dir, ec);
    if (ec) return Status::Unavailable("cannot create " + model_dir.string() + ": " + ec.message());
    fs::rename(stage_dir, final_dir, ec);
    if (ec) {
      return Status::Unavailable("cannot move " + stage_dir.string() + " into place: " + ec.message());
    }
    EDGELLM_RETURN_IF_ERROR(sync_path(model_dir));
    EDGELLM_RETURN_IF_ERROR(sync_path(stage_dir.parent_path()));
  }

  step("activate");
  const fs::path tmp_link = model_dir / "active.tmp";
  fs::remove(tmp_link, ec);
  fs::create_symlink(std::to_string(m.version), tmp_link, ec);
  if (ec) return Status::Unavailable("cannot create " + tmp_link.string() + ": " + ec.message());
  fs::rename(tmp_link, model_dir / "active", ec);
  if (ec) return Status::Unavailable("cannot switch the active version: " + ec.message());
  EDGELLM_RETURN_IF_ERROR(sync_path(model_dir));

  step("gc");
  EDGELLM_RETURN_IF_ERROR(Gc(m.id, options_.keep_versions));
  step("done");
  return Active(m.id);
}

Result<InstalledModel> ModelStore::Active(const std::string& id) const {
  const fs::path model_dir = fs::path(root_) / "models" / id;
  std::error_code ec;
  const fs::path target = fs::read_symlink(model_dir / "active", ec);
  if (ec) return Status::NotFound("no active version of '" + id + "' in " + root_ + ": install it (edgellm pull)");
  const fs::path dir = model_dir / target;
  auto text = fetch_text("file://" + (dir / "manifest.json").string());
  if (!text.ok()) return Status::CorruptData("the active version of " + id + " has no manifest: run edgellm verify " + id);
  auto m = manifest_from_json(*text);
  if (!m.ok()) return m.status();
  InstalledModel out;
  out.id = id;
  out.version = m->version;
  out.active = true;
  out.path = (dir / m->file).string();
  out.manifest = std::move(*m);
  return out;
}

Result<std::vector<InstalledModel>> ModelStore::List() const {
  std::vector<InstalledModel> out;
  std::error_code ec;
  std::vector<fs::path> ids;
  for (const auto& e : fs::directory_iterator(fs::path(root_) / "models", ec)) {
    if (e.is_directory()) ids.push_back(e.path());
  }
  std::sort(ids.begin(), ids.end());
  for (const auto& d : ids) {
    const std::string id = d.filename().string();
    auto act = Active(id);
    for (uint32_t v : versions_in(d)) {
      auto text = fetch_text("file://" + (d / std::to_string(v) / "manifest.json").string());
      if (!text.ok()) continue;
      auto m = manifest_from_json(*text);
      if (!m.ok()) continue;
      InstalledModel im;
      im.id = id;
      im.version = v;
      im.active = act.ok() && act->version == v;
      im.path = (d / std::to_string(v) / m->file).string();
      im.manifest = std::move(*m);
      out.push_back(std::move(im));
    }
  }
  return out;
}

Result<EnsureResult> ModelStore::Ensure(const std::string& id, uint32_t required_version) const {
  EnsureResult r;
  auto act = Active(id);
  if (!act.ok()) {
    if (act.status().code() != Code::kNotFound) return act.status();
    r.upgrade_needed = true;
    return r;
  }
  r.installed = true;
  r.active_version = act->version;
  r.path = act->path;
  r.upgrade_needed = act->version < required_version;
  return r;
}

Status ModelStore::Verify(const std::string& id, std::optional<uint32_t> version) const {
  InstalledModel im;
  if (version) {
    auto all = List();
    if (!all.ok()) return all.status();
    auto it = std::find_if(all->begin(), all->end(), [&](const InstalledModel& x) {
      return x.id == id && x.version == *version;
    });
    if (it == all->end()) return Status::NotFound(id + "@" + std::to_string(*version) + " is not installed");
    im = *it;
  } else {
    auto act = Active(id);
    if (!act.ok()) return act.status();
    im = *act;
  }
  const Manifest& m = im.manifest;
  std::error_code ec;
  const uint64_t size = fs::file_size(im.path, ec);
  if (ec) return Status::NotFound(im.path + " is missing: reinstall " + id);
  if (size != m.size) {
    return Status::CorruptData(im.path + " has " + std::to_string(size) + " bytes, the manifest says " +
                               std::to_string(m.size) + ": reinstall " + id);
  }
  // One pass: each chunk's hash and the whole file's.
  std::ifstream f(im.path, std::ios::binary);
  if (!f) return Status::Unavailable("cannot read " + im.path);
  store::Sha256 whole;
  std::vector<char> buf(1 << 20);
  for (size_t i = 0; i < m.chunks.size(); ++i) {
    const uint64_t off = i * m.chunk_size;
    uint64_t left = std::min<uint64_t>(m.chunk_size, m.size - off);
    store::Sha256 chunk;
    while (left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      if (!f.read(buf.data(), static_cast<std::streamsize>(n))) {
        return Status::Unavailable("read error on " + im.path + ": reinstall " + id);
      }
      chunk.Update(buf.data(), n);
      whole.Update(buf.data(), n);
      left -= n;
    }
    if (chunk.HexDigest() != m.chunks[i]) {
      return Status::CorruptData(im.path + ": chunk " + std::to_string(i) + " (bytes " +
                                 std::to_string(off) + "+) does not match its sha256: reinstall " + id);
    }
  }
  if (whole.HexDigest() != m.sha256) {
    return Status::CorruptData(im.path + " does not match its sha256: reinstall " + id);
  }
  return Status::Ok();
}

Status ModelStore::Remove(const std::string& id, std::optional<uint32_t> version) {
  const fs::path model_dir = fs::path(root_) / "models" / id;
  std::error_code ec;
  if (!fs::exists(model_dir)) return Status::NotFound("'" + id + "' is not installed");
  if (!version) {
    fs::remove_all(model_dir, ec);
    for (const auto& e : fs::directory_iterator(fs::path(root_) / "staging", ec)) {
      if (e.path().filename().string().rfind(id + "-", 0) == 0) fs::remove_all(e.path(), ec);
    }
    return ec ? Status::Unavailable("cannot remove " + model_dir.string() + ": " + ec.message())
              : Status::Ok();
  }
  const auto vs = versions_in(model_dir);
  if (std::find(vs.begin(), vs.end(), *version) == vs.end()) {
    return Status::NotFound(id + "@" + std::to_string(*version) + " is not installed");
  }
  auto act = Active(id);
  if (act.ok() && act->version == *version) {
    if (vs.size() > 1) {
      return Status::FailedPrecondition(id + "@" + std::to_string(*version) +
                                        " is the active version: install or activate another first, "
                                        "or remove the whole model (edgellm rm " + id + ")");
    }
    return Remove(id, std::nullopt);
  }
  fs::remove_all(model_dir / std::to_string(*version), ec);
  if (ec) return Status::Unavailable("cannot remove " + id + "@" + std::to_string(*version) + ": " + ec.message());
  return sync_path(model_dir);
}

Status ModelStore::Gc(const std::string& id, int keep) {
  if (keep < 1) return Status::InvalidArgument("keep must be >= 1");
  const fs::path model_dir = fs::path(root_) / "models" / id;
  auto act = Active(id);
  const auto vs = versions_in(model_dir);  // newest first
  int kept = 0;
  for (uint32_t v : vs) {
    const bool is_active = act.ok() && act->version == v;
    if (is_active || kept < keep) {
      ++kept;
      continue;
    }
    std::error_code ec;
    fs::remove_all(model_dir / std::to_string(v), ec);
    if (ec) return Status::Unavailable("cannot remove " + id + "@" + std::to_string(v) + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace edgellm
