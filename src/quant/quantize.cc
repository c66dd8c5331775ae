// quantize_model: llama_model_quantize with edgellm's checks around it (input validated first,
// imatrix read and checked before any work, output stamped and moved into place atomically).
#include "edgellm/quantize.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/sys.h"
#include "edgellm/platform.h"
#include "edgellm/gguf_check.h"
#include "edgellm/manifest.h"
#include "engine/llama_glue.h"
#include "engine/gguf_io.h"
#include "ggml.h"
#include "gguf.h"
#include "llama-ext.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKeyFormat = "edgellm.format_version";
constexpr const char* kKeyToolchain = "edgellm.toolchain";

// One imatrix entry: mean squared activation per input column of a weight, as
// llama_model_quantize wants it (already divided by the number of calls).
struct ImatrixEntry {
  std::string name;
  std::vector<float> values;
};

Status imatrix_error(const std::string& path, const std::string& what) {
  return Status::CorruptData("imatrix " + path + ": " + what +
                             ": pass a file written by llama-imatrix, or leave --imatrix out");
}

// The GGUF format of llama-imatrix: tensors "<weight>.in_sum2" (F32, ne0 x n_mat) and
// "<weight>.counts" (F32, 1 x n_mat). As llama-quantize: sums / count, 1 where count is 0.
Status read_imatrix_gguf(const std::string& path, std::vector<ImatrixEntry>* out) {
  const GgufCheckResult check = check_gguf_file(path);
  if (!check.ok()) return imatrix_error(path, check.status.message());
  ggml_context* raw = nullptr;
  gguf_init_params p{/*no_alloc=*/false, &raw};
  GgufPtr g(gguf_init_from_file(path.c_str(), p));
  GgmlPtr ctx(raw);
  if (!g || !ctx) return imatrix_error(path, "ggml cannot read it");
  const std::string kSums = ".in_sum2", kCounts = ".counts";
  for (ggml_tensor* t = ggml_get_first_tensor(ctx.get()); t;
       t = ggml_get_next_tensor(ctx.get(), t)) {
    std::string name = ggml_get_name(t);
    if (name.size() <= kSums.size() ||
        name.compare(name.size() - kSums.size(), kSums.size(), kSums)) {
      continue;
    }
    name.resize(name.size() - kSums.size());
    const ggml_tensor* counts = ggml_get_tensor(ctx.get(), (name + kCounts).c_str());
    if (!counts) return imatrix_error(path, name + kSums + " has no " + name + kCounts);
    if (t->type != GGML_TYPE_F32 || counts->type != GGML_TYPE_F32) {
      return imatrix_error(path, name + " sums and counts must be F32");
    }
    const int64_t nval = ggml_nelements(t), ncounts = ggml_nelements(counts);
    if (ncounts < 1 || nval % ncounts != 0) {
      return imatrix_error(path, name + " has " + std::to_string(nval) + " sums for " +
                                     std::to_string(ncounts) + " counts");
    }
    const auto* sums = static_cast<const float*>(t->data);
    const auto* cnt = static_cast<const float*>(counts->data);
    const int64_t ne0 = nval / ncounts;
    ImatrixEntry e{name, std::vector<float>(static_cast<size_t>(nval), 1.0f)};
    for (int64_t j = 0; j < ncounts; ++j) {
      const float c = std::round(cnt[j]);
      if (c <= 0) continue;
      for (int64_t i = 0; i < ne0; ++i) e.values[j * ne0 + i] = sums[j * ne0 + i] / c;
    }
    out->push_back(std::move(e));
  }
  return Status::Ok();
}

// The legacy .dat format: int32 n; n x {int32 len, name, int32 ncall, int32 nval,
// float[nval] (sums x ncall / count)}; optional trailer. Every count is checked against the
// bytes left before it is used.
Status read_imatrix_legacy(const std::string& path, uint64_t size, std::vector<ImatrixEntry>* out) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes(static_cast<size_t>(size));
  if (!f.read(bytes.data(), static_cast<std::streamsize>(size))) {
    return Status::Unavailable("cannot read imatrix " + path);
  }
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    if (bytes.size() - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  int32_t n_entries = 0;
  if (!take(&n_entries, 4) || n_entries < 1) return imatrix_error(path, "no entries");
  for (int32_t i = 0; i < n_entries; ++i) {
    const std::string where = "entry " + std::to_string(i);
    int32_t len = 0, ncall = 0, nval = 0;
    if (!take(&len, 4) || len < 1 || len > 4096 || bytes.size() - pos < static_cast<size_t>(len)) {
      return imatrix_error(path, where + ": bad name length (truncated or not an imatrix)");
    }
    ImatrixEntry e{std::string(bytes.data() + pos, static_cast<size_t>(len)), {}};
    pos += static_cast<size_t>(len);
    if (!take(&ncall, 4) || !take(&nval, 4) || nval < 1 ||
        (bytes.size() - pos) / sizeof(float) < static_cast<size_t>(nval)) {
      return imatrix_error(path, where + " (" + e.name + "): bad value count or truncated");
    }
    e.values.resize(static_cast<size_t>(nval));
    take(e.values.data(), static_cast<size_t>(nval) * sizeof(float));
    if (ncall > 0) {
      for (float& v : e.values) v /= static_cast<float>(ncall);
    }
    out->push_back(std::move(e));
  }
  return Status::Ok();
}

