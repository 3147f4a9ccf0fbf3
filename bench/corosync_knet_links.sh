#!/usr/bin/env bash
# corosync's answer to a failed network, for bench/rrp_runtime.py: Debian's corosync
# (knet transport) on 3 nodes, one network namespace a node, two links a node (one
# bridge a link), link_mode passive and active. Under CPG load (the load client of
# bench/corosync_cpgbench.sh, agreed order, as fast as flow control allows), node 3's
# link 1 is taken down and brought back (`ip link set eth1 down|up`). Per link_mode,
# one JSON line:
#
#   before / after   deliveries a second at node 3 with both links, then with link 1 down
#   down_ms          link down -> node 3's knet logs "host: 1 link: 1 is down"
#   up_ms            link up   -> node 3's knet logs "host: 1 link: 1 is up"
#   memberships      "new membership" lines node 3 logged from link down to the end
#
# knet pings every link (knet_ping_interval, knet_ping_timeout, knet_pong_count from the
# token by default: a link is down after token / pong count without pongs, up after
# knet_pong_count pongs). token = 1000 ms as ringcast's bench, no crypto.
#
#   sudo bash bench/corosync_knet_links.sh [passive active]
#
# Needs root, iproute2, gcc and Debian's corosync, libcpg4, libcpg-dev (installed with
# apt-get when missing). The namespaces and processes are removed at the end.
# Environment: SECONDS_MEASURE (5), TOKEN (1000).
set -euo pipefail

