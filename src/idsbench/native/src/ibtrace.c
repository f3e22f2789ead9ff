/* ibtrace: what is in a capture, in one streaming pass (memory flat in the file size).
 *
 *   ibtrace [--ports 20,21,22,...] FILE
 *
 * Prints one JSON document: format, link type, packets, captured and wire bytes, first/min/max
 * timestamps (ns), smallest/largest frame, bidirectional TCP/UDP/SCTP 5-tuple flows (IPv4 and IPv6,
 * A->B and B->A one flow), packets and bytes per IP protocol and per well-known service port
 * (destination port if it is one of --ports, else the source port, else 0), and packets and bytes
 * per second since the earliest packet. The header decoding mirrors traffic/dissect.py exactly
 * (Ethernet with up to two VLAN tags and MPLS stacks, Linux cooked v1/v2, BSD loopback, raw IP).
 * A corrupt capture: "ibtrace: corrupt: <what>" on stderr, exit 3; other errors exit 1.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>

#include "pcapread.h"

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86DD
#define DENSE_SECONDS (1u << 20)

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ibtrace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

/* ---- header decoding (traffic/dissect.py) ------------------------------------------------- */

typedef struct {
    int l3;           /* 0, 4 or 6 */
    int proto;        /* IP protocol / IPv6 upper-layer header; -1 when not IP */
    bool has_ports;
    uint32_t sport, dport;
    uint32_t src4, dst4;
    uint64_t src6[2], dst6[2];
} decoded_t;

typedef struct {
    const uint8_t *d;
    uint32_t cap;
} pkt_t;

static inline uint32_t u8at(pkt_t p, uint64_t o) { return o < p.cap ? p.d[o] : 0; }
static inline uint32_t be16at(pkt_t p, uint64_t o) { return o + 2 <= p.cap ? ((uint32_t)p.d[o] << 8) | p.d[o + 1] : 0; }
static inline uint32_t be32at(pkt_t p, uint64_t o) {
    return o + 4 <= p.cap ? ((uint32_t)p.d[o] << 24) | ((uint32_t)p.d[o + 1] << 16) | ((uint32_t)p.d[o + 2] << 8) | p.d[o + 3] : 0;
}
static inline uint64_t be64at(pkt_t p, uint64_t o) { return ((uint64_t)be32at(p, o) << 32) | be32at(p, o + 4); }

static inline bool is_vlan(uint32_t et) { return et == 0x8100 || et == 0x88A8 || et == 0x9100; }
static inline bool is_mpls(uint32_t et) { return et == 0x8847 || et == 0x8848; }

static void ethernet(pkt_t p, uint64_t *l3, uint32_t *et_out) {
    uint64_t end = p.cap, off = 12;
    uint32_t et = off + 2 <= end ? be16at(p, off) : 0;
    for (int i = 0; i < 2 && is_vlan(et); i++) {
        off += 4;
        et = off + 2 <= end ? be16at(p, off) : 0;
    }
    uint64_t pos = off + 2;
    if (is_mpls(et)) {
        uint32_t inner = 0;
        bool live = true;
        for (int i = 0; i < 4; i++) {  /* the bottom-of-stack bit ends the label stack */
            bool bos = live && (u8at(p, pos + 2) & 1) && pos + 4 <= end;
            if (live) pos += 4;
            uint32_t first = u8at(p, pos) >> 4;
            if (bos) inner = first == 4 ? ETH_IPV4 : first == 6 ? ETH_IPV6 : 0;
            live = live && !bos && pos + 4 <= end;
        }
        et = inner;
    }
    *l3 = pos;
    *et_out = et;
}

