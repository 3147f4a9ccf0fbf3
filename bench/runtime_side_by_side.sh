#!/usr/bin/env bash
# The runtime's side-by-side table (docs/benchmarks.md) in one command: corosync and ringcast, three nodes each in
# network namespaces of their own, interleaved round by round, with the machine's load
# average printed before every run (this machine is shared; read the ratios within a
# round, never a figure from another day).
#
#   sudo bash bench/runtime_side_by_side.sh [ROUNDS] [-- RINGCAST_ARGS ...]
#
# Each round runs `bench/corosync_cpgbench.sh $SIZES` (throughput and latency at every
# size, then its failover line), then `bench/runtime_throughput.py` at the same sizes with
# RINGCAST_ARGS appended (e.g. `--security none` or `--set max_pending=24`). Every output
# line is a JSON object; a {"load": ...} line precedes each run. VARIANTS runs ringcast
# more than once a round, one run a variant in the order given, separated by ";" (an
# empty variant is the defaults): VARIANTS="; --security none; --sched-rr" gives the
# authentication-off and realtime figures beside the default ones in every round, and
# each load line names its variant. Environment: SIZES
# ("100 1000"), SECONDS_MEASURE (6), PYTHON (the checkout's .venv/bin/python when there
# is one, as ./dev makes it, else python3), and corosync_cpgbench.sh's own.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-2}
shift || true
[ "${1:-}" = "--" ] && shift
read -r -a SIZE_LIST <<<"${SIZES:-100 1000}"
MEASURE=${SECONDS_MEASURE:-6}
DEFAULT_PY=python3
[ -x .venv/bin/python ] && DEFAULT_PY=.venv/bin/python
PY=${PYTHON:-$DEFAULT_PY}

load() {
    read -r one five fifteen _ </proc/loadavg
    printf '{"round": %d, "before": "%s", "variant": "%s", "load": [%s, %s, %s]}\n' \
        "$1" "$2" "${3:-}" "$one" "$five" "$fifteen"
}

if [ -n "${VARIANTS+set}" ]; then
    IFS=';' read -r -a VARIANT_LIST <<<"$VARIANTS"
    [ "${VARIANTS: -1}" = ";" ] && VARIANT_LIST+=("")
else
    VARIANT_LIST=("$*")
fi

size_args=()
for s in "${SIZE_LIST[@]}"; do size_args+=(--size "$s"); done

for round in $(seq 1 "$ROUNDS"); do
    load "$round" corosync
    SECONDS_MEASURE=$MEASURE bash bench/corosync_cpgbench.sh "${SIZE_LIST[@]}" 2>/dev/null \
        | grep '^{'
    for variant in "${VARIANT_LIST[@]}"; do
        read -r -a extra <<<"$variant"
        load "$round" ringcast "$(echo "$variant" | xargs)"
        "$PY" bench/runtime_throughput.py --protocol totem --nodes 3 "${size_args[@]}" \
            --seconds "$MEASURE" --no-failover --netns ${extra[@]+"${extra[@]}"} | grep '^{'
    done
done
load "$ROUNDS" end
