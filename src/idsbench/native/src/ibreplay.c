/* ibreplay: send pcap files out of one interface on an ABSOLUTE schedule, one thread per file.
 *
 *   ibreplay --iface IF --pcap F [--pcap F2 ...] [--cpus 0,1] [--loops N | --duration S]
 *            [--rate recorded|topspeed|multiplier=X|pps=X|mbps=X] [--batch N] [--spin-us N]
 *            [--start-delay-ms N] [--rt-priority N] [--no-qdisc-bypass] [--dry-run]
 *
 * Replayer i (thread i, pinned to cpus[i % n] when --cpus is given) preloads its file and sends
 * packet k of loop L at start + deadline(k, L):
 *   recorded / multiplier X:  (ts_k - ts_0 + L * span) / X     span = ts_last - ts_0
 *   pps X:                    (L * n + k) / X
 *   mbps X:                   bytes scheduled before this packet * 8 / (X * 1e6)
 *   topspeed:                 no deadline
 * so lateness never accumulates. All replayers share one start instant. Waiting sleeps with
 * clock_nanosleep(TIMER_ABSTIME) until spin-us before the deadline and spins the rest. Due
 * packets go out in sendmmsg batches on an AF_PACKET socket bound to IF (PACKET_QDISC_BYPASS).
 * ENOBUFS/EAGAIN are retried (counted in `retries`); other send errors count the packet as
 * `failed` and move on. --dry-run keeps the schedule but sends nothing (no socket, no root).
 *
 * SIGINT/SIGTERM stop every replayer at its next packet; the report is still printed. The report
 * is ONE JSON document on stdout. Setup errors: one line on stderr, exit 2 (usage) or 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <math.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "pcapread.h"

#define MAX_REPLAYERS 256
#define MAX_BATCH 1024
#define LAT_LINEAR_US 20000  /* 1 µs buckets below 20 ms, then 16 log buckets per octave */
#define LAT_LOG_BUCKETS (16 * 32)
#define MAX_SLEEP_NS 20000000LL  /* wake at least every 20 ms to notice a stop request */

enum rate_kind { RATE_RECORDED, RATE_TOPSPEED, RATE_MULTIPLIER, RATE_PPS, RATE_MBPS };
static const char *RATE_NAMES[] = {"recorded", "topspeed", "multiplier", "pps", "mbps"};

typedef struct {
    const char *path;
    uint8_t *arena;      /* every packet's bytes, back to back */
    size_t n;            /* packets */
    uint32_t *len;
    uint64_t *off;       /* into arena */
    int64_t *rel_ns;     /* timestamp minus the first packet's */
    int64_t span_ns;
    uint64_t bytes;
} trace_t;

typedef struct {
    int64_t t;
    uint64_t pkts, bytes;
} second_t;

typedef struct {
    int index;
    int cpu;             /* -1: not pinned */
    int fd;
    trace_t trace;
    /* results */
    uint64_t pkts_sent, bytes_sent, failed, retries;
    int64_t first_ns, last_ns;  /* monotonic times of the first / last successful send */
    uint64_t lat_hist[LAT_LINEAR_US + LAT_LOG_BUCKETS];
    uint64_t lat_count;
    int64_t lat_max_ns;
    second_t *secs;             /* packets and bytes sent, by the second they left in */
    size_t n_secs, secs_cap;
    second_t *due;              /* packets scheduled, by the second of their deadline (timed rates) */
    size_t n_due, due_cap;
    int64_t due_end_ns;         /* end of the last `due` second */
    double cpu_s;
    int rt_on, rt_failed;
    uint64_t rt_demotions;
    int last_errno;
    char err[256];
} replayer_t;

static struct {
    const char *iface;
    int ifindex;
    const char *pcaps[MAX_REPLAYERS];
    int n_pcaps;
    int cpus[1024];
    int n_cpus;
    uint64_t loops;
    double duration_s;   /* 0: not given */
    enum rate_kind rate;
    double rate_value;
    int batch;
    int64_t spin_ns;
    int64_t start_delay_ns;
    int qdisc_bypass;
    int dry_run;
    int rt_priority;     /* SCHED_FIFO priority of the replayer threads (0: normal scheduling) */
    int64_t start_ns;    /* CLOCK_MONOTONIC start instant */
} cfg = {.loops = 1, .rate = RATE_RECORDED, .batch = 64, .spin_ns = 50000, .start_delay_ns = 50000000,
         .qdisc_bypass = 1};

