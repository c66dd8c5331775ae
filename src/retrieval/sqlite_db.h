// A thin owner of one SQLite connection and its prepared statements, with errors as Status.
// The only file of edgellm that includes sqlite3.h is sqlite_db.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace edgellm::retrieval {

class Db;

// One prepared statement. Bind parameters are 1-based, columns 0-based (as SQLite's).
class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& o) noexcept;
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt();

  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, double v);
  Stmt& Bind(int i, std::string_view text);
  Stmt& BindBlob(int i, std::span<const uint8_t> bytes);
  // Runs one step: true with a row ready, false when done; errors as Status.
  Result<bool> Step();
  // Steps to the end (for statements without rows).
  Status Run();
  void Reset();

  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::span<const uint8_t> Blob(int col) const;

 private:
  friend class Db;
  Stmt(Db* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Db* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

class Db {
 public:
  // Opens (creating when `create`) the database at `path` in WAL mode with a busy timeout,
  // so readers keep reading while one writer writes. Errors name the file.
  static Result<std::unique_ptr<Db>> Open(const std::string& path, bool create, bool read_only);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status Exec(const std::string& sql);
  Result<Stmt> Prepare(const std::string& sql);
  int64_t LastInsertId() const;
  int Changes() const;
  // PRAGMA data_version: changes when another connection commits.
  Result<int64_t> DataVersion();
  // A Status for SQLite result `rc` in `what`, naming the file and what to do when it is
  // damaged or the disk is full.
  Status Error(int rc, const std::string& what) const;
  const std::string& path() const { return path_; }
  // SQLite's own version, e.g. "3.40.1".
  static const char* Version();

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back on destruction unless committed.
class Transaction {
 public:
  explicit Transaction(Db* db) : db_(db) {}
  ~Transaction();
  Status Begin();
  Status Commit();

 private:
  Db* db_;
  bool open_ = false;
};

}  // namespace edgellm::retrieval
