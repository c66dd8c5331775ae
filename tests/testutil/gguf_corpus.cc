#include "testutil/gguf_corpus.h"

#include <cstdint>
#include <cstring>
#include <functional>

namespace testutil {
namespace {

using edgellm::GgufError;

// ggml types (ggml.h) and GGUF value types (gguf.h): the numbers are the file format.
constexpr int32_t kF32 = 0, kQ8_0 = 8;
constexpr uint32_t kTU32 = 4, kTI32 = 5, kTF32 = 6, kTBool = 7, kTString = 8, kTArray = 9,
                   kTU64 = 10;

template <typename T>
std::string le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
std::string str(const std::string& s) { return le<uint64_t>(s.size()) + s; }

template <typename T>
void put(std::string* b, size_t pos, T v) {
  std::memcpy(b->data() + pos, &v, sizeof(T));
}

struct Kv {
  std::string key;
  uint32_t type;
  std::string payload;  // what follows the type field
};
Kv kv_str(const std::string& k, const std::string& v) { return {k, kTString, str(v)}; }
Kv kv_u32(const std::string& k, uint32_t v) { return {k, kTU32, le(v)}; }
template <typename T>
Kv kv_array(const std::string& k, uint32_t et, const std::vector<T>& v) {
  std::string p = le(et) + le<uint64_t>(v.size());
  for (const T& x : v) p += le(x);
  return {k, kTArray, p};
}
Kv kv_strings(const std::string& k, const std::vector<std::string>& v) {
  std::string p = le(kTString) + le<uint64_t>(v.size());
  for (const std::string& x : v) p += str(x);
  return {k, kTArray, p};
}

struct Tensor {
  std::string name;
  std::vector<int64_t> ne;  // n_dims is ne.size()
  int32_t type;
  uint64_t nbytes;  // what the writer lays out, whatever ne and type say
};

struct Gguf {
  uint32_t version = 3;
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;
};

// Where the writer put each field, for cases that patch or cut the bytes.
struct Layout {
  std::vector<size_t> kv_start, kv_type, tensor_start, tensor_offset;
  size_t header_end = 0, data_start = 0;
};

constexpr uint64_t kAlign = 32;
uint64_t pad(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Writes like ggml: tensor data in table order, each tensor padded to the alignment.
std::string write(const Gguf& g, Layout* at) {
  std::string b =
      "GGUF" + le(g.version) + le<uint64_t>(g.tensors.size()) + le<uint64_t>(g.kvs.size());
  for (const Kv& kv : g.kvs) {
    at->kv_start.push_back(b.size());
    b += str(kv.key);
    at->kv_type.push_back(b.size());
    b += le(kv.type) + kv.payload;
  }
  uint64_t off = 0;
  for (const Tensor& t : g.tensors) {
    at->tensor_start.push_back(b.size());
    b += str(t.name) + le(static_cast<uint32_t>(t.ne.size()));
    for (int64_t n : t.ne) b += le(n);
    b += le(t.type);
    at->tensor_offset.push_back(b.size());
    b += le(off);
    off += pad(t.nbytes);
  }
  at->header_end = b.size();
  b.resize(pad(b.size()), '\0');
  at->data_start = b.size();
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    for (uint64_t j = 0; j < g.tensors[i].nbytes; ++j) b += static_cast<char>((i * 31 + j) & 0x3f);
    b.resize(pad(b.size()), '\0');
  }
  return b;
}

const std::vector<std::string> kTokens = {"<unk>", "a",      "b",     "c",      "d",  "ab",
                                          "cd",    "abc",    "hello", " world", "你", "好",
                                          "\n",    "<0x0A>", "<s>",   "<eos>"};

Gguf base_spec(const std::string& name) {
  Gguf g;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (size_t i = 0; i < kTokens.size(); ++i) {
    scores.push_back(-static_cast<float>(i));
    types.push_back(i == 0 ? 2 : 1);
  }
  g.kvs = {
      kv_str("general.architecture", "llama"),              // 0
      kv_str("general.name", name),                         // 1
      kv_u32("general.alignment", kAlign),                  // 2
      kv_u32("llama.block_count", 1),                       // 3
      {"corpus.flag", kTBool, std::string(1, '\1')},        // 4
      kv_str("tokenizer.ggml.model", "gpt2"),               // 5
      kv_strings("tokenizer.ggml.tokens", kTokens),         // 6
      kv_array("tokenizer.ggml.scores", kTF32, scores),     // 7
      kv_array("tokenizer.ggml.token_type", kTI32, types),  // 8
      kv_strings("tokenizer.ggml.merges", {"a b", "c d"}),  // 9
      kv_u32("general.file_type", 7),                       // 10
  };
  g.tensors = {
      {"token_embd.weight", {8, 16}, kF32, 512},
      {"blk.0.attn_q.weight", {32, 8}, kQ8_0, 8 * 34},
      {"output_norm.weight", {8}, kF32, 32},
      {"output.weight", {32, 16}, kQ8_0, 16 * 34},
  };
  return g;
}

// The base with general.name padded so that the header ends 16 bytes short of the
// alignment: then a cut can land inside the padding before the data.
Gguf base() {
  Layout at;
  write(base_spec("gguf corpus"), &at);
  return base_spec("gguf corpus" +
                   std::string((kAlign + 16 - at.header_end % kAlign) % kAlign, 'x'));
}

}  // namespace

std::string gguf_valid_base() {
  Layout at;
  return write(base(), &at);
}

std::vector<GgufCase> gguf_malformed_corpus() {
  Layout L;
  const Gguf g0 = base();
  const std::string b0 = write(g0, &L);
  std::vector<GgufCase> out;
  auto cut = [&](const char* name, size_t n, GgufError e, const char* field) {
    out.push_back({name, b0.substr(0, n), e, field});
  };
  // A copy of the base bytes changed by `f`.
  auto patch = [&](const char* name, const std::function<void(std::string*)>& f, GgufError e,
                   const char* field) {
    std::string b = b0;
    f(&b);
    out.push_back({name, b, e, field});
  };
  // The base spec changed by `f`, written again (offsets follow the new sizes).
  auto spec = [&](const char* name, const std::function<void(Gguf*)>& f, GgufError e,
                  const char* field) {
    Gguf g = g0;
    f(&g);
    Layout at;
    out.push_back({name, write(g, &at), e, field});
  };
  using E = GgufError;

  // Truncation inside each section.
  cut("empty_file", 0, E::kTruncated, "magic");
  cut("trunc_magic", 2, E::kTruncated, "magic");
  cut("trunc_version", 6, E::kTruncated, "version");
  cut("trunc_n_tensors", 12, E::kTruncated, "n_tensors");
  cut("trunc_n_kv", 20, E::kTruncated, "n_kv");
  cut("trunc_key_length", L.kv_start[1] + 4, E::kTruncated, "kv[1] key");
  cut("trunc_key", L.kv_start[10] + 8 + 3, E::kTruncated, "kv[10] key");
  cut("trunc_string_value", L.kv_type[0] + 4 + 8 + 2, E::kTruncated, "kv[0] general.architecture");
  cut("trunc_u32_value", L.kv_type[3] + 4 + 2, E::kTruncated, "kv[3] llama.block_count");
  cut("trunc_string_array", L.kv_start[7] - 3, E::kTruncated, "kv[6] tokenizer.ggml.tokens[15]");
  cut("trunc_f32_array", L.kv_start[8] - 2, E::kTruncated, "kv[7] tokenizer.ggml.scores .count");
  cut("trunc_tensor_name", L.tensor_start[2] + 8 + 4, E::kTruncated, "tensor[2] .name");
  cut("trunc_tensor_dims", L.tensor_start[1] + 8 + 19 + 4 + 3, E::kTruncated,
      "tensor[1] blk.0.attn_q.weight .ne[0]");
  cut("trunc_tensor_offset", L.tensor_offset[3] + 4, E::kTruncated,
      "tensor[3] output.weight .offset");
  cut("trunc_padding", L.header_end + 1, E::kTruncated, "padding");
  cut("trunc_tensor_data", L.data_start + 600, E::kDataOutOfFile, "tensor[1] blk.0.attn_q.weight");
  cut("trunc_last_byte", b0.size() - 1, E::kDataOutOfFile, "tensor[3] output.weight .offset");

  // Counts and lengths no file could back.
  patch(
      "huge_n_tensors", [](std::string* b) { put<uint64_t>(b, 8, uint64_t{1} << 63); },
      E::kTooManyTensors, "n_tensors");
  patch(
      "huge_n_kv", [](std::string* b) { put<uint64_t>(b, 16, uint64_t{1} << 40); }, E::kTooManyKv,
      "n_kv");
  patch(
      "huge_key_length",
      [&](std::string* b) { put<uint64_t>(b, L.kv_start[2], uint64_t{1} << 62); }, E::kBadKey,
      "kv[2] key");
  patch(
      "huge_string_length",
      [&](std::string* b) { put<uint64_t>(b, L.kv_type[1] + 4, uint64_t{1} << 62); }, E::kBadString,
      "kv[1] general.name");
  // Within the 1 GiB / 2^30 caps: only the bytes left in the file refuse these.
  patch(
      "string_past_eof", [&](std::string* b) { put<uint64_t>(b, L.kv_type[1] + 4, 1 << 30); },
      E::kTruncated, "kv[1] general.name");
  patch(
      "string_array_past_eof", [&](std::string* b) { put<uint64_t>(b, L.kv_type[6] + 8, 1 << 30); },
      E::kTruncated, "kv[6] tokenizer.ggml.tokens .count");
  patch(
      "huge_array_length",
      [&](std::string* b) { put<uint64_t>(b, L.kv_type[6] + 8, uint64_t{1} << 63); }, E::kBadArray,
      "kv[6] tokenizer.ggml.tokens .count");
  patch(
      "array_past_eof", [&](std::string* b) { put<uint64_t>(b, L.kv_type[7] + 8, 100000); },
      E::kTruncated, "kv[7] tokenizer.ggml.scores .count");

  // Header fields.
  patch(
      "bad_magic", [](std::string* b) { (*b)[3] = 'G'; }, E::kBadMagic, "magic");
  out.push_back({"html_not_gguf", "<html>404 Not Found</html>", E::kBadMagic, "magic"});
  patch(
      "version_1", [](std::string* b) { put<uint32_t>(b, 4, 1); }, E::kBadVersion, "version");
  patch(
      "version_4", [](std::string* b) { put<uint32_t>(b, 4, 4); }, E::kBadVersion, "version");
  patch(
      "version_big_endian", [](std::string* b) { put<uint32_t>(b, 4, 0x03000000); }, E::kBadVersion,
      "version");

  // Keys and values.
  spec(
      "empty_key", [](Gguf* g) { g->kvs[3].key = ""; }, E::kBadKey, "kv[3] key");
  spec(
      "key_control_char", [](Gguf* g) { g->kvs[3].key = "llama.block\ncount"; }, E::kBadKey,
      "kv[3] key");
  spec(
      "duplicate_key", [](Gguf* g) { g->kvs.push_back(kv_str("general.name", "again")); },
      E::kDuplicateKey, "kv[11] general.name");
  patch(
      "bad_value_type", [&](std::string* b) { put<uint32_t>(b, L.kv_type[3], 13); },
      E::kBadValueType, "kv[3] llama.block_count .type");
  patch(
      "bad_array_element_type", [&](std::string* b) { put<uint32_t>(b, L.kv_type[6] + 4, 77); },
      E::kBadValueType, "kv[6] tokenizer.ggml.tokens .element_type");
  patch(
      "array_of_arrays", [&](std::string* b) { put<uint32_t>(b, L.kv_type[9] + 4, kTArray); },
      E::kBadArray, "kv[9] tokenizer.ggml.merges .element_type");
  patch(
      "bool_value_2", [&](std::string* b) { (*b)[L.kv_type[4] + 4] = 2; }, E::kBadValue,
      "kv[4] corpus.flag");
  patch(
      "alignment_0", [&](std::string* b) { put<uint32_t>(b, L.kv_type[2] + 4, 0); },
      E::kBadAlignment, "kv[2] general.alignment");
  patch(
      "alignment_3", [&](std::string* b) { put<uint32_t>(b, L.kv_type[2] + 4, 3); },
      E::kBadAlignment, "kv[2] general.alignment");
  spec(
      "alignment_not_uint32",
      [](Gguf* g) {
        g->kvs[2] = {"general.alignment", kTU64, le<uint64_t>(32)};
      },
      E::kBadAlignment, "kv[2] general.alignment");

  // Well-known metadata.
  spec(
      "architecture_not_string", [](Gguf* g) { g->kvs[0] = kv_u32("general.architecture", 1); },
      E::kBadMetadata, "kv[0] general.architecture");
  spec(
      "tokens_not_array", [](Gguf* g) { g->kvs[6] = kv_str("tokenizer.ggml.tokens", "a b c"); },
      E::kBadMetadata, "kv[6] tokenizer.ggml.tokens");
  spec(
      "tokens_of_int32",
      [](Gguf* g) {
        g->kvs[6] = kv_array("tokenizer.ggml.tokens", kTI32, std::vector<int32_t>(16, 0));
      },
      E::kBadMetadata, "kv[6] tokenizer.ggml.tokens");
  spec(
      "scores_of_int32",
      [](Gguf* g) {
        g->kvs[7] = kv_array("tokenizer.ggml.scores", kTI32, std::vector<int32_t>(16, 0));
      },
      E::kBadMetadata, "kv[7] tokenizer.ggml.scores");
  spec(
      "scores_length_mismatch",
      [](Gguf* g) {
        g->kvs[7] = kv_array("tokenizer.ggml.scores", kTF32, std::vector<float>(15, 0.0f));
      },
      E::kBadMetadata, "kv[7] tokenizer.ggml.scores");
  spec(
      "token_type_length_mismatch",
      [](Gguf* g) {
        g->kvs[8] = kv_array("tokenizer.ggml.token_type", kTI32, std::vector<int32_t>(17, 1));
      },
      E::kBadMetadata, "kv[8] tokenizer.ggml.token_type");

  // Tensor table.
  spec(
      "tensor_name_empty", [](Gguf* g) { g->tensors[0].name = ""; }, E::kBadTensorName,
      "tensor[0] .name");
  spec(
      "tensor_name_64_bytes", [](Gguf* g) { g->tensors[0].name = std::string(64, 'x'); },
      E::kBadTensorName, "tensor[0] .name");
  spec(
      "duplicate_tensor", [](Gguf* g) { g->tensors[2].name = "token_embd.weight"; },
      E::kDuplicateTensor, "tensor[2] token_embd.weight");
  spec(
      "n_dims_0", [](Gguf* g) { g->tensors[2].ne = {}; }, E::kBadDims,
      "tensor[2] output_norm.weight .n_dims");
  spec(
      "n_dims_5",
      [](Gguf* g) {
        g->tensors[2].ne = {8, 1, 1, 1, 1};
      },
      E::kBadDims, "tensor[2] output_norm.weight .n_dims");
  spec(
      "dim_zero",
      [](Gguf* g) {
        g->tensors[1].ne = {32, 0};
      },
      E::kBadDims, "tensor[1] blk.0.attn_q.weight .ne[1]");
  spec(
      "dim_negative",
      [](Gguf* g) {
        g->tensors[1].ne = {-32, 8};
      },
      E::kBadDims, "tensor[1] blk.0.attn_q.weight .ne[0]");
  spec(
      "row_not_block_multiple",
      [](Gguf* g) {
        g->tensors[1].ne = {33, 8};
      },
      E::kBadDims, "tensor[1] blk.0.attn_q.weight .ne[0]");
  spec(
      "elements_overflow",
      [](Gguf* g) {
        g->tensors[0].ne = {int64_t{1} << 32, int64_t{1} << 32};
      },
      E::kShapeOverflow, "tensor[0] token_embd.weight .ne[1]");
  spec(
      "bytes_overflow",
      [](Gguf* g) {
        g->tensors[0].ne = {int64_t{1} << 31, int64_t{1} << 31};
      },
      E::kShapeOverflow, "tensor[0] token_embd.weight");
  spec(
      "tensor_larger_than_file",
      [](Gguf* g) {
        g->tensors[0].ne = {1 << 20, 1 << 20};
      },
      E::kDataOutOfFile, "tensor[0] token_embd.weight .offset");
  spec(
      "tensor_type_removed", [](Gguf* g) { g->tensors[1].type = 4; }, E::kBadTensorType,
      "tensor[1] blk.0.attn_q.weight .type");
  spec(
      "tensor_type_1000", [](Gguf* g) { g->tensors[1].type = 1000; }, E::kBadTensorType,
      "tensor[1] blk.0.attn_q.weight .type");
  spec(
      "tensor_type_negative", [](Gguf* g) { g->tensors[1].type = -1; }, E::kBadTensorType,
      "tensor[1] blk.0.attn_q.weight .type");

  // Tensor data placement.
  patch(
      "misaligned_offset",
      [&](std::string* b) { put<uint64_t>(b, L.tensor_offset[2], 512 + 288 + 4); },
      E::kMisalignedOffset, "tensor[2] output_norm.weight .offset");
  patch(
      "offset_past_eof",
      [&](std::string* b) { put<uint64_t>(b, L.tensor_offset[3], uint64_t{1} << 40); },
      E::kDataOutOfFile, "tensor[3] output.weight .offset");
  patch(
      "offset_wraps", [&](std::string* b) { put<uint64_t>(b, L.tensor_offset[3], ~uint64_t{31}); },
      E::kDataOutOfFile, "tensor[3] output.weight .offset");
  patch(
      "overlapping_tensors", [&](std::string* b) { put<uint64_t>(b, L.tensor_offset[2], 512); },
      E::kOverlap, "tensor[2] output_norm.weight .offset");
  patch(
      "overlapping_out_of_order",
      [&](std::string* b) { put<uint64_t>(b, L.tensor_offset[0], 512 + 288); }, E::kOverlap,
      "tensor[2] output_norm.weight .offset");
  return out;
}

}  // namespace testutil
