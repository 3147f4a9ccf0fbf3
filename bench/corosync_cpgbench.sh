#!/usr/bin/env bash
# Reference figures for bench/runtime_throughput.py: corosync (Debian's package) on this
# machine, 3 nodes, one per network namespace on a bridge, udpu transport, every node
# sending agreed-order messages through CPG as fast as flow control allows.
#
#   sudo bash bench/corosync_cpgbench.sh [SIZE ...]        (default: 100 1000)
#
# Needs root, iproute2, gcc, and Debian's corosync, libcpg4 and libcpg-dev packages
# (installed with apt-get when missing). Nothing of corosync is kept in the repository:
# the load client below is a small CPG program written for this benchmark, built into
# a temporary directory. Prints one JSON line per node and size: deliveries a second
# at that node, latency of its own messages (p50, p99), and the corosync daemon's CPU
# share; then the failover time (kill -9 of node 3 to a new membership at nodes 1 and 2,
# token = 1000 ms). The namespaces and processes are removed at the end.
#
# Environment: SECONDS_MEASURE (8), WARMUP (2), WINDOW_SIZE (50), MAX_MESSAGES (17),
# TOKEN (1000), TOKEN_COEFFICIENT (corosync's default, 650), CONSENSUS (corosync's
# default, 1.2 x the token timeout in force), NETMTU (corosync's default, 1500),
# SCHED_RR (yes). With 3 or more nodes in the nodelist corosync's token timeout in force
# is TOKEN + (nodes - 2) x TOKEN_COEFFICIENT (1650 ms for TOKEN 1000 and 3 nodes): the
# failover line names the timeouts in force, read back from corosync; TOKEN_COEFFICIENT=0
# makes TOKEN the timeout in force, for a comparison at equal timeouts. By default corosync gives itself round-robin realtime
# scheduling at the highest priority (system.sched_rr); on a machine shared with other
# work that is worth about twice the CPU a ringcast node (an ordinary process) gets.
# SCHED_RR=no runs it as an ordinary process too (sched_rr: no, priority: 0), for a
# comparison on equal terms.
set -euo pipefail

SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(100 1000)
MEASURE=${SECONDS_MEASURE:-8}
WARMUP=${WARMUP:-2}
WINDOW=${WINDOW_SIZE:-50}
MAXMSG=${MAX_MESSAGES:-17}
TOKEN=${TOKEN:-1000}
TOKEN_COEFFICIENT=${TOKEN_COEFFICIENT:-}
CONSENSUS=${CONSENSUS:-}
SCHED_RR=${SCHED_RR:-yes}
NETMTU=${NETMTU:-}
NODES=3
SUBNET=10.213.78
TAG=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
SW="rccs-sw-$TAG"
WORK=$(mktemp -d)
PIDS=()

need() { command -v "$1" >/dev/null 2>&1; }
if ! need corosync || [ ! -e /usr/include/corosync/cpg.h ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq corosync libcpg4 libcpg-dev >/dev/null
fi
need gcc || { echo "gcc is needed to build the CPG load client" >&2; exit 2; }

cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for k in $(seq 1 $NODES); do ip netns del "rccs-$k-$TAG" 2>/dev/null || true; done
    ip netns del "$SW" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------- the CPG load client
cat >"$WORK/cpgload.c" <<'EOF'
/* Joins CPG group "rcbench", waits for NODES members, then multicasts SIZE-byte
 * agreed messages as fast as CPG's flow control allows (CS_ERR_TRY_AGAIN), counting
 * deliveries between WARMUP and WARMUP+MEASURE seconds. Prints one JSON line. */
#include <corosync/cpg.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int members, want_members, measuring;
static long delivered, nlat;
static uint32_t my_nodeid;
static double *lat;
#define MAXLAT 4000000

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid,
                       void *msg, size_t len) {
    (void)h; (void)g; (void)pid;
    if (!measuring) return;
    delivered++;
    if (nodeid == my_nodeid && len >= sizeof(double) && nlat < MAXLAT) {
        double sent;
        memcpy(&sent, msg, sizeof sent);
        lat[nlat++] = now() - sent;
    }
}