Result<std::vector<ImatrixEntry>> read_imatrix(const std::string& path) {
  Result<uint64_t> size = regular_file_size(path, "imatrix file");
  if (!size.ok() && size.status().code() == Code::kNotFound) {
    return Status::NotFound("imatrix file not found: " + path +
                            ": check the --imatrix path (llama-imatrix writes one)");
  }
  if (!size.ok()) return size.status();
  if (*size > (2ull << 30)) return imatrix_error(path, "larger than any imatrix (2 GiB)");
  char magic[4] = {};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  std::vector<ImatrixEntry> entries;
  EDGELLM_RETURN_IF_ERROR(std::memcmp(magic, "GGUF", 4) == 0
                              ? read_imatrix_gguf(path, &entries)
                              : read_imatrix_legacy(path, *size, &entries));
  if (entries.empty()) return imatrix_error(path, "no importance data (no *.in_sum2 tensors)");
  for (const ImatrixEntry& e : entries) {
    for (float v : e.values) {
      if (!std::isfinite(v)) return imatrix_error(path, e.name + " holds a non-finite value");
    }
  }
  return entries;
}

// Output bytes as libllama's default type for `ftype` gives them, with its one rule that
// moves the most bytes: the output matrix (token_embd when tied) at Q6_K for quantized
// targets. Other per-tensor choices (a few Q6_K layers in *_M types) make this an estimate,
// for progress only.
uint64_t estimate_output_bytes(const std::string& input, llama_ftype ftype) {
  ggml_context* raw = nullptr;
  gguf_init_params p{/*no_alloc=*/true, &raw};
  GgufPtr g(gguf_init_from_file(input.c_str(), p));
  GgmlPtr ctx(raw);
  if (!g || !ctx) return 0;
  const ggml_type target = llama_ftype_get_default_type(ftype);
  const bool quantized = target != GGML_TYPE_COUNT && target != GGML_TYPE_F32 &&
                         target != GGML_TYPE_F16 && target != GGML_TYPE_BF16 &&
                         target != GGML_TYPE_Q8_0;
  const char* output_name =
      ggml_get_tensor(ctx.get(), "output.weight") ? "output.weight" : "token_embd.weight";
  uint64_t total = gguf_get_data_offset(g.get());
  for (ggml_tensor* t = ggml_get_first_tensor(ctx.get()); t;
       t = ggml_get_next_tensor(ctx.get(), t)) {
    ggml_type type = t->type;
    if (ggml_n_dims(t) >= 2 && target != GGML_TYPE_COUNT) {
      type = target;
      if (quantized && std::strcmp(ggml_get_name(t), output_name) == 0) type = GGML_TYPE_Q6_K;
      if (t->ne[0] % ggml_blck_size(type) != 0) type = GGML_TYPE_Q8_0;
    }
    total += GGML_PAD(ggml_row_size(type, t->ne[0]) * static_cast<uint64_t>(ggml_nrows(t)), 32);
  }
  return total;
}

bool is_float_type(const std::string& quant) {
  return quant == "F32" || quant == "F16" || quant == "BF16";
}

// Input and output named, distinct, the output's folder present; the input a valid GGUF whose
// quantization allows this.
Status check_paths_and_input(const QuantizeOptions& o) {
  if (o.input.empty()) return Status::InvalidArgument("no input model: pass IN.gguf");
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass OUT.gguf");
  std::error_code ec_in, ec_out, ec;
  const fs::path in = fs::weakly_canonical(o.input, ec_in);
  const fs::path out = fs::weakly_canonical(o.output, ec_out);
  if ((!ec_in && !ec_out && in == out) || fs::equivalent(o.input, o.output, ec)) {
    return Status::InvalidArgument("output " + o.output +
                                   " is the input: write the quantized model to another file");
  }
  const fs::path parent = fs::path(o.output).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return Status::NotFound("the output folder " + parent.string() + " does not exist");
  }
  const GgufCheckResult check = check_gguf_file(o.input);
  if (!check.ok()) return check.status;
  LoadOptions lo;
  lo.metadata_only = true;
  auto model = Model::Load(o.input, lo);
  if (!model.ok()) return model.status();
  const std::string& quant = (*model)->info().quant;
  if (!o.allow_requantize && !is_float_type(quant) && quant != "unknown") {
    return Status::InvalidArgument(o.input + " is already " + quant +
                                   "; quantizing it again compounds the error: start from the "
                                   "F16/BF16 file, or allow requantizing (--allow-requantize)");
  }
  return Status::Ok();
}

