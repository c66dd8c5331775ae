#!/usr/bin/env bash
# The main job: set everything up, make the default model if it is missing, and stream a
# generation from it with staged progress and timings.
#   scripts/main.sh [PROMPT]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh edgellm_cli >&2  # stdout carries only the generated text

# Default model until edgellm ships a trained one: Qwen2.5-0.5B's exact shapes and real Qwen2
# tokenizer with random weights (edgellm synth), quantized to Q4_K_M through libllama.
model="${EDGELLM_MODEL:-models/qwen2.5-0.5b-Q4_K_M.gguf}"
if [ ! -f "$model" ]; then
  printf '\n==> making the default model %s (edgellm synth; once)\n' "$model" >&2
  mkdir -p "$(dirname "$model")"
  build/bin/edgellm synth --preset qwen2.5-0.5b --type Q4_K_M -o "$model"
fi
prompt="${1:-用一句话介绍端侧大模型。Then say it in English.}"
printf '\n==> edgellm run (random weights: the text is noise, the pipeline and timings are real)\n' >&2
build/bin/edgellm run -m "$model" -p "$prompt" --chat -n 64
