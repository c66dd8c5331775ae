// The scripted user turns of chat_bench.mjs: about 120 tokens each of mixed English and Chinese
// (the sentences of bench/chat_sentences.txt, as bench/chat_bench.cc uses), different per turn.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const sentences = readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "chat_sentences.txt"), "utf8")
  .split("\n").filter((l) => l.length > 0);

export function userTurn(t) {
  let s = `Question ${t}:`;
  for (let i = 0; i < 8; i++) s += ` ${sentences[(t + i) % sentences.length]}`;
  return s;
}