static atomic_int stop_requested;
static atomic_int replayers_done;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t real_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ibreplay: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

/* ---- setup -------------------------------------------------------------------------------- */

static void load_trace(trace_t *t, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) die(1, "cannot read pcap %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die(1, "pcap %s is not a regular file", path);
    pr_reader r;
    if (pr_open(&r, path) != 0) die(1, "cannot read pcap %s: %s", path, r.err);
    t->path = path;
    t->arena = malloc((size_t)st.st_size + 1);
    size_t cap = 1024;
    t->len = malloc(cap * sizeof *t->len);
    t->off = malloc(cap * sizeof *t->off);
    t->rel_ns = malloc(cap * sizeof *t->rel_ns);
    if (!t->arena || !t->len || !t->off || !t->rel_ns) die(1, "out of memory loading %s", path);
    pr_packet p;
    int rc;
    int64_t ts0 = 0, ts_last = 0;
    size_t used = 0;
    while ((rc = pr_next(&r, &p)) == 1) {
        if (p.link != 1)
            die(1, "pcap %s: link type %u is not Ethernet; ibreplay sends Ethernet frames only", path, p.link);
        if (t->n == cap) {
            cap *= 2;
            t->len = realloc(t->len, cap * sizeof *t->len);
            t->off = realloc(t->off, cap * sizeof *t->off);
            t->rel_ns = realloc(t->rel_ns, cap * sizeof *t->rel_ns);
            if (!t->len || !t->off || !t->rel_ns) die(1, "out of memory loading %s", path);
        }
        if (t->n == 0) ts0 = p.ts_ns;
        memcpy(t->arena + used, p.data, p.caplen);
        t->off[t->n] = used;
        t->len[t->n] = p.caplen;
        t->rel_ns[t->n] = p.ts_ns - ts0;
        used += p.caplen;
        t->bytes += p.caplen;
        ts_last = p.ts_ns;
        t->n++;
    }
    if (rc < 0) die(1, "pcap %s is corrupt: %s", path, r.err);
    pr_close(&r);
    if (t->n == 0) die(1, "pcap %s holds no packets", path);
    t->span_ns = ts_last - ts0 > 0 ? ts_last - ts0 : 0;
}

static int open_socket(replayer_t *rp) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);  /* protocol 0: receives nothing */
    if (fd < 0) die(1, "cannot open an AF_PACKET socket: %s (run as root or with CAP_NET_RAW)", strerror(errno));
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = cfg.ifindex, .sll_protocol = 0};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0)
        die(1, "cannot bind to interface %s: %s", cfg.iface, strerror(errno));
    if (cfg.qdisc_bypass) {
        int one = 1;
        if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
            die(1, "PACKET_QDISC_BYPASS on %s: %s", cfg.iface, strerror(errno));
    }
    int sndbuf = 4 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    (void)rp;
    return fd;
}

/* ---- schedule ----------------------------------------------------------------------------- */

/* Deadline (ns after start) of packet k of loop L; `sched_bytes` = bytes scheduled before it. */
static int64_t deadline_ns(const trace_t *t, size_t k, uint64_t loop, double sched_bytes) {
    switch (cfg.rate) {
    case RATE_RECORDED:
        return t->rel_ns[k] + (int64_t)loop * t->span_ns;
    case RATE_MULTIPLIER:
        return (int64_t)(((double)t->rel_ns[k] + (double)loop * (double)t->span_ns) / cfg.rate_value);
    case RATE_PPS:
        return (int64_t)(((double)loop * (double)t->n + (double)k) * 1e9 / cfg.rate_value);
    case RATE_MBPS:
        return (int64_t)(sched_bytes * 8000.0 / cfg.rate_value);
    case RATE_TOPSPEED:
    default:
        return 0;
    }
}

static void wait_until(int64_t when) {
    for (;;) {
        if (atomic_load_explicit(&stop_requested, memory_order_relaxed)) return;
        int64_t now = mono_ns();
        int64_t sleep_to = when - cfg.spin_ns;
        if (sleep_to - now > 0) {
            if (sleep_to - now > MAX_SLEEP_NS) sleep_to = now + MAX_SLEEP_NS;
            struct timespec ts = {.tv_sec = sleep_to / 1000000000LL, .tv_nsec = sleep_to % 1000000000LL};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            continue;
        }
        /* The last microseconds: spin, yielding each round so replayers that share a CPU (same
         * SCHED_FIFO priority, no time slices) take turns instead of starving one another. */
        while (mono_ns() < when) {
            if (atomic_load_explicit(&stop_requested, memory_order_relaxed)) return;
            sched_yield();
        }
        return;
    }
}

