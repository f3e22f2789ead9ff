/* ibcapture: capture-only engine for idsbench baselines.
 *
 * Reads an interface through AF_PACKET TPACKET_V3 rings (one socket + ring per thread, joined in a
 * fanout group when there are several), counts the packets and bytes it took from the rings, and
 * accumulates the kernel's PACKET_STATISTICS (which reset on every read). Does nothing else with the
 * packets: what it sustains is the capture ceiling of the host/setup, without detection.
 *
 * Output: one JSON object per line to --stats (default stdout) every --interval seconds, and a final
 * line ("final":true) at SIGTERM/SIGINT once the rings are drained. Fields:
 *   t_unix, uptime_s, interface, threads, final,
 *   kernel_packets  sum of tp_packets: every packet the kernel handed to the sockets, INCLUDING the
 *                   ones it dropped because the ring was full (the kernel adds tp_drops to it)
 *   kernel_drops    sum of tp_drops: packets dropped for want of ring space
 *   kernel_freezes  sum of tp_freeze_q_cnt: times a ring had no free block (queue frozen)
 *   pkts, bytes     packets and bytes read from the rings (bytes = original frame length, plus 4
 *                   for a VLAN tag the kernel moved into packet metadata, i.e. as on the wire)
 *   truncated       packets whose captured length was shorter than the frame (block too small)
 *   vlan_tagged     packets with a VLAN tag in the metadata
 *   blocks          ring blocks consumed
 * After a drain, kernel_packets == pkts + kernel_drops exactly. Before it, packets still in a ring
 * are counted by the kernel but not yet read.
 *
 * Stopping: on SIGTERM/SIGINT each socket gets a drop-everything BPF filter (packets arriving from
 * then on are neither counted nor queued), every ring is read until no block has been returned for
 * several block timeouts (the kernel retires a partly filled block after the timeout), then the
 * statistics are read one last time.
 *
 * Readiness: "ibcapture: capturing on IF ..." on stderr once every ring is mapped and bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define MAX_THREADS 64

struct options {
    const char *interface;
    const char *stats_path;
    double interval_s;
    unsigned block_size;
    unsigned block_count;
    unsigned frame_size;
    unsigned block_timeout_ms;
    int threads;
    int fanout_id; /* -1: none (one thread) or derived from the pid (several threads) */
    int fanout_mode;
    int promisc;
};

struct worker {
    int fd;
    uint8_t *ring;
    size_t ring_len;
    const struct options *opt;
    pthread_t thread;
    /* written by the worker, read by the main thread (relaxed atomics) */
    uint64_t pkts, bytes, truncated, vlan_tagged, blocks;
    /* kernel statistics, accumulated by the main thread only */
    uint64_t k_packets, k_drops, k_freezes;
};

static volatile int stop_requested; /* set by the main thread, read by the workers */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ibcapture: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage(FILE *to)
{
    fputs("usage: ibcapture -i IF [--stats FILE] [--interval S] [--threads N]\n"
          "         [--block-size BYTES] [--block-count N] [--frame-size BYTES] [--block-timeout-ms MS]\n"
          "         [--fanout ID] [--fanout-mode hash|lb|cpu|qm] [--no-promisc]\n", to);
}

