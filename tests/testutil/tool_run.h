// Runs a reference tool (llama.cpp's llama-mtmd-cli, ...) as a shell command: its exit code,
// stdout and stderr apart (the tools log to stderr and write their text to stdout).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "testutil/fixtures.h"

namespace testutil {

inline CliRun run_tool(const std::string& cmd) {
  const std::string err_path = fixture_dir() + "/tool-stderr-" + std::to_string(::getpid());
  FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = p ? pclose(p) : -1;
  CliRun r{rc, out, read_file(err_path)};
  std::remove(err_path.c_str());
  return r;
}

// The tool's text without the blank lines it prints around it.
inline std::string trim_newlines(std::string s) {
  while (!s.empty() && s.front() == '\n') s.erase(s.begin());
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace testutil