/* Real-time priority only while the replayer keeps its schedule: a thread that falls more than
 * RT_BEHIND_NS behind (it cannot keep up) returns to normal scheduling, so it never starves the
 * sensor on a shared CPU; it becomes real-time again once it has to wait for a deadline. */
#define RT_BEHIND_NS 2000000LL

static void set_realtime(replayer_t *rp, int on) {
    if (cfg.rt_priority <= 0 || rp->rt_on == on || rp->rt_failed) return;
    struct sched_param sp = {.sched_priority = on ? cfg.rt_priority : 0};
    int e = pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp);
    if (e != 0) {
        snprintf(rp->err, sizeof rp->err, "cannot use SCHED_FIFO priority %d: %s", cfg.rt_priority, strerror(e));
        rp->rt_failed = 1;
        return;
    }
    rp->rt_on = on;
    if (!on) rp->rt_demotions++;
}

/* ---- accounting --------------------------------------------------------------------------- */

static size_t lat_bucket(int64_t ns) {
    int64_t us = ns / 1000;
    if (us < LAT_LINEAR_US) return (size_t)(us < 0 ? 0 : us);
    double octaves = log2((double)us / LAT_LINEAR_US);
    size_t b = LAT_LINEAR_US + (size_t)(octaves * 16);
    return b < LAT_LINEAR_US + LAT_LOG_BUCKETS ? b : LAT_LINEAR_US + LAT_LOG_BUCKETS - 1;
}

static double lat_bucket_us(size_t b) {
    if (b < LAT_LINEAR_US) return (double)b;
    return LAT_LINEAR_US * exp2((double)(b - LAT_LINEAR_US) / 16.0);
}

static double lat_percentile(const replayer_t *rp, double q) {
    if (rp->lat_count == 0) return 0.0;
    uint64_t rank = (uint64_t)ceil(q * (double)rp->lat_count);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < LAT_LINEAR_US + LAT_LOG_BUCKETS; b++) {
        seen += rp->lat_hist[b];
        if (seen >= rank) return lat_bucket_us(b);
    }
    return rp->lat_max_ns / 1e3;
}

static void add_second(second_t **secs, size_t *n, size_t *cap, int64_t t, uint64_t pkts, uint64_t bytes) {
    if (*n && (*secs)[*n - 1].t == t) {
        (*secs)[*n - 1].pkts += pkts;
        (*secs)[*n - 1].bytes += bytes;
        return;
    }
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *secs = realloc(*secs, *cap * sizeof **secs);
        if (!*secs) die(1, "out of memory");
    }
    (*secs)[(*n)++] = (second_t){t, pkts, bytes};
}

static void count_second(replayer_t *rp, int64_t now, uint64_t pkts, uint64_t bytes) {
    add_second(&rp->secs, &rp->n_secs, &rp->secs_cap, (now - cfg.start_ns) / 1000000000LL, pkts, bytes);
}

/* One packet scheduled for `due` (monotonic ns): the requested side of the per-second series. */
static void count_due(replayer_t *rp, int64_t due, uint64_t bytes) {
    if (rp->n_due && due < rp->due_end_ns && due >= rp->due_end_ns - 1000000000LL) {
        rp->due[rp->n_due - 1].pkts++;
        rp->due[rp->n_due - 1].bytes += bytes;
        return;
    }
    int64_t t = (due - cfg.start_ns) / 1000000000LL;
    add_second(&rp->due, &rp->n_due, &rp->due_cap, t, 1, bytes);
    rp->due_end_ns = cfg.start_ns + (t + 1) * 1000000000LL;
}

/* ---- sending ------------------------------------------------------------------------------ */

typedef struct {
    struct mmsghdr msgs[MAX_BATCH];
    struct iovec iov[MAX_BATCH];
    int64_t due[MAX_BATCH];  /* absolute deadlines (0: topspeed) */
} batch_t;

