// Quantization of a GGUF model (F16/BF16/F32 in, Q4_K_M, Q8_0, ... out) through libllama's
// llama_model_quantize, stamped so that packages and runtimes can tell what wrote it.
//
// The output carries two metadata keys besides what the input had:
//   edgellm.format_version  uint32  kFormatVersion (package.h)
//   edgellm.toolchain       string  llama_build(), e.g. "v0.4.0 (80fb11a)"
//
// Thread safety: quantize_model() may run concurrently for different outputs. It runs
// libllama's quantizer on a worker thread and calls on_progress on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "edgellm/status.h"

namespace edgellm {

struct QuantizeOptions {
  std::string input;            // GGUF to read; required. Checked (check_gguf_file) first
  std::string output;           // GGUF to write; required, not the input. Written atomically
  std::string type = "Q4_K_M";  // F32, F16, BF16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0, IQ4_XS, ...
                                // (case-insensitive). Default Q4_K_M
  // Importance matrix from llama-imatrix (GGUF or the legacy .dat format). Default: none.
  std::string imatrix_path;
  int32_t n_threads = -1;  // quantization threads; -1 = physical cores
  // Quantizing an already quantized input (e.g. Q8_0 -> Q4_K_M) compounds the error; it is
  // refused unless this is set. Default false.
  bool allow_requantize = false;
  // Called about every 200 ms with the share of the output written so far, estimated from
  // the input's tensor table (it can stop short of 1 and then jump), and with 1 when done.
  // It cannot cancel: libllama's quantizer has no hook to stop mid-file. Default: none.
  std::function<void(float progress)> on_progress;
};

// Errors: the input's problems as check_gguf_file / Model::Load report them; kInvalidArgument
// for an unknown type, output == input, or a refused requantization; kNotFound /
// kCorruptData for a missing or malformed imatrix (checked before quantizing); kInternal when
// libllama's quantizer fails (its message is included). On any error nothing is left at
// `output` or beside it.
Status quantize_model(const QuantizeOptions& options);

// The stamp quantize_model writes, as found in a GGUF.
struct FormatStamp {
  uint32_t format_version = 0;  // edgellm.format_version; 0 when absent
  std::string toolchain;        // edgellm.toolchain; empty when absent
};
// Reads the stamp (header only; the file is checked with check_gguf_file first).
// kCorruptData when a key is present with the wrong type, or format_version is 0.
Result<FormatStamp> read_format_stamp(const std::string& path);

}  // namespace edgellm
