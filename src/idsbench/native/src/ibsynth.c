/* ibsynth: a shared library (built with -shared -fPIC, loaded with ctypes) for the synthesizer's
 * hot byte work, done without the GIL:
 *
 *   long ib_fill_ipv4(uint8_t *buf, size_t len, const int64_t *frame_off, size_t n)
 *
 * fills the IPv4 header checksum and the TCP/UDP/ICMP checksum of each Ethernet frame starting at
 * buf[frame_off[i]] (no VLAN tag, no IP options, the whole L4 segment captured), exactly as
 * traffic/checksum.py's fill_ipv4_frames does (a UDP checksum of 0 is sent as 0xFFFF). Returns the
 * number of frames filled, or -1 if a frame runs past the buffer (nothing is written past it).
 */
#include <stddef.h>
#include <stdint.h>

static uint32_t sum_be16(const uint8_t *p, size_t len) {
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        s += ((uint32_t)p[i] << 8 | p[i + 1]) + ((uint32_t)p[i + 2] << 8 | p[i + 3]) +
             ((uint32_t)p[i + 4] << 8 | p[i + 5]) + ((uint32_t)p[i + 6] << 8 | p[i + 7]);
    for (; i + 2 <= len; i += 2) s += (uint32_t)p[i] << 8 | p[i + 1];
    if (i < len) s += (uint32_t)p[i] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (uint32_t)s;
}

static uint32_t fold(uint64_t s) {
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (uint32_t)s;
}

static void store16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

long ib_fill_ipv4(uint8_t *buf, size_t len, const int64_t *frame_off, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (frame_off[k] < 0 || (size_t)frame_off[k] + 34 > len) return -1;
        uint8_t *ip = buf + frame_off[k] + 14;
        ip[10] = ip[11] = 0;
        store16(ip + 10, ~sum_be16(ip, 20) & 0xFFFF);
        uint32_t proto = ip[9];
        uint32_t total = (uint32_t)ip[2] << 8 | ip[3];
        if (total < 20) continue;
        size_t l4_len = total - 20;
        uint8_t *l4 = ip + 20;
        if ((size_t)(l4 - buf) + l4_len > len) return -1;
        size_t at;
        if (proto == 6) at = 16;
        else if (proto == 17) at = 6;
        else if (proto == 1) at = 2;
        else continue;
        if (at + 2 > l4_len) return -1;
        l4[at] = l4[at + 1] = 0;
        uint64_t s = sum_be16(l4, l4_len);
        if (proto != 1) s += sum_be16(ip + 12, 8) + proto + l4_len;
        uint32_t c = ~fold(s) & 0xFFFF;
        if (proto == 17 && c == 0) c = 0xFFFF;
        store16(l4 + at, c);
    }
    return (long)n;
}
