// synth_model: writes a GGUF with random weights at a preset's shapes, then quantizes it
// through libllama (llama_model_quantize) when a quantized type is asked for.
#include "edgellm/synth.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "core/sys.h"
#include "edgellm/session.h"
#include "engine/llama_glue.h"
#include "engine/gguf_io.h"
#include "core/rng.h"
#include "synth/synth_impl.h"
#include "ggml.h"
#include "gguf.h"
#include "llama-ext.h"

namespace edgellm {
namespace {

constexpr int32_t kTokenTypeUnused = 5;  // llama_token_type LLAMA_TOKEN_TYPE_UNUSED

// splitmix64: a fast, well-mixed generator; one stream per tensor keeps output stable.
using Rng = SplitMix64;

uint64_t hash_name(const char* s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 1099511628211ull;
  return h;
}

// Qwen2's tensors (Q/K/V biases), Llama's (no biases) or Qwen3's (no biases; an RMS norm over
// each head's queries and keys, attn_q_norm / attn_k_norm, of one head's width), in llama.cpp's
// names.
std::vector<TensorSpec> tensor_specs(const SynthPreset& p) {
  if (p.arch == "bert") return bert_tensor_specs(p);
  const bool qwen3 = p.arch == "qwen3";
  const bool biases = p.arch == "qwen2" || p.arch == "qwen2vl";
  const int64_t head_dim = p.head_width();
  const int64_t n_embd_q = head_dim * p.n_head;
  const int64_t n_embd_kv = head_dim * p.n_head_kv;
  std::vector<TensorSpec> t;
  t.push_back({"token_embd.weight", p.n_embd, p.n_vocab, TensorSpec::kWeight});
  t.push_back({"output_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
  if (!p.tied_embeddings) t.push_back({"output.weight", p.n_embd, p.n_vocab, TensorSpec::kWeight});
  for (int i = 0; i < p.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    t.push_back({b + "attn_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
    t.push_back({b + "attn_q.weight", p.n_embd, n_embd_q, TensorSpec::kWeight});
    if (biases) t.push_back({b + "attn_q.bias", n_embd_q, 1, TensorSpec::kBias});
    t.push_back({b + "attn_k.weight", p.n_embd, n_embd_kv, TensorSpec::kWeight});
    if (biases) t.push_back({b + "attn_k.bias", n_embd_kv, 1, TensorSpec::kBias});
    t.push_back({b + "attn_v.weight", p.n_embd, n_embd_kv, TensorSpec::kWeight});
    if (biases) t.push_back({b + "attn_v.bias", n_embd_kv, 1, TensorSpec::kBias});
    t.push_back({b + "attn_output.weight", n_embd_q, p.n_embd, TensorSpec::kWeight});
    if (qwen3) {
      t.push_back({b + "attn_q_norm.weight", head_dim, 1, TensorSpec::kOnes});
      t.push_back({b + "attn_k_norm.weight", head_dim, 1, TensorSpec::kOnes});
    }
    t.push_back({b + "ffn_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
    t.push_back({b + "ffn_gate.weight", p.n_embd, p.n_ff, TensorSpec::kWeight});
    t.push_back({b + "ffn_up.weight", p.n_embd, p.n_ff, TensorSpec::kWeight});
    t.push_back({b + "ffn_down.weight", p.n_ff, p.n_embd, TensorSpec::kWeight});
  }
  return t;
}

// Copies the tokenizer from `vocab` into `out`, padding the token list to n_vocab with
// unused "[PADn]" tokens as llama.cpp's converter does for Qwen2, then the preset's added
// tokens over it.
Status copy_tokenizer(const gguf_context* vocab, const SynthPreset& p, gguf_context* out) {
  const int32_t n_vocab = p.n_vocab;
  for (int64_t i = 0; i < gguf_get_n_kv(vocab); ++i) {
    const std::string key = gguf_get_key(vocab, i);
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const gguf_type type = gguf_get_kv_type(vocab, i);
    if (type == GGUF_TYPE_STRING) {
      gguf_set_val_str(out, key.c_str(), gguf_get_val_str(vocab, i));
    } else if (type == GGUF_TYPE_UINT32) {
      gguf_set_val_u32(out, key.c_str(), gguf_get_val_u32(vocab, i));
    } else if (type == GGUF_TYPE_INT32) {
      gguf_set_val_i32(out, key.c_str(), gguf_get_val_i32(vocab, i));
    } else if (type == GGUF_TYPE_BOOL) {
      gguf_set_val_bool(out, key.c_str(), gguf_get_val_bool(vocab, i));
    } else if (type == GGUF_TYPE_ARRAY && key != "tokenizer.ggml.tokens" &&
               key != "tokenizer.ggml.token_type") {
      const gguf_type at = gguf_get_arr_type(vocab, i);
      const size_t n = gguf_get_arr_n(vocab, i);
      if (at == GGUF_TYPE_STRING) {
        std::vector<const char*> strs(n);
        for (size_t j = 0; j < n; ++j) strs[j] = gguf_get_arr_str(vocab, i, j);
        gguf_set_arr_str(out, key.c_str(), strs.data(), n);
      } else {
        gguf_set_arr_data(out, key.c_str(), at, gguf_get_arr_data(vocab, i), n);
      }
    }
  }
  const int64_t tok_id = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  const int64_t type_id = gguf_find_key(vocab, "tokenizer.ggml.token_type");
  if (tok_id < 0 || type_id < 0) {
    return Status::CorruptData("vocabulary file has no tokenizer.ggml.tokens/token_type");
  }
  const size_t n_tok = gguf_get_arr_n(vocab, tok_id);
  if (n_tok > static_cast<size_t>(n_vocab) || gguf_get_arr_n(vocab, type_id) != n_tok) {
    return Status::InvalidArgument("vocabulary has " + std::to_string(n_tok) +
                                   " tokens, more than the preset's n_vocab " +
                                   std::to_string(n_vocab));
  }
  std::vector<std::string> pads;
  std::vector<const char*> toks(static_cast<size_t>(n_vocab));
  std::vector<int32_t> types(static_cast<size_t>(n_vocab), kTokenTypeUnused);
  const auto* src_types = static_cast<const int32_t*>(gguf_get_arr_data(vocab, type_id));
  for (size_t j = 0; j < n_tok; ++j) {
    toks[j] = gguf_get_arr_str(vocab, tok_id, j);
    types[j] = src_types[j];
  }
  pads.reserve(static_cast<size_t>(n_vocab) - n_tok);
  for (size_t j = n_tok; j < static_cast<size_t>(n_vocab); ++j) {
    pads.push_back("[PAD" + std::to_string(j) + "]");
    toks[j] = pads.back().c_str();
  }
  for (const SynthToken& t : p.added_tokens) {
    if (t.id < 0 || t.id >= n_vocab) {
      return Status::Internal("preset " + p.name + " adds token " + std::to_string(t.id) +
                              " outside its vocabulary of " + std::to_string(n_vocab));
    }
    toks[static_cast<size_t>(t.id)] = t.text.c_str();
    types[static_cast<size_t>(t.id)] = t.type;
  }
  if (p.eos_token >= 0) {
    gguf_set_val_u32(out, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(p.eos_token));
  }
  gguf_set_arr_str(out, "tokenizer.ggml.tokens", toks.data(), toks.size());
  gguf_set_arr_data(out, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types.data(), types.size());
  return Status::Ok();
}

// The preset's chat template (or the one the options name) over the vocabulary's.
Status stamp_template(const SynthPreset& p, const SynthOptions& o, gguf_context* out) {
  std::string path = o.chat_template_file;
  if (path.empty() && !p.chat_template.empty()) {
    path = (std::filesystem::path(o.vocab_path).parent_path() / "templates" / p.chat_template)
               .string();
  }
  if (path.empty()) {
    if (!p.chat_template_text.empty()) {
      gguf_set_val_str(out, "tokenizer.chat_template", p.chat_template_text.c_str());
    }
    return Status::Ok();
  }
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f || text.str().empty()) {
    return Status::NotFound("cannot read the chat template " + path +
                            ": run scripts/setup.sh (it fetches llama.cpp's models/templates) "
                            "or pass another template file");
  }
  gguf_set_val_str(out, "tokenizer.chat_template", text.str().c_str());
  return Status::Ok();
}

void set_decoder_hparams(const SynthPreset& p, bool f32, gguf_context* out);

void set_hparams(const SynthPreset& p, const SynthOptions& o, bool f32, gguf_context* out) {
  if (p.arch == "bert") {
    set_bert_hparams(p, f32, out);
  } else {
    set_decoder_hparams(p, f32, out);
  }
  if (p.add_eos) {
    gguf_set_val_bool(out, "tokenizer.ggml.add_bos_token", false);
    gguf_set_val_bool(out, "tokenizer.ggml.add_eos_token", true);
  }
  if (!p.query_prefix.empty()) {
    gguf_set_val_str(out, "edgellm.embedding.query_prefix", p.query_prefix.c_str());
  }
  if (!p.document_prefix.empty()) {
    gguf_set_val_str(out, "edgellm.embedding.document_prefix", p.document_prefix.c_str());
  }
  gguf_set_val_str(out, "edgellm.synth.preset", p.name.c_str());
  gguf_set_val_u64(out, "edgellm.synth.seed", o.seed);
}

// <arch>.* hyperparameters of a Qwen2, Qwen3 or Llama decoder, the keys llama.cpp's converter
// writes.
void set_decoder_hparams(const SynthPreset& p, bool f32, gguf_context* out) {
  auto key = [&](const char* name) { return p.arch + "." + name; };
  auto u32 = [&](const char* name, int32_t v) {
    gguf_set_val_u32(out, key(name).c_str(), static_cast<uint32_t>(v));
  };
  gguf_set_val_str(out, "general.architecture", p.arch.c_str());
  gguf_set_val_str(out, "general.name", ("edgellm-synth-" + p.name).c_str());
  gguf_set_val_u32(out, "general.file_type", f32 ? LLAMA_FTYPE_ALL_F32 : LLAMA_FTYPE_MOSTLY_F16);
  u32("context_length", p.n_ctx_train);
  u32("embedding_length", p.n_embd);
  u32("block_count", p.n_layer);
  u32("feed_forward_length", p.n_ff);
  u32("attention.head_count", p.n_head);
  u32("attention.head_count_kv", p.n_head_kv);
  if (p.head_dim > 0) {  // written by the converter only when config.json has head_dim
    u32("attention.key_length", p.head_dim);
    u32("attention.value_length", p.head_dim);
  }
  gguf_set_val_f32(out, key("rope.freq_base").c_str(), p.rope_freq_base);
  gguf_set_val_f32(out, key("attention.layer_norm_rms_epsilon").c_str(), p.rms_eps);
  if (p.arch == "llama") {  // the converter's LlamaModel writes both
    u32("rope.dimension_count", p.head_width());
    u32("vocab_size", p.n_vocab);
  }
  if (p.pooling >= 0) u32("pooling_type", p.pooling);
  if (!p.rope_sections.empty()) {
    gguf_set_arr_data(out, key("rope.dimension_sections").c_str(), GGUF_TYPE_INT32,
                      p.rope_sections.data(), p.rope_sections.size());
  }
}

// The types llama_model_quantize gives each tensor of `preset` for `ftype`, through libllama's
// own per-tensor rules (llama-ext.h: the quantizer's type choice on a mock model), applied
// to `out`'s tensor table.
Status set_quantized_types(const SynthPreset& p, llama_ftype ftype,
                           const std::vector<ggml_tensor*>& tensors, gguf_context* out) {
  const uint32_t head_dim = static_cast<uint32_t>(p.head_width());
  llama_quant_model_desc d{p.arch.c_str(),
                           static_cast<uint32_t>(p.n_embd),
                           static_cast<uint32_t>(p.n_ff),
                           static_cast<uint32_t>(p.n_layer),
                           static_cast<uint32_t>(p.n_head),
                           static_cast<uint32_t>(p.n_head_kv),
                           0,
                           head_dim,
                           head_dim};
  llama_model* mock = llama_quant_model_from_metadata(&d);
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = ftype;
  quantize_state_impl* qs = llama_quant_init(mock, &qp);
  Status st;
  try {
    std::vector<ggml_tensor*> quantizable;
    for (ggml_tensor* t : tensors) {
      if (llama_quant_tensor_allows_quantization(qs, t)) quantizable.push_back(t);
    }
    std::vector<ggml_type> types(quantizable.size());
    llama_quant_compute_types(qs, ftype, quantizable.data(), types.data(), quantizable.size());
    for (size_t i = 0; i < quantizable.size(); ++i) {
      // gguf_set_tensor_type asserts (aborts) on a row size its type cannot hold.
      if (quantizable[i]->ne[0] % ggml_blck_size(types[i]) != 0) {
        st = Status::Internal(std::string("libllama chose ") + ggml_type_name(types[i]) +
                              " for " + ggml_get_name(quantizable[i]) + ", whose rows it cannot hold");
        break;
      }
      gguf_set_tensor_type(out, ggml_get_name(quantizable[i]), types[i]);
    }
  } catch (const std::exception& e) {
    st = Status::Internal(std::string("libllama cannot choose tensor types: ") + e.what());
  }
  llama_quant_free(qs);
  llama_model_free(mock);
  return st;
}

// Writes the F16 (or F32) base model with random weights; with header_only, the header of the
// `ftype` model and a hole of the data's size instead.
Status write_base(const SynthPreset& p, const SynthOptions& o, bool f32, llama_ftype ftype,
                  const std::string& path) {
  engine::ensure_backend();
  const std::string vocab_path = preset_vocab_path(p, o.vocab_path);
  gguf_init_params vp{/*no_alloc=*/true, /*ctx=*/nullptr};
  GgufPtr vocab(gguf_init_from_file(vocab_path.c_str(), vp));
  if (!vocab) {
    return Status::NotFound("cannot read the vocabulary GGUF " + vocab_path +
                            ": run scripts/setup.sh (it fetches llama.cpp's models/) or pass --vocab");
  }
  GgufPtr out(gguf_init_empty());
  EDGELLM_RETURN_IF_ERROR(copy_tokenizer(vocab.get(), p, out.get()));
  if (o.no_chat_template) {
    gguf_remove_key(out.get(), "tokenizer.chat_template");
  } else {
    EDGELLM_RETURN_IF_ERROR(stamp_template(p, o, out.get()));
  }
  set_hparams(p, o, f32, out.get());

  const std::vector<TensorSpec> specs = tensor_specs(p);
  ggml_init_params ip{specs.size() * ggml_tensor_overhead() + 1024, nullptr, /*no_alloc=*/true};
  GgmlPtr gctx(ggml_init(ip));
  uint64_t total = 0;
  const std::vector<ggml_tensor*> tensors = add_tensor_table(specs, f32, gctx.get(), out.get(), &total);
  if (o.header_only && !f32 && ftype != LLAMA_FTYPE_MOSTLY_F16) {
    if (p.arch == "bert") {
      return Status::InvalidArgument(
          "--header-only with a quantized type is for the decoder presets; write " + p.name +
          " as F16 or F32, or in full");
    }
    EDGELLM_RETURN_IF_ERROR(set_quantized_types(p, ftype, tensors, out.get()));
    gguf_set_val_u32(out.get(), "general.file_type", static_cast<uint32_t>(ftype));
    gguf_set_val_u32(out.get(), "general.quantization_version", GGML_QNT_VERSION);
  }

  if (o.header_only) {
    GgufStreamWriter w;
    EDGELLM_RETURN_IF_ERROR(w.Open(out.get(), path));
    // The data section as a hole: the offset of the last tensor plus its padded size.
    const int64_t last = gguf_get_n_tensors(out.get()) - 1;
    const size_t align = gguf_get_alignment(out.get());
    size_t data = gguf_get_tensor_offset(out.get(), last) + gguf_get_tensor_size(out.get(), last);
    data = (data + align - 1) / align * align;
    const size_t meta = gguf_get_meta_size(out.get());
    const bool ok = w.ok() && std::fflush(w.file()) == 0 &&
                    ::ftruncate(::fileno(w.file()), static_cast<off_t>(meta + data)) == 0;
    if (!ok) {
      return Status::ResourceExhausted("writing " + path + " failed: " + std::strerror(errno));
    }
    EDGELLM_RETURN_IF_ERROR(w.Close());
    if (o.on_progress) o.on_progress("header", 1.0f);
    return Status::Ok();
  }

  return write_random_gguf(out.get(), specs, tensors, total, o.seed, path, "weights",
                           o.on_progress);
}

}  // namespace

void fill_values(const TensorSpec& t, uint64_t seed, int64_t first, float* dst, int64_t n) {
  if (t.init == TensorSpec::kOnes) {
    for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f;
    return;
  }
  // Uniform with std 0.02 (the usual init scale); a fresh stream per tensor and chunk.
  const float a = 0.02f * std::sqrt(3.0f);
  Rng rng{hash_name(t.name.c_str(), seed) + static_cast<uint64_t>(first)};
  for (int64_t i = 0; i < n; ++i) dst[i] = (rng.uniform() * 2.0f - 1.0f) * a;
}

std::vector<ggml_tensor*> add_tensor_table(const std::vector<TensorSpec>& specs, bool f32,
                                           ggml_context* ctx, gguf_context* out, uint64_t* total) {
  std::vector<ggml_tensor*> tensors;
  *total = 0;
  for (const TensorSpec& s : specs) {
    const bool vec = s.is_vector();
    const ggml_type type = (vec || f32 || s.keep_f32) ? GGML_TYPE_F32 : GGML_TYPE_F16;
    ggml_tensor* t = vec ? ggml_new_tensor_1d(ctx, type, s.ne0)
                         : ggml_new_tensor_4d(ctx, type, s.ne0, s.ne1, s.ne2, s.ne3);
    ggml_set_name(t, s.name.c_str());
    gguf_add_tensor(out, t);
    tensors.push_back(t);
    *total += ggml_nbytes(t);
  }
  return tensors;
}

Status write_random_gguf(gguf_context* out, const std::vector<TensorSpec>& specs,
                         const std::vector<ggml_tensor*>& tensors, uint64_t total, uint64_t seed,
                         const std::string& path, const char* stage,
                         const std::function<bool(const char*, float)>& on_progress) {
  GgufStreamWriter w;
  EDGELLM_RETURN_IF_ERROR(w.Open(out, path));
  constexpr int64_t kChunk = 1 << 20;
  std::vector<float> vals(kChunk);
  std::vector<ggml_fp16_t> halfs(kChunk);
  uint64_t written = 0;
  for (size_t i = 0; w.ok() && i < specs.size(); ++i) {
    const int64_t n = ggml_nelements(tensors[i]);
    const bool is_f32 = tensors[i]->type == GGML_TYPE_F32;
    for (int64_t off = 0; w.ok() && off < n; off += kChunk) {
      const int64_t m = std::min(kChunk, n - off);
      fill_values(specs[i], seed, off, vals.data(), m);
      if (is_f32) {
        w.Write(vals.data(), sizeof(float) * static_cast<size_t>(m));
      } else {
        ggml_fp32_to_fp16_row(vals.data(), halfs.data(), m);
        w.Write(halfs.data(), sizeof(ggml_fp16_t) * static_cast<size_t>(m));
      }
      written += static_cast<uint64_t>(m) * (is_f32 ? 4 : 2);
      if (on_progress && !on_progress(stage, static_cast<float>(written) / total)) {
        return Status::Cancelled("synth cancelled");
      }
    }
    w.EndTensor();
  }
  return w.Close("check free disk space (" + std::to_string(total >> 20) + " MiB needed)");
}



constexpr const char* kQwen25Template = "Qwen-Qwen2.5-7B-Instruct.jinja";

const std::vector<SynthPreset>& synth_presets() {
  // Shapes from the models' published config.json files.
  static const std::vector<SynthPreset> kPresets = {
      {"tiny", 2, 256, 4, 2, 512, 151936, 32768, true, 1e6f},
      {"qwen2.5-0.5b", 24, 896, 14, 2, 4864, 151936, 32768, true, 1e6f, kQwen25Template},
      {"qwen2.5-1.5b", 28, 1536, 12, 2, 8960, 151936, 32768, true, 1e6f, kQwen25Template},
      {"qwen2.5-3b", 36, 2048, 16, 2, 11008, 151936, 32768, true, 1e6f, kQwen25Template},
      {"qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064, 32768, false, 1e6f, kQwen25Template},
      // DeepSeek-R1-Distill-Qwen-1.5B: Qwen2.5-Math-1.5B's shapes, untied output, RoPE base
      // 10000, 128K context; its template drops earlier <think> reasoning from the history.
      {"deepseek-r1-distill-qwen-1.5b", 28, 1536, 12, 2, 8960, 151936, 131072, false, 1e4f,
       "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"},
      // Encoders (BERT): sentence-transformers/all-MiniLM-L6-v2 (mean pooling),
      // BAAI/bge-small-en-v1.5 (CLS pooling, its query instruction) and BAAI/bge-reranker-base
      // (a classification head, rank pooling; its own vocabulary is XLM-R's 250,002
      // SentencePiece tokens, which llama.cpp's models/ does not carry: this one has the
      // WordPiece vocabulary the others use).
      {"minilm-l6", 6, 384, 12, 12, 1536, 30522, 512, false, 0.0f, "", "bert", 1, false,
       "ggml-vocab-bert-bge.gguf"},
      {"bge-small-en-v1.5", 12, 384, 12, 12, 1536, 30522, 512, false, 0.0f, "", "bert", 2,
       false, "ggml-vocab-bert-bge.gguf",
       "Represent this sentence for searching relevant passages: "},
      {"bge-reranker-base", 12, 768, 12, 12, 3072, 30522, 512, false, 0.0f, "", "bert", 4, true,
       "ggml-vocab-bert-bge.gguf"},
      // Qwen/Qwen3-Embedding-0.6B: Qwen3-0.6B's decoder (heads of 128, 16 query and 8 KV heads
      // on a 1024-wide stream, tied embeddings) with LAST pooling over the <|endoftext|> its
      // tokenizer appends, Qwen3's chat template, and its instruction for queries (documents
      // get none), as its model card builds them: "Instruct: {task}\nQuery:{query}".
      {.name = "qwen3-embedding-0.6b",
       .n_layer = 28,
       .n_embd = 1024,
       .n_head = 16,
       .n_head_kv = 8,
       .n_ff = 3072,
       .n_vocab = 151936,
       .n_ctx_train = 32768,
       .tied_embeddings = true,
       .rope_freq_base = 1e6f,
       .chat_template = "Qwen-Qwen3-0.6B.jinja",
       .arch = "qwen3",
       .pooling = 3,
       .query_prefix = "Instruct: Given a web search query, retrieve relevant passages that "
                       "answer the query\nQuery:",
       .head_dim = 128,
       .add_eos = true},
      smolvlm_256m_preset(),
      qwen2vl_preset(),
      ultravox_preset(),
  };
  return kPresets;
}

Result<SynthPreset> find_synth_preset(const std::string& name) {
  std::string names;
  for (const SynthPreset& p : synth_presets()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  return Status::InvalidArgument("unknown preset '" + name + "': choose one of " + names);
}

Status synth_model(const SynthOptions& o) {
  Result<SynthPreset> preset = find_synth_preset(o.preset);
  if (!preset.ok()) return preset.status();
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass -o FILE.gguf");
  if (!o.mmproj_output.empty() && preset->projector.type.empty()) {
    return Status::InvalidArgument("preset " + preset->name + " has no projector: --mmproj is "
                                   "for multimodal presets (smolvlm-256m, qwen2-vl-2b, ultravox-v0.5-llama-3.2-1b)");
  }
  if (!o.mmproj_output.empty() && o.mmproj_output == o.output) {
    return Status::InvalidArgument("the projector and the model cannot both be written to " +
                                   o.output);
  }
  llama_ftype ftype;
  if (!engine::ftype_from_name(o.type, &ftype)) {
    return Status::InvalidArgument("unknown type '" + o.type +
                                   "': use F32, F16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, ...");
  }
  const bool base_only =
      o.header_only || ftype == LLAMA_FTYPE_ALL_F32 || ftype == LLAMA_FTYPE_MOSTLY_F16;
  // Unique temporaries: concurrent writers of the same output never share a partial file.
  AtomicFile out(o.output);
  AtomicFile tmp_base(o.output, "base.partial");  // scratch: removed on return
  const std::string& base = base_only ? out.path() : tmp_base.path();
  Status st = write_base(*preset, o, ftype == LLAMA_FTYPE_ALL_F32, ftype, base);
  if (st.ok() && !base_only) {
    if (o.on_progress && !o.on_progress("quantize", 0.0f)) st = Status::Cancelled("synth cancelled");
    if (st.ok()) {
      llama_model_quantize_params qp = llama_model_quantize_default_params();
      qp.ftype = ftype;
      qp.nthread = o.n_threads > 0 ? o.n_threads : physical_cores();
      engine::take_llama_errors();
      if (llama_model_quantize(base.c_str(), out.path().c_str(), &qp) != 0) {
        st = Status::Internal("llama_model_quantize to " + o.type + " failed: " +
                              engine::take_llama_errors());
      } else if (o.on_progress) {
        o.on_progress("quantize", 1.0f);
      }
    }
  }
  if (!st.ok()) return st;
  if (!o.mmproj_output.empty()) {
    AtomicFile mm(o.mmproj_output);
    EDGELLM_RETURN_IF_ERROR(write_mmproj(*preset, o, mm.path()));
    EDGELLM_RETURN_IF_ERROR(mm.Commit("the projector"));
  }
  return out.Commit("the model");
}

}  // namespace edgellm
