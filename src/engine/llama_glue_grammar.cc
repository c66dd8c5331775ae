// The llama.cpp glue for constrained output, the part that needs no model: GBNF grammars
// checked with llama.cpp's own parser (so an error names the problem instead of going to
// stderr) and JSON schemas converted with common's json-schema-to-grammar. The fuzzer
// (fuzz/grammar_fuzz.cc) runs this file alone; the grammar sampler is in llama_glue.cc.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/llama_glue.h"
#include "json-schema-to-grammar.h"  // llama.cpp common
#include "json.h"                    // llama.cpp common: common_json
#include "llama-grammar.h"           // llama.cpp src: llama_grammar_parser

namespace edgellm::engine {
namespace {

// Error texts of the parser quote the rest of the grammar ("expecting name at <rest>"): keep
// the start of it.
std::string shorten(std::string what) {
  if (what.size() > 160) what = what.substr(0, 157) + "...";
  for (char& c : what) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return what;
}

// The 1-based line and column of `pos` in `text`.
std::string where(const char* text, const char* pos) {
  int line = 1, col = 1;
  for (const char* p = text; p < pos && *p; ++p) {
    if (*p == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// Skips spaces, newlines and # comments, as the parser does between rules.
const char* skip_space(const char* p) {
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '#') {
    if (*p == '#') {
      while (*p && *p != '\r' && *p != '\n') ++p;
    } else {
      ++p;
    }
  }
  return p;
}

// Repetitions llama.cpp's parser accepts but cannot run safely, refused before it sees them
// (both found by fuzz/grammar_fuzz.cc): `{m,n}` with n < m (the parser allocates without
// bound), and repetition operators stacked on one item (`x++`, `x*?`, `x{2}*`: each wraps the
// last in another rule, and matching a few characters then takes exponential time).
// Literals, character classes and comments are skipped.
Status check_repetitions(const std::string& name, const char* text) {
  bool after_op = false;  // the last item was a repetition operator
  auto stacked = [&](const char* p) {
    return Status::InvalidArgument(name + " stacks repetition operators at " + where(text, p) +
                                   ": repeat an item once (x+, x*, x?, x{m,n}), or group it");
  };
  for (const char* p = text; *p; ++p) {
    if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') continue;
    if (*p == '#') {
      while (p[1] && p[1] != '\n') ++p;
    } else if (*p == '"' || *p == '[') {
      const char close = *p == '"' ? '"' : ']';
      for (++p; *p && *p != close; ++p) {
        if (*p == '\\' && p[1]) ++p;
      }
      if (!*p) return Status::Ok();  // unterminated: the parser names it
      after_op = false;
    } else if (*p == '*' || *p == '+' || *p == '?') {
      if (after_op) return stacked(p);
      after_op = true;
    } else if (*p == '{') {
      if (after_op) return stacked(p);
      const char* q = p + 1;
      while (*q == ' ' || *q == '\t') ++q;
      uint64_t lo = 0, hi = 0;
      int lo_digits = 0, hi_digits = 0;
      for (; *q >= '0' && *q <= '9' && lo_digits < 19; ++q, ++lo_digits) lo = lo * 10 + (*q - '0');
      while (*q == ' ' || *q == '\t') ++q;
      if (*q == ',') {
        for (++q; *q == ' ' || *q == '\t'; ++q) {
        }
        for (; *q >= '0' && *q <= '9' && hi_digits < 19; ++q, ++hi_digits) {
          hi = hi * 10 + (*q - '0');
        }
      }
      if (lo_digits > 0 && hi_digits > 0 && hi < lo) {
        return Status::InvalidArgument(name + " repeats `{" + std::to_string(lo) + "," +
                                       std::to_string(hi) + "}` at " + where(text, p) +
                                       ": the maximum is below the minimum");
      }
      while (*q && *q != '}' && *q != '\n') ++q;
      if (*q != '}') return Status::Ok();  // malformed: the parser names it
      p = q;
      after_op = true;
    } else {
      after_op = false;
    }
  }
  return Status::Ok();
}

std::string rule_name(const llama_grammar_parser& parser, uint32_t id) {
  for (const auto& kv : parser.symbol_ids) {
    if (kv.second == id) return kv.first;
  }
  return "#" + std::to_string(id);
}

// Rules that can derive a finite string: an alternative is finite when every rule it refers
// to is. A start rule that is not can never end (every output would run into max_tokens).
std::vector<bool> finite_rules(const llama_grammar_rules& rules) {
  std::vector<bool> finite(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (finite[r]) continue;
      bool alt_ok = true;
      for (const llama_grammar_element& e : rules[r]) {
        if (e.type == LLAMA_GRETYPE_RULE_REF) {
          if (e.value >= rules.size() || !finite[e.value]) alt_ok = false;
        } else if (e.type == LLAMA_GRETYPE_ALT || e.type == LLAMA_GRETYPE_END) {
          if (alt_ok) {
            finite[r] = true;
            changed = true;
            break;
          }
          alt_ok = true;
        }
      }
    }
  }
  return finite;
}

// The deepest nesting of objects and arrays in JSON text (strings skipped), without parsing:
// the converter walks a schema recursively, so depth is checked before it runs.
int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// Validation keywords llama.cpp's converter does not turn into grammar rules: a schema that
// uses one would get output the grammar did not check against it, so it is refused, naming
// the keyword and where it is. Annotations (title, description, default, examples, $schema,
// $id, $comment, ...) are fine.
constexpr const char* kUnenforced[] = {"multipleOf",
                                       "uniqueItems",
                                       "minProperties",
                                       "maxProperties",
                                       "not",
                                       "if",
                                       "then",
                                       "else",
                                       "contains",
                                       "minContains",
                                       "maxContains",
                                       "dependentRequired",
                                       "dependentSchemas",
                                       "patternProperties",
                                       "propertyNames",
                                       "unevaluatedItems",
                                       "unevaluatedProperties",
                                       "dependencies",
                                       "additionalItems"};

bool is_integer_type(const common_json& schema) {
  if (!schema.contains("type")) return false;
  const common_json& t = schema.at("type");
  return t.is_string() && t.get<std::string>() == "integer";
}

Status check_keywords(const common_json& schema, const std::string& at) {
  if (!schema.is_object()) return Status::Ok();
  const std::string where_at = at.empty() ? "/" : at;
  for (const char* k : kUnenforced) {
    if (schema.contains(k)) {
      return Status::InvalidArgument(
          std::string("the JSON schema uses `") + k + "` at " + where_at +
          ", which the grammar cannot enforce (llama.cpp's converter has no rule for it): "
          "drop it or check it in the app after parsing");
    }
  }
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (schema.contains(k) && !is_integer_type(schema)) {
      return Status::InvalidArgument(
          std::string("the JSON schema uses `") + k + "` at " + where_at +
          " on a value that is not {\"type\": \"integer\"}: the grammar enforces integer "
          "ranges only; use an integer (e.g. a percentage 0-100) or drop the bound");
    }
  }
  // Bounds the converter reads into int (counts) and int64 (integer ranges, which it also
  // negates and steps by one): out of range they would overflow (UB, found by the fuzzer).
  for (const char* k : {"minItems", "maxItems", "minLength", "maxLength"}) {
    if (!schema.contains(k)) continue;
    const common_json& v = schema.at(k);
    const double d = v.is_number() ? v.get<double>() : -1;
    if (!(d >= 0 && d <= 2147483647.0 && d == std::floor(d))) {
      return Status::InvalidArgument(std::string("the JSON schema's `") + k + "` at " + where_at +
                                     " must be a whole number from 0 to 2147483647");
    }
  }
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (!schema.contains(k)) continue;
    const common_json& v = schema.at(k);
    const double d = v.is_number() ? v.get<double>() : NAN;
    if (!(std::fabs(d) <= 1e15 && d == std::floor(d))) {
      return Status::InvalidArgument(std::string("the JSON schema's `") + k + "` at " + where_at +
                                     " must be a whole number within +-1e15 on an integer");
    }
  }
  for (const char* k : {"properties", "$defs", "definitions"}) {
    if (schema.contains(k) && schema.at(k).is_object()) {
      for (const auto& [name, sub] : schema.at(k).items()) {
        EDGELLM_RETURN_IF_ERROR(check_keywords(sub, at + "/" + k + "/" + name));
      }
    }
  }
  for (const char* k : {"items", "additionalProperties"}) {
    if (schema.contains(k)) {
      EDGELLM_RETURN_IF_ERROR(check_keywords(schema.at(k), at + "/" + k));
    }
  }
  for (const char* k : {"prefixItems", "anyOf", "oneOf", "allOf"}) {
    if (schema.contains(k) && schema.at(k).is_array()) {
      const common_json& list = schema.at(k);
      for (size_t i = 0; i < list.size(); ++i) {
        EDGELLM_RETURN_IF_ERROR(check_keywords(list.at(i), at + "/" + k + "/" + std::to_string(i)));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status check_gbnf(const llama_vocab* vocab, const std::string& gbnf, const GrammarLimits& limits,
                  const char* what, bool* token_refs) {
  const std::string name(what);
  if (gbnf.size() > limits.max_bytes) {
    return Status::InvalidArgument(name + " is " + std::to_string(gbnf.size()) +
                                   " bytes, more than the limit of " +
                                   std::to_string(limits.max_bytes) + " (max_bytes)");
  }
  if (std::memchr(gbnf.data(), '\0', gbnf.size()) != nullptr) {
    return Status::InvalidArgument(name + " contains a NUL byte");
  }
  llama_grammar_parser parser(vocab);
  const char* text = gbnf.c_str();
  const char* pos = skip_space(text);
  if (!*pos) return Status::InvalidArgument(name + " is empty: write at least `root ::= ...`");
  EDGELLM_RETURN_IF_ERROR(check_repetitions(name, text));
  try {
    while (*pos) {
      const char* start = pos;
      pos = parser.parse_rule(pos);
      if (parser.rules.size() > static_cast<size_t>(limits.max_rules)) {
        return Status::InvalidArgument(name + " has more than " + std::to_string(limits.max_rules) +
                                       " rules (max_rules), at " + where(text, start));
      }
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(name + " does not parse: " + shorten(e.what()));
  }
  auto undefined = [&](uint32_t id) {
    return Status::InvalidArgument(name + " uses rule `" + rule_name(parser, id) +
                                   "` but never defines it");
  };
  if (token_refs) *token_refs = false;
  for (size_t r = 0; r < parser.rules.size(); ++r) {
    if (parser.rules[r].empty()) return undefined(static_cast<uint32_t>(r));
    for (const llama_grammar_element& e : parser.rules[r]) {
      if (token_refs && (e.type == LLAMA_GRETYPE_TOKEN || e.type == LLAMA_GRETYPE_TOKEN_NOT)) {
        *token_refs = true;
      }
      if (e.type == LLAMA_GRETYPE_RULE_REF &&
          (e.value >= parser.rules.size() || parser.rules[e.value].empty())) {
        return undefined(e.value);
      }
    }
  }
  const auto root = parser.symbol_ids.find("root");
  if (root == parser.symbol_ids.end()) {
    return Status::InvalidArgument(name + " has no `root` rule: the output starts there");
  }
  if (!finite_rules(parser.rules)[root->second]) {
    return Status::InvalidArgument(name +
                                   " can never end: every way through `root` refers "
                                   "back to itself without an alternative that finishes");
  }
  return Status::Ok();
}

bool set_json_whitespace(std::string* gbnf, JsonWhitespace ws) {
  // The converter writes one rule a line; `space` is the whitespace it puts at every
  // separator: `space ::= | " " | "\n"{1,2} [ \t]{0,20}` in the pinned version.
  const std::string head = "space ::= ";
  size_t at = gbnf->starts_with(head) ? 0 : gbnf->find("\n" + head);
  if (at == std::string::npos) return false;
  if ((*gbnf)[at] == '\n') ++at;
  const size_t body = at + head.size();
  const size_t end = std::min(gbnf->find('\n', body), gbnf->size());
  switch (ws) {
    case JsonWhitespace::kFree: break;
    case JsonWhitespace::kCompact: gbnf->replace(body, end - body, "\" \"?"); break;
    case JsonWhitespace::kNone: gbnf->replace(body, end - body, "\"\""); break;
  }
  return true;
}

Result<std::string> json_schema_to_gbnf(const std::string& schema, const GrammarLimits& limits,
                                        JsonWhitespace ws) {
  if (schema.size() > limits.max_bytes) {
    return Status::InvalidArgument("the JSON schema is " + std::to_string(schema.size()) +
                                   " bytes, more than the limit of " +
                                   std::to_string(limits.max_bytes) + " (max_bytes)");
  }
  const int depth = json_depth(schema);
  if (depth > limits.max_depth) {
    return Status::InvalidArgument("the JSON schema nests " + std::to_string(depth) +
                                   " levels deep, more than the limit of " +
                                   std::to_string(limits.max_depth) + " (max_depth)");
  }
  common_json parsed = common_json::parse_no_throw(schema);
  if (parsed.is_discarded()) {
    return Status::InvalidArgument("the JSON schema is not valid JSON");
  }
  if (!parsed.is_object() && !parsed.is_boolean()) {
    return Status::InvalidArgument("a JSON schema is an object (or true/false), got " +
                                   shorten(parsed.dump()));
  }
  EDGELLM_RETURN_IF_ERROR(check_keywords(parsed, ""));
  try {
    std::string gbnf = json_schema_to_grammar(parsed, /*force_gbnf=*/true);
    // The converter lets a number's exponent have 16 digits: a model may write
    // 5719.61E+8074220768808888, valid JSON that every parser turns into infinity (a random-
    // weights model did). Two digits keep every number the grammar allows inside a double.
    const std::string wide_exponent = "([eE] [-+]? integral-part)?";
    for (size_t p = gbnf.find(wide_exponent); p != std::string::npos;
         p = gbnf.find(wide_exponent, p)) {
      gbnf.replace(p, wide_exponent.size(), "([eE] [-+]? [0-9]{1,2})?");
    }
    set_json_whitespace(&gbnf, ws);
    return gbnf;
  } catch (const std::exception& e) {
    std::string what = e.what();
    const std::string prefix = "JSON schema conversion failed:\n";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    return Status::InvalidArgument("the JSON schema cannot be turned into a grammar: " +
                                   shorten(what));
  }
}

bool json_trimmed(const std::string& text, std::string* out) {
  common_json parsed = common_json::parse_no_throw(text);
  if (parsed.is_discarded()) return false;
  // The text itself, not a re-serialization: a number beyond double's range stays as written.
  const size_t b = text.find_first_not_of(" \t\r\n");
  const size_t e = text.find_last_not_of(" \t\r\n");
  *out = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
  return true;
}

}  // namespace edgellm::engine
