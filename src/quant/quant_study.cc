// compute_imatrix (activations through llama.cpp's graph callback, as llama-imatrix does),
// run_quant_study (quantize_model + evaluate_model per variant) and advise_quantization.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "edgellm/quant_study.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "edgellm/model.h"
#include "edgellm/quantize.h"
#include "edgellm/session.h"
#include "edgellm/train.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"
#include "engine/gguf_io.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

// Sum of squared activations per input column of each weight, and the rows seen.
struct Collector {
  struct Entry {
    std::vector<double> sum2;
    int64_t rows = 0;
  };
  std::map<std::string, Entry> entries;
  std::vector<char> scratch;
  std::string error;
};

bool ends_with(const char* s, const char* suffix) {
  const size_t n = std::strlen(s), m = std::strlen(suffix);
  return n >= m && std::strcmp(s + n - m, suffix) == 0;
}

// llama.cpp's eval callback: asked first whether a node is wanted, then called with it
// computed. Wanted: matrix products with a model weight as the first operand.
bool collect_activations(ggml_tensor* t, bool ask, void* user) {
  auto* c = static_cast<Collector*>(user);
  const ggml_tensor* w = t->src[0];
  const ggml_tensor* x = t->src[1];
  const bool wanted = t->op == GGML_OP_MUL_MAT && w && x && ends_with(w->name, ".weight") &&
                      x->type == GGML_TYPE_F32;
  if (ask) return wanted;
  if (!wanted) return true;
  const char* data = nullptr;
  if (x->buffer && ggml_backend_buffer_is_host(x->buffer)) {
    data = static_cast<const char*>(x->data);
  } else {
    c->scratch.resize(ggml_nbytes(x));
    ggml_backend_tensor_get(x, c->scratch.data(), 0, c->scratch.size());
    data = c->scratch.data();
  }
  Collector::Entry& e = c->entries[w->name];
  if (e.sum2.empty()) e.sum2.assign(static_cast<size_t>(x->ne[0]), 0.0);
  if (static_cast<int64_t>(e.sum2.size()) != x->ne[0]) {
    c->error = std::string("activation width changed for ") + w->name;
    return false;
  }
  for (int64_t i3 = 0; i3 < x->ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x->ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x->ne[1]; ++i1) {
        const auto* row = reinterpret_cast<const float*>(data + i1 * x->nb[1] + i2 * x->nb[2] +
                                                         i3 * x->nb[3]);
        for (int64_t i0 = 0; i0 < x->ne[0]; ++i0) {
          e.sum2[static_cast<size_t>(i0)] += static_cast<double>(row[i0]) * row[i0];
        }
        ++e.rows;
      }
    }
  }
  return true;
}

Status write_imatrix(const Collector& c, const std::string& path, int32_t n_chunks) {
  size_t mem = ggml_tensor_overhead() * (2 * c.entries.size() + 1) + 1024;
  for (const auto& [name, e] : c.entries) mem += (e.sum2.size() + 1) * sizeof(float) + 64;
  ggml_init_params ip{mem, nullptr, false};
  GgmlPtr ctx(ggml_init(ip));
  GgufPtr g(gguf_init_empty());
  if (!ctx || !g) return Status::ResourceExhausted("cannot allocate the imatrix");
  gguf_set_val_str(g.get(), "general.type", "imatrix");
  gguf_set_val_u32(g.get(), "imatrix.chunk_count", static_cast<uint32_t>(n_chunks));
  gguf_set_val_u32(g.get(), "imatrix.chunk_size", 256);
  for (const auto& [name, e] : c.entries) {
    if (e.rows == 0) continue;
    ggml_tensor* sums = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, static_cast<int64_t>(e.sum2.size()));
    ggml_tensor* counts = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 1);
    ggml_set_name(sums, (name + ".in_sum2").c_str());
    ggml_set_name(counts, (name + ".counts").c_str());
    auto* s = static_cast<float*>(sums->data);
    for (size_t i = 0; i < e.sum2.size(); ++i) s[i] = static_cast<float>(e.sum2[i]);
    static_cast<float*>(counts->data)[0] = static_cast<float>(e.rows);
    gguf_add_tensor(g.get(), sums);
    gguf_add_tensor(g.get(), counts);
  }
  return write_gguf_atomically(g.get(), path, "the imatrix");
}

// Best of three greedy runs of `tokens` tokens, EOS ignored: decode steps per second.
Result<double> decode_speed(const std::string& path, int32_t tokens, int32_t threads) {
  auto model = Model::Load(path);
  if (!model.ok()) return model.status();
  SessionOptions so;
  so.n_ctx = 256;
  so.n_threads = threads;
  auto session = Session::Create(**model, so);
  if (!session.ok()) return session.status();
  GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = tokens;
  g.ignore_eos = true;
  g.chat = true;
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    auto out = (*session)->Generate("hello", g);
    if (!out.ok()) return out.status();
    best = std::max(best, out->stats.decode_tps);
  }
  return best;
}

}  // namespace

