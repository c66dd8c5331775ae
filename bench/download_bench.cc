// edgellm-dlbench: edgellm's verified chunked download vs plain curl, side by side, same file,
// same server, same destination folder, interleaved rounds. bench/download_bench.sh sets up a
// ~1 GiB packed synth model behind Debian's nginx and runs this on disk and on tmpfs.
//
// Methods per round (order rotated each round):
//   curl          `curl -sSf -o DEST URL`: page cache only, nothing verified, not durable
//   curl+fsync    the same, then fdatasync(DEST): as durable as edgellm's result
//   curl+sha256   the same, then `openssl dgst -sha256 DEST`: verify-after, not durable
//   edgellm cN    edgellm::download() with N concurrent ranges: every chunk fsync'd and
//                 verified, journal, whole-file hash, atomic rename
// The first cold round of each method is not treated differently: the file being served is
// read once before the rounds so that the server side is in the page cache for all.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "edgellm/download.h"
#include "edgellm/package.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Runs argv with stdout/stderr to /dev/null; true when it exits 0.
bool run_quiet(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool fdatasync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fdatasync(fd) == 0;
  ::close(fd);
  return ok;
}

void remove_download(const std::string& dest) {
  std::error_code ec;
  for (const char* suffix : {"", ".partial", ".journal", ".journal.tmp"})
    std::filesystem::remove(dest + suffix, ec);
}

struct Sample {
  double seconds = 0;
  double hash_s = 0, sync_s = 0, tail_s = 0;  // edgellm only
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Download throughput: edgellm's verified chunked download vs plain curl"};
  std::string dir, base_url, dest_dir;
  int rounds = 3;
  std::vector<int> concurrency = {1, 3};
  bool json = false;
  app.add_option("--dir", dir, "Package folder made by `edgellm pack` (manifest.json + file)")
      ->required();
  app.add_option("--url", base_url, "URL under which a server serves --dir")->required();
  app.add_option("--dest", dest_dir, "Folder to download into (emptied of the bench's files)")
      ->required();
  app.add_option("--rounds", rounds, "Rounds; each runs every method once (default 3)")
      ->check(CLI::Range(1, 50));
  app.add_option("--concurrency", concurrency, "edgellm concurrency values (default 1,3)")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_flag("--json", json, "Print JSON");
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(dir + "/manifest.json");
  if (!in) {
    std::fprintf(stderr, "dlbench: cannot read %s/manifest.json: run `edgellm pack` first\n",
                 dir.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto m = edgellm::manifest_from_json(text.str());
  if (!m.ok()) {
    std::fprintf(stderr, "dlbench: %s\n", m.status().ToString().c_str());
    return 1;
  }
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  const std::string url = base_url + "/" + m->file;
  std::error_code ec;
  std::filesystem::create_directories(dest_dir, ec);
  const std::string dest = dest_dir + "/dlbench-" + m->file;
  const double mib = static_cast<double>(m->size) / (1024.0 * 1024.0);

  // Warm the server's page cache and check the server answers before measuring.
  remove_download(dest);
  if (!run_quiet({"curl", "-sSf", "-o", dest, url})) {
    std::fprintf(stderr, "dlbench: `curl -sSf -o %s %s` failed: is the server running?\n",
                 dest.c_str(), url.c_str());
    return 1;
  }
  remove_download(dest);

  std::vector<std::string> methods = {"curl", "curl+fsync", "curl+sha256"};
  for (int c : concurrency) methods.push_back("edgellm c" + std::to_string(c));
  std::map<std::string, std::vector<Sample>> samples;

  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < methods.size(); ++k) {
      const std::string& method = methods[(k + static_cast<size_t>(r)) % methods.size()];
      remove_download(dest);
      ::sync();  // no writeback left over from the previous method
      Sample s;
      const auto t0 = Clock::now();
      if (method.rfind("curl", 0) == 0) {
        bool ok = run_quiet({"curl", "-sSf", "-o", dest, url});
        if (ok && method == "curl+fsync") ok = fdatasync_path(dest);
        if (ok && method == "curl+sha256") ok = run_quiet({"openssl", "dgst", "-sha256", dest});
        if (!ok) {
          std::fprintf(stderr, "dlbench: %s failed in round %d\n", method.c_str(), r + 1);
          return 1;
        }
        s.seconds = secs_since(t0);
      } else {
        edgellm::DownloadOptions opt;
        opt.concurrency = std::stoi(method.substr(method.find('c', 7) + 1));
        auto rep = edgellm::download(edgellm::spec_from_manifest(*m, url, dest), opt);
        if (!rep.ok()) {
          std::fprintf(stderr, "dlbench: %s: %s\n", method.c_str(),
                       rep.status().ToString().c_str());
          return 1;
        }
        s.seconds = secs_since(t0);
        s.hash_s = rep->hash_seconds;
        s.sync_s = rep->sync_seconds;
        s.tail_s = rep->tail_seconds;
      }
      samples[method].push_back(s);
      if (!json) {
        std::fprintf(stderr, "round %d  %-12s %6.2f s  %7.1f MiB/s\n", r + 1, method.c_str(),
                     s.seconds, mib / s.seconds);
      }
    }
  }
  remove_download(dest);

  auto med = [&](const std::string& method, double Sample::*field) {
    std::vector<double> v;
    for (const Sample& s : samples[method]) v.push_back(s.*field);
    return median(v);
  };
  const double curl_s = med("curl", &Sample::seconds);
  const double fsync_s = med("curl+fsync", &Sample::seconds);
  nlohmann::json out = {{"file", m->file},
                        {"bytes", m->size},
                        {"chunk_size", m->chunk_size},
                        {"url", url},
                        {"dest", dest_dir},
                        {"rounds", rounds}};
  if (!json) {
    std::printf("%s, %.1f MiB, %llu-byte chunks, %d rounds, into %s (medians)\n\n",
                m->file.c_str(), mib, static_cast<unsigned long long>(m->chunk_size), rounds,
                dest_dir.c_str());
    std::printf("| method | s | MiB/s | vs curl | vs curl+fsync | hash s | sync s | tail s |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const std::string& method : methods) {
    const double s = med(method, &Sample::seconds);
    nlohmann::json row = {{"method", method},
                          {"seconds", s},
                          {"mib_per_s", mib / s},
                          {"ratio_vs_curl", curl_s / s},
                          {"ratio_vs_curl_fsync", fsync_s / s},
                          {"per_round_seconds", nlohmann::json::array()}};
    for (const Sample& x : samples[method]) row["per_round_seconds"].push_back(x.seconds);
    const bool ours = method.rfind("edgellm", 0) == 0;
    if (ours) {
      row["hash_seconds"] = med(method, &Sample::hash_s);
      row["sync_seconds"] = med(method, &Sample::sync_s);
      row["tail_seconds"] = med(method, &Sample::tail_s);
    }
    out["methods"].push_back(row);
    if (!json) {
      std::printf("| %s | %.2f | %.1f | %.3f | %.3f |", method.c_str(), s, mib / s, curl_s / s,
                  fsync_s / s);
      if (ours) {
        std::printf(" %.2f | %.2f | %.2f |\n", med(method, &Sample::hash_s),
                    med(method, &Sample::sync_s), med(method, &Sample::tail_s));
      } else {
        std::printf(" | | |\n");
      }
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
