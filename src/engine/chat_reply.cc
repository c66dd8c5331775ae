// Chat turns with tools or a reasoning model's thinking: rendered by llama.cpp common's chat
// library (llama_glue_chat.cc) instead of the plain template path (format_chat).
#include <string>
#include <vector>

#include "core/log.h"
#include "engine/session_impl.h"

namespace edgellm {

bool wants_reply_parser(const Model::Impl* model, const GenerateOptions& o) {
  if (o.reasoning == Reasoning::kInline || !model->info.has_chat_template) return false;
  Result<const engine::ChatTemplates*> t = model->chat_templates();
  return t.ok() && engine::chat_template_thinks(**t);
}

bool Model::Reasons() const {
  if (!impl_->info.has_chat_template) return false;
  Result<const engine::ChatTemplates*> t = impl_->chat_templates();
  return t.ok() && engine::chat_template_thinks(**t);
}

Result<engine::ChatRender> Session::Impl::RenderChat(std::string_view user,
                                                     const GenerateOptions& o) const {
  if (!model->info.has_chat_template && !o.tools.empty()) {
    return Status::InvalidArgument(
        "tools need the model's chat template (tokenizer.chat_template), which this model has "
        "not: use a model with one");
  }
  Result<const engine::ChatTemplates*> templates = model->chat_templates();
  if (!templates.ok()) return templates.status();
  for (const ToolSpec& t : o.tools) {
    if (t.name.empty()) return Status::InvalidArgument("a tool has no name");
  }
  std::vector<ChatMessage> msgs;
  msgs.reserve(o.history.size() + 2);
  if (!o.system_prompt.empty()) msgs.push_back({"system", o.system_prompt});
  msgs.insert(msgs.end(), o.history.begin(), o.history.end());
  if (!user.empty()) msgs.push_back({"user", std::string(user)});
  Result<engine::ChatRender> r = engine::render_chat(**templates, msgs, o);
  if (r.ok() && !o.tools.empty()) {
    detail::emit_log(LogLevel::kDebug, "edgellm",
                     "tool calls in the " + r->format + " format" +
                         (r->grammar.lazy ? " (grammar from the model's tool-call opening)" : ""));
  }
  return r;
}

}  // namespace edgellm