Status compute_imatrix(const ImatrixOptions& o) {
  if (o.model.empty() || o.output.empty()) {
    return Status::InvalidArgument("compute_imatrix needs a model and an output path");
  }
  if (o.items_per_task < 1 || o.items_per_task > 100000) {
    return Status::InvalidArgument("calibration items per task must be in 1..100000");
  }
  const fs::path parent = fs::path(o.output).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    return Status::NotFound("the output folder " + parent.string() + " does not exist");
  }
  auto model = Model::Load(o.model);
  if (!model.ok()) return model.status();
  std::string text;
  for (const std::string& task : corpus_tasks()) {
    auto items = make_task_items(task, Split::kTrain, task == "chat" ? 8 : o.items_per_task, o.seed);
    if (!items.ok()) return items.status();
    for (const TaskItem& it : *items) text += "<s>" + chat_example(it);
  }
  auto toks = tokenize((*model)->impl()->vocab, text, false, true);
  if (!toks.ok()) return toks.status();

  Collector col;
  constexpr int32_t kWindow = 256;
  // The same context a Session makes: only the last token's logits (none are needed here).
  llama_context_params cp = engine::context_params(kWindow, kWindow, o.n_threads, GGML_TYPE_F16);
  cp.cb_eval = collect_activations;
  cp.cb_eval_user_data = &col;
  llama_context* ctx = llama_init_from_model((*model)->impl()->model, cp);
  if (!ctx) return Status::ResourceExhausted("cannot create a context for the imatrix run");
  struct FreeCtx {
    llama_context* c;
    ~FreeCtx() { llama_free(c); }
  } free_ctx{ctx};
  const int32_t n = static_cast<int32_t>(toks->size());
  const int32_t total = (n + kWindow - 1) / kWindow;
  int32_t done = 0;
  for (int32_t start = 0; start < n; start += kWindow, ++done) {
    engine::kv_clear(ctx);  // each window from position 0
    const int rc = llama_decode(
        ctx, llama_batch_get_one(toks->data() + start, std::min(kWindow, n - start)));
    if (rc != 0 || !col.error.empty()) {
      return Status::Internal("the imatrix run failed at window " + std::to_string(done) +
                              (col.error.empty() ? "" : ": " + col.error));
    }
    if (o.on_progress) o.on_progress(done + 1, total);
  }
  if (col.entries.empty()) return Status::Internal("the imatrix run saw no weight products");
  return write_imatrix(col, o.output, total);
}

Result<QuantStudy> run_quant_study(const QuantStudyOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.model.empty() || o.work_dir.empty()) {
    return Status::InvalidArgument("the study needs a model and a work folder");
  }
  if (!o.plain && !o.imatrix) return Status::InvalidArgument("neither plain nor imatrix variants asked");
  if (o.decode_tokens < 1 || o.decode_tokens > 4096) {
    return Status::InvalidArgument("decode tokens must be in 1..4096");
  }
  std::error_code ec;
  fs::create_directories(o.work_dir, ec);
  if (!fs::is_directory(o.work_dir)) {
    return Status::Unavailable("cannot create the work folder " + o.work_dir);
  }
  auto stage = [&](const std::string& s) {
    if (o.on_stage) o.on_stage(s);
  };
  QuantStudy study;
  study.model = o.model;

  auto measure = [&](QuantVariant v, bool reference) -> Status {
    const std::string name = v.name();
    LoadOptions lo;
    lo.metadata_only = true;
    auto m = Model::Load(v.path, lo);
    if (!m.ok()) return m.status();
    v.file_bytes = (*m)->info().file_bytes;
    v.bits_per_weight = (*m)->info().n_params
                            ? 8.0 * static_cast<double>((*m)->info().weights_bytes) /
                                  static_cast<double>((*m)->info().n_params)
                            : 0;
    stage("decode speed " + name);
    auto tps = decode_speed(v.path, o.decode_tokens, o.n_threads);
    if (!tps.ok()) return tps.status();
    v.decode_tps = *tps;
    stage("eval " + name);
    EvalOptions e = o.eval;
    e.model = v.path;
    e.reference = reference ? "" : o.model;
    e.n_threads = o.n_threads;
    auto rep = evaluate_model(e);
    if (!rep.ok()) {
      return Status(rep.status().code(), "eval of " + name + ": " + rep.status().message());
    }
    v.eval = std::move(*rep);
    if (!reference && !o.keep_files) {
      std::remove(v.path.c_str());
      v.path.clear();
    }
    study.variants.push_back(std::move(v));
    return Status::Ok();
  };

  {
    LoadOptions lo;
    lo.metadata_only = true;
    auto m = Model::Load(o.model, lo);
    if (!m.ok()) return m.status();
    const std::string q = (*m)->info().quant;
    if (q != "F32" && q != "F16" && q != "BF16") {
      return Status::InvalidArgument(o.model + " is " + q +
                                     ": the study starts from the full-precision model (F32/F16)");
    }
    QuantVariant ref;
    ref.type = q;
    ref.path = o.model;
    EDGELLM_RETURN_IF_ERROR(measure(ref, true));
  }
  const std::string stem = fs::path(o.model).stem().string();
  const std::string imatrix_path = o.work_dir + "/" + stem + ".imatrix.gguf";
  if (o.imatrix) {
    stage("imatrix from the training corpus");
    ImatrixOptions io;
    io.model = o.model;
    io.output = imatrix_path;
    io.n_threads = o.n_threads;
    EDGELLM_RETURN_IF_ERROR(compute_imatrix(io));
  }
  for (const std::string& type : o.types) {
    for (const bool im : {false, true}) {
      if ((im && !o.imatrix) || (!im && !o.plain)) continue;
      // F16/F32/BF16 and Q8_0 do not use an importance matrix: the variant would be identical.
      if (im && (type == "F16" || type == "F32" || type == "BF16" || type == "Q8_0")) continue;
      QuantVariant v;
      v.type = type;
      v.imatrix = im;
      const std::string name = v.name();
      stage("quantize " + name);
      v.path = o.work_dir + "/" + stem + "-" + type + (im ? "-imatrix" : "") + ".gguf";
      QuantizeOptions q;
      q.input = o.model;
      q.output = v.path;
      q.type = type;
      q.n_threads = o.n_threads;
      if (im) q.imatrix_path = imatrix_path;
      Status st = quantize_model(q);
      if (!st.ok()) return Status(st.code(), "quantize " + name + ": " + st.message());
      EDGELLM_RETURN_IF_ERROR(measure(std::move(v), false));
    }
  }
  study.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return study;
}