static void decode(pkt_t p, uint32_t link, decoded_t *o) {
    uint64_t l3 = 0, end = p.cap;
    uint32_t et = 0;
    memset(o, 0, sizeof *o);
    o->proto = -1;
    if (link == 1) {
        ethernet(p, &l3, &et);
    } else if (link == 0 || link == 108) {
        uint32_t fam = u8at(p, 0) | u8at(p, 3);
        et = fam == 2 ? ETH_IPV4 : (fam == 10 || fam == 24 || fam == 28 || fam == 30) ? ETH_IPV6 : 0;
        l3 = 4;
    } else if (link == 101 || link == 12 || link == 14 || link == 228 || link == 229) {
        uint32_t ver = u8at(p, 0) >> 4;
        et = ver == 4 ? ETH_IPV4 : ver == 6 ? ETH_IPV6 : 0;
    } else if (link == 113) {
        et = be16at(p, 14);
        l3 = 16;
    } else if (link == 276) {
        et = be16at(p, 0);
        l3 = 20;
    }
    uint64_t l4 = 0;
    bool first_frag = false;
    if (et == ETH_IPV4) {
        uint32_t b0 = u8at(p, l3);
        if ((b0 >> 4) == 4 && (b0 & 0x0F) >= 5 && l3 + 20 <= end) {
            o->l3 = 4;
            o->proto = (int)u8at(p, l3 + 9);
            first_frag = (be16at(p, l3 + 6) & 0x1FFF) == 0;
            l4 = l3 + (b0 & 0x0F) * 4;
            o->src4 = be32at(p, l3 + 12);
            o->dst4 = be32at(p, l3 + 16);
        }
    } else if (et == ETH_IPV6) {
        if ((u8at(p, l3) >> 4) == 6 && l3 + 40 <= end) {
            o->l3 = 6;
            o->src6[0] = be64at(p, l3 + 8);
            o->src6[1] = be64at(p, l3 + 16);
            o->dst6[0] = be64at(p, l3 + 24);
            o->dst6[1] = be64at(p, l3 + 32);
            uint32_t nh = u8at(p, l3 + 6);
            l4 = l3 + 40;
            first_frag = true;
            for (int i = 0; i < 3; i++) {  /* hop-by-hop / routing / destination options / fragment */
                bool ext = (nh == 0 || nh == 43 || nh == 60) && l4 + 2 <= end;
                bool frag = nh == 44 && l4 + 8 <= end;
                if (!ext && !frag) break;
                uint64_t step = ext ? (u8at(p, l4 + 1) + 1) * 8 : 8;
                if (frag) first_frag = (be16at(p, l4 + 2) >> 3) == 0;
                nh = u8at(p, l4);
                l4 += step;
            }
            o->proto = (int)nh;
        }
    }
    o->has_ports = first_frag && (o->proto == 6 || o->proto == 17 || o->proto == 132) && l4 + 4 <= end;
    if (o->has_ports) {
        o->sport = be16at(p, l4);
        o->dport = be16at(p, l4 + 2);
    }
}

/* ---- flow sets: open addressing, keys of 2 (IPv4) or 6 (IPv6) words ------------------------ */

typedef struct {
    uint64_t *keys;   /* width words per slot */
    uint8_t *live;    /* slot in use */
    size_t width, cap, used;
    uint64_t last[6];
    bool have_last;
} flowset_t;

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static void fs_alloc(flowset_t *s, size_t cap) {
    s->cap = cap;
    s->keys = malloc(cap * s->width * sizeof(uint64_t));
    s->live = calloc(cap, 1);
    if (!s->keys || !s->live) die(1, "out of memory");
}

static size_t fs_slot(const flowset_t *s, const uint64_t *k) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < s->width; i++) h = mix(h ^ k[i]);
    size_t mask = s->cap - 1, i = (size_t)h & mask;
    while (s->live[i] && memcmp(s->keys + i * s->width, k, s->width * sizeof(uint64_t)) != 0) i = (i + 1) & mask;
    return i;
}

