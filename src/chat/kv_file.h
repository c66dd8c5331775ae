// KV state files (chat-private): a session's cached tokens and their KV cells on disk, for a
// conversation that outlives the app and for the prompt cache.
//
// Layout (little-endian), docs/conversations.md:
//   "EDGELLKV" | u32 format version | u64 header bytes | header | payload
//   header:  model identity (sha256 of the GGUF header and tensor table; with media among
//            the tokens, sha256 of that and the projector's identity) and file size,
//            n_ctx, KV cache type, LoRA set (path, size, scale), llama.cpp build, the tokens,
//            an application blob (a conversation's history), payload size and sha256, and
//            the sha256 of everything before it
//   payload: llama.cpp's state of sequence 0
// The reader checks every field against the session and the file's size before llama.cpp
// reads a byte of the payload: a file that is damaged, cut short, or made for another model,
// other context options or another llama.cpp build is refused with the reason, never loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/session.h"
#include "llama.h"

namespace edgellm::chat {

// Why a file was not (fully) used. kOk: restored.
enum class KvFileVerdict {
  kOk,
  kMissing,     // no such file
  kDamaged,     // unreadable, truncated, bad magic/checksum: nothing in it is trusted
  kOtherSetup,  // well-formed, but for another model, options, adapters or llama.cpp build
};

struct KvFileRead {
  KvFileVerdict verdict = KvFileVerdict::kMissing;
  std::string why;         // for a log line; empty when restored
  std::string app_data;    // the blob, when the header is intact (also for kOtherSetup)
  int32_t n_tokens = 0;    // tokens restored into the session's cache
  uint64_t file_bytes = 0;
};

// What the session's cache holds now (its cached tokens and their cells) plus `app_data`,
// written atomically to `path`. kFailedPrecondition when the session has no context.
Status write_kv_file(Session::Impl& session, const std::string& path, const std::string& app_data);
// Header and blob only, as write_kv_file would write them for this session with no cells:
// a conversation saved while another one holds the session's cache.
Status write_kv_file_without_state(Session::Impl& session, const std::string& path,
                                   const std::string& app_data);

// Reads `path` and, when every check passes, replaces the session's cache with its cells
// and tokens. With `want_state` false, or when the file carries no state, only the header
// and blob are read. Never fails: every problem is a verdict with a reason.
KvFileRead read_kv_file(Session::Impl& session, const std::string& path, bool want_state = true);

// The context-relevant options of a session as text (model identity, n_ctx, KV type,
// adapters, llama.cpp build; with media placeholders among `tokens`, the projector's identity
// too): what a file holding `tokens` must match, and the prompt cache's key.
Result<std::string> session_fingerprint(Session::Impl& session,
                                        const std::vector<llama_token>& tokens);

}  // namespace edgellm::chat
