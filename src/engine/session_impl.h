// Internals of Session (engine-private).
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "edgellm/session.h"
#include "engine/lora_impl.h"
#include "engine/model_impl.h"
#include "llama.h"

namespace edgellm {

struct Session::Impl {
  const Model::Impl* model = nullptr;
  SessionOptions options;  // resolved: no -1 left
  llama_context* ctx = nullptr;
  std::atomic<bool> cancel{false};
  std::atomic<bool> generating{false};
  std::vector<std::pair<std::shared_ptr<const LoraAdapter>, float>> loras;
  double warmup_ms = 0;

  ~Impl();
  // Creates the llama context if ReleaseKv() dropped it.
  Status EnsureContext();
  Status Warmup();
  // Hands the adapter set to the context (no-op without a context: EnsureContext applies it).
  void ApplyLoras();
  Result<Generation> Generate(std::string_view prompt, const GenerateOptions& o,
                              const TextSink& sink);
  // The prompt's tokens: rendered with the chat template when o.chat, tokenized with the
  // model's special tokens. kInvalidArgument when nothing is left.
  Result<std::vector<llama_token>> PromptTokens(std::string_view prompt,
                                                const GenerateOptions& o) const;
  // A prompt longer than the context: kInvalidArgument, or cut per o.truncate_prompt.
  Status FitPrompt(std::vector<llama_token>* toks, const GenerateOptions& o, Stats* st) const;
};

Result<std::string> format_chat(const llama_model* model, std::string_view user,
                                std::string_view system,
                                const std::vector<ChatMessage>& history = {});

}  // namespace edgellm