static void fs_add(flowset_t *s, const uint64_t *k) {
    size_t w = s->width * sizeof(uint64_t);
    if (s->have_last && memcmp(s->last, k, w) == 0) return;  /* packets of a flow tend to be adjacent */
    memcpy(s->last, k, w);
    s->have_last = true;
    if (2 * (s->used + 1) > s->cap) {
        flowset_t old = *s;
        fs_alloc(s, old.cap * 2);
        for (size_t i = 0; i < old.cap; i++) {
            if (!old.live[i]) continue;
            size_t j = fs_slot(s, old.keys + i * s->width);
            memcpy(s->keys + j * s->width, old.keys + i * s->width, w);
            s->live[j] = 1;
        }
        free(old.keys);
        free(old.live);
    }
    size_t j = fs_slot(s, k);
    if (!s->live[j]) {
        memcpy(s->keys + j * s->width, k, w);
        s->live[j] = 1;
        s->used++;
    }
}

/* ---- per-second series -------------------------------------------------------------------- */

typedef struct {
    uint64_t *pkts, *bytes;
    size_t cap;      /* dense slots allocated */
    int64_t base_ns; /* seconds are counted from here */
    bool out_of_range;
} seconds_t;

static void sec_add(seconds_t *s, int64_t ts, uint32_t caplen) {
    if (ts < s->base_ns) {
        s->out_of_range = true;
        return;
    }
    uint64_t sec = (uint64_t)(ts - s->base_ns) / 1000000000ULL;
    if (sec >= DENSE_SECONDS) {
        s->out_of_range = true;
        return;
    }
    if (sec >= s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap <= sec) cap *= 2;
        s->pkts = realloc(s->pkts, cap * sizeof *s->pkts);
        s->bytes = realloc(s->bytes, cap * sizeof *s->bytes);
        if (!s->pkts || !s->bytes) die(1, "out of memory");
        memset(s->pkts + s->cap, 0, (cap - s->cap) * sizeof *s->pkts);
        memset(s->bytes + s->cap, 0, (cap - s->cap) * sizeof *s->bytes);
        s->cap = cap;
    }
    s->pkts[sec]++;
    s->bytes[sec] += caplen;
}

/* Sparse per-second counts for captures whose seconds do not fit the dense array: sorted pairs. */
typedef struct {
    int64_t sec;
    uint64_t pkts, bytes;
} sparse_t;

static int cmp_sparse(const void *a, const void *b) {
    int64_t x = ((const sparse_t *)a)->sec, y = ((const sparse_t *)b)->sec;
    return (x > y) - (x < y);
}

/* ---- the pass ----------------------------------------------------------------------------- */

static bool well_known[65536];

typedef struct {
    uint64_t packets, bytes, wire_bytes;
    int64_t first_ns, min_ns, max_ns;
    uint32_t min_frame, max_frame;
    uint64_t proto_pkts[257], proto_bytes[257];  /* index proto + 1; 0 = not IP */
    uint64_t port_pkts[65536], port_bytes[65536];
    flowset_t v4[3], v6[3];  /* tcp, udp, sctp */
    seconds_t secs;
} stats_t;

static int transport_slot(int proto) { return proto == 6 ? 0 : proto == 17 ? 1 : proto == 132 ? 2 : -1; }

static void fail_corrupt(pr_reader *r) {
    fprintf(stderr, "ibtrace: corrupt: %s\n", r->err);
    exit(3);
}

