// Shared by the glue's .cc files only (they are compiled with llama.cpp common's include
// paths): the ChatTemplates behind llama_glue.h's opaque pointer.
#pragma once

#include "chat.h"  // llama.cpp common
#include "engine/llama_glue.h"

namespace edgellm::engine {

class ChatTemplates {
 public:
  common_chat_templates_ptr t;
};

}  // namespace edgellm::engine
