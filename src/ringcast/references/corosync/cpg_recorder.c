/*
 * ringcast's recorder for corosync's closed process groups (CPG): a small CPG client
 * written for ringcast (nothing of corosync's own code), built against Debian's
 * libcpg-dev at first use by ringcast.references.corosync.build().
 *
 * It joins one group, multicasts the workload it is given (agreed order, paced at
 * --rate a second, or as fast as flow control lets with --rate 0), and prints one JSON
 * object a line on stdout for every event it sees, with CLOCK_MONOTONIC nanoseconds:
 *
 *   {"k":"ring","t":T,"ring":"NODEID.SEQ","members":[1,2,3]}   totem configuration
 *   {"k":"view","t":T,"members":[1,2,3]}                         the group's configuration
 *   {"k":"submit","t":T,"msg":"n1:7","size":100}                 a multicast handed to CPG
 *   {"k":"deliver","t":T,"from":1,"msg":"n1:7","size":100}       a delivery
 *   {"k":"end","t":T,"why":"..."}                                 the recorder stops
 *
 * The message id travels in the payload (NUL-terminated, then padding to --size).
 *
 *   cpg_recorder --name n1 [--group G] [--rate R] [--size S] [--count N] [--seconds S]
 *                [--from-ns T] [--first K]
 *
 * It sends from the CLOCK_MONOTONIC instant --from-ns (at once if 0 or past) for
 * --seconds, and stays in the group after that until SIGTERM or SIGINT. Its messages are
 * numbered from --first (1 by default; a restarted member starts past its last life's).
 */
#include <corosync/cpg.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *name = "n";
static unsigned long counter = 0;
static volatile sig_atomic_t stopping = 0;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void print_ids(const uint32_t *ids, size_t n) {
    putchar('[');
    for (size_t k = 0; k < n; k++) printf(k ? ",%u" : "%u", ids[k]);
    putchar(']');
}

static void on_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid,
                       uint32_t pid, void *msg, size_t len) {
    (void)h; (void)g; (void)pid;
    const char *text = msg;
    size_t idlen = strnlen(text, len < 64 ? len : 64);
    printf("{\"k\":\"deliver\",\"t\":%llu,\"from\":%u,\"msg\":\"%.*s\",\"size\":%zu}\n",
           (unsigned long long)now_ns(), nodeid, (int)idlen, text, len);
}

static void on_confchg(cpg_handle_t h, const struct cpg_name *g,
                       const struct cpg_address *members, size_t n,
                       const struct cpg_address *left, size_t nl,
                       const struct cpg_address *joined, size_t nj) {
    (void)h; (void)g; (void)left; (void)nl; (void)joined; (void)nj;
    uint32_t ids[128];
    size_t m = n < 128 ? n : 128;
    for (size_t k = 0; k < m; k++) ids[k] = members[k].nodeid;
    printf("{\"k\":\"view\",\"t\":%llu,\"members\":", (unsigned long long)now_ns());
    print_ids(ids, m);
    printf("}\n");
}

static void on_totem(cpg_handle_t h, struct cpg_ring_id ring, uint32_t n,
                     const uint32_t *members) {
    (void)h;
    printf("{\"k\":\"ring\",\"t\":%llu,\"ring\":\"%u.%llu\",\"members\":",
           (unsigned long long)now_ns(), ring.nodeid, (unsigned long long)ring.seq);
    print_ids(members, n);
    printf("}\n");
}

static void on_signal(int sig) { (void)sig; stopping = 1; }

