/* Streaming reader for classic pcap (both byte orders, µs and ns) and pcapng (SHB/IDB/EPB/SPB/PB,
 * per-interface if_tsresol and if_tsoffset). Reads the file in chunks through read(2): memory stays
 * flat whatever the file size. Shared by ibreplay (preload) and ibtrace (trace info).
 *
 *   pr_reader r;  if (pr_open(&r, path) != 0) -> r.err
 *   pr_packet p;  while ((rc = pr_next(&r, &p)) == 1) { p.data valid until the next call }
 *   rc == 0: end of file; rc < 0: corrupt capture, r.err says where (same wording as the Python
 *   reader in traffic/pcapfmt.py). pr_close(&r).
 */
#ifndef IDSBENCH_PCAPREAD_H
#define IDSBENCH_PCAPREAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PR_MAGIC_US 0xA1B2C3D4u
#define PR_MAGIC_NS 0xA1B23C4Du
#define PR_SHB 0x0A0D0D0Au
#define PR_BOM 0x1A2B3C4Du
#define PR_CHUNK (4u << 20)

typedef struct {
    uint32_t link;
    uint8_t tsresol;
    int64_t tsoffset;
    uint32_t snaplen;
} pr_iface;

typedef struct {
    int fd;
    const char *path;
    uint8_t *buf;
    size_t cap, start, end;  /* buffered bytes are buf[start..end) */
    uint64_t offset;         /* file offset of buf[start] */
    int eof;
    int pcapng;              /* 0: classic pcap, 1: pcapng */
    int swap;                /* fields are in the other byte order than this host's */
    int nanos;               /* classic pcap with ns timestamps */
    uint32_t link_type;      /* link type of the first interface (0 when none) */
    pr_iface *ifs;           /* pcapng: every interface seen, over all sections */
    size_t n_ifs, ifs_cap;
    size_t section_base;     /* index in ifs of this section's interface 0 */
    char err[512];
} pr_reader;

typedef struct {
    int64_t ts_ns;
    uint32_t caplen, wirelen;
    uint32_t link;
    uint64_t file_offset;    /* of the packet data */
    const uint8_t *data;
} pr_packet;

static inline uint32_t pr_bswap32(uint32_t v) { return __builtin_bswap32(v); }

static inline uint32_t pr_u32(const pr_reader *r, const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return r->swap ? pr_bswap32(v) : v;
}

static inline uint16_t pr_u16(const pr_reader *r, const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return r->swap ? __builtin_bswap16(v) : v;
}

static inline uint64_t pr_u64(const pr_reader *r, const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return r->swap ? __builtin_bswap64(v) : v;
}

/* Make at least n bytes available at buf[start]; returns the bytes available (< n only at EOF). */
static size_t pr_fill(pr_reader *r, size_t n) {
    while (r->end - r->start < n && !r->eof) {
        if (r->start > 0 && (r->cap - r->end < PR_CHUNK || r->start > r->cap / 2)) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->cap - r->end < PR_CHUNK) {
            size_t want = r->cap ? r->cap : 2 * (size_t)PR_CHUNK;
            while (want - r->end < PR_CHUNK || want - r->start < n) want *= 2;
            uint8_t *nb = realloc(r->buf, want);
            if (!nb) return r->end - r->start;
            r->buf = nb;
            r->cap = want;
        }
        ssize_t got = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (got < 0) {
            if (errno == EINTR) continue;
            r->eof = 1;
            break;
        }
        if (got == 0) r->eof = 1;
        r->end += (size_t)got;
    }
    return r->end - r->start;
}

static void pr_consume(pr_reader *r, size_t n) {
    r->start += n;
    r->offset += n;
}

static int pr_fail(pr_reader *r, const char *fmt, unsigned long long a, unsigned long long b) {
    snprintf(r->err, sizeof r->err, fmt, a, b);
    return -1;
}

static void pr_close(pr_reader *r) {
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    free(r->buf);
    free(r->ifs);
    r->buf = NULL;
    r->ifs = NULL;
}

