// Prompts with media: GenerateOptions::media and media in chat messages, rendered with the chat
// template and tokenized with the projector (media.h), then generated like any prompt.
#include <string>
#include <utility>
#include <vector>

#include "core/base64.h"
#include "engine/llama_glue.h"
#include "engine/media.h"
#include "engine/session_impl.h"

namespace edgellm {
namespace {

Status need_projector(const Model::Impl* model) {
  if (model->media) return Status::Ok();
  return Status::FailedPrecondition(
      "this model was loaded without a projector: load it with its mmproj file "
      "(LoadOptions::mmproj_path, --mmproj) to give it images or audio");
}

}  // namespace

Result<Media> media_from_data_url(std::string_view url, size_t max_bytes) {
  const std::string_view scheme = "data:";
  if (url.substr(0, scheme.size()) != scheme) {
    return Status::InvalidArgument("not a data: URL (it starts with '" +
                                   std::string(url.substr(0, 16)) + "'): send the media inline "
                                   "as data:<type>;base64,<bytes>");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    return Status::InvalidArgument("the data: URL has no ',' before its data");
  }
  const std::string_view meta = url.substr(scheme.size(), comma - scheme.size());
  if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64") {
    return Status::InvalidArgument("the data: URL is not base64 (its header is '" +
                                   std::string(meta.substr(0, 64)) + "'): use ;base64,");
  }
  const std::string_view data = url.substr(comma + 1);
  if (data.size() / 4 * 3 > max_bytes + 3) {
    return Status::InvalidArgument("the data: URL holds about " + std::to_string(data.size() / 4 * 3) +
                                   " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  Media m;
  if (!base64_decode(data, &m.bytes)) {
    return Status::InvalidArgument("the data: URL's base64 is damaged");
  }
  if (m.bytes.empty()) return Status::InvalidArgument("the data: URL holds no bytes");
  if (m.bytes.size() > max_bytes) {
    return Status::InvalidArgument("the data: URL holds " + std::to_string(m.bytes.size()) +
                                   " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  return m;
}

Result<std::vector<llama_token>> Session::Impl::MediaChatTokens(
    const engine::ChatTemplates& templates, std::vector<ChatMessage> messages, bool open_reply,
    engine::MediaPrompt* out) const {
  EDGELLM_RETURN_IF_ERROR(need_projector(model));
  // The rendered text holds one marker per item, in message order; the media go along in
  // that order (moved out: the template needs only the text).
  std::vector<Media> media;
  for (size_t i = 0; i < messages.size(); ++i) {
    ChatMessage& m = messages[i];
    if (m.media.empty()) continue;
    if (m.role != "user") {
      return Status::InvalidArgument("message " + std::to_string(i + 1) + " (" + m.role +
                                     ") carries media: only user messages may");
    }
    EDGELLM_RETURN_IF_ERROR(
        engine::place_markers(&m.content, m.media.size(), "message " + std::to_string(i + 1)));
    for (Media& x : m.media) media.push_back(std::move(x));
    m.media.clear();
  }
  if (media.size() > engine::kMaxMediaItems) {
    return Status::InvalidArgument("the conversation carries " + std::to_string(media.size()) +
                                   " media items, at most " +
                                   std::to_string(engine::kMaxMediaItems) +
                                   " fit one prompt: start a new conversation");
  }
  Result<std::string> text = engine::apply_chat_template(templates, messages, open_reply);
  if (!text.ok()) return text.status();
  return engine::media_prompt_tokens(*model->media, model->vocab, *text, std::move(media),
                                     /*add_special=*/true, out);
}

Result<Generation> Session::Impl::GenerateWithMedia(std::string_view prompt,
                                                     const GenerateOptions& o, const TextSink& sink,
                                                     Clock::time_point t_start) {
  EDGELLM_RETURN_IF_ERROR(need_projector(model));
  if (!o.tools.empty()) {
    return Status::InvalidArgument("tools and media in one request are not supported yet");
  }
  engine::MediaPrompt mp;
  if (o.chat) {
    Result<const engine::ChatTemplates*> templates = model_chat_templates(model);
    if (!templates.ok()) return templates.status();
    ChatMessage user{"user", std::string(prompt)};
    user.media = o.media;
    Result<std::vector<llama_token>> toks = MediaChatTokens(
        **templates, chat_messages(o.system_prompt, o.history, std::move(user)), true, &mp);
    if (!toks.ok()) return toks.status();
    return Run(std::move(toks).value(), o, sink, {}, t_start, nullptr, &mp);
  }
  if (engine::has_media(o.history)) {
    return Status::InvalidArgument("media in the history need chat mode (set chat)");
  }
  std::string text(prompt);
  EDGELLM_RETURN_IF_ERROR(engine::place_markers(&text, o.media.size(), "the prompt"));
  Result<std::vector<llama_token>> toks = engine::media_prompt_tokens(
      *model->media, model->vocab, text, o.media, /*add_special=*/true, &mp);
  if (!toks.ok()) return toks.status();
  return Run(std::move(toks).value(), o, sink, {}, t_start, nullptr, &mp);
}

}  // namespace edgellm