/* Send msgs[0..n): retries ENOBUFS/EAGAIN, skips (and counts) packets that fail otherwise. */
static void send_batch(replayer_t *rp, batch_t *b, int n) {
    int done = 0;
    int backoff = 0;
    while (done < n) {
        int64_t now = mono_ns();
        int sent;
        if (cfg.dry_run) {
            sent = n - done;
        } else {
            sent = sendmmsg(rp->fd, b->msgs + done, (unsigned)(n - done), 0);
        }
        if (sent > 0) {
            uint64_t bytes = 0;
            for (int i = done; i < done + sent; i++) {
                bytes += b->iov[i].iov_len;
                if (b->due[i]) {
                    int64_t late = now - b->due[i];
                    if (late < 0) late = 0;
                    rp->lat_hist[lat_bucket(late)]++;
                    rp->lat_count++;
                    if (late > rp->lat_max_ns) rp->lat_max_ns = late;
                }
            }
            if (!rp->pkts_sent) rp->first_ns = now;
            rp->pkts_sent += (uint64_t)sent;
            rp->bytes_sent += bytes;
            rp->last_ns = mono_ns();
            count_second(rp, now, (uint64_t)sent, bytes);
            done += sent;
            backoff = 0;
            continue;
        }
        int e = errno;
        if (sent < 0 && (e == ENOBUFS || e == EAGAIN || e == EINTR)) {
            if (e != EINTR) rp->retries++;
            if (atomic_load_explicit(&stop_requested, memory_order_relaxed)) return;
            if (++backoff > 8) {  /* the device queue stays full: let its consumer run */
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            } else {
                sched_yield();
            }
            continue;
        }
        rp->failed++;  /* this packet cannot be sent (e.g. EMSGSIZE): skip it */
        rp->last_errno = e;
        done++;
    }
}