MODES=("$@")
[ ${#MODES[@]} -eq 0 ] && MODES=(passive active)
MEASURE=${SECONDS_MEASURE:-5}
TOKEN=${TOKEN:-1000}
NODES=3
SUBNETS=(10.213.93 10.213.94)
HERE=$(cd "$(dirname "$0")" && pwd)
TAG=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
SW="rckn-sw-$TAG"
WORK=$(mktemp -d)
PIDS=()
LOADS=()

need() { command -v "$1" >/dev/null 2>&1; }
if ! need corosync || [ ! -e /usr/include/corosync/cpg.h ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq corosync libcpg4 libcpg-dev >/dev/null
fi
need gcc || { echo "gcc is needed to build the CPG load client" >&2; exit 2; }

cleanup() {
    for p in "${LOADS[@]}" "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for k in $(seq 1 $NODES); do ip netns del "rckn-$k-$TAG" 2>/dev/null || true; done
    ip netns del "$SW" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The CPG load client: the one bench/corosync_cpgbench.sh writes, taken from there.
sed -n "/^cat >\"\$WORK\/cpgload.c\" <<'EOF'\$/,/^EOF\$/p" "$HERE/corosync_cpgbench.sh" \
    | sed '1d;$d' >"$WORK/cpgload.c"
gcc -O2 -o "$WORK/cpgload" "$WORK/cpgload.c" -lcpg

ip netns add "$SW"
for net in 0 1; do
    ip -n "$SW" link add "br$net" type bridge
    ip -n "$SW" link set "br$net" up
done
for k in $(seq 1 $NODES); do
    ns="rckn-$k-$TAG"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for net in 0 1; do
        ip -n "$ns" link add "eth$net" type veth peer name "k${k}n$net" netns "$SW"
        ip -n "$SW" link set "k${k}n$net" master "br$net"
        ip -n "$SW" link set "k${k}n$net" up
        ip -n "$ns" addr add "${SUBNETS[$net]}.$k/24" dev "eth$net"
        ip -n "$ns" link set "eth$net" up
    done
done

write_conf() {  # $1 = node, $2 = link_mode
    local dir="$WORK/$2/n$1"
    mkdir -p "$dir/run" "$dir/lib" "$dir/log"
    {
        printf 'totem {\n  version: 2\n  cluster_name: rcknet\n  transport: knet\n'
        printf '  link_mode: %s\n  crypto_cipher: none\n  crypto_hash: none\n' "$2"
        printf '  token: %s\n  window_size: 50\n  max_messages: 17\n}\n' "$TOKEN"
        printf 'nodelist {\n'
        for j in $(seq 1 $NODES); do
            printf '  node {\n    name: node%s\n    ring0_addr: %s.%s\n    ring1_addr: %s.%s\n' \
                "$j" "${SUBNETS[0]}" "$j" "${SUBNETS[1]}" "$j"
            printf '    nodeid: %s\n  }\n' "$j"
        done
        printf '}\nquorum {\n  provider: corosync_votequorum\n}\n'
        printf 'logging {\n  to_stderr: no\n  to_logfile: yes\n  logfile: %s\n' \
            "$dir/log/corosync.log"
        printf '  to_syslog: no\n  timestamp: hires\n}\n'
    } >"$dir/corosync.conf"
}

start_corosync() {  # $1 = node, $2 = link_mode
    local dir="$WORK/$2/n$1"
    ip netns exec "rckn-$1-$TAG" sh -c "
        mount --bind '$dir/run' /run && mkdir -p /var/lib/corosync &&
        mount --bind '$dir/lib' /var/lib/corosync &&
        exec corosync -f -c '$dir/corosync.conf'" >"$dir/log/stdout" 2>&1 &
    PIDS+=($!)
}

load() {  # $1 = warmup, $2 = measure: the load client on every node; node 3's rate
    local outs=()
    for k in $(seq 1 $NODES); do
        ip netns exec "rckn-$k-$TAG" "$WORK/cpgload" 100 $NODES "$1" "$2" \
            >"$WORK/load.$k" 2>/dev/null &
        outs+=($!)
    done
    for p in "${outs[@]}"; do wait "$p" || true; done
    sed -n 's/.*"delivered_per_s": \([0-9.]*\).*/\1/p' "$WORK/load.$NODES"
}

background_load() {
    LOADS=()
    for k in $(seq 1 $NODES); do
        ip netns exec "rckn-$k-$TAG" "$WORK/cpgload" 100 $NODES 0 600 >/dev/null 2>&1 &
        LOADS+=($!)
    done
}

stop_load() {
    for p in "${LOADS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${LOADS[@]}"; do wait "$p" 2>/dev/null || true; done
    LOADS=()
}

follow() {  # $1 = log, $2 = lines already there, $3 = pattern: until it appears (30 s)
    timeout 30 sh -c "tail -n +$(($2 + 1)) -F '$1' 2>/dev/null | grep -q -m1 '$3'" || return 1
}

for mode in "${MODES[@]}"; do
    for k in $(seq 1 $NODES); do write_conf "$k" "$mode"; start_corosync "$k" "$mode"; done
    log="$WORK/$mode/n$NODES/log/corosync.log"
    sleep 2
    if grep -q 'exiting with status' "$WORK/$mode"/n*/log/corosync.log 2>/dev/null; then
        grep -h 'error' "$WORK/$mode"/n*/log/corosync.log >&2
        exit 1
    fi
    before=$(load 2 "$MEASURE")
    background_load
    sleep 1  # the load running when the link goes
    n0=$(wc -l <"$log")
    t0=$(date +%s.%N)
    ip -n "rckn-$NODES-$TAG" link set eth1 down
    down_ms=null
    if follow "$log" "$n0" 'host: 1 link: 1 is down'; then
        down_ms=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
    fi
    stop_load
    after=$(load 2 "$MEASURE")
    background_load
    sleep 1
    n1=$(wc -l <"$log")
    t1=$(date +%s.%N)
    ip -n "rckn-$NODES-$TAG" link set eth1 up
    up_ms=null
    if follow "$log" "$n1" 'host: 1 link: 1 is up'; then
        up_ms=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
    fi
    stop_load
    memberships=$(tail -n +$((n0 + 1)) "$log" | grep -c 'new membership' || true)
    printf '{"system": "corosync-knet", "link_mode": "%s", "token_ms": %s, "before_msgs_s": %s, "after_msgs_s": %s, "down_ms": %s, "up_ms": %s, "memberships": %s}\n' \
        "$mode" "$TOKEN" "${before:-null}" "${after:-null}" "$down_ms" "$up_ms" "$memberships"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
    ip -n "rckn-$NODES-$TAG" link set eth1 up
done
