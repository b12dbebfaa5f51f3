#!/usr/bin/env bash
# The suite of question kinds (synthetic style `signage`: needle, count, count_open, order, right_after,
# first_last, open_value) with several agents against the in-process STAND-IN VLM (OCR-based; not a VLM),
# then one table per kind x agent x duration (`eval report DIR ... --by duration`). Re-running resumes
# and re-uses finished questions.
#
# Usage: benchmarks/bench_kinds.sh [DURATIONS [AGENTS [FLAG ...]]]
#   DURATIONS: default 10m (comma-separated: 10m,1h,3h); AGENTS: default "video-rlm videoseek"
#   (space-separated, quoted); FLAGs go to every `eval run`.
set -euo pipefail
DURATIONS="${1:-10m}"
AGENTS="${2:-video-rlm videoseek}"
shift 2 || shift $# || true
BIN="${BIN:-.venv/bin}"
DATA="${DATA:-bench-data/kinds}"
export VIDEOATLAS_HOME="${VIDEOATLAS_HOME:-$DATA/home}"
folders=()
for agent in $AGENTS; do
  "$BIN/videoatlas" eval run --dataset synthetic --root bench-data/suite --styles signage \
    --durations "$DURATIONS" --agent "$agent" --out "$DATA/$agent" --concurrency 2 --standin "$@"
  folders+=("$DATA/$agent")
done
"$BIN/videoatlas" eval report "${folders[@]}" --by duration
