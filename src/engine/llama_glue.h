// Process-wide llama.cpp set-up and helpers shared by the engine files.
// This directory is the only place that includes llama.h.
#pragma once

#include <string>

#include "llama.h"

namespace edgellm::engine {

// Initializes the llama.cpp backend once and routes its log through edgellm.
void ensure_backend();
// Whether llama.cpp's own log lines are echoed to stderr (process-wide; default off).
void set_llama_verbose(bool verbose);
// The last error/warning lines llama.cpp logged on this thread, then cleared.
std::string take_llama_errors();

// Context parameters edgellm uses everywhere (sessions and the planner's dry run), so the
// planner sizes exactly the context a Session creates.
llama_context_params context_params(int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                                    ggml_type kv_type);

const char* ftype_name(int ftype);  // "Q4_K_M", "F16", ...; "unknown" otherwise
bool ftype_from_name(const std::string& name, llama_ftype* out);
const char* vocab_type_name(enum llama_vocab_type type);

}  // namespace edgellm::engine
