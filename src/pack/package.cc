// pack_model: model file + manifest.json in a package folder, copied and hashed in one pass.
#include "edgellm/package.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "edgellm/gguf_check.h"
#include "edgellm/model.h"
#include "edgellm/planner.h"
#include "edgellm/platform.h"
#include "edgellm/quantize.h"
#include "store/sha256.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

constexpr size_t kIoBuffer = 1u << 20;

std::string errno_text() { return std::strerror(errno); }

// The manifest checks on what the options decide (id, version, chunk size, file name), with
// placeholders for the rest: bad options fail before the model is even opened.
Status check_options(const std::string& model_path, const PackOptions& o) {
  if (o.out_dir.empty()) return Status::InvalidArgument("no output folder: pass -o DIR");
  Manifest m;
  m.id = o.id;
  m.version = o.version;
  m.file = fs::path(model_path).filename().string();
  m.size = 1;
  m.sha256 = std::string(64, '0');
  m.chunk_size = o.chunk_size;
  m.chunks = {m.sha256};
  m.quant = "placeholder";
  m.architecture = m.quant;
  m.toolchain = m.quant;
  m.n_params = 1;
  m.plan_n_ctx = 1;
  m.plan_ram_bytes = 1;
  Status st = validate_manifest(m);
  if (st.ok()) return st;
  // "manifest: id ..." -> "cannot pack: id ...": these came from the caller, not a manifest.
  return Status::InvalidArgument("cannot pack: " + st.message().substr(std::strlen("manifest: ")));
}

// The manifest's descriptive fields, from the model; digests are placeholders until hashed.
Result<Manifest> describe(const std::string& model_path, const PackOptions& o) {
  const GgufCheckResult check = check_gguf_file(model_path);
  if (!check.ok()) return check.status;
  LoadOptions lo;
  lo.metadata_only = true;
  auto model = Model::Load(model_path, lo);
  if (!model.ok()) return model.status();
  Result<FormatStamp> stamp = read_format_stamp(model_path);
  if (!stamp.ok()) return stamp.status();
  if (stamp->format_version > kFormatVersion) {
    return Status::FailedPrecondition(
        model_path + " is stamped format version " + std::to_string(stamp->format_version) +
        ", newer than this edgellm (" + std::to_string(kFormatVersion) +
        "): pack it with the edgellm that wrote it");
  }
  PlanOptions po;
  po.n_ctx = -1;  // min(n_ctx_train, 2048), as a Session picks
  po.ram_bytes = 8ull << 30;
  auto plan = plan_memory(model_path, po);
  if (!plan.ok()) return plan.status();

  const ModelInfo& info = (*model)->info();
  Manifest m;
  m.id = o.id;
  m.version = o.version;
  m.file = fs::path(model_path).filename().string();
  m.size = check.summary.file_bytes;
  m.chunk_size = o.chunk_size;
  m.sha256 = std::string(64, '0');
  if (m.chunk_size > 0) m.chunks.assign((m.size - 1) / m.chunk_size + 1, m.sha256);
  m.quant = info.quant;
  m.architecture = info.arch;
  m.n_params = info.n_params;
  m.required_format_version = stamp->format_version ? stamp->format_version : kFormatVersion;
  m.toolchain = stamp->toolchain.empty() ? llama_build() : stamp->toolchain;
  m.plan_n_ctx = plan->n_ctx;
  m.plan_ram_bytes = plan->total_bytes;
  // What came from the model itself (e.g. a quant name libllama does not know) must pass too.
  EDGELLM_RETURN_IF_ERROR(validate_manifest(m));
  return m;
}