int main(int argc, char **argv) {
    const char *group = "ringcast";
    double rate = 0, seconds = 3600;
    long size = 100, count = -1;
    uint64_t from = 0;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--name")) name = argv[k + 1];
        else if (!strcmp(argv[k], "--group")) group = argv[k + 1];
        else if (!strcmp(argv[k], "--rate")) rate = atof(argv[k + 1]);
        else if (!strcmp(argv[k], "--size")) size = atol(argv[k + 1]);
        else if (!strcmp(argv[k], "--count")) count = atol(argv[k + 1]);
        else if (!strcmp(argv[k], "--seconds")) seconds = atof(argv[k + 1]);
        else if (!strcmp(argv[k], "--from-ns")) from = strtoull(argv[k + 1], NULL, 10);
        else if (!strcmp(argv[k], "--first")) counter = strtoul(argv[k + 1], NULL, 10) - 1;
        else { fprintf(stderr, "cpg_recorder: unknown option %s\n", argv[k]); return 2; }
    }
    if (size < 64) size = 64;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    setvbuf(stdout, NULL, _IOLBF, 0);

    cpg_model_v1_data_t model = {0};
    model.model = CPG_MODEL_V1;
    model.cpg_deliver_fn = on_deliver;
    model.cpg_confchg_fn = on_confchg;
    model.cpg_totem_confchg_fn = on_totem;
    model.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF;
    cpg_handle_t handle;
    cs_error_t err;
    /* corosync may still be starting (knet takes a while): try for up to 30 s */
    for (int tries = 0;; tries++) {
        err = cpg_model_initialize(&handle, CPG_MODEL_V1, (cpg_model_data_t *)&model, NULL);
        if (err == CS_OK || tries >= 300) break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    if (err != CS_OK) {
        printf("{\"k\":\"end\",\"t\":%llu,\"why\":\"cpg_model_initialize: error %d "
               "(is corosync running?)\"}\n", (unsigned long long)now_ns(), err);
        return 1;
    }
    struct cpg_name g;
    g.length = (uint32_t)strlen(group);
    memcpy(g.value, group, g.length);
    while ((err = cpg_join(handle, &g)) == CS_ERR_TRY_AGAIN) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (err != CS_OK) {
        printf("{\"k\":\"end\",\"t\":%llu,\"why\":\"cpg_join: error %d\"}\n",
               (unsigned long long)now_ns(), err);
        return 1;
    }
    int fd;
    cpg_fd_get(handle, &fd);
    char *payload = calloc(1, (size_t)size);
    uint64_t start = now_ns();
    if (from > start) start = from;
    uint64_t end = start + (uint64_t)(seconds * 1e9);
    uint64_t next = start;
    uint64_t period = rate > 0 ? (uint64_t)(1e9 / rate) : 0;
    const char *why = "stopped";
    while (!stopping) {
        uint64_t t = now_ns();
        if (t >= end) count = 0;  /* the workload is over: stay a member until told */
        int wait_ms = 100;
        if (count != 0 && t >= next) {
            snprintf(payload, 64, "%s:%lu", name, counter + 1);
            struct iovec iov = {payload, (size_t)size};
            err = cpg_mcast_joined(handle, CPG_TYPE_AGREED, &iov, 1);
            if (err == CS_OK) {
                counter++;
                if (count > 0) count--;
                printf("{\"k\":\"submit\",\"t\":%llu,\"msg\":\"%s\",\"size\":%ld}\n",
                       (unsigned long long)t, payload, size);
                next = period ? next + period : t;
                if (period && next < t) next = t;  /* no burst after a stall */
            } else if (err != CS_ERR_TRY_AGAIN) {
                why = "cpg_mcast_joined failed";
                break;
            }
            wait_ms = 0;
        }
        if (count != 0 && next > t) {
            uint64_t d = (next - t) / 1000000;
            wait_ms = d < 100 ? (int)d : 100;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, wait_ms);
        if (r < 0 && errno != EINTR) { why = "poll failed"; break; }
        if (r > 0) {
            err = cpg_dispatch(handle, CS_DISPATCH_ALL);
            if (err != CS_OK && err != CS_ERR_TRY_AGAIN) {
                why = "corosync went away";
                break;
            }
        }
    }
    printf("{\"k\":\"end\",\"t\":%llu,\"why\":\"%s\"}\n", (unsigned long long)now_ns(), why);
    if (stopping) {
        cpg_leave(handle, &g);
        cpg_finalize(handle);
    }
    fflush(stdout);
    free(payload);
    return 0;
}
