// SQLite behind Db/Stmt/Transaction (sqlite_db.h): Debian's libsqlite3, WAL mode.
#include "retrieval/sqlite_db.h"

#include <sqlite3.h>

namespace edgellm::retrieval {

Stmt::Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    db_ = o.db_;
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

Stmt& Stmt::Bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}

Stmt& Stmt::Bind(int i, std::string_view text) {
  sqlite3_bind_text64(s_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::BindBlob(int i, std::span<const uint8_t> bytes) {
  sqlite3_bind_blob64(s_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

Result<bool> Stmt::Step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, sqlite3_sql(s_));
}

Status Stmt::Run() {
  for (;;) {
    auto r = Step();
    if (!r.ok()) return r.status();
    if (!*r) return Status::Ok();
  }
}

void Stmt::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(s_, col); }
double Stmt::Double(int col) const { return sqlite3_column_double(s_, col); }

std::string Stmt::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
}

std::span<const uint8_t> Stmt::Blob(int col) const {
  const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s_, col));
  return {p, p ? static_cast<size_t>(sqlite3_column_bytes(s_, col)) : 0};
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create, bool read_only) {
  sqlite3* raw = nullptr;
  // A reader opens read-write without creating (so it can make the WAL's shared-memory file if
  // no other connection has), and read-only where the file or folder cannot be written.
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | (create && !read_only ? SQLITE_OPEN_CREATE : 0) |
                               SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK && read_only) {
    sqlite3_close_v2(raw);
    raw = nullptr;
    rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  }
  std::unique_ptr<Db> db(new Db(raw, path));
  if (rc != SQLITE_OK) {
    if (!raw) return Status::ResourceExhausted("cannot open " + path + ": out of memory");
    return db->Error(rc, "open");
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 10000);
  if (!read_only) {
    // WAL: readers see the last commit while a writer writes; NORMAL sync is durable across a
    // killed process (a power cut may lose the last commit, never corrupt the file).
    EDGELLM_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
  }
  EDGELLM_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON;"));
  return db;
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  return rc == SQLITE_OK ? Status::Ok() : Error(rc, sql);
}

Result<Stmt> Db::Prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return Stmt(this, s);
}

int64_t Db::LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
int Db::Changes() const { return sqlite3_changes(db_); }

Result<int64_t> Db::DataVersion() {
  auto s = Prepare("PRAGMA data_version");
  if (!s.ok()) return s.status();
  auto row = s->Step();
  if (!row.ok()) return row.status();
  return *row ? s->Int(0) : 0;
}

Status Db::Error(int rc, const std::string& what) const {
  const std::string detail = std::string(sqlite3_errstr(rc)) +
                             (db_ && sqlite3_errmsg(db_) ? std::string(": ") + sqlite3_errmsg(db_)
                                                         : std::string());
  const std::string where = path_ + " (" + what.substr(0, 60) + "): " + detail;
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::CorruptData("the index database " + where +
                                 ": it is damaged; remove the index folder and add the documents "
                                 "again");
    case SQLITE_FULL:
    case SQLITE_IOERR:
      return Status::ResourceExhausted("writing " + where +
                                       ": free disk space and try again (the index is unchanged)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable("the index " + where +
                                 ": another writer held it for 10 s; try again");
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_AUTH:
      return Status::FailedPrecondition("cannot open or write " + where +
                                        ": check the folder's permissions");
    default:
      return Status::Internal("sqlite: " + where);
  }
}

const char* Db::Version() { return sqlite3_libversion(); }

Transaction::~Transaction() {
  if (open_) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Begin() {
  EDGELLM_RETURN_IF_ERROR(db_->Exec("BEGIN IMMEDIATE"));
  open_ = true;
  return Status::Ok();
}

Status Transaction::Commit() {
  EDGELLM_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  open_ = false;
  return Status::Ok();
}

}  // namespace edgellm::retrieval
