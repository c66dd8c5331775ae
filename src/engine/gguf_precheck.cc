// precheck_gguf: what the load path checks before libllama sees a file.
#include "core/sys.h"
#include "edgellm/gguf_check.h"
#include "engine/gguf_io.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"

namespace edgellm {

Status precheck_gguf(const std::string& path, uint64_t* file_bytes) {
  Result<uint64_t> size = regular_file_size(path, "model file");
  if (!size.ok()) return size.status();
  *file_bytes = *size;
  if (*size == 0) {
    return Status::CorruptData(path + " is empty (0 bytes): the download or copy did not "
                                      "finish; fetch the model again");
  }
  // Our bounded reader first: it names the damaged field, and it keeps files whose counts
  // or shapes lie away from ggml's reader and libllama.
  GgufCheckResult check = check_gguf_file(path);
  if (!check.ok()) return check.status;

  // Then ggml's reader, now safe from absurd counts, for the rules only it knows (tensor
  // data laid out in table order without gaps).
  engine::ensure_backend();
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  GgufPtr g(gguf_init_from_file(path.c_str(), params));
  if (!g) {
    const std::string why = engine::take_llama_errors();
    return Status::CorruptData(path + " has a malformed or truncated GGUF header" +
                               (why.empty() ? std::string() : " (" + why + ")") +
                               ": the file is damaged; fetch it again");
  }
  return Status::Ok();
}

}  // namespace edgellm
