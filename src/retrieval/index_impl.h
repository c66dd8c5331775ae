// Internals of DocumentIndex shared by index.cc (open, add, remove, stats) and
// index_search.cc (search).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "edgellm/index.h"
#include "retrieval/sqlite_db.h"
#include "retrieval/vectors.h"

namespace edgellm {

struct DocumentIndex::Impl {
  std::string dir, path;
  Embedder* embedder = nullptr;
  std::unique_ptr<retrieval::Db> db;
  bool read_only = false;
  // From the meta table.
  VectorType vector_type = VectorType::kF32;
  int32_t dims = 0;
  int32_t chunk_tokens = 0, chunk_overlap = 0;
  std::string model_name, model_identity;

  // Every stored vector, loaded on the first vector search and again after any commit (ours
  // or another connection's: PRAGMA data_version).
  std::optional<retrieval::VectorMatrix> vectors;
  int64_t vectors_version = -1;
  bool vectors_stale = true;

  Status LoadVectorsIfChanged();
  // The embedder, checked to be the one this index was built with (`what`: "search", "add").
  Result<Embedder*> RequireEmbedder(const char* what) const;
};

// The index's file inside its folder.
inline constexpr const char* kIndexFile = "index.sqlite";

}  // namespace edgellm
