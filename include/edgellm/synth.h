// Synthetic fixture models: deterministic random weights at a real architecture's
// exact shapes, with a real tokenizer. For tests, benchmarks, and for users who want
// to know whether a model of that shape fits and how fast it runs before downloading it.
//
// Thread safety: synth_model() may run concurrently for different outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

// A vision or audio projector (a llama.cpp "mmproj" GGUF, read by its mtmd library) written
// beside a multimodal preset's text model: the encoder at the real model's shapes, random
// weights, F16 matrices and F32 norms, biases and embeddings as llama.cpp's converter writes.
struct SynthProjector {
  // clip.projector_type. "idefics3": a SigLIP vision tower (learned positions, pre-LN blocks,
  // tanh GELU), a pixel unshuffle by `scale_factor` and one linear map to the text width
  // (SmolVLM's). "qwen2vl_merger": Qwen2-VL's vision tower (a two-frame patch embedding, 2D
  // rotary positions, pre-LN blocks, quick GELU) and its merger (2 x 2 patches to one token
  // through a LayerNorm and a two-layer MLP); the text model places the tokens with M-RoPE.
  // "ultravox": a Whisper encoder (log-mel input, two convolutions, learned
  // positions, pre-LN blocks) whose frames are stacked by `stack_factor` and mapped through
  // Ultravox's SwiGLU projector (Ultravox's). "" for presets without a projector.
  std::string type = "";
  int32_t n_layer = 0, n_embd = 0, n_head = 0, n_ff = 0;
  int32_t image_size = 0;          // the tile the tower sees, pixels a side
  int32_t patch_size = 0;
  int32_t scale_factor = 0;        // pixel unshuffle: scale_factor^2 patches per token
  int32_t preproc_image_size = 0;  // longest edge images are resized to before tiling
  float eps = 1e-6f;               // LayerNorm epsilon
  // Audio encoders: the mel bins of the front end, the frames stacked into one token, and
  // the width of the projector's SwiGLU input (its output is half that).
  int32_t n_mel_bins = 0;
  int32_t stack_factor = 0;
  int32_t proj_hidden = 0;
};

// A token the preset puts over the vocabulary file's (at `id`, which may be past its end):
// the added tokens of the model it mimics. llama_token_type: 3 control, 4 user-defined.
struct SynthToken {
  int32_t id;
  std::string text;
  int32_t type = 3;
};

struct SynthPreset {
  std::string name;
  int32_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx_train;
  bool tied_embeddings;  // no output.weight: logits reuse token_embd (as Qwen2.5 <= 3B)
  float rope_freq_base;
  // The chat template stamped into the file: a file of llama.cpp's models/templates (the real
  // template of the model this preset mimics), or "" for the vocabulary file's own.
  std::string chat_template = "";
  // llama.cpp's architecture: "qwen2" (chat models), "llama" (no Q/K/V biases: SmolVLM's
  // text model), "qwen3" (decoders with RMS norms on each
  // head's queries and keys and no Q/K/V biases: the Qwen3-Embedding preset) or "bert"
  // (encoders for embeddings and rerank: learned positions, LayerNorm with biases, GELU,
  // non-causal attention).
  std::string arch = "qwen2";
  // For embedding models: the pooling written to the file (llama.cpp's llama_pooling_type:
  // 1 mean, 2 CLS, 3 last, 4 rank; -1 none, as a chat model), whether the file carries a
  // classification head (cls, cls.output: a reranker's), and the vocabulary file it uses
  // instead of SynthOptions::vocab_path's (read from the same folder: llama.cpp's models/).
  int32_t pooling = -1;
  bool classifier = false;
  std::string vocab_file = "";
  // The instruction the model's authors put before a search query (and before documents),
  // stamped as edgellm.embedding.query_prefix / document_prefix; the Embedder reads them.
  std::string query_prefix = "";
  std::string document_prefix = "";
  // Width of one attention head (<arch>.attention.key_length / value_length). Default 0:
  // n_embd / n_head. Qwen3 decouples it (128 heads at 1024 wide, 16 query heads: 2048).
  int32_t head_dim = 0;
  // tokenizer.ggml.add_eos_token: the tokenizer closes every text with the vocabulary's EOS
  // (<|endoftext|> in Qwen's), as Qwen3-Embedding's does: its LAST pooling reads that token.
  bool add_eos = false;
  // <arch>.attention.layer_norm_rms_epsilon. Default 1e-6 (Qwen's); SmolLM2's is 1e-5.
  float rms_eps = 1e-6f;
  // Tokens written over the vocabulary file's, and its EOS (-1: the file's).
  std::vector<SynthToken> added_tokens = {};
  int32_t eos_token = -1;
  // A chat template given inline, for models whose template llama.cpp's models/templates
  // lacks (used when chat_template is ""). Written for edgellm from the model's documented
  // turn format.
  std::string chat_template_text = "";
  // The projector a multimodal preset writes with SynthOptions::mmproj_output.
  SynthProjector projector = {};
  // <arch>.rope.dimension_sections: M-RoPE's split of a head's rotary pairs into time, height,
  // width and a fourth section (Qwen2-VL: 16, 24, 24, 0). Empty for 1D RoPE.
  std::vector<int32_t> rope_sections = {};
  int32_t head_width() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
};

