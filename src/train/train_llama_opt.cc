// libllama's own training path (--llama-opt): llama_opt_init / llama_opt_epoch on the
// untrained model loaded with writable weights. Kept as the reference edgellm's graph is
// checked against; it cannot train attn_k/attn_v (gradients stop at the KV cache).
#include <cstring>
#include <vector>

#include "edgellm/session.h"
#include "engine/gguf_io.h"
#include "engine/llama_glue.h"
#include "train/train_internal.h"

namespace edgellm::train {

Status train_llama_opt(const TrainOptions& o, const std::string& init_path,
                       const std::string& text, Recorder* rec, TrainReport* report) {
  // 4. Load it with writable weights and an F32 KV cache (ggml's backward has no F16 OUT_PROD).
  engine::ensure_backend();
  engine::take_llama_errors();
  llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false;  // plain F32 buffers the optimizer can update in place
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // writable weights, as llama.cpp's finetune example
  engine::ModelPtr model_owner(llama_model_load_from_file(init_path.c_str(), mp));
  llama_model* model = model_owner.get();
  if (!model) return Status::Internal("cannot load the initial model: " + engine::take_llama_errors());
  const int32_t threads = o.n_threads > 0 ? o.n_threads : physical_cores();
  // One window = one micro-batch = one optimizer step. llama.cpp pads contexts to a multiple
  // of 256, so the window is rounded up to one.
  const uint32_t window = static_cast<uint32_t>((o.n_ctx + 255) / 256 * 256);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = window;
  cp.n_batch = window;
  cp.n_ubatch = window;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  // ggml has no backward pass for flash attention: with it (the CPU default is "auto") the
  // attention weights get no gradient and the model only ever learns bigram statistics.
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  engine::ContextPtr ctx_owner(llama_init_from_model(model, cp));
  llama_context* ctx = ctx_owner.get();
  if (!ctx) return Status::Internal("cannot create a training context: " + engine::take_llama_errors());

  // 5. Tokens and windows (stride n_ctx, labels shifted by one). llama.cpp may pad the context
  // (to a multiple of 256): the windows must be exactly its size.
  const int32_t n_ctx = static_cast<int32_t>(llama_n_ctx(ctx));
  const llama_vocab* lv = llama_model_get_vocab(model);
  std::vector<llama_token> toks(text.size() + 16);
  int32_t nt = llama_tokenize(lv, text.data(), static_cast<int32_t>(text.size()), toks.data(),
                              static_cast<int32_t>(toks.size()), false, true);
  if (nt < 0) return Status::Internal("tokenizing the corpus failed");
  toks.resize(static_cast<size_t>(nt));
  const int64_t ndata = (static_cast<int64_t>(toks.size()) - 1) / n_ctx;
  if (ndata < 2) return Status::InvalidArgument("the corpus is too small for one window");
  ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_I32, GGML_TYPE_I32, n_ctx, n_ctx, ndata, 1);
  auto* data = static_cast<llama_token*>(ggml_opt_dataset_data(ds)->data);
  auto* labels = static_cast<llama_token*>(ggml_opt_dataset_labels(ds)->data);
  for (int64_t i = 0; i < ndata; ++i) {
    std::memcpy(data + i * n_ctx, toks.data() + i * n_ctx, n_ctx * sizeof(llama_token));
    std::memcpy(labels + i * n_ctx, toks.data() + i * n_ctx + 1, n_ctx * sizeof(llama_token));
  }
  const int64_t split = std::max<int64_t>(1, static_cast<int64_t>(ndata * (1.0f - o.val_split)));
  report->n_train_tokens = split * n_ctx;
  rec->steps_per_epoch = split;
  rec->total_steps = split * o.epochs;

  // 6. Train.
  llama_opt_params op{};
  op.n_ctx_train = 0;
  op.param_filter = llama_opt_param_filter_all;
  op.param_filter_ud = nullptr;
  op.get_opt_pars = lr_schedule;
  op.get_opt_pars_ud = rec;
  op.optimizer_type = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  llama_opt_init(ctx, model, op);
  ggml_opt_result_t rt = ggml_opt_result_init();
  ggml_opt_result_t re = ggml_opt_result_init();
  Status st;
  for (rec->epoch = 0; rec->epoch < o.epochs && st.ok(); ++rec->epoch) {
    rec->last_ibatch = 0;
    rec->last_sum = 0;
    llama_opt_epoch(ctx, ds, rt, re, split, on_train_batch, nullptr);
    double lt = 0, le = 0, unc = 0;
    ggml_opt_result_loss(rt, &lt, &unc);
    report->epoch_train_loss.push_back(lt);
    if (split < ndata) {
      ggml_opt_result_loss(re, &le, &unc);
      report->epoch_val_loss.push_back(le);
    }
    ggml_opt_result_reset(rt);
    ggml_opt_result_reset(re);
    if (rec->stop.load()) st = Status::Cancelled("training cancelled");
  }
  ggml_opt_result_free(rt);
  ggml_opt_result_free(re);
  ggml_opt_dataset_free(ds);
  if (!st.ok()) return st;

  // 7. Save atomically.
  AtomicFile saved_by_llama(o.output, "partial.llama");  // scratch: removed on return
  const std::string& tmp = saved_by_llama.path();
  llama_model_save_to_file(model, tmp.c_str());
  // llama.cpp's saver leaves out the chat template: add it (and our record of the run).
  {
    ggml_context* data_ctx = nullptr;
    gguf_init_params gp{/*no_alloc=*/false, &data_ctx};
    GgufPtr saved(gguf_init_from_file(tmp.c_str(), gp));
    GgmlPtr data_owner(data_ctx);
    if (!saved) return Status::Internal("cannot reopen the saved model " + tmp);
    GgufPtr out(gguf_init_empty());
    gguf_set_kv(out.get(), saved.get());
    set_run_record(out.get(), o);
    // The saver writes absent special tokens as 0xFFFFFFFF, which llama.cpp warns about.
    for (int64_t i = gguf_get_n_kv(out.get()) - 1; i >= 0; --i) {
      if (gguf_get_kv_type(out.get(), i) == GGUF_TYPE_UINT32 &&
          gguf_get_val_u32(out.get(), i) == 0xFFFFFFFFu) {
        gguf_remove_key(out.get(), gguf_get_key(out.get(), i));
      }
    }
    // By name: the data context also holds the file's data blob as a tensor of its own.
    for (int64_t i = 0; i < gguf_get_n_tensors(saved.get()); ++i) {
      ggml_tensor* t = ggml_get_tensor(data_ctx, gguf_get_tensor_name(saved.get(), i));
      if (!t) return Status::Internal("the saved model lost a tensor");
      gguf_add_tensor(out.get(), t);
    }
    EDGELLM_RETURN_IF_ERROR(write_gguf_atomically(out.get(), o.output, "the model"));
  }
  return Status::Ok();
}

}  // namespace edgellm::train
