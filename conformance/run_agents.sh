#!/usr/bin/env bash
# Answer real questions about the demo video with every agent and mode, against stand-in servers that
# record every chat, embeddings, transcription and decisions request they receive (`videoatlas standin --record
# FILE`); check_requests.py then checks each recorded request with vLLM's own code.
#
#   bash conformance/run_agents.sh OUT_DIR
#
# Writes OUT_DIR/video/ (the demo's synthetic video: 10 minutes, seed 7, made once), OUT_DIR/requests-*.jsonl
# (one file per server; emptied at each run) and OUT_DIR/runs.log. Each agent's plain runs get a server of their
# own (requests-plain-AGENT.jsonl): one agent's stream, in arrival order, into a fresh prefix cache, which
# prefix_cache.py replays through vLLM's own prefix caching. Exits 1 if any run failed, after
# running the others. Runs that need an option this checkout lacks are skipped with a note, and counted.
set -u -o pipefail

OUT=${1:?usage: run_agents.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VA=${VIDEOATLAS:-$ROOT/.venv/bin/videoatlas}
PY=${PYTHON:-$ROOT/.venv/bin/python}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/runs.log
: >"$LOG"
rm -f "$OUT"/requests-*.jsonl

say() { printf '%s\n' "$*" | tee -a "$LOG"; }

if [ ! -f "$OUT/video/video.json" ]; then
    say "synthesising the demo video (10 minutes, seed 7) into $OUT/video"
    "$VA" synth --duration 10m --seed 7 --out "$OUT/video" --json >>"$LOG" 2>&1 || { say "synth failed"; exit 1; }
fi
VIDEO=$OUT/video/video.mp4

# The demo's questions: each run asks one, with its choices.
mapfile -t QUESTIONS < <("$PY" - "$OUT/video/video.json" <<'EOF'
import json, sys
for q in json.load(open(sys.argv[1]))["questions"]:
    print(json.dumps({"q": q["question"], "c": q["choices"]}))
EOF
)
[ "${#QUESTIONS[@]}" -gt 0 ] || { say "the demo video has no questions"; exit 1; }

has_option() {  # has_option COMMAND OPTION: does `videoatlas COMMAND --help` list OPTION?
    "$VA" "$1" --help 2>/dev/null | grep -q -- "$2"
}

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

SERVER_PIDS=()
stop_servers() {
    for pid in "${SERVER_PIDS[@]}"; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    SERVER_PIDS=()
}
trap stop_servers EXIT

URL=""
start_server() {  # start_server MODE [standin options...]: sets URL
    local mode=$1
    shift
    local port
    port=$(free_port)
    "$VA" standin --host 127.0.0.1 --port "$port" --record "$OUT/requests-$mode.jsonl" "$@" \
        >>"$OUT/server-$mode.log" 2>&1 &
    SERVER_PIDS+=("$!")
    URL=http://127.0.0.1:$port/v1
    for _ in $(seq 1 300); do
        if "$PY" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/models', timeout=2)" "$URL" 2>/dev/null; then
            return 0
        fi
        kill -0 "${SERVER_PIDS[-1]}" 2>/dev/null || break
        sleep 0.2
    done
    say "the stand-in ($mode) did not start: see $OUT/server-$mode.log"
    return 1
}

FAILED=0
SKIPPED=0
RAN=0
run() {  # run LABEL QUESTION_INDEX [ask options...]: a question about the demo video
    run_on "$VIDEO" QUESTIONS "$@"
}

run_on() {  # run_on VIDEO QUESTIONS_ARRAY LABEL QUESTION_INDEX [ask options...]
    local video=$1
    local -n asked=$2
    local label=$3 index=$4
    shift 4
    local q=${asked[$((index % ${#asked[@]}))]}
    local question choices=()
    question=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["q"])' "$q")
    mapfile -t choices < <("$PY" -c 'import json, sys; [print(c) for c in json.loads(sys.argv[1])["c"]]' "$q")
    local args=()
    for c in "${choices[@]}"; do args+=(-c "$c"); done
    local start=$SECONDS
    if "$VA" ask "$video" -q "$question" "${args[@]}" --base-url "$URL" --no-persist --quiet --json "$@" \
        >"$OUT/run-$label.json" 2>>"$LOG"; then
        RAN=$((RAN + 1))
        say "ok     $label ($((SECONDS - start)) s): ask $*"
    else
        FAILED=$((FAILED + 1))
        say "FAILED $label ($((SECONDS - start)) s, exit $?): ask $*"
    fi
}

skip() {
    SKIPPED=$((SKIPPED + 1))
    say "SKIPPED $1: $2"
}

# Plain servers, one per agent (a fresh prefix cache each): every agent, every video-rlm traversal, a call
# budget, the anchors. The demo video has no sound: every agent's speech track (/v1/audio/transcriptions) is
# asked about the spoken test video instead (24 s, espeak-ng's speech), with questions only its speech answers.
SPEECH=$OUT/speech/speech.mp4
SPOKEN=()
if [ -f "$SPEECH" ] || "$PY" -c 'import sys; from videoatlas.synth.speech import write_speech_video
write_speech_video(sys.argv[1])' "$SPEECH" >>"$LOG" 2>&1; then
    mapfile -t SPOKEN < <("$PY" -c 'import json
from videoatlas.synth.speech import QUESTIONS
for q in QUESTIONS:
    if q.sense == "speech":
        print(json.dumps({"q": q.question, "c": list(q.choices)}))')
else
    skip speech "the spoken test video could not be made (espeak-ng missing?): see $LOG"
fi
speech() {  # speech LABEL QUESTION_INDEX [ask options...]: a question only the spoken test video's speech answers
    if [ "${#SPOKEN[@]}" -eq 0 ]; then
        return 0
    elif [ "$1" != videoarm-speech ] && ! has_option ask --speech; then
        skip "$1" "this checkout has no 'ask --speech' yet"
    else
        run_on "$SPEECH" SPOKEN "$@"
    fi
}

start_server plain-video-rlm || exit 1
run rlm-dfs 0 --agent video-rlm --traversal dfs
run rlm-bfs 1 --agent video-rlm --traversal bfs
run rlm-budget 2 --agent video-rlm --call-budget 6
run rlm-anchors 1 --agent video-rlm --anchors both
speech rlm-speech 1 --agent video-rlm
stop_servers

start_server plain-videoseek || exit 1
run videoseek 0 --agent videoseek
speech videoseek-speech 2 --agent videoseek
stop_servers

start_server plain-videoarm || exit 1
run videoarm 2 --agent videoarm
speech videoarm-speech 0 --agent videoarm
stop_servers

start_server plain-eea || exit 1
run eea 0 --agent eea
speech eea-speech 0 --agent eea
stop_servers

start_server plain-uniform || exit 1
run uniform 1 --agent uniform
speech uniform-speech-full 1 --agent uniform --speech full
stop_servers

# A server with the Decisions API (as vLLM 0.33 serving Qwen3.5 with --logprobs-mode raw_logprobs): VideoSeek's final
# decision is over text only, so its probabilities come from one POST /v1/decisions read of the decision's text,
# whose body check_requests.py checks with vLLM's own router. (The plain servers answer decisions 501, as vLLM does
# for a model without them: each run's first text-only decision sends one request, which is checked too.)
if has_option standin --decisions; then
    start_server decisions --decisions || exit 1
    run videoseek-decisions 1 --agent videoseek
    stop_servers
else
    skip decisions "this checkout has no 'standin --decisions' yet"
fi

# Reasoning servers: vLLM with a reasoning parser (field) and without one (<think> tags), thinking on and off.
if has_option standin --reasoning && has_option ask --thinking; then
    for mode in field tags; do
        start_server "reasoning-$mode" --reasoning "$mode" || { FAILED=$((FAILED + 1)); continue; }
        run "rlm-$mode-thinking" 0 --agent video-rlm --thinking on
        run "rlm-bfs-$mode-nothinking" 1 --agent video-rlm --traversal bfs --thinking off
        run "videoseek-$mode-thinking" 2 --agent videoseek --thinking on
        run "videoarm-$mode-thinking" 1 --agent videoarm --thinking on
        run "eea-$mode-thinking" 2 --agent eea --thinking on
        run "uniform-$mode-thinking" 0 --agent uniform --thinking on
        stop_servers
    done
else
    skip reasoning "this checkout has no 'standin --reasoning' and 'ask --thinking' yet"
fi

# Requests recorded, by route (a line without an endpoint is a chat request, as stand-ins before v11 wrote them).
REQUESTS=$("$PY" - "$OUT" <<'EOF'
import glob, json, sys
names = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings", "/v1/audio/transcriptions": "transcription",
         "/v1/decisions": "decisions"}
counts = dict.fromkeys(names.values(), 0)
for path in sorted(glob.glob(sys.argv[1] + "/requests-*.jsonl")):
    for line in open(path, encoding="utf-8"):
        if line.strip():
            name = names.get(json.loads(line).get("endpoint", "/v1/chat/completions"), "other")
            counts[name] = counts.get(name, 0) + 1
print(", ".join(f"{n} {name}" for name, n in counts.items()))
EOF
)
say "runs: $RAN ok, $FAILED failed, $SKIPPED skipped; requests recorded in $OUT/requests-*.jsonl: $REQUESTS"
[ "$FAILED" -eq 0 ]
