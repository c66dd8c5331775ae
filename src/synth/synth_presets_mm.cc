// The multimodal presets: a text model and the projector SynthOptions::mmproj_output writes
// beside it (synth_mmproj.cc), at the shapes of the published config.json files.
#include <string>

#include "synth/synth_impl.h"

namespace edgellm {

// SmolVLM's turn format, as llama.cpp renders it (llama-chat.cpp's "smolvlm"):
// "<|im_start|>{system}\n\nUser: {text}<end_of_utterance>\nAssistant: ...", written for edgellm
// over string contents (the model card's template takes lists of parts).
constexpr const char* kSmolVlmTemplate =
    "<|im_start|>{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] }}\n\n"
    "{% else %}{% if message['role'] == 'assistant' %}Assistant{% else %}User{% endif %}: "
    "{{ message['content'] }}<end_of_utterance>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}";

// HuggingFaceTB/SmolVLM-256M-Instruct: SmolLM2-135M's decoder (30 layers of 576, 9 query and
// 3 KV heads, RMS epsilon 1e-5, RoPE base 100000, tied embeddings, 8K context) and a SigLIP
// base tower (12 layers of 768, 512-pixel tiles of 16-pixel patches) whose 1024 patches a tile
// are unshuffled by 4 into 64 tokens of 12288 and mapped to 576. Vocabulary: StarCoder2's
// 49,152 BPE tokens (SmolLM2's own is not in llama.cpp's models/; it has the same size and
// layout: <|endoftext|> at 0, <|im_start|> at 1, <|im_end|> at 2) with SmolVLM's 128 added
// tokens at its ids (<global-img> 49152, <row_R_col_C> 49153-49188, <fake_token_around_image>
// 49189, <image> 49190, reserved, <end_of_utterance> 49279, the EOS).
SynthPreset smolvlm_256m_preset() {
  SynthPreset p{"smolvlm-256m", 30, 576, 9, 3, 1536, 49280, 8192, true, 100000.0f};
  p.arch = "llama";
  p.vocab_file = "ggml-vocab-starcoder.gguf";
  p.rms_eps = 1e-5f;
  p.chat_template_text = kSmolVlmTemplate;
  p.added_tokens = {{1, "<|im_start|>"}, {2, "<|im_end|>"}, {49152, "<global-img>", 4}};
  for (int r = 1; r <= 6; ++r) {
    for (int c = 1; c <= 6; ++c) {
      p.added_tokens.push_back({49153 + (r - 1) * 6 + (c - 1),
                                "<row_" + std::to_string(r) + "_col_" + std::to_string(c) + ">", 4});
    }
  }
  p.added_tokens.push_back({49189, "<fake_token_around_image>", 4});
  p.added_tokens.push_back({49190, "<image>", 4});
  for (int i = 49191; i < 49279; ++i) {
    p.added_tokens.push_back({i, "<|reserved_special_token_" + std::to_string(i - 49191) + "|>"});
  }
  p.added_tokens.push_back({49279, "<end_of_utterance>"});
  p.eos_token = 49279;
  p.projector = {.type = "idefics3",
                 .n_layer = 12,
                 .n_embd = 768,
                 .n_head = 12,
                 .n_ff = 3072,
                 .image_size = 512,
                 .patch_size = 16,
                 .scale_factor = 4,
                 .preproc_image_size = 2048};
  return p;
}

// Qwen2-VL's turn format (ChatML with its default system prompt), as its chat template renders
// string contents; written for edgellm (llama.cpp's models/templates has no Qwen2-VL file).
constexpr const char* kQwen2VlTemplate =
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// Qwen/Qwen2-VL-2B-Instruct: Qwen2-1.5B's decoder (28 layers of 1536, 12 query and 2 KV
// heads, FFN 8960, RoPE base 1e6, tied embeddings, 32K context) with M-RoPE (sections 16, 24,
// 24 of a head's 64 rotary pairs), Qwen2's vocabulary with the vision tokens at their ids
// (<|vision_start|> 151652, <|vision_end|> 151653, <|image_pad|> 151655, ...), and its vision
// tower: 14-pixel patches over two frames, 32 blocks of 1280 with 16 heads and an MLP of 5120
// (quick GELU), 2D rotary positions, and the merger (LayerNorm, 2 x 2 patches -> 5120 -> GELU
// -> 1536).
SynthPreset qwen2vl_preset() {
  SynthPreset p{"qwen2-vl-2b", 28, 1536, 12, 2, 8960, 151936, 32768, true, 1e6f};
  p.arch = "qwen2vl";
  p.rope_sections = {16, 24, 24, 0};
  p.chat_template_text = kQwen2VlTemplate;
  const char* kVision[] = {"<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
                           "<|box_end|>",          "<|quad_start|>",     "<|quad_end|>",
                           "<|vision_start|>",     "<|vision_end|>",     "<|vision_pad|>",
                           "<|image_pad|>",        "<|video_pad|>"};
  for (int i = 0; i < 11; ++i) p.added_tokens.push_back({151646 + i, kVision[i]});
  p.projector = {.type = "qwen2vl_merger",
                 .n_layer = 32,
                 .n_embd = 1280,
                 .n_head = 16,
                 .n_ff = 5120,
                 .image_size = 560,
                 .patch_size = 14,
                 .scale_factor = 2};
  return p;
}

// fixie-ai/ultravox-v0_5-llama-3_2-1b: meta-llama/Llama-3.2-1B-Instruct's decoder (16 layers
// of 2048, 32 query and 8 KV heads of 64, FFN 8192, RMS epsilon 1e-5, RoPE base 500000, tied
// embeddings, 128K context, Llama 3's 128,256-token BPE vocabulary and its Llama 3.2 chat
// template) and openai/whisper-large-v3-turbo's encoder (128 mel bins, two convolutions, 1500
// positions, 32 pre-LN blocks of 1280 with 20 heads and FFN 5120, GELU) whose frames are
// stacked by 8 and mapped by Ultravox's projector (RMS norm, 10240 -> 4096, SwiGLU to 2048, RMS
// norm, 2048 -> 2048). EOS: <|eot_id|> (128009), as the instruct model's.
SynthPreset ultravox_preset() {
  SynthPreset p{"ultravox-v0.5-llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true,
                500000.0f};
  p.arch = "llama";
  p.vocab_file = "ggml-vocab-llama-bpe.gguf";
  p.chat_template = "meta-llama-Llama-3.2-3B-Instruct.jinja";  // the 1B's is the same
  p.rms_eps = 1e-5f;
  p.eos_token = 128009;
  p.projector = {.type = "ultravox",
                 .n_layer = 32,
                 .n_embd = 1280,
                 .n_head = 20,
                 .n_ff = 5120,
                 .eps = 1e-5f,
                 .n_mel_bins = 128,
                 .stack_factor = 8,
                 .proj_hidden = 4096};
  return p;
}

}  // namespace edgellm