// Closes an fd on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status write_all(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return Status::ResourceExhausted("writing " + path + " failed (" + errno_text() +
                                       "): check free disk space");
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Reads `src` once: hashes it whole and per chunk into `m`, and copies it to `dst` unless
// `dst` is empty. The file must still be m->size bytes.
Status hash_and_copy(const std::string& src, const std::string& dst, const PackOptions& o,
                     Manifest* m) {
  Fd in{::open(src.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return Status::Unavailable("cannot read " + src + ": " + errno_text());
  Fd out;
  if (!dst.empty()) {
    out.fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out.fd < 0) return Status::Unavailable("cannot create " + dst + ": " + errno_text());
  }
  store::Sha256 whole;
  auto chunk = std::make_unique<store::Sha256>();
  uint64_t in_chunk = 0, done = 0;
  size_t chunk_index = 0;
  std::vector<char> buf(kIoBuffer);
  for (;;) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), o.chunk_size - in_chunk));
    const ssize_t n = ::read(in.fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Unavailable("read error on " + src + ": " + errno_text());
    if (n == 0) break;
    if (done + static_cast<uint64_t>(n) > m->size) break;  // grew: reported below
    whole.Update(buf.data(), static_cast<size_t>(n));
    chunk->Update(buf.data(), static_cast<size_t>(n));
    if (out.fd >= 0) EDGELLM_RETURN_IF_ERROR(write_all(out.fd, buf.data(), n, dst));
    done += static_cast<uint64_t>(n);
    in_chunk += static_cast<uint64_t>(n);
    if (in_chunk == o.chunk_size || done == m->size) {
      m->chunks[chunk_index++] = chunk->HexDigest();
      chunk = std::make_unique<store::Sha256>();
      in_chunk = 0;
    }
    if (o.on_progress && !o.on_progress(done, m->size)) {
      return Status::Cancelled("pack cancelled");
    }
  }
  if (done != m->size || chunk_index != m->chunks.size()) {
    return Status::CorruptData(src + " changed while it was packed (" + std::to_string(m->size) +
                               " bytes expected): pack it again once nothing writes to it");
  }
  m->sha256 = whole.HexDigest();
  return Status::Ok();
}

// Removes what a failed pack wrote (a model without its manifest), and the folder if pack
// made it and it is empty again. Temporaries go with their AtomicFile.
struct Cleanup {
  std::vector<std::string> files;
  std::string created_dir;
  bool armed = true;
  ~Cleanup() {
    if (!armed) return;
    std::error_code ec;
    for (const std::string& f : files) fs::remove(f, ec);
    if (!created_dir.empty() && fs::is_empty(created_dir, ec)) fs::remove(created_dir, ec);
  }
};

}  // namespace

Result<Manifest> pack_model(const std::string& model_path, const PackOptions& o) {
  EDGELLM_RETURN_IF_ERROR(check_options(model_path, o));
  Result<Manifest> described = describe(model_path, o);
  if (!described.ok()) return described.status();
  Manifest m = std::move(described).value();

  Cleanup cleanup;
  std::error_code ec;
  if (!fs::exists(o.out_dir, ec)) {
    if (!fs::create_directories(o.out_dir, ec) && ec) {
      return Status::Unavailable("cannot create " + o.out_dir + ": " + ec.message());
    }
    cleanup.created_dir = o.out_dir;
  } else if (!fs::is_directory(o.out_dir, ec)) {
    return Status::InvalidArgument(o.out_dir + " exists and is not a folder: pass another -o");
  }
  const std::string dest = (fs::path(o.out_dir) / m.file).string();
  const std::string manifest_path = (fs::path(o.out_dir) / kManifestFileName).string();
  const bool in_place = fs::exists(dest, ec) && fs::equivalent(model_path, dest, ec);
  AtomicFile model_file(dest), manifest_file(manifest_path);

  EDGELLM_RETURN_IF_ERROR(hash_and_copy(model_path, in_place ? "" : model_file.path(), o, &m));
  EDGELLM_RETURN_IF_ERROR(validate_manifest(m));
  EDGELLM_RETURN_IF_ERROR(write_bytes(manifest_file.path(), manifest_to_json(m), "the manifest"));
  // The model first, the manifest last: a manifest.json in the folder always describes the
  // file next to it.
  if (!in_place) EDGELLM_RETURN_IF_ERROR(model_file.Commit("the model"));
  Status st = manifest_file.Commit("the manifest");
  if (!st.ok()) {
    if (!in_place) cleanup.files.push_back(dest);
    return st;
  }
  cleanup.armed = false;
  return m;
}

}  // namespace edgellm
