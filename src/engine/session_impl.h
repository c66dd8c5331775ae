// Internals of Session (engine-private).
#pragma once

#include <atomic>

#include "edgellm/session.h"
#include "engine/model_impl.h"
#include "llama.h"

namespace edgellm {

struct Session::Impl {
  const Model::Impl* model = nullptr;
  SessionOptions options;  // resolved: no -1 left
  llama_context* ctx = nullptr;
  std::atomic<bool> cancel{false};
  double warmup_ms = 0;

  ~Impl();
  // Creates the llama context if ReleaseKv() dropped it.
  Status EnsureContext();
  Status Warmup();
  Result<Generation> Generate(std::string_view prompt, const GenerateOptions& o,
                              const TextSink& sink);
};

Result<std::string> format_chat(const llama_model* model, std::string_view user,
                                std::string_view system,
                                const std::vector<ChatMessage>& history = {});

}  // namespace edgellm