/* Open and read the file header. Returns 0, or -1 with r->err set ("<what>", no path). */
static int pr_open(pr_reader *r, const char *path) {
    memset(r, 0, sizeof *r);
    r->path = path;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        snprintf(r->err, sizeof r->err, "cannot open it (%s)", strerror(errno));
        return -1;
    }
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t have = pr_fill(r, 24);
    if (have < 4) {
        snprintf(r->err, sizeof r->err, "%s", have ? "the file is too short to be a capture" : "the file is empty");
        return -1;
    }
    uint32_t m;
    memcpy(&m, r->buf, 4);
    if (m == PR_MAGIC_US || m == PR_MAGIC_NS || pr_bswap32(m) == PR_MAGIC_US || pr_bswap32(m) == PR_MAGIC_NS) {
        r->swap = !(m == PR_MAGIC_US || m == PR_MAGIC_NS);
        uint32_t magic = r->swap ? pr_bswap32(m) : m;
        r->nanos = magic == PR_MAGIC_NS;
        if (have < 24) return pr_fail(r, "the pcap file header is truncated", 0, 0);
        r->link_type = pr_u32(r, r->buf + 20) & 0x03FFFFFFu;  /* upper bits may carry FCS information */
        pr_consume(r, 24);
        return 0;
    }
    if (m == PR_SHB) {
        r->pcapng = 1;
        return 0;  /* the section header is handled as a block by pr_next */
    }
    snprintf(r->err, sizeof r->err, "not a pcap or pcapng capture (unknown magic number %02x%02x%02x%02x)",
             r->buf[0], r->buf[1], r->buf[2], r->buf[3]);
    return -1;
}

static int64_t pr_ng_ts(uint64_t ticks, uint8_t resol, int64_t tsoffset) {
    unsigned exp = resol & 0x7F;
    int64_t ns;
    if (resol & 0x80) {  /* a power of two */
        ns = (int64_t)(((unsigned __int128)ticks * 1000000000u) >> exp);
    } else if (exp <= 9) {
        uint64_t mul = 1;
        for (unsigned i = exp; i < 9; i++) mul *= 10;
        ns = (int64_t)(ticks * mul);
    } else {
        uint64_t div = 1;
        for (unsigned i = 9; i < exp && i < 28; i++) div *= 10;
        ns = (int64_t)(ticks / div);
    }
    return ns + tsoffset * 1000000000LL;
}

static int pr_add_iface(pr_reader *r, const uint8_t *blk, uint32_t blen) {
    if (r->n_ifs == r->ifs_cap) {
        size_t n = r->ifs_cap ? 2 * r->ifs_cap : 8;
        pr_iface *ni = realloc(r->ifs, n * sizeof *ni);
        if (!ni) return pr_fail(r, "out of memory", 0, 0);
        r->ifs = ni;
        r->ifs_cap = n;
    }
    pr_iface *f = &r->ifs[r->n_ifs];
    f->link = pr_u16(r, blk + 8);
    f->snaplen = pr_u32(r, blk + 12);
    f->tsresol = 6;
    f->tsoffset = 0;
    const uint8_t *o = blk + 16, *stop = blk + blen - 4;
    while (o + 4 <= stop) {
        uint16_t code = pr_u16(r, o), len = pr_u16(r, o + 2);
        if (code == 0) break;
        if (code == 9 && len >= 1 && o + 5 <= stop) f->tsresol = o[4];
        else if (code == 14 && len == 8 && o + 12 <= stop) f->tsoffset = (int64_t)pr_u64(r, o + 4);
        o += 4 + ((len + 3u) & ~3u);
    }
    if (r->n_ifs == 0) r->link_type = f->link;
    r->n_ifs++;
    return 0;
}

static int pr_next_pcap(pr_reader *r, pr_packet *p) {
    size_t have = pr_fill(r, 16);
    if (have == 0) return 0;
    unsigned long long at = r->offset;
    if (have < 16)
        return pr_fail(r, "the record at byte %llu runs past the end of the file (%llu bytes): "
                          "the capture was cut short", at, r->offset + have);
    const uint8_t *h = r->buf + r->start;
    uint32_t caplen = pr_u32(r, h + 8);
    if (pr_fill(r, 16 + (size_t)caplen) < 16 + (size_t)caplen)
        return pr_fail(r, "the record at byte %llu runs past the end of the file (%llu bytes): "
                          "the capture was cut short", at, r->offset + (r->end - r->start));
    h = r->buf + r->start;
    uint32_t sec = pr_u32(r, h), frac = pr_u32(r, h + 4);
    p->ts_ns = (int64_t)sec * 1000000000LL + (r->nanos ? (int64_t)frac : (int64_t)frac * 1000);
    p->caplen = caplen;
    p->wirelen = pr_u32(r, h + 12);
    p->link = r->link_type;
    p->file_offset = r->offset + 16;
    p->data = h + 16;
    pr_consume(r, 16 + (size_t)caplen);
    return 1;
}