static unsigned long parse_ulong(const char *what, const char *text, unsigned long lo, unsigned long hi)
{
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno || !end || *end || text[0] == '-' || v < lo || v > hi)
        die("%s must be an integer in %lu..%lu, got '%s'", what, lo, hi, text);
    return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"interface", required_argument, 0, 'i'}, {"stats", required_argument, 0, 's'},
        {"interval", required_argument, 0, 'n'}, {"threads", required_argument, 0, 't'},
        {"block-size", required_argument, 0, 'b'}, {"block-count", required_argument, 0, 'c'},
        {"frame-size", required_argument, 0, 'f'}, {"block-timeout-ms", required_argument, 0, 'o'},
        {"fanout", required_argument, 0, 'F'}, {"fanout-mode", required_argument, 0, 'M'},
        {"no-promisc", no_argument, 0, 'P'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    *o = (struct options){.interval_s = 1.0, .block_size = 1u << 20, .block_count = 64,
                          .frame_size = 2048, .block_timeout_ms = 10, .threads = 1, .fanout_id = -1,
                          .fanout_mode = PACKET_FANOUT_HASH, .promisc = 1};
    int c;
    while ((c = getopt_long(argc, argv, "i:h", longs, NULL)) != -1) {
        switch (c) {
        case 'i': o->interface = optarg; break;
        case 's': o->stats_path = optarg; break;
        case 'n': {
            char *end = NULL;
            o->interval_s = strtod(optarg, &end);
            if (!end || *end || o->interval_s < 0 || o->interval_s > 86400)
                die("--interval must be seconds in 0..86400 (0: final line only), got '%s'", optarg);
            break;
        }
        case 't': o->threads = (int)parse_ulong("--threads", optarg, 1, MAX_THREADS); break;
        case 'b': o->block_size = (unsigned)parse_ulong("--block-size", optarg, 4096, 1ul << 30); break;
        case 'c': o->block_count = (unsigned)parse_ulong("--block-count", optarg, 1, 1u << 20); break;
        case 'f': o->frame_size = (unsigned)parse_ulong("--frame-size", optarg, 64, 1ul << 30); break;
        case 'o': o->block_timeout_ms = (unsigned)parse_ulong("--block-timeout-ms", optarg, 1, 60000); break;
        case 'F': o->fanout_id = (int)parse_ulong("--fanout", optarg, 0, 0xffff); break;
        case 'M':
            if (!strcmp(optarg, "hash")) o->fanout_mode = PACKET_FANOUT_HASH;
            else if (!strcmp(optarg, "lb")) o->fanout_mode = PACKET_FANOUT_LB;
            else if (!strcmp(optarg, "cpu")) o->fanout_mode = PACKET_FANOUT_CPU;
            else if (!strcmp(optarg, "qm")) o->fanout_mode = PACKET_FANOUT_QM;
            else die("--fanout-mode must be hash, lb, cpu or qm, got '%s'", optarg);
            break;
        case 'P': o->promisc = 0; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc || !o->interface) {
        usage(stderr);
        exit(2);
    }
    long page = sysconf(_SC_PAGESIZE);
    if (o->block_size % (unsigned)page)
        die("--block-size %u is not a multiple of the page size %ld", o->block_size, page);
    if (o->frame_size % TPACKET_ALIGNMENT || o->frame_size > o->block_size)
        die("--frame-size %u must be a multiple of %d and at most --block-size", o->frame_size,
            TPACKET_ALIGNMENT);
    if (o->threads > 1 && o->fanout_id < 0)
        o->fanout_id = getpid() & 0xffff;
}

static void open_ring(struct worker *w, unsigned ifindex)
{
    const struct options *o = w->opt;
    /* Protocol 0: the socket receives nothing until it is bound to the interface below. */
    w->fd = socket(AF_PACKET, SOCK_RAW, 0);
    if (w->fd < 0)
        die("socket(AF_PACKET): %s (needs root or CAP_NET_RAW)", strerror(errno));
    int version = TPACKET_V3;
    if (setsockopt(w->fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
        die("PACKET_VERSION TPACKET_V3: %s", strerror(errno));
    struct tpacket_req3 req = {
        .tp_block_size = o->block_size,
        .tp_block_nr = o->block_count,
        .tp_frame_size = o->frame_size,
        .tp_frame_nr = (o->block_size / o->frame_size) * o->block_count,
        .tp_retire_blk_tov = o->block_timeout_ms,
    };
    if (setsockopt(w->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
        die("PACKET_RX_RING (%u blocks of %u bytes): %s", o->block_count, o->block_size, strerror(errno));
    w->ring_len = (size_t)o->block_size * o->block_count;
    w->ring = mmap(NULL, w->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    if (w->ring == MAP_FAILED)
        die("mmap of a %zu-byte ring: %s", w->ring_len, strerror(errno));
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = (int)ifindex};
    if (bind(w->fd, (struct sockaddr *)&sll, sizeof sll) < 0)
        die("bind to %s: %s", o->interface, strerror(errno));
    if (o->promisc) {
        struct packet_mreq mr = {.mr_ifindex = (int)ifindex, .mr_type = PACKET_MR_PROMISC};
        if (setsockopt(w->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
            die("promiscuous mode on %s: %s", o->interface, strerror(errno));
    }
    if (o->fanout_id >= 0) {
        int flags = o->fanout_mode == PACKET_FANOUT_HASH ? PACKET_FANOUT_FLAG_DEFRAG : 0;
        int arg = o->fanout_id | ((o->fanout_mode | flags) << 16);
        if (setsockopt(w->fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) < 0)
            die("PACKET_FANOUT group %d: %s", o->fanout_id, strerror(errno));
    }
}

static void add_relaxed(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Reads every block the kernel has handed over, starting at *next; returns how many it read. */
static unsigned read_blocks(struct worker *w, unsigned *next)
{
    const struct options *o = w->opt;
    unsigned done = 0;
    for (;;) {
        struct tpacket_block_desc *bd =
            (struct tpacket_block_desc *)(w->ring + (size_t)*next * o->block_size);
        if (!(__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
            return done;
        uint32_t n = bd->hdr.bh1.num_pkts;
        uint64_t bytes = 0, truncated = 0, vlan = 0;
        struct tpacket3_hdr *ph = (struct tpacket3_hdr *)((uint8_t *)bd + bd->hdr.bh1.offset_to_first_pkt);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t len = ph->tp_len;
            if (ph->tp_status & TP_STATUS_VLAN_VALID) {
                len += 4;
                vlan++;
            }
            if (ph->tp_snaplen < ph->tp_len)
                truncated++;
            bytes += len;
            ph = (struct tpacket3_hdr *)((uint8_t *)ph + ph->tp_next_offset);
        }
        add_relaxed(&w->pkts, n);
        add_relaxed(&w->bytes, bytes);
        add_relaxed(&w->truncated, truncated);
        add_relaxed(&w->vlan_tagged, vlan);
        add_relaxed(&w->blocks, 1);
        __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        *next = (*next + 1) % o->block_count;
        done++;
    }
}

static void block_everything(struct worker *w)
{
    struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
    struct sock_fprog prog = {.len = 1, .filter = &drop};
    if (setsockopt(w->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0)
        die("attaching the stop filter: %s", strerror(errno));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct options *o = w->opt;
    unsigned next = 0;
    struct pollfd pfd = {.fd = w->fd, .events = POLLIN | POLLERR};
    int timeout = (int)o->block_timeout_ms;
    while (!__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE)) {
        if (read_blocks(w, &next) == 0 && poll(&pfd, 1, timeout < 100 ? timeout : 100) < 0 && errno != EINTR)
            die("poll: %s", strerror(errno));
    }
    /* Drain: no new packets enter; read until no block came back for several block timeouts (the
     * kernel retires a partly filled block after one). The clock is read BEFORE the empty read, so
     * time this process spent descheduled (e.g. CPU-throttled) never ends the drain early. */
    block_everything(w);
    long quiet_ns = (4L * timeout + 50) * 1000000L;
    struct timespec last, now;
    clock_gettime(CLOCK_MONOTONIC, &last);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (read_blocks(w, &next) > 0) {
            clock_gettime(CLOCK_MONOTONIC, &last);
            continue;
        }
        if ((now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) >= quiet_ns)
            break;
        poll(&pfd, 1, timeout);
    }
    return NULL;
}

static void read_kernel_stats(struct worker *w)
{
    struct tpacket_stats_v3 st;
    socklen_t len = sizeof st;
    memset(&st, 0, sizeof st);
    if (getsockopt(w->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
        die("PACKET_STATISTICS: %s", strerror(errno));
    w->k_packets += st.tp_packets; /* the kernel already added tp_drops to tp_packets */
    w->k_drops += st.tp_drops;
    w->k_freezes += st.tp_freeze_q_cnt;
}

static double seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
        else if (ch < 0x20) fprintf(out, "\\u%04x", ch);
        else fputc(ch, out);
    }
    fputc('"', out);
}

static void emit(FILE *out, const struct options *o, struct worker *ws, double start_mono, int final)
{
    uint64_t kp = 0, kd = 0, kf = 0, p = 0, b = 0, tr = 0, vl = 0, bl = 0;
    for (int i = 0; i < o->threads; i++) {
        read_kernel_stats(&ws[i]);
        kp += ws[i].k_packets;
        kd += ws[i].k_drops;
        kf += ws[i].k_freezes;
        p += __atomic_load_n(&ws[i].pkts, __ATOMIC_RELAXED);
        b += __atomic_load_n(&ws[i].bytes, __ATOMIC_RELAXED);
        tr += __atomic_load_n(&ws[i].truncated, __ATOMIC_RELAXED);
        vl += __atomic_load_n(&ws[i].vlan_tagged, __ATOMIC_RELAXED);
        bl += __atomic_load_n(&ws[i].blocks, __ATOMIC_RELAXED);
    }
    fprintf(out, "{\"t_unix\":%.6f,\"uptime_s\":%.6f,\"interface\":", seconds(CLOCK_REALTIME),
            seconds(CLOCK_MONOTONIC) - start_mono);
    json_string(out, o->interface);
    fprintf(out, ",\"threads\":%d,\"final\":%s,\"kernel_packets\":%" PRIu64 ",\"kernel_drops\":%" PRIu64
            ",\"kernel_freezes\":%" PRIu64 ",\"pkts\":%" PRIu64 ",\"bytes\":%" PRIu64
            ",\"truncated\":%" PRIu64 ",\"vlan_tagged\":%" PRIu64 ",\"blocks\":%" PRIu64 "}\n",
            o->threads, final ? "true" : "false", kp, kd, kf, p, b, tr, vl, bl);
    if (fflush(out) != 0)
        die("writing the stats: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    struct options o;
    parse_options(argc, argv, &o);
    unsigned ifindex = if_nametoindex(o.interface);
    if (!ifindex)
        die("no interface %s in this network namespace", o.interface);
    FILE *out = stdout;
    if (o.stats_path && !(out = fopen(o.stats_path, "w")))
        die("cannot write %s: %s", o.stats_path, strerror(errno));

    /* Signals are taken synchronously by the main thread; the workers never see them. */
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);

    static struct worker ws[MAX_THREADS];
    for (int i = 0; i < o.threads; i++) {
        ws[i].opt = &o;
        open_ring(&ws[i], ifindex);
    }
    double start_mono = seconds(CLOCK_MONOTONIC);
    for (int i = 0; i < o.threads; i++) {
        int rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
        if (rc)
            die("pthread_create: %s", strerror(rc));
    }
    fprintf(stderr, "ibcapture: capturing on %s (threads %d, ring %u x %u bytes, fanout %d)\n",
            o.interface, o.threads, o.block_count, o.block_size, o.fanout_id);
    fflush(stderr);

    double next_emit = start_mono + o.interval_s;
    for (;;) {
        double wait_s = o.interval_s > 0 ? next_emit - seconds(CLOCK_MONOTONIC) : 3600;
        if (wait_s < 0)
            wait_s = 0;
        struct timespec ts = {.tv_sec = (time_t)wait_s,
                              .tv_nsec = (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        int sig = sigtimedwait(&stop_set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT)
            break;
        if (sig < 0 && errno == EAGAIN && o.interval_s > 0) {
            emit(out, &o, ws, start_mono, 0);
            next_emit += o.interval_s;
        }
    }
    __atomic_store_n(&stop_requested, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < o.threads; i++)
        pthread_join(ws[i].thread, NULL);
    emit(out, &o, ws, start_mono, 1);
    for (int i = 0; i < o.threads; i++) {
        munmap(ws[i].ring, ws[i].ring_len);
        close(ws[i].fd);
    }
    if (out != stdout && fclose(out) != 0)
        die("closing %s: %s", o.stats_path, strerror(errno));
    fprintf(stderr, "ibcapture: stopped\n");
    return 0;
}