static void *replayer_main(void *arg) {
    replayer_t *rp = arg;
    prctl(PR_SET_TIMERSLACK, 1UL);
    if (rp->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(rp->cpu, &set);
        int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        if (e != 0) snprintf(rp->err, sizeof rp->err, "cannot pin to CPU %d: %s", rp->cpu, strerror(e));
    }
    batch_t *b = calloc(1, sizeof *b);
    if (!b) die(1, "out of memory");
    const trace_t *t = &rp->trace;
    for (int i = 0; i < cfg.batch; i++) {
        b->msgs[i].msg_hdr = (struct msghdr){.msg_iov = &b->iov[i], .msg_iovlen = 1};
    }
    int timed = cfg.rate != RATE_TOPSPEED;
    int64_t end_ns = cfg.duration_s > 0 ? cfg.start_ns + (int64_t)(cfg.duration_s * 1e9) : INT64_MAX;
    size_t k = 0;
    uint64_t loop = 0;
    double sched_bytes = 0;  /* bytes scheduled before packet k (mbps) */
    int finished = 0;
    wait_until(cfg.start_ns);
    while (!finished && !atomic_load_explicit(&stop_requested, memory_order_relaxed)) {
        int64_t due = timed ? cfg.start_ns + deadline_ns(t, k, loop, sched_bytes) : 0;
        if (timed) {
            if (due >= end_ns) break;
            int64_t before = mono_ns();
            if (due > before) {
                set_realtime(rp, 1);
                wait_until(due);
            } else if (before - due > RT_BEHIND_NS) {
                set_realtime(rp, 0);
            }
            if (atomic_load_explicit(&stop_requested, memory_order_relaxed)) break;
        } else if (mono_ns() >= end_ns) {
            break;
        }
        int64_t now = mono_ns();
        int n = 0;
        while (n < cfg.batch) {  /* this packet and every following one that is due already */
            b->iov[n].iov_base = t->arena + t->off[k];
            b->iov[n].iov_len = t->len[k];
            b->due[n] = due;
            if (timed) count_due(rp, due, t->len[k]);
            n++;
            sched_bytes += t->len[k];
            if (++k == t->n) {
                k = 0;
                loop++;
                if (cfg.duration_s <= 0 && loop >= cfg.loops) {
                    finished = 1;
                    break;
                }
            }
            if (timed) {
                due = cfg.start_ns + deadline_ns(t, k, loop, sched_bytes);
                if (due > now || due >= end_ns) break;
            }
        }
        send_batch(rp, b, n);
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    rp->cpu_s = cpu.tv_sec + cpu.tv_nsec / 1e9;
    free(b);
    atomic_fetch_add(&replayers_done, 1);
    return NULL;
}

/* ---- report ------------------------------------------------------------------------------- */

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static double requested_pps(const trace_t *t) {
    double recorded = t->span_ns > 0 ? (double)t->n / (t->span_ns / 1e9) : 0.0;
    switch (cfg.rate) {
    case RATE_RECORDED: return recorded;
    case RATE_MULTIPLIER: return recorded * cfg.rate_value;
    case RATE_PPS: return cfg.rate_value;
    case RATE_MBPS: return cfg.rate_value * 1e6 / 8.0 / ((double)t->bytes / (double)t->n);
    default: return 0.0;
    }
}

/* "per_second": sent packets/bytes and (timed rates) the packets due, merged by second. */
static void print_seconds(const replayer_t *rp) {
    printf(", \"per_second\": [");
    size_t i = 0, j = 0;
    for (int first = 1; i < rp->n_secs || j < rp->n_due; first = 0) {
        int64_t ts = i < rp->n_secs ? rp->secs[i].t : INT64_MAX;
        int64_t td = j < rp->n_due ? rp->due[j].t : INT64_MAX;
        int64_t t = ts < td ? ts : td;
        uint64_t pkts = 0, bytes = 0;
        if (ts == t) { pkts = rp->secs[i].pkts; bytes = rp->secs[i].bytes; i++; }
        printf("%s{\"t\": %lld, \"pkts\": %llu, \"bytes\": %llu", first ? "" : ", ", (long long)t,
               (unsigned long long)pkts, (unsigned long long)bytes);
        if (td == t) printf(", \"due_pkts\": %llu", (unsigned long long)rp->due[j++].pkts);
        else if (rp->n_due) printf(", \"due_pkts\": 0");
        printf("}");
    }
    printf("]");
}

static void report(replayer_t *rps, int n, int64_t start_real_ns, int interrupted) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double proc_cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("{\"tool\": \"ibreplay\", \"schema\": 1, \"interface\": ");
    json_string(cfg.iface ? cfg.iface : "");
    printf(", \"dry_run\": %s, \"rate\": {\"kind\": \"%s\", \"value\": ", cfg.dry_run ? "true" : "false",
           RATE_NAMES[cfg.rate]);
    if (cfg.rate == RATE_RECORDED || cfg.rate == RATE_TOPSPEED) printf("null");
    else printf("%.17g", cfg.rate_value);
    printf("}, \"loops\": ");
    if (cfg.duration_s > 0) printf("null, \"duration_s\": %.17g", cfg.duration_s);
    else printf("%llu, \"duration_s\": null", (unsigned long long)cfg.loops);
    printf(", \"batch\": %d, \"spin_us\": %.3f, \"qdisc_bypass\": %s, \"start_unix\": %.9f, "
           "\"rt_priority\": %d, \"interrupted\": %s, \"cpu_s\": %.6f, \"replayers\": [",
           cfg.batch, cfg.spin_ns / 1e3, cfg.qdisc_bypass ? "true" : "false", start_real_ns / 1e9, cfg.rt_priority,
           interrupted ? "true" : "false", proc_cpu);
    for (int i = 0; i < n; i++) {
        replayer_t *rp = &rps[i];
        double elapsed = rp->pkts_sent ? (rp->last_ns - cfg.start_ns) / 1e9 : 0.0;
        if (elapsed < 0) elapsed = 0;
        double req = requested_pps(&rp->trace);
        printf("%s\n  {\"index\": %d, \"pcap\": ", i ? "," : "", rp->index);
        json_string(rp->trace.path);
        printf(", \"cpu\": %d, \"trace_packets\": %zu, \"trace_bytes\": %llu, \"trace_span_s\": %.9f, "
               "\"pkts_sent\": %llu, \"bytes_sent\": %llu, \"failed\": %llu, \"retries\": %llu, "
               "\"last_error\": ",
               rp->cpu, rp->trace.n, (unsigned long long)rp->trace.bytes, rp->trace.span_ns / 1e9,
               (unsigned long long)rp->pkts_sent, (unsigned long long)rp->bytes_sent,
               (unsigned long long)rp->failed, (unsigned long long)rp->retries);
        if (rp->last_errno) json_string(strerror(rp->last_errno));
        else printf("null");
        printf(", \"warning\": ");
        if (rp->err[0]) json_string(rp->err);
        else printf("null");
        printf(", \"elapsed_s\": %.9f, \"first_send_s\": %.9f, \"pps\": %.3f, \"mbps\": %.6f, "
               "\"requested_pps\": ",
               elapsed, rp->pkts_sent ? (rp->first_ns - cfg.start_ns) / 1e9 : 0.0,
               elapsed > 0 ? rp->pkts_sent / elapsed : 0.0,
               elapsed > 0 ? rp->bytes_sent * 8.0 / elapsed / 1e6 : 0.0);
        if (req > 0) printf("%.6f", req);
        else printf("null");
        printf(", \"cpu_s\": %.6f, \"rt_demotions\": %llu, \"lateness_us\": ", rp->cpu_s,
               (unsigned long long)rp->rt_demotions);
        if (cfg.rate == RATE_TOPSPEED || rp->lat_count == 0) printf("null");
        else printf("{\"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f}", lat_percentile(rp, 0.5),
                    lat_percentile(rp, 0.99), rp->lat_max_ns / 1e3);
        print_seconds(rp);
        printf("}");
    }
    printf("\n]}\n");
    fflush(stdout);
}