// Runs llama_model_quantize on a worker thread; reports progress from here meanwhile.
Status run_quantizer(const QuantizeOptions& o, const llama_model_quantize_params& qp,
                     const std::string& tmp_out, uint64_t estimate) {
  auto worker = std::async(std::launch::async, [&] {
    engine::take_llama_errors();
    const uint32_t rc = llama_model_quantize(o.input.c_str(), tmp_out.c_str(), &qp);
    return std::make_pair(rc, engine::take_llama_errors());
  });
  while (worker.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    struct stat st {};
    if (o.on_progress && estimate > 0 && ::stat(tmp_out.c_str(), &st) == 0) {
      o.on_progress(std::min(0.99f, static_cast<float>(st.st_size) / static_cast<float>(estimate)));
    }
  }
  const auto [rc, errors] = worker.get();
  if (rc != 0) {
    return Status::Internal("llama_model_quantize " + o.input + " to " + o.type +
                            " failed: " + (errors.empty() ? "no message" : errors));
  }
  // libllama wrote it; still, nothing leaves here that edgellm itself would refuse to load.
  const GgufCheckResult check = check_gguf_file(tmp_out);
  if (!check.ok())
    return Status::Internal("the quantizer wrote a bad GGUF: " + check.status.message());
  return Status::Ok();
}

}  // namespace

Status quantize_model(const QuantizeOptions& o) {
  llama_ftype ftype;
  if (!engine::ftype_from_name(o.type, &ftype)) {
    return Status::InvalidArgument("unknown type '" + o.type +
                                   "': use Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, IQ4_XS, F16, ...");
  }
  EDGELLM_RETURN_IF_ERROR(check_paths_and_input(o));
  std::vector<ImatrixEntry> imatrix;
  std::vector<llama_model_imatrix_data> imatrix_refs;
  if (!o.imatrix_path.empty()) {
    auto read = read_imatrix(o.imatrix_path);
    if (!read.ok()) return read.status();
    imatrix = std::move(read).value();
    for (const ImatrixEntry& e : imatrix) {
      imatrix_refs.push_back({e.name.c_str(), e.values.data(), e.values.size()});
    }
    imatrix_refs.push_back({nullptr, nullptr, 0});
  }

  // The stamp, as metadata overrides (libllama writes INT overrides as uint32).
  llama_model_kv_override kv[3] = {};
  kv[0].tag = LLAMA_KV_OVERRIDE_TYPE_INT;
  std::snprintf(kv[0].key, sizeof(kv[0].key), "%s", kKeyFormat);
  kv[0].val_i64 = kFormatVersion;
  kv[1].tag = LLAMA_KV_OVERRIDE_TYPE_STR;
  std::snprintf(kv[1].key, sizeof(kv[1].key), "%s", kKeyToolchain);
  std::snprintf(kv[1].val_str, sizeof(kv[1].val_str), "%s", llama_build());
  // kv[2].key[0] == 0 ends the list.

  engine::ensure_backend();
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = ftype;
  qp.nthread = o.n_threads > 0 ? o.n_threads : physical_cores();
  qp.allow_requantize = o.allow_requantize;
  qp.kv_overrides = kv;
  qp.imatrix = imatrix_refs.empty() ? nullptr : imatrix_refs.data();

  AtomicFile out(o.output);
  EDGELLM_RETURN_IF_ERROR(run_quantizer(o, qp, out.path(), estimate_output_bytes(o.input, ftype)));
  EDGELLM_RETURN_IF_ERROR(out.Commit("the model"));
  if (o.on_progress) o.on_progress(1.0f);
  return Status::Ok();
}

Result<FormatStamp> read_format_stamp(const std::string& path) {
  const GgufCheckResult check = check_gguf_file(path);
  if (!check.ok()) return check.status;
  gguf_init_params p{/*no_alloc=*/true, /*ctx=*/nullptr};
  GgufPtr g(gguf_init_from_file(path.c_str(), p));
  if (!g) return Status::CorruptData("cannot read the GGUF metadata of " + path);
  FormatStamp s;
  const int64_t fmt = gguf_find_key(g.get(), kKeyFormat);
  if (fmt >= 0) {
    if (gguf_get_kv_type(g.get(), fmt) != GGUF_TYPE_UINT32) {
      return Status::CorruptData(path + ": metadata " + kKeyFormat + " is not a uint32");
    }
    s.format_version = gguf_get_val_u32(g.get(), fmt);
    if (s.format_version == 0) {
      return Status::CorruptData(path + ": metadata " + kKeyFormat + " is 0");
    }
  }
  const int64_t tc = gguf_find_key(g.get(), kKeyToolchain);
  if (tc >= 0) {
    if (gguf_get_kv_type(g.get(), tc) != GGUF_TYPE_STRING) {
      return Status::CorruptData(path + ": metadata " + kKeyToolchain + " is not a string");
    }
    s.toolchain = gguf_get_val_str(g.get(), tc);
  }
  return s;
}

}  // namespace edgellm