static void on_confchg(cpg_handle_t h, const struct cpg_name *g, const struct cpg_address *m,
                       size_t nm, const struct cpg_address *l, size_t nl,
                       const struct cpg_address *j, size_t nj) {
    (void)h; (void)g; (void)m; (void)l; (void)nl; (void)j; (void)nj;
    members = (int)nm;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: cpgload SIZE NODES WARMUP MEASURE\n"); return 2; }
    size_t size = (size_t)atoi(argv[1]);
    want_members = atoi(argv[2]);
    double warmup = atof(argv[3]), measure = atof(argv[4]);
    if (size < sizeof(double)) size = sizeof(double);
    lat = malloc(sizeof(double) * MAXLAT);
    cpg_callbacks_t cb = {.cpg_deliver_fn = on_deliver, .cpg_confchg_fn = on_confchg};
    cpg_handle_t h;
    struct cpg_name group = {.length = 7};
    memcpy(group.value, "rcbench", 7);
    int rc = CS_ERR_TRY_AGAIN;
    for (int k = 0; k < 300 && rc != CS_OK; k++) {  /* the daemon may still be starting */
        rc = cpg_initialize(&h, &cb);
        if (rc != CS_OK) usleep(100000);
    }
    if (rc != CS_OK) { fprintf(stderr, "cpg_initialize: %d\n", rc); return 1; }
    cpg_local_get(h, &my_nodeid);
    if ((rc = cpg_join(h, &group)) != CS_OK) { fprintf(stderr, "cpg_join: %d\n", rc); return 1; }
    int fd;
    cpg_fd_get(h, &fd);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    double t_wait = now();
    while (members < want_members) {
        if (now() - t_wait > 60) { fprintf(stderr, "no full membership\n"); return 1; }
        poll(&pfd, 1, 100);
        cpg_dispatch(h, CS_DISPATCH_ALL);
    }
    char *buf = calloc(1, size);
    struct iovec iov = {.iov_base = buf, .iov_len = size};
    double t0 = now(), start = t0 + warmup, end = start + measure;
    for (;;) {
        double t = now();
        if (!measuring && t >= start) measuring = 1;
        if (t >= end) break;
        for (int k = 0; k < 64; k++) {
            double stamp = now();
            memcpy(buf, &stamp, sizeof stamp);
            rc = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1);
            if (rc != CS_OK) break;
        }
        poll(&pfd, 1, rc == CS_OK ? 0 : 1);
        cpg_dispatch(h, CS_DISPATCH_ALL);
    }
    qsort(lat, nlat, sizeof(double), cmp);
    printf("{\"system\": \"corosync\", \"nodeid\": %u, \"size\": %zu, \"delivered_per_s\": %.0f, "
           "\"latency_p50_ms\": %.2f, \"latency_p99_ms\": %.2f}\n",
           my_nodeid, size, delivered / measure, nlat ? lat[nlat / 2] * 1e3 : 0.0,
           nlat ? lat[(long)(nlat * 0.99)] * 1e3 : 0.0);
    cpg_finalize(h);
    return 0;
}
EOF
gcc -O2 -o "$WORK/cpgload" "$WORK/cpgload.c" -lcpg

# ---------------------------------------------------------------- namespaces on a bridge
ip netns add "$SW"
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
for k in $(seq 1 $NODES); do
    ns="rccs-$k-$TAG"
    ip netns add "$ns"
    ip -n "$ns" link add eth0 type veth peer name "p$k" netns "$SW"
    ip -n "$SW" link set "p$k" master br0
    ip -n "$SW" link set "p$k" up
    ip -n "$ns" addr add "$SUBNET.$k/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
done

write_conf() {  # $1 = node number (corosync's parser wants one item a line)
    local dir="$WORK/n$1"
    mkdir -p "$dir/run" "$dir/lib" "$dir/log"
    {
        printf 'totem {\n  version: 2\n  cluster_name: rcbench\n  transport: udpu\n'
        printf '  crypto_cipher: none\n  crypto_hash: none\n  token: %s\n' "$TOKEN"
        printf '  window_size: %s\n  max_messages: %s\n' "$WINDOW" "$MAXMSG"
        if [ -n "$NETMTU" ]; then printf '  netmtu: %s\n' "$NETMTU"; fi
        if [ -n "$TOKEN_COEFFICIENT" ]; then
            printf '  token_coefficient: %s\n' "$TOKEN_COEFFICIENT"
        fi
        if [ -n "$CONSENSUS" ]; then printf '  consensus: %s\n' "$CONSENSUS"; fi
        printf '}\n'
        printf 'nodelist {\n'
        for j in $(seq 1 $NODES); do
            printf '  node {\n    ring0_addr: %s.%s\n    nodeid: %s\n  }\n' "$SUBNET" "$j" "$j"
        done
        printf '}\nquorum {\n  provider: corosync_votequorum\n}\n'
        if [ "$SCHED_RR" = no ]; then
            printf 'system {\n  sched_rr: no\n  priority: 0\n}\n'
        fi
        printf 'logging {\n  to_stderr: no\n  to_logfile: yes\n  logfile: %s\n' \
            "$dir/log/corosync.log"
        printf '  to_syslog: no\n  timestamp: hires\n}\n'
    } >"$dir/corosync.conf"
}