Result<QuantPick> advise_quantization(const QuantStudy& study, const std::string& task,
                                        double max_drop) {
  if (!(max_drop >= 0 && max_drop <= 1)) {
    return Status::InvalidArgument("the accuracy budget must be between 0% and 100%");
  }
  if (study.variants.empty()) return Status::InvalidArgument("the study measured nothing");
  auto accuracy = [&](const QuantVariant& v) -> const TaskScore* {
    for (const TaskScore& s : v.eval.tasks) {
      if (s.task == task) return &s;
    }
    return nullptr;
  };
  const QuantVariant& ref = study.variants.front();
  const TaskScore* rs = accuracy(ref);
  if (!rs) {
    return Status::InvalidArgument("the study did not score task '" + task +
                                   "': measure it (--tasks) or pick a task it has");
  }
  if (rs->accuracy <= rs->chance) {
    char why[256];
    std::snprintf(why, sizeof(why),
                  "the original (%s) gets %.1f%% on %s, no better than always giving the most "
                  "common answer (%.1f%%): there is no accuracy to keep, so no quantization "
                  "advice is meaningful for this task",
                  ref.type.c_str(), rs->accuracy * 100, task.c_str(), rs->chance * 100);
    return Status::FailedPrecondition(why);
  }
  QuantPick a;
  a.reference_accuracy = rs->accuracy;
  a.pick = ref;
  const QuantVariant* best = nullptr;
  for (size_t i = 1; i < study.variants.size(); ++i) {
    const QuantVariant& v = study.variants[i];
    const TaskScore* s = accuracy(v);
    if (!s || rs->accuracy - s->accuracy > max_drop + 1e-9) continue;
    // Smallest first; at equal size (with and without imatrix) the more accurate.
    if (!best || v.file_bytes < best->file_bytes ||
        (v.file_bytes == best->file_bytes && s->accuracy > accuracy(*best)->accuracy)) {
      best = &v;
    }
  }
  char buf[256];
  if (!best) {
    std::snprintf(buf, sizeof(buf),
                  "no quantized variant keeps %s within %.1f points of %s's %.1f%%: keep %s",
                  task.c_str(), max_drop * 100, ref.type.c_str(), rs->accuracy * 100,
                  ref.type.c_str());
    a.reason = buf;
    return a;
  }
  a.found = true;
  a.pick = *best;
  a.drop = rs->accuracy - accuracy(*best)->accuracy;
  std::snprintf(buf, sizeof(buf),
                "%s is the smallest variant within %.1f points on %s: %.1f%% vs %.1f%% for %s, "
                "%.2f of its size",
                best->name().c_str(), max_drop * 100, task.c_str(),
                accuracy(*best)->accuracy * 100, rs->accuracy * 100, ref.type.c_str(),
                ref.file_bytes ? static_cast<double>(best->file_bytes) / ref.file_bytes : 0.0);
  a.reason = buf;
  return a;
}

}  // namespace edgellm