/* A packet of the pcapng block at `b` (its data `hdr` bytes in); the block is consumed. */
static int pr_ng_packet(pr_reader *r, pr_packet *p, const pr_iface *f, uint64_t ticks, uint32_t cap,
                        uint32_t wire, const uint8_t *b, uint32_t hdr, uint32_t blen) {
    p->ts_ns = pr_ng_ts(ticks, f->tsresol, f->tsoffset);
    p->caplen = cap;
    p->wirelen = wire;
    p->link = f->link;
    p->file_offset = r->offset + hdr;
    p->data = b + hdr;
    pr_consume(r, blen);
    return 1;
}

static int pr_next_ng(pr_reader *r, pr_packet *p) {
    for (;;) {
        size_t have = pr_fill(r, 12);
        if (have == 0) return 0;
        unsigned long long at = r->offset;
        if (have < 12) return pr_fail(r, "the pcapng block at byte %llu is truncated", at, 0);
        const uint8_t *b = r->buf + r->start;
        uint32_t btype;
        memcpy(&btype, b, 4);
        if (btype == PR_SHB) {
            uint32_t bom;
            memcpy(&bom, b + 8, 4);
            if (bom == PR_BOM) r->swap = 0;
            else if (pr_bswap32(bom) == PR_BOM) r->swap = 1;
            else return pr_fail(r, "bad byte-order magic in the section header at byte %llu", at, 0);
            r->section_base = r->n_ifs;
        } else {
            btype = pr_u32(r, b);
        }
        uint32_t blen = pr_u32(r, b + 4);
        if (blen < 12 || blen % 4 || pr_fill(r, blen) < blen)
            return pr_fail(r, "the pcapng block at byte %llu is truncated or has a bad length (%llu)", at, blen);
        b = r->buf + r->start;
        size_t n_sec = r->n_ifs - r->section_base;
        if (btype == 6 || btype == 2) {  /* Enhanced Packet Block, obsolete Packet Block */
            uint32_t iface, hi, lo, cap, wire;
            if (btype == 6) {
                iface = pr_u32(r, b + 8);
            } else {
                iface = pr_u16(r, b + 8);
            }
            hi = pr_u32(r, b + 12);
            lo = pr_u32(r, b + 16);
            cap = pr_u32(r, b + 20);
            wire = pr_u32(r, b + 24);
            if (blen < 32 || cap > blen - 32)
                return pr_fail(r, "packet block at byte %llu claims more data than it holds", at, 0);
            if (iface >= n_sec)
                return pr_fail(r, "packet block at byte %llu names undeclared interface %llu", at, iface);
            return pr_ng_packet(r, p, &r->ifs[r->section_base + iface], ((uint64_t)hi << 32) | lo, cap, wire,
                                b, 28, blen);
        }
        if (btype == 3) {  /* Simple Packet Block: first interface, no timestamp */
            if (n_sec == 0)
                return pr_fail(r, "simple packet block at byte %llu comes before any interface", at, 0);
            if (blen < 16) return pr_fail(r, "the pcapng block at byte %llu is truncated", at, 0);
            pr_iface *f = &r->ifs[r->section_base];
            uint32_t wire = pr_u32(r, b + 8);
            uint32_t snap = f->snaplen ? f->snaplen : wire;
            uint32_t cap = wire < snap ? wire : snap;
            if (cap > blen - 16) cap = blen - 16;
            return pr_ng_packet(r, p, f, 0, cap, wire, b, 12, blen);
        }
        if (btype == 1) {
            if (blen < 20) return pr_fail(r, "the pcapng block at byte %llu is truncated", at, 0);
            if (pr_add_iface(r, b, blen) != 0) return -1;
        }
        pr_consume(r, blen);
    }
}

static int pr_next(pr_reader *r, pr_packet *p) {
    return r->pcapng ? pr_next_ng(r, p) : pr_next_pcap(r, p);
}

#endif
