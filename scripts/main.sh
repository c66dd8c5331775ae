#!/usr/bin/env bash
# The main job: set everything up, then stream generations from the default model (edgellm's
# own trained model, committed in assets/) with staged progress and timings: one Chinese and
# one English prompt, or the prompt given.
#   scripts/main.sh [PROMPT]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh edgellm_cli >&2  # stdout carries only the generated text

# edgellm-tiny: trained by `edgellm train` on edgellm's bilingual task corpus (docs/training.md).
model="${EDGELLM_MODEL:-assets/edgellm-tiny-F32.gguf}"
if [ ! -f "$model" ]; then
  echo "main: model $model not found: set EDGELLM_MODEL to a GGUF file" >&2
  exit 1
fi
if [ $# -gt 0 ]; then
  prompts=("$1")
else
  prompts=("用一句话介绍端侧大模型。" "Say it in English." "意图：明天上海会下雨吗"
           "city: Wang Fang flies to Chengdu on Friday." "87加99等于多少？")
fi
for p in "${prompts[@]}"; do
  printf '\n==> edgellm run -m %s --chat -p "%s"\n' "$model" "$p" >&2
  build/bin/edgellm run -m "$model" -p "$p" --chat --temp 0 -n 64
  echo
done
