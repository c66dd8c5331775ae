// DocumentIndex: the SQLite schema, the model check, adding (chunk, embed, one transaction),
// removing and stats.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/sys.h"
#include "retrieval/chunker.h"
#include "retrieval/embedder_impl.h"
#include "retrieval/index_impl.h"
#include "retrieval/lexical.h"

namespace edgellm {
namespace fs = std::filesystem;
using retrieval::Db;
using retrieval::Transaction;

namespace {

constexpr const char* kFormat = "1";
constexpr uint64_t kMaxFileBytes = 64ull << 20;

// Chunks (with their text), their sources, and the lexical index of their terms (FTS5 without
// a copy of the text: rows are deleted by giving their terms again).
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                                   bytes INTEGER NOT NULL, added_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY,
                                  source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
                                  ord INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
                                  tokens INTEGER NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks(source_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, content='',
                                                         tokenize='unicode61 remove_diacritics 2');
)sql";

Status set_meta(Db* db, const std::string& key, const std::string& value) {
  auto s = db->Prepare("INSERT INTO meta(key, value) VALUES(?, ?) "
                       "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!s.ok()) return s.status();
  s->Bind(1, key).Bind(2, value);
  return s->Run();
}

// Deletes a source's chunks from the lexical index and the tables; the number deleted.
Result<int32_t> delete_source(Db* db, int64_t source_id) {
  auto rows = db->Prepare("SELECT id, text FROM chunks WHERE source_id = ?");
  if (!rows.ok()) return rows.status();
  rows->Bind(1, source_id);
  auto del = db->Prepare("INSERT INTO chunks_fts(chunks_fts, rowid, terms) VALUES('delete', ?, ?)");
  if (!del.ok()) return del.status();
  int32_t n = 0;
  for (;;) {
    auto row = rows->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    del->Reset();
    del->Bind(1, rows->Int(0)).Bind(2, retrieval::fts_terms(rows->Text(1)));
    EDGELLM_RETURN_IF_ERROR(del->Run());
    ++n;
  }
  auto src = db->Prepare("DELETE FROM sources WHERE id = ?");  // chunks go by cascade
  if (!src.ok()) return src.status();
  src->Bind(1, source_id);
  EDGELLM_RETURN_IF_ERROR(src->Run());
  return n;
}

Result<int64_t> find_source(Db* db, const std::string& name) {
  auto s = db->Prepare("SELECT id FROM sources WHERE name = ?");
  if (!s.ok()) return s.status();
  s->Bind(1, name);
  auto row = s->Step();
  if (!row.ok()) return row.status();
  return *row ? s->Int(0) : -1;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* vector_type_name(VectorType t) { return t == VectorType::kInt8 ? "int8" : "f32"; }

Result<VectorType> vector_type_from_name(const std::string& name) {
  if (name == "f32") return VectorType::kF32;
  if (name == "int8") return VectorType::kInt8;
  return Status::InvalidArgument("unknown vector type '" + name + "': use f32 or int8");
}

Result<Embedder*> DocumentIndex::Impl::RequireEmbedder(const char* what) const {
  if (!embedder) {
    return Status::FailedPrecondition(std::string("to ") + what + " with vectors, open " + dir +
                                      " with its embedding model (" +
                                      (model_name.empty() ? "any" : model_name) + ")");
  }
  return embedder;
}

Result<std::unique_ptr<DocumentIndex>> DocumentIndex::Open(const std::string& dir,
                                                           Embedder* embedder,
                                                           const IndexOptions& options) {
  if (options.chunk_tokens < 16 || options.chunk_tokens > 8192) {
    return Status::InvalidArgument("chunk_tokens is " + std::to_string(options.chunk_tokens) +
                                   ": use 16..8192");
  }
  if (options.chunk_overlap < 0 || options.chunk_overlap > options.chunk_tokens / 2) {
    return Status::InvalidArgument("chunk_overlap is " + std::to_string(options.chunk_overlap) +
                                   ": use 0..chunk_tokens/2 (" +
                                   std::to_string(options.chunk_tokens / 2) + ")");
  }
  if (embedder && !embedder->info().can_embed) {
    return Status::InvalidArgument(embedder->info().model_path +
                                   " is a reranker: an index needs an embedding model (a "
                                   "reranker goes in SearchOptions::reranker)");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->path = (fs::path(dir) / kIndexFile).string();
  impl->embedder = embedder;
  impl->read_only = options.read_only;
  std::error_code ec;
  if (options.read_only) {
    if (!fs::exists(impl->path, ec)) {
      return Status::NotFound("no index at " + dir + " (" + kIndexFile +
                              " is missing): add documents to create one");
    }
  } else {
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      return Status::FailedPrecondition("cannot create the index folder " + dir + ": " +
                                        (ec ? ec.message() : "a file is in the way"));
    }
  }
  if (fs::exists(impl->path, ec) && !fs::is_regular_file(impl->path, ec)) {
    return Status::InvalidArgument(impl->path + " is not a file");
  }
  auto db = Db::Open(impl->path, !options.read_only, options.read_only);
  if (!db.ok()) return db.status();
  impl->db = std::move(*db);
  Db* d = impl->db.get();
  if (!options.read_only) EDGELLM_RETURN_IF_ERROR(d->Exec(kSchema));

  std::map<std::string, std::string> meta;
  {
    auto s = d->Prepare("SELECT key, value FROM meta");
    if (!s.ok()) return s.status();
    for (;;) {
      auto row = s->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      meta[s->Text(0)] = s->Text(1);
    }
  }
  if (meta.empty()) {
    if (options.read_only) return Status::CorruptData(impl->path + " has no index metadata");
    Transaction t(d);
    EDGELLM_RETURN_IF_ERROR(t.Begin());
    meta = {{"format", kFormat},
            {"vector_type", vector_type_name(options.vector_type)},
            {"chunk_tokens", std::to_string(options.chunk_tokens)},
            {"chunk_overlap", std::to_string(options.chunk_overlap)}};
    for (const auto& [k, v] : meta) EDGELLM_RETURN_IF_ERROR(set_meta(d, k, v));
    EDGELLM_RETURN_IF_ERROR(t.Commit());
  }
  if (meta["format"] != kFormat) {
    return Status::FailedPrecondition(impl->path + " is index format '" + meta["format"] +
                                      "'; this edgellm reads format " + kFormat +
                                      ": open it with the edgellm that made it");
  }
  auto vt = vector_type_from_name(meta["vector_type"]);
  if (!vt.ok()) return Status::CorruptData(impl->path + ": " + vt.status().message());
  impl->vector_type = *vt;
  try {
    impl->chunk_tokens = std::stoi(meta["chunk_tokens"]);
    impl->chunk_overlap = std::stoi(meta["chunk_overlap"]);
    impl->dims = meta.count("dims") ? std::stoi(meta["dims"]) : 0;
  } catch (const std::exception&) {
    return Status::CorruptData(impl->path + " has damaged metadata (chunk sizes, dims)");
  }
  impl->model_name = meta["model_name"];
  impl->model_identity = meta["model_identity"];
  if (embedder) {
    const EmbedderInfo& ei = embedder->info();
    if (!impl->model_identity.empty() && impl->model_identity != ei.identity) {
      return Status::FailedPrecondition(
          dir + " holds vectors of " + impl->model_name + " (identity " +
          impl->model_identity.substr(0, 12) + "), not of " + ei.model_name + " (" +
          ei.identity.substr(0, 12) + "): open it with " + impl->model_name +
          ", or build a new index with this model");
    }
  }
  return std::unique_ptr<DocumentIndex>(new DocumentIndex(std::move(impl)));
}

DocumentIndex::DocumentIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DocumentIndex::~DocumentIndex() = default;

Result<AddResult> DocumentIndex::AddText(const std::string& source, const std::string& text,
                                         const AddOptions& options) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  if (m.read_only) return Status::FailedPrecondition(m.dir + " was opened read-only");
  auto emb = m.RequireEmbedder("add documents");
  if (!emb.ok()) return emb.status();
  Embedder* e = *emb;
  if (source.empty()) return Status::InvalidArgument("the source name is empty");
  EDGELLM_RETURN_IF_ERROR(check_text(text, "the text of " + source));
  // Room for the model's special tokens and its document prefix.
  auto prefix = e->Tokenize(e->info().document_prefix, false);
  if (!prefix.ok()) return prefix.status();
  const int32_t room = e->info().max_tokens - 4 - static_cast<int32_t>(prefix->size());
  const int32_t max_chunk = std::min(m.chunk_tokens, room);
  if (max_chunk < 8) {
    return Status::InvalidArgument(e->info().model_name + " takes " +
                                   std::to_string(e->info().max_tokens) +
                                   " tokens: too few for a chunk after its document prefix");
  }
  auto count = [&](std::string_view piece) -> int32_t {
    auto t = e->Tokenize(piece, false);
    return t.ok() ? static_cast<int32_t>(t->size()) : 0;
  };
  const std::vector<retrieval::Chunk> chunks =
      retrieval::chunk_text(text, max_chunk, std::min(m.chunk_overlap, max_chunk / 2), count);
  if (chunks.empty()) return Status::InvalidArgument("the text of " + source + " is blank");
  std::vector<std::string> texts;
  texts.reserve(chunks.size());
  for (const retrieval::Chunk& c : chunks) texts.push_back(text.substr(c.start, c.end - c.start));
  EmbedOptions eo;
  eo.kind = TextKind::kDocument;
  eo.truncate = true;
  eo.on_progress = options.on_progress;
  auto vecs = e->Embed(texts, eo);
  if (!vecs.ok()) return vecs.status();

  AddResult out;
  out.source = source;
  out.chunks = static_cast<int32_t>(chunks.size());
  out.tokens = vecs->stats.n_tokens;
  out.truncated = vecs->stats.n_truncated;
  out.embed_ms = vecs->stats.total_ms;
  Db* d = m.db.get();
  Transaction t(d);
  EDGELLM_RETURN_IF_ERROR(t.Begin());
  if (m.model_identity.empty()) {
    EDGELLM_RETURN_IF_ERROR(set_meta(d, "model_identity", e->info().identity));
    EDGELLM_RETURN_IF_ERROR(set_meta(d, "model_name", e->info().model_name));
    EDGELLM_RETURN_IF_ERROR(set_meta(d, "dims", std::to_string(e->info().dims)));
  }
  auto old = find_source(d, source);
  if (!old.ok()) return old.status();
  if (*old >= 0) {
    auto n = delete_source(d, *old);
    if (!n.ok()) return n.status();
    out.replaced = true;
  }
  auto src = d->Prepare("INSERT INTO sources(name, bytes, added_ms) VALUES(?, ?, ?)");
  if (!src.ok()) return src.status();
  src->Bind(1, source).Bind(2, static_cast<int64_t>(text.size())).Bind(3, now_ms());
  EDGELLM_RETURN_IF_ERROR(src->Run());
  const int64_t source_id = d->LastInsertId();
  auto ins = d->Prepare("INSERT INTO chunks(source_id, ord, start, end, tokens, text, vector) "
                        "VALUES(?, ?, ?, ?, ?, ?, ?)");
  auto fts = d->Prepare("INSERT INTO chunks_fts(rowid, terms) VALUES(?, ?)");
  if (!ins.ok()) return ins.status();
  if (!fts.ok()) return fts.status();
  for (size_t i = 0; i < chunks.size(); ++i) {
    ins->Reset();
    ins->Bind(1, source_id).Bind(2, static_cast<int64_t>(i))
        .Bind(3, static_cast<int64_t>(chunks[i].start)).Bind(4, static_cast<int64_t>(chunks[i].end))
        .Bind(5, static_cast<int64_t>(vecs->n_tokens[i])).Bind(6, texts[i]);
    ins->BindBlob(7, retrieval::encode_vector(vecs->vector(i), m.vector_type));
    EDGELLM_RETURN_IF_ERROR(ins->Run());
    fts->Reset();
    fts->Bind(1, d->LastInsertId()).Bind(2, retrieval::fts_terms(texts[i]));
    EDGELLM_RETURN_IF_ERROR(fts->Run());
  }
  EDGELLM_RETURN_IF_ERROR(t.Commit());
  if (m.model_identity.empty()) {
    m.model_identity = e->info().identity;
    m.model_name = e->info().model_name;
    m.dims = e->info().dims;
  }
  m.vectors_stale = true;
  out.total_ms = ms_since(t0);
  return out;
}

Result<AddResult> DocumentIndex::AddFile(const std::string& path, const AddOptions& options) {
  auto size = regular_file_size(path, "the document");
  if (!size.ok()) return size.status();
  if (*size > kMaxFileBytes) {
    return Status::InvalidArgument(path + " is " + std::to_string(*size >> 20) +
                                   " MiB: split it into files of at most 64 MiB");
  }
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) return Status::NotFound("cannot read " + path);
  return AddText(path, text.str(), options);
}

Result<int32_t> DocumentIndex::Remove(const std::string& source) {
  Impl& m = *impl_;
  if (m.read_only) return Status::FailedPrecondition(m.dir + " was opened read-only");
  Transaction t(m.db.get());
  EDGELLM_RETURN_IF_ERROR(t.Begin());
  auto id = find_source(m.db.get(), source);
  if (!id.ok()) return id.status();
  if (*id < 0) return 0;
  auto n = delete_source(m.db.get(), *id);
  if (!n.ok()) return n.status();
  EDGELLM_RETURN_IF_ERROR(t.Commit());
  m.vectors_stale = true;
  return *n;
}

Result<IndexStats> DocumentIndex::Stats() {
  Impl& m = *impl_;
  IndexStats st;
  st.path = m.path;
  st.dims = m.dims;
  st.vector_type = m.vector_type;
  st.model_name = m.model_name;
  st.model_identity = m.model_identity;
  st.chunk_tokens = m.chunk_tokens;
  st.chunk_overlap = m.chunk_overlap;
  auto s = m.db->Prepare("SELECT (SELECT COUNT(*) FROM sources), COUNT(*), "
                         "COALESCE(SUM(tokens), 0) FROM chunks");
  if (!s.ok()) return s.status();
  auto row = s->Step();
  if (!row.ok()) return row.status();
  st.sources = s->Int(0);
  st.chunks = s->Int(1);
  st.tokens = s->Int(2);
  auto names = m.db->Prepare("SELECT name FROM sources ORDER BY name");
  if (!names.ok()) return names.status();
  for (;;) {
    auto r = names->Step();
    if (!r.ok()) return r.status();
    if (!*r) break;
    st.source_names.push_back(names->Text(0));
  }
  std::error_code ec;
  for (const std::string& f : {m.path, m.path + "-wal"}) {
    const auto n = fs::file_size(f, ec);
    if (!ec) st.bytes_on_disk += static_cast<int64_t>(n);
  }
  return st;
}

}  // namespace edgellm
