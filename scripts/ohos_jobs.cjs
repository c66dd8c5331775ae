// The ohos stage's compile jobs (scripts/cross.sh): from build/compile_commands.json, every
// source of what libedgellm.so links (libedgellm and its glue; llama.cpp's ggml, ggml-base,
// ggml-cpu with arch/arm/ for arch/x86/, llama, common, httplib, mtmd, hashes) with its own
// defines, include paths and warnings, written as OUT/obj/SRC.o.rsp; prints one line per job:
// GROUP<TAB>LANG<TAB>SRC<TAB>OBJ.  Usage: node scripts/ohos_jobs.cjs OUT MARCH
// llama.cpp's sources are compiled at -O0: the stage checks that they compile against musl
// and libc++ (what a header or a libc call needs), which optimization adds nothing to, and -O0
// takes a fraction of -O3's time (llama-model.cpp: 6 s of CPU). edgellm's keep their flags.
"use strict";
const fs = require("fs"), path = require("path");
const [out, march] = process.argv.slice(2), root = process.cwd() + "/";
const lib = { edgellm: "edgellm", edgellm_glue: "edgellm" };
for (const t of ["ggml", "ggml-base", "ggml-cpu", "llama", "llama-common", "llama-common-base",
                 "cpp-httplib", "vendor-hash", "mtmd"]) lib[t] = "llama.cpp";
const words = s => {  // a POSIX shell command line, as CMake writes it, into its words
  const w = []; let cur = null, q = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q === "'") { if (c === q) q = null; else cur += c; continue; }
    if (c === "\\" && (q !== "\"" || "$`\"\\\n".includes(s[i + 1]))) { cur = (cur ?? "") + s[++i]; continue; }
    if (q === "\"") { if (c === q) q = null; else cur += c; continue; }
    if (c === "'" || c === "\"") { q = c; cur = cur ?? ""; continue; }
    if (/\s/.test(c)) { if (cur !== null) w.push(cur); cur = null; continue; }
    cur = (cur ?? "") + c;
  }
  if (cur !== null) w.push(cur);
  return w;
};
const rel = p => p.startsWith(root) ? p.slice(root.length) : p;
for (const e of JSON.parse(fs.readFileSync("build/compile_commands.json", "utf8"))) {
  const w = words(e.command);
  const m = /CMakeFiles\/([^/]+)\.dir\//.exec(w[w.indexOf("-o") + 1] ?? "");
  if (!m || !lib[m[1]]) continue;
  let src = rel(e.file);
  if (m[1] === "ggml-cpu") src = src.replace(/\/ggml-cpu\/arch\/[^/]+\//, "/ggml-cpu/arch/arm/");
  if (!fs.existsSync(src)) throw new Error(`${src} (for ${e.file}) does not exist`);
  const flags = [];
  for (let i = 1; i < w.length; i++) {
    const a = w[i];
    if (a === "-o" || a === "-c") { i++; continue; }
    if (a === "-isystem" || a === "-x") { flags.push(a, rel(w[++i])); continue; }
    if (a.startsWith("-I")) { flags.push("-I" + rel(a.slice(2))); continue; }
    if (a.startsWith("-m") || a.startsWith("-DEDGELLM_TRAIN_BLAS")) continue;
    if (/^-([DUOWf]|std=|w$)/.test(a)) { flags.push(a); continue; }
    throw new Error(`unexpected compiler argument ${a} for ${e.file}`);
  }
  if (m[1] === "ggml-cpu") flags.push("-march=" + march);
  if (lib[m[1]] === "llama.cpp") {
    const kept = flags.filter(f => !/^-O/.test(f));
    flags.length = 0;
    flags.push(...kept, "-O0");
  }
  if (flags.some(f => f.includes("'"))) throw new Error(`a quote in the flags of ${e.file}`);
  const obj = `${out}/obj/${src}.o`;
  fs.mkdirSync(path.dirname(obj), { recursive: true });
  fs.writeFileSync(obj + ".rsp", flags.map(f => `'${f}'\n`).join(""));
  console.log([lib[m[1]], /\+\+$/.test(w[0]) ? "c++" : "c", src, obj].join("\t"));
}
