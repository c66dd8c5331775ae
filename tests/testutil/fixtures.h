// Test fixtures: synth models generated on first use and cached in the build tree.
#pragma once

#include <string>
#include <string_view>

#include "edgellm/session.h"

namespace testutil {

// True in the ASan+UBSan twins. The twins are for what a sanitizer can find (parsers,
// lifetimes, buffers); a long loop that repeats the same code paths for a statistical or
// many-turn property runs fewer rounds there, and its full length in the plain binary.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Path of a synth model (preset, type), created with seed 1 if missing. Aborts the
// test (ADD_FAILURE + empty string) when generation fails.
std::string synth_model(const std::string& preset, const std::string& type);
// A multimodal preset's text model (type) and its F16 projector, created with seed 1 if
// missing: the text model's path; the projector's is synth_mmproj_path(preset).
std::string synth_multimodal(const std::string& preset, const std::string& type);
std::string synth_mmproj_path(const std::string& preset);
// A fresh empty directory under the fixture dir for one test's scratch files.
std::string scratch_dir(const std::string& name);
// Writes `bytes` to `path`.
void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
// The vocabulary GGUF synth uses.
std::string vocab_path();
std::string fixture_dir();

// The reference for anything served over loopback: `prompt` on a fresh local Session over
// `model` (n_ctx 512, as the tests' servers use). Fails the test when it cannot run.
edgellm::Generation generate_locally(const std::string& model, std::string_view prompt,
                                     const edgellm::GenerateOptions& options);

// Runs the edgellm CLI binary with `args` (shell syntax) and collects its exit code, stdout
// and stderr.
struct CliRun {
  int rc;
  std::string out, err;
};
CliRun run_cli(const std::string& args);

}  // namespace testutil