/* ---- command line ------------------------------------------------------------------------- */

static void usage(void) {
    fputs("usage: ibreplay --iface IF --pcap FILE [--pcap FILE ...] [--cpus 0,1] [--loops N | --duration S]\n"
          "                [--rate recorded|topspeed|multiplier=X|pps=X|mbps=X] [--batch N] [--spin-us N]\n"
          "                [--start-delay-ms N] [--rt-priority N] [--no-qdisc-bypass] [--dry-run]\n", stderr);
}

static double parse_double(const char *opt, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die(2, "%s: %s is not a number", opt, s);
    return v;
}

static void parse_rate(const char *s) {
    const char *eq = strchr(s, '=');
    size_t klen = eq ? (size_t)(eq - s) : strlen(s);
    for (int k = 0; k < 5; k++) {
        if (strlen(RATE_NAMES[k]) == klen && strncmp(s, RATE_NAMES[k], klen) == 0) {
            cfg.rate = (enum rate_kind)k;
            int needs_value = k == RATE_MULTIPLIER || k == RATE_PPS || k == RATE_MBPS;
            if (needs_value != (eq != NULL)) die(2, "--rate %s: %s", s, needs_value ? "needs =VALUE" : "takes no value");
            if (eq) {
                cfg.rate_value = parse_double("--rate", eq + 1);
                if (cfg.rate_value <= 0) die(2, "--rate %s: the value must be positive", s);
            }
            return;
        }
    }
    die(2, "--rate %s: unknown rate (recorded, topspeed, multiplier=X, pps=X, mbps=X)", s);
}

static void parse_cpus(const char *s) {
    const char *p = s;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p || a < 0 || a >= CPU_SETSIZE) die(2, "--cpus %s: not a list of CPU numbers", s);
        long b = a;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b >= CPU_SETSIZE) die(2, "--cpus %s: bad range", s);
        }
        for (long c = a; c <= b && cfg.n_cpus < 1024; c++) cfg.cpus[cfg.n_cpus++] = (int)c;
        if (*end == ',') end++;
        else if (*end) die(2, "--cpus %s: not a list of CPU numbers", s);
        p = end;
    }
}

