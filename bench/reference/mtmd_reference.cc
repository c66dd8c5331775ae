// The llama.cpp side of edgellm-mediabench (mtmd_reference.h).
#include "reference/mtmd_reference.h"

#include <algorithm>
#include <chrono>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

struct MtmdReference::Impl {
  llama_model* model = nullptr;
  mtmd_context* mctx = nullptr;
  int threads = 2;
  ~Impl() {
    if (mctx) mtmd_free(mctx);
    if (model) llama_model_free(model);
  }
};

MtmdReference::MtmdReference(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MtmdReference::~MtmdReference() = default;

std::unique_ptr<MtmdReference> MtmdReference::Load(const std::string& model,
                                                   const std::string& mmproj, int threads,
                                                   int image_max_tokens, std::string* why) {
  auto impl = std::make_unique<Impl>();
  impl->threads = threads;
  llama_model_params mp = llama_model_default_params();
  impl->model = llama_model_load_from_file(model.c_str(), mp);
  if (!impl->model) {
    *why = "llama.cpp could not load " + model;
    return nullptr;
  }
  mtmd_context_params p = mtmd_context_params_default();
  p.use_gpu = false;
  p.n_threads = threads;
  p.print_timings = false;
  p.warmup = false;
  if (image_max_tokens > 0) p.image_max_tokens = image_max_tokens;
  impl->mctx = mtmd_init_from_file(mmproj.c_str(), impl->model, p);
  if (!impl->mctx) {
    *why = "mtmd could not load " + mmproj;
    return nullptr;
  }
  return std::unique_ptr<MtmdReference>(new MtmdReference(std::move(impl)));
}

bool MtmdReference::Run(const std::string& prompt, const std::vector<uint8_t>& bytes, int n_ctx,
                        Phases* ph, std::string* why) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = 512;
  cp.n_threads = cp.n_threads_batch = impl_->threads;
  llama_context* ctx = llama_init_from_model(impl_->model, cp);
  if (!ctx) {
    *why = "llama.cpp could not create a context";
    return false;
  }
  mtmd_context* m = impl_->mctx;
  *ph = {};
  bool ok = false;
  const auto t0 = Clock::now();
  auto t = t0;
  mtmd_bitmap* bm = mtmd_helper_bitmap_init_from_buf(m, bytes.data(), bytes.size(),
                                                     /*placeholder=*/false,
                                                     mtmd_helper_init_opt_default())
                        .bitmap;
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
  const mtmd_bitmap* bms[] = {bm};
  llama_pos n_past = 0;
  if (!bm) {
    *why = "mtmd could not decode the media";
  } else if (mtmd_tokenize(m, chunks, &text, bms, 1) != 0) {
    *why = "mtmd could not tokenize the prompt";
  } else {
    ph->decode_ms = ms_since(t);
    ok = true;
    for (size_t i = 0; ok && i < mtmd_input_chunks_size(chunks); ++i) {
      const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
      if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
        t = Clock::now();
        size_t n = 0;
        const llama_token* toks = mtmd_input_chunk_get_tokens_text(c, &n);
        std::vector<llama_token> v(toks, toks + n);
        for (size_t at = 0; ok && at < v.size(); at += 512) {
          const int32_t k = static_cast<int32_t>(std::min<size_t>(512, v.size() - at));
          std::vector<llama_pos> pos(static_cast<size_t>(k));
          for (int32_t j = 0; j < k; ++j) pos[static_cast<size_t>(j)] = n_past + j;
          llama_batch b = llama_batch_get_one(v.data() + at, k);
          b.pos = pos.data();
          ok = llama_decode(ctx, b) == 0;
          n_past += k;
        }
        ph->prefill_ms += ms_since(t);
        if (!ok) *why = "llama_decode failed";
        continue;
      }
      t = Clock::now();
      ok = mtmd_encode_chunk(m, c) == 0;
      ph->encode_ms += ms_since(t);
      if (!ok) {
        *why = "mtmd could not encode the media";
        break;
      }
      t = Clock::now();
      llama_pos next = n_past;
      ok = mtmd_helper_decode_image_chunk(m, ctx, c, mtmd_get_output_embd(m), n_past, 0, 512,
                                          &next, nullptr, nullptr) == 0;
      n_past = next;
      ph->prefill_ms += ms_since(t);
      if (!ok) *why = "mtmd could not decode the embeddings";
    }
  }
  if (ok) {
    llama_sampler* greedy = llama_sampler_init_greedy();
    llama_sampler_sample(greedy, ctx, -1);
    ph->ttft_ms = ms_since(t0);
    llama_sampler_free(greedy);
  }
  mtmd_input_chunks_free(chunks);
  if (bm) mtmd_bitmap_free(bm);
  llama_free(ctx);
  return ok;
}

}  // namespace bench