static void first_pass(const char *path, stats_t *st, pr_reader *r) {
    pr_packet p;
    int rc;
    decoded_t d;
    while ((rc = pr_next(r, &p)) == 1) {
        if (st->packets == 0) {
            st->first_ns = st->min_ns = st->max_ns = p.ts_ns;
            st->min_frame = st->max_frame = p.caplen;
            st->secs.base_ns = p.ts_ns;
        }
        st->packets++;
        st->bytes += p.caplen;
        st->wire_bytes += p.wirelen;
        if (p.ts_ns < st->min_ns) st->min_ns = p.ts_ns;
        if (p.ts_ns > st->max_ns) st->max_ns = p.ts_ns;
        if (p.caplen < st->min_frame) st->min_frame = p.caplen;
        if (p.caplen > st->max_frame) st->max_frame = p.caplen;
        sec_add(&st->secs, p.ts_ns, p.caplen);
        decode((pkt_t){p.data, p.caplen}, p.link, &d);
        size_t pi = d.l3 ? (size_t)d.proto + 1 : 0;
        st->proto_pkts[pi]++;
        st->proto_bytes[pi] += p.caplen;
        if (!d.has_ports) continue;
        uint32_t svc = well_known[d.dport] ? d.dport : well_known[d.sport] ? d.sport : 0;
        st->port_pkts[svc]++;
        st->port_bytes[svc] += p.caplen;
        int t = transport_slot(d.proto);
        if (d.l3 == 4) {
            uint64_t a = ((uint64_t)d.src4 << 16) | d.sport, b = ((uint64_t)d.dst4 << 16) | d.dport;
            uint64_t k[2] = {a < b ? a : b, a < b ? b : a};
            fs_add(&st->v4[t], k);
        } else {
            uint64_t s_hi = d.src6[0], s_lo = d.src6[1], t_hi = d.dst6[0], t_lo = d.dst6[1];
            bool less = s_hi < t_hi || (s_hi == t_hi && (s_lo < t_lo || (s_lo == t_lo && d.sport <= d.dport)));
            uint64_t k[6];
            if (less) {
                k[0] = s_hi, k[1] = s_lo, k[2] = d.sport, k[3] = t_hi, k[4] = t_lo, k[5] = d.dport;
            } else {
                k[0] = t_hi, k[1] = t_lo, k[2] = d.dport, k[3] = s_hi, k[4] = s_lo, k[5] = d.sport;
            }
            fs_add(&st->v6[t], k);
        }
    }
    if (rc < 0) fail_corrupt(r);
    (void)path;
}

/* Seconds relative to the earliest packet when it is not the first one (or they span too much):
 * read the file again, counting into a hash of seconds. */
static sparse_t *second_pass(const char *path, int64_t t0, size_t *n_out) {
    pr_reader r;
    if (pr_open(&r, path) != 0) die(1, "%s: %s", path, r.err);
    size_t cap = 1024, used = 0;
    sparse_t *tab = calloc(cap, sizeof *tab);
    bool *live = calloc(cap, 1);
    if (!tab || !live) die(1, "out of memory");
    pr_packet p;
    int rc;
    while ((rc = pr_next(&r, &p)) == 1) {
        int64_t sec = (p.ts_ns - t0) / 1000000000LL;
        if (2 * (used + 1) > cap) {
            size_t ncap = cap * 2;
            sparse_t *nt = calloc(ncap, sizeof *nt);
            bool *nl = calloc(ncap, 1);
            if (!nt || !nl) die(1, "out of memory");
            for (size_t i = 0; i < cap; i++) {
                if (!live[i]) continue;
                size_t j = mix((uint64_t)tab[i].sec) & (ncap - 1);
                while (nl[j]) j = (j + 1) & (ncap - 1);
                nt[j] = tab[i];
                nl[j] = true;
            }
            free(tab);
            free(live);
            tab = nt, live = nl, cap = ncap;
        }
        size_t j = mix((uint64_t)sec) & (cap - 1);
        while (live[j] && tab[j].sec != sec) j = (j + 1) & (cap - 1);
        if (!live[j]) {
            live[j] = true;
            tab[j] = (sparse_t){sec, 0, 0};
            used++;
        }
        tab[j].pkts++;
        tab[j].bytes += p.caplen;
    }
    if (rc < 0) fail_corrupt(&r);
    pr_close(&r);
    size_t n = 0;
    for (size_t i = 0; i < cap; i++)
        if (live[i]) tab[n++] = tab[i];
    free(live);
    qsort(tab, n, sizeof *tab, cmp_sparse);
    *n_out = n;
    return tab;
}

