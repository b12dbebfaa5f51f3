#!/usr/bin/env bash
# The synthetic suite (1 min, 10 min, 1 h, 3 h, 10 h) with Video-RLM and the uniform baseline, both
# against the in-process STAND-IN VLM (OCR-based; not a VLM), then both reports, the paired
# comparison and the tokens-vs-duration plot. Re-running resumes and re-uses finished questions.
#
# Usage: benchmarks/bench_eval.sh [LIMIT [FLAG ...]]
#   LIMIT: default 20 (four questions per video, one of each kind); FLAGs go to both `eval run`s,
#   e.g. `DATA=bench-data/eval-bfs6 benchmarks/bench_eval.sh 20 --bfs-cells 6`.
set -euo pipefail
LIMIT="${1:-20}"
shift || true
BIN="${BIN:-.venv/bin}"
DATA="${DATA:-bench-data/eval}"
export VIDEOATLAS_HOME="${VIDEOATLAS_HOME:-$DATA/home}"
for agent in video-rlm uniform; do
  "$BIN/videoatlas" eval run --dataset synthetic --root bench-data/suite --limit "$LIMIT" \
    --agent "$agent" --out "$DATA/$agent" --concurrency 4 --standin "$@"
  "$BIN/videoatlas" eval report "$DATA/$agent"
done
"$BIN/videoatlas" eval compare "$DATA/uniform" "$DATA/video-rlm" --plot "$DATA/tokens_vs_duration.png"
