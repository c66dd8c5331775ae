// Lexical search terms for SQLite FTS5 (unicode61 tokenizer): Chinese, Japanese and Korean
// have no spaces between words, so each run of such characters is indexed as its overlapping
// character pairs (中文检索 -> 中文 文检 检索), the classic CJK bigram index; other text is
// left for unicode61 to split into words (case-folded, diacritics removed).
#pragma once

#include <string>
#include <string_view>

namespace edgellm::retrieval {

// The text FTS5 indexes for a chunk.
std::string fts_terms(std::string_view text);
// The MATCH expression for a query: each of its terms quoted, joined by OR (BM25 then ranks
// chunks with more and rarer terms first). Empty when the query has no terms.
std::string fts_query(std::string_view query);

}  // namespace edgellm::retrieval