start_corosync() {  # $1 = node number; each in its own network and mount namespace
    local dir="$WORK/n$1"
    ip netns exec "rccs-$1-$TAG" sh -c "
        mount --bind '$dir/run' /run && mkdir -p /var/lib/corosync &&
        mount --bind '$dir/lib' /var/lib/corosync &&
        exec corosync -f -c '$dir/corosync.conf'" >"$dir/log/stdout" 2>&1 &
    PIDS+=($!)
    echo $! >"$dir/pid"
}

daemon_pid() {  # the corosync process of node $1 (the child of its ip netns exec)
    pgrep -f "corosync -f -c $WORK/n$1/corosync.conf" | head -1
}

cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

run_size() {  # $1 = message size
    local size=$1
    local outs=()
    for k in $(seq 1 $NODES); do
        ip netns exec "rccs-$k-$TAG" "$WORK/cpgload" "$size" $NODES "$WARMUP" "$MEASURE" \
            >"$WORK/out.$k" 2>"$WORK/err.$k" &
        outs+=($!)
    done
    sleep "$WARMUP"
    local t0 c0=()
    for k in $(seq 1 $NODES); do c0[$k]=$(cpu_ticks "$(daemon_pid "$k")"); done
    sleep "$MEASURE"
    local hz
    hz=$(getconf CLK_TCK)
    for k in $(seq 1 $NODES); do
        local c1
        c1=$(cpu_ticks "$(daemon_pid "$k")")
        echo "$(( (c1 - c0[k]) ))" >"$WORK/cpu.$k"
    done
    for p in "${outs[@]}"; do wait "$p" || true; done
    for k in $(seq 1 $NODES); do
        local share
        share=$(awk -v t="$(cat "$WORK/cpu.$k")" -v hz="$hz" -v s="$MEASURE" \
            'BEGIN { printf "%.2f", t / hz / s }')
        sed "s/}\$/, \"daemon_cpu_share\": $share, \"sched_rr\": \"$SCHED_RR\"}/" "$WORK/out.$k"
        if [ -s "$WORK/err.$k" ]; then cat "$WORK/err.$k" >&2; fi
    done
}

for k in $(seq 1 $NODES); do write_conf "$k"; start_corosync "$k"; done
for s in "${SIZES[@]}"; do run_size "$s"; done

# ---------------------------------------------------------------- failover: kill -9 node 3
in_force() {  # a runtime.config.totem key as corosync computed it, read at node 1
    ip netns exec "rccs-1-$TAG" corosync-cmapctl -g "runtime.config.totem.$1" 2>/dev/null |
        awk '{print $NF}'
}
token_in_force=$(in_force token)
consensus_in_force=$(in_force consensus)
victim=$(daemon_pid $NODES)
declare -A seen
for k in $(seq 1 $((NODES - 1))); do seen[$k]=$(wc -l <"$WORK/n$k/log/corosync.log"); done
t_kill=$(date +%s.%N)
kill -9 "$victim"
for k in $(seq 1 $((NODES - 1))); do
    log="$WORK/n$k/log/corosync.log"
    # corosync logs "A new membership (...) was formed" when the new ring is installed;
    # tail -F follows the log as it is written (no polling here).
    timeout 30 sh -c "tail -n +$((seen[$k] + 1)) -F '$log' 2>/dev/null | grep -q -m1 'new membership'" || true
done
t_done=$(date +%s.%N)
awk -v a="$t_kill" -v b="$t_done" -v tok="$TOKEN" -v tf="${token_in_force:-?}" \
    -v cf="${consensus_in_force:-?}" \
    'BEGIN { printf "{\"system\": \"corosync\", \"nodes\": 3, \"token_ms\": %d, \"token_in_force_ms\": \"%s\", \"consensus_in_force_ms\": \"%s\", \"failover_ms\": %.1f}\n", tok, tf, cf, (b - a) * 1000 }'
