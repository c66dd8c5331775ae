// ground_question: a question with the index's best chunks before it, for a grounded answer.
#include <filesystem>

#include "edgellm/index.h"
#include "retrieval/index_impl.h"

namespace edgellm {

Result<Grounded> ground_question(DocumentIndex& index, const std::string& question,
                                 const GroundOptions& options) {
  if (question.empty()) return Status::InvalidArgument("the question is empty");
  auto found = index.Search(question, options.search);
  if (!found.ok()) return found.status();
  Grounded g;
  g.search_ms = found->ms;
  Embedder* tokenizer = index.impl()->embedder;
  int32_t budget = options.max_context_tokens;
  std::string notes;
  for (const SearchHit& h : found->hits) {
    int32_t cost = static_cast<int32_t>(h.text.size() / 3);  // no tokenizer: ~3 bytes a token
    if (tokenizer) {
      auto t = tokenizer->Tokenize(h.text, false);
      if (t.ok()) cost = static_cast<int32_t>(t->size());
    }
    if (cost > budget) break;
    budget -= cost;
    g.cited.push_back(h);
    const std::string name = std::filesystem::path(h.source).filename().string();
    notes.append("[").append(std::to_string(g.cited.size())).append("] (").append(name);
    notes.append(") ").append(h.text);
    if (notes.back() != '\n') notes += '\n';
  }
  if (g.cited.empty()) {
    g.prompt = question;
  } else {
    g.prompt.append(options.instruction).append("\n\n").append(notes);
    g.prompt.append("\nQuestion: ").append(question);
  }
  return g;
}

}  // namespace edgellm