// The built-in presets: tiny, qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-3b, qwen2.5-7b,
// deepseek-r1-distill-qwen-1.5b (chat models, Qwen2 vocabulary); minilm-l6, bge-small-en-v1.5
// (embedding encoders) and bge-reranker-base (a reranker), with the WordPiece vocabulary of
// llama.cpp's models/ggml-vocab-bert-bge.gguf; qwen3-embedding-0.6b (a decoder embedder with
// LAST pooling, Qwen2 vocabulary); smolvlm-256m (SmolVLM-256M-Instruct: a llama text model
// and, with SynthOptions::mmproj_output, its idefics3 vision projector; StarCoder's 49,152-token
// BPE vocabulary, the same size as SmolLM2's, under SmolVLM's 128 added tokens);
// qwen2-vl-2b (Qwen2-VL-2B-Instruct: a Qwen2 text model with M-RoPE and its vision tower and
// merger); ultravox-v0.5-llama-3.2-1b (Llama-3.2-1B-Instruct with Llama 3's vocabulary and, with
// mmproj_output, Ultravox's Whisper-large-v3-turbo audio encoder and projector).
const std::vector<SynthPreset>& synth_presets();
Result<SynthPreset> find_synth_preset(const std::string& name);

struct SynthOptions {
  std::string preset;        // a name from synth_presets(); required
  std::string type = "Q4_K_M";  // F32, F16, Q8_0, Q4_0, Q4_K_M, ... Default Q4_K_M
  std::string output;        // path of the GGUF to write; required. Written atomically.
  uint64_t seed = 1;         // same preset + type + seed -> same weights. Default 1
  // A GGUF holding the tokenizer (llama.cpp's models/ggml-vocab-qwen2.gguf). Required.
  std::string vocab_path;
  int32_t n_threads = -1;    // quantization threads; -1 = physical cores
  // A Jinja chat template file to stamp instead of the preset's. Default "": the preset's, read
  // from the `templates` folder beside the vocabulary file (llama.cpp's models/templates).
  std::string chat_template_file;
  // No chat template at all, as a base (not instruction-tuned) model. Default false.
  bool no_chat_template = false;
  // Write only the header: the tensor table with the types `type` would give each tensor
  // (libllama's own per-tensor choice, e.g. Q6_K for the embeddings of a Q4_K_M), and the
  // weight data as a hole (a sparse file of the full size: no disk blocks, no random
  // weights, no quantization; instant even for 7B). For plan_memory and `plan --tiers`:
  // a metadata-only load sees exactly what a real file of this preset and type holds.
  // Loading its weights gives all-zero weights. Default false.
  bool header_only = false;
  // Also write the preset's projector (mmproj GGUF, F16) to this path, atomically. Only for
  // presets with one (smolvlm-256m, qwen2-vl-2b, ultravox-v0.5-llama-3.2-1b). Default "": none.
  std::string mmproj_output;
  // Called with a stage ("weights", "quantize", "mmproj") and its progress in [0, 1].
  // Return false to cancel (kCancelled; nothing is left at `output`).
  std::function<bool(const char* stage, float progress)> on_progress;
};

Status synth_model(const SynthOptions& options);

// A random LoRA adapter for a preset's shapes (the same architecture and tensor names a
// synth_model() of that preset has, whatever its type): A and B pairs for the attention and
// feed-forward matrices of every layer, F32, deterministic per seed. Strong enough that greedy
// output changes at scale 1; scale it down to blend.
struct SynthLoraOptions {
  std::string preset;     // a name from synth_presets(); required
  std::string output;     // path of the adapter GGUF; required. Written atomically.
  int32_t rank = 8;       // 1..256. Default 8
  float alpha = 16;       // adapter.lora.alpha; the delta is scaled by alpha / rank. Default 16
  uint64_t seed = 1;      // Default 1
};

Status synth_lora(const SynthLoraOptions& options);

}  // namespace edgellm
