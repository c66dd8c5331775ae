// Internals of LoraAdapter shared with Session (engine-private).
#pragma once

#include <memory>

#include "edgellm/lora.h"
#include "engine/model_impl.h"
#include "llama.h"

namespace edgellm {

struct LoraAdapter::Impl {
  llama_adapter_lora* adapter = nullptr;
  const Model::Impl* model = nullptr;
  std::weak_ptr<int> model_alive;
  LoraInfo info;
  ~Impl();
};

}  // namespace edgellm