static void print_report(const pr_reader *r, stats_t *st, const char *path) {
    printf("{\"tool\": \"ibtrace\", \"schema\": 1, \"format\": \"%s\", \"link_type\": %u, \"packets\": %llu, "
           "\"bytes\": %llu, \"wire_bytes\": %llu, \"first_ns\": %lld, \"min_ns\": %lld, \"max_ns\": %lld, "
           "\"min_frame\": %u, \"max_frame\": %u",
           r->pcapng ? "pcapng" : "pcap", r->link_type, (unsigned long long)st->packets,
           (unsigned long long)st->bytes, (unsigned long long)st->wire_bytes, (long long)st->first_ns,
           (long long)st->min_ns, (long long)st->max_ns, st->packets ? st->min_frame : 0, st->max_frame);
    static const char *names[3] = {"tcp", "udp", "sctp"};
    printf(", \"flows\": {");
    for (int t = 0; t < 3; t++)
        printf("%s\"%s\": %zu", t ? ", " : "", names[t], st->v4[t].used + st->v6[t].used);
    printf("}, \"proto\": [");
    int first = 1;
    for (int i = 0; i < 257; i++) {
        if (!st->proto_pkts[i]) continue;
        printf("%s[%d, %llu, %llu]", first ? "" : ", ", i - 1, (unsigned long long)st->proto_pkts[i],
               (unsigned long long)st->proto_bytes[i]);
        first = 0;
    }
    printf("], \"ports\": [");
    first = 1;
    for (int i = 0; i < 65536; i++) {
        if (!st->port_pkts[i]) continue;
        printf("%s[%d, %llu, %llu]", first ? "" : ", ", i, (unsigned long long)st->port_pkts[i],
               (unsigned long long)st->port_bytes[i]);
        first = 0;
    }
    printf("], \"per_second\": [");
    if (st->packets && (st->secs.out_of_range || st->min_ns < st->first_ns)) {
        size_t n;
        sparse_t *sp = second_pass(path, st->min_ns, &n);
        for (size_t i = 0; i < n; i++)
            printf("%s[%lld, %llu, %llu]", i ? ", " : "", (long long)sp[i].sec, (unsigned long long)sp[i].pkts,
                   (unsigned long long)sp[i].bytes);
        free(sp);
    } else {
        first = 1;
        for (size_t i = 0; i < st->secs.cap; i++) {
            if (!st->secs.pkts[i]) continue;
            printf("%s[%zu, %llu, %llu]", first ? "" : ", ", i, (unsigned long long)st->secs.pkts[i],
                   (unsigned long long)st->secs.bytes[i]);
            first = 0;
        }
    }
    printf("]}\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ports") && i + 1 < argc) {
            char *s = argv[++i], *end;
            while (*s) {
                long v = strtol(s, &end, 10);
                if (end == s || v < 0 || v > 65535) die(2, "--ports: not a list of port numbers");
                well_known[v] = true;
                s = *end == ',' ? end + 1 : end;
                if (*end && *end != ',') die(2, "--ports: not a list of port numbers");
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            die(2, "unknown option %s (usage: ibtrace [--ports LIST] FILE)", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path) die(2, "usage: ibtrace [--ports LIST] FILE");
    well_known[0] = false;
    pr_reader r;
    if (pr_open(&r, path) != 0) {
        if (strstr(r.err, "header is truncated")) fail_corrupt(&r);
        die(1, "%s: %s", path, r.err);
    }
    stats_t *st = calloc(1, sizeof *st);
    if (!st) die(1, "out of memory");
    for (int t = 0; t < 3; t++) {
        st->v4[t].width = 2;
        st->v6[t].width = 6;
        fs_alloc(&st->v4[t], 1024);
        fs_alloc(&st->v6[t], 1024);
    }
    first_pass(path, st, &r);
    print_report(&r, st, path);
    pr_close(&r);
    return 0;
}
