// Conversation::Save and Conversation::Load: the history and the KV cells in one KV state
// file (chat/kv_file.h), so a chat survives the app being killed.
#include <nlohmann/json.hpp>

#include "chat/chat_impl.h"
#include "core/base64.h"

namespace edgellm {

Status Conversation::Save(const std::string& path) const {
  Session::Impl* s = impl_->session;
  Result<std::string> history = impl_->ToJson();
  if (!history.ok()) return history.status();
  if (s->owner == impl_.get()) return chat::write_kv_file(*s, path, *history);
  return chat::write_kv_file_without_state(*s, path, *history);
}

Result<std::unique_ptr<Conversation>> Conversation::Load(Session& session, const std::string& path,
                                                         ConversationOptions options,
                                                         RestoreInfo* info) {
  using json = nlohmann::json;
  chat::KvFileRead r = chat::read_kv_file(*session.impl(), path);
  if (r.verdict == chat::KvFileVerdict::kMissing) {
    return Status::NotFound("no saved conversation at " + path + ": start a new one");
  }
  if (r.app_data.empty()) {
    return Status::CorruptData(path + " holds no saved conversation (" +
                               (r.why.empty() ? std::string("a prompt cache file?") : r.why) +
                               "): start a new conversation");
  }
  std::vector<ChatMessage> messages;
  try {
    const json j = json::parse(r.app_data);
    if (j.value("format", "") != "edgellm.conversation" || j.value("version", 0) != 1) {
      return Status::CorruptData(path + " holds KV cells but no edgellm conversation");
    }
    options.system_prompt = j.at("system_prompt").get<std::string>();
    Result<OverflowPolicy> overflow = overflow_policy_from_name(j.at("overflow").get<std::string>());
    if (!overflow.ok()) return Status::CorruptData(path + ": " + overflow.status().message());
    options.overflow = *overflow;
    for (const json& m : j.at("messages")) {
      ChatMessage msg{m.at("role").get<std::string>(), m.at("content").get<std::string>()};
      if (m.contains("media")) {
        for (const json& x : m.at("media")) {
          Media media;
          if (!base64_decode(x.at("base64").get<std::string>(), &media.bytes) ||
              media.bytes.empty()) {
            return Status::CorruptData("a media item in " + path +
                                       " is damaged: start a new conversation");
          }
          msg.media.push_back(std::move(media));
        }
      }
      messages.push_back(std::move(msg));
    }
  } catch (const json::exception& e) {
    return Status::CorruptData("the history in " + path + " does not parse (" + e.what() +
                               "): start a new conversation");
  }
  Result<std::unique_ptr<Conversation>> c = Create(session, std::move(options));
  if (!c.ok()) return c.status();
  EDGELLM_RETURN_IF_ERROR((*c)->SetHistory(std::move(messages)));
  const bool restored = r.verdict == chat::KvFileVerdict::kOk && r.n_tokens > 0;
  if (restored) session.impl()->TakeCache((*c)->impl_.get());
  if (info) {
    info->kv_restored = restored;
    info->n_tokens = r.n_tokens;
    info->why_not = restored ? std::string()
                             : (r.why.empty() ? "the file holds no KV cells" : r.why);
  }
  return c;
}

}  // namespace edgellm