static void parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
#define NEXT() (has_next ? argv[++i] : (die(2, "%s needs a value", a), (char *)NULL))
        if (!strcmp(a, "--iface")) cfg.iface = NEXT();
        else if (!strcmp(a, "--pcap")) {
            if (cfg.n_pcaps == MAX_REPLAYERS) die(2, "at most %d --pcap files", MAX_REPLAYERS);
            cfg.pcaps[cfg.n_pcaps++] = NEXT();
        } else if (!strcmp(a, "--cpus")) parse_cpus(NEXT());
        else if (!strcmp(a, "--loops")) {
            double v = parse_double(a, NEXT());
            if (v < 1 || v != floor(v)) die(2, "--loops must be a whole number >= 1");
            cfg.loops = (uint64_t)v;
        } else if (!strcmp(a, "--duration")) {
            cfg.duration_s = parse_double(a, NEXT());
            if (cfg.duration_s <= 0) die(2, "--duration must be positive");
        } else if (!strcmp(a, "--rate")) parse_rate(NEXT());
        else if (!strcmp(a, "--batch")) {
            double v = parse_double(a, NEXT());
            if (v < 1 || v > MAX_BATCH) die(2, "--batch must be 1..%d", MAX_BATCH);
            cfg.batch = (int)v;
        } else if (!strcmp(a, "--spin-us")) {
            double v = parse_double(a, NEXT());
            if (v < 0) die(2, "--spin-us must be >= 0");
            cfg.spin_ns = (int64_t)(v * 1e3);
        } else if (!strcmp(a, "--start-delay-ms")) {
            double v = parse_double(a, NEXT());
            if (v < 0) die(2, "--start-delay-ms must be >= 0");
            cfg.start_delay_ns = (int64_t)(v * 1e6);
        } else if (!strcmp(a, "--rt-priority")) {
            double v = parse_double(a, NEXT());
            if (v < 0 || v > 99 || v != floor(v)) die(2, "--rt-priority must be 0..99");
            cfg.rt_priority = (int)v;
        } else if (!strcmp(a, "--no-qdisc-bypass")) cfg.qdisc_bypass = 0;
        else if (!strcmp(a, "--dry-run")) cfg.dry_run = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            exit(0);
        } else {
            usage();
            die(2, "unknown option %s", a);
        }
#undef NEXT
    }
    if (!cfg.n_pcaps) die(2, "give at least one --pcap FILE");
    if (!cfg.iface && !cfg.dry_run) die(2, "give --iface IF (or --dry-run)");
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    if (!cfg.dry_run) {
        if (strlen(cfg.iface) >= IFNAMSIZ) die(1, "bad interface %s: name too long", cfg.iface);
        cfg.ifindex = (int)if_nametoindex(cfg.iface);
        if (!cfg.ifindex) die(1, "bad interface %s: %s", cfg.iface, strerror(errno));
    }
    cpu_set_t allowed;
    if (cfg.n_cpus && sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        for (int i = 0; i < cfg.n_cpus; i++)
            if (!CPU_ISSET(cfg.cpus[i], &allowed)) die(1, "--cpus: CPU %d is not available to this process", cfg.cpus[i]);
    }
    replayer_t *rps = calloc((size_t)cfg.n_pcaps, sizeof *rps);
    if (!rps) die(1, "out of memory");
    for (int i = 0; i < cfg.n_pcaps; i++) {
        rps[i].index = i;
        rps[i].cpu = cfg.n_cpus ? cfg.cpus[i % cfg.n_cpus] : -1;
        int same = -1;  /* replayers given the same file share one read-only copy in memory */
        for (int j = 0; j < i && same < 0; j++)
            if (strcmp(cfg.pcaps[i], cfg.pcaps[j]) == 0) same = j;
        if (same >= 0) rps[i].trace = rps[same].trace;
        else load_trace(&rps[i].trace, cfg.pcaps[i]);
        rps[i].fd = cfg.dry_run ? -1 : open_socket(&rps[i]);
    }
    /* Workers inherit a mask that blocks the stop signals; the main thread waits for them. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stops, NULL);
    int64_t now_mono = mono_ns(), now_real = real_ns();
    cfg.start_ns = now_mono + cfg.start_delay_ns;
    int64_t start_real = now_real + cfg.start_delay_ns;
    pthread_t *threads = calloc((size_t)cfg.n_pcaps, sizeof *threads);
    if (!threads) die(1, "out of memory");
    for (int i = 0; i < cfg.n_pcaps; i++) {
        int e = pthread_create(&threads[i], NULL, replayer_main, &rps[i]);
        if (e != 0) die(1, "cannot start replayer thread %d: %s", i, strerror(e));
    }
    int interrupted = 0;
    while (atomic_load(&replayers_done) < cfg.n_pcaps) {
        struct timespec tick = {0, 50000000};
        int sig = sigtimedwait(&stops, NULL, &tick);
        if (sig == SIGINT || sig == SIGTERM) {
            interrupted = 1;
            atomic_store(&stop_requested, 1);
        }
    }
    for (int i = 0; i < cfg.n_pcaps; i++) pthread_join(threads[i], NULL);
    report(rps, cfg.n_pcaps, start_real, interrupted);
    for (int i = 0; i < cfg.n_pcaps; i++) {
        if (rps[i].err[0]) fprintf(stderr, "ibreplay: replayer %d: %s\n", i, rps[i].err);
    }
    return 0;
}
