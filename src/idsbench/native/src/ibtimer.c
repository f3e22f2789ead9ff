/* ibtimer: what one call of each tick source costs on this (virtual) CPU, as JSON on stdout.
 *
 * Timed per call: "cpuid;rdtsc;cpuid" (the serialized tick upstream Suricata's profiling reads per packet),
 * "lfence;rdtsc;lfence" (the tick idsbench's Suricata builds read: scripts/patches), bare rdtsc, rdtscp,
 * and clock_gettime(CLOCK_MONOTONIC). Each is run in loops of a calibrated
 * length (about --round-ms per round), timed with CLOCK_MONOTONIC; the median ns/call over
 * --rounds rounds is printed, with the min and max. Under a hypervisor cpuid traps (a VM exit per
 * call), which is what makes a profiling build slow in a guest.
 * Also prints the CPU vendor (cpuid leaf 0) and, when the hypervisor bit is set, the hypervisor's
 * vendor string (leaf 0x40000000). Plain C and libc only: builds with -static for a VM guest.
 *
 * usage: ibtimer [--rounds N] [--round-ms MS] [--cpu C]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define MAX_ROUNDS 101

static volatile uint64_t sink; /* keeps the compiler from dropping timed work */

#if HAVE_X86
static inline void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
    __asm__ __volatile__("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rdtscp(void)
{
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    return ((uint64_t)hi << 32) | lo;
}

/* The profiling tick: cpuid serializes before and after the time-stamp read. */
static inline uint64_t serialized_tick(void)
{
    uint32_t a, b, c, d;
    cpuid(0, &a, &b, &c, &d);
    uint64_t t = rdtsc();
    cpuid(0, &a, &b, &c, &d);
    return t;
}

/* The same order without cpuid (which traps under a hypervisor): lfence waits for every earlier
 * instruction before the read, and the later ones for it. */
static inline uint64_t fenced_tick(void)
{
    __asm__ __volatile__("lfence" ::: "memory");
    uint64_t t = rdtsc();
    __asm__ __volatile__("lfence" ::: "memory");
    return t;
}
#endif

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum timer { T_CPUID_RDTSC, T_LFENCE_RDTSC, T_RDTSC, T_RDTSCP, T_CLOCK_GETTIME, T_COUNT };
static const char *const timer_key[T_COUNT] = {"cpuid_rdtsc", "lfence_rdtsc", "rdtsc", "rdtscp", "clock_gettime"};

/* Nanoseconds taken by `iters` calls of timer `t`. */
static uint64_t run_loop(enum timer t, uint64_t iters)
{
    uint64_t acc = 0;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        switch (t) {
#if HAVE_X86
        case T_CPUID_RDTSC: acc += serialized_tick(); break;
        case T_LFENCE_RDTSC: acc += fenced_tick(); break;
        case T_RDTSC: acc += rdtsc(); break;
        case T_RDTSCP: acc += rdtscp(); break;
#endif
        case T_CLOCK_GETTIME: acc += now_ns(); break;
        default: break;
        }
    }
    uint64_t elapsed = now_ns() - t0;
    sink += acc;
    return elapsed;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Calibrate a loop length of about `round_ns`, then time `rounds` rounds; ns per call. */
static void measure(enum timer t, int rounds, uint64_t round_ns, double *median, double *lo, double *hi,
                    uint64_t *iters_out)
{
    uint64_t iters = 16;
    for (;;) {
        uint64_t ns = run_loop(t, iters);
        if (ns >= round_ns / 4 || iters >= (1ull << 34))
            break;
        iters *= 4;
    }
    uint64_t probe_ns = run_loop(t, iters);
    if (probe_ns > 0)
        iters = (uint64_t)((double)iters * (double)round_ns / (double)probe_ns);
    if (iters < 16)
        iters = 16;
    double per_call[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        per_call[r] = (double)run_loop(t, iters) / (double)iters;
    qsort(per_call, (size_t)rounds, sizeof per_call[0], cmp_double);
    *median = rounds % 2 ? per_call[rounds / 2] : (per_call[rounds / 2 - 1] + per_call[rounds / 2]) / 2.0;
    *lo = per_call[0];
    *hi = per_call[rounds - 1];
    *iters_out = iters;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch > 0x7e)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void usage(void)
{
    fprintf(stderr, "usage: ibtimer [--rounds N (1-%d)] [--round-ms MS] [--cpu C]\n", MAX_ROUNDS);
    exit(2);
}

int main(int argc, char **argv)
{
    int rounds = 7;
    long round_ms = 10;
    int cpu = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--round-ms") && i + 1 < argc)
            round_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
            cpu = atoi(argv[++i]);
        else
            usage();
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || round_ms < 1 || round_ms > 10000)
        usage();
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("ibtimer: sched_setaffinity");
            return 1;
        }
    }

    char cpu_vendor[13] = "";
    char hv_vendor[13] = "";
    int hv_bit = 0;
    int have_rdtscp = 0;
#if HAVE_X86
    uint32_t a, b, c, d;
    cpuid(0, &a, &b, &c, &d);
    memcpy(cpu_vendor, &b, 4);
    memcpy(cpu_vendor + 4, &d, 4);
    memcpy(cpu_vendor + 8, &c, 4);
    cpuid(1, &a, &b, &c, &d);
    hv_bit = (c >> 31) & 1;
    if (hv_bit) {
        cpuid(0x40000000u, &a, &b, &c, &d);
        memcpy(hv_vendor, &b, 4);
        memcpy(hv_vendor + 4, &c, 4);
        memcpy(hv_vendor + 8, &d, 4);
    }
    cpuid(0x80000000u, &a, &b, &c, &d);
    if (a >= 0x80000001u) {
        cpuid(0x80000001u, &a, &b, &c, &d);
        have_rdtscp = (d >> 27) & 1;
    }
#endif

    printf("{\"rounds\": %d, \"round_ms\": %ld, \"cpu\": %d, \"x86\": %s, ", rounds, round_ms, cpu,
           HAVE_X86 ? "true" : "false");
    printf("\"cpu_vendor\": ");
    json_string(cpu_vendor);
    printf(", \"hypervisor_bit\": %s, \"hypervisor_vendor\": ", hv_bit ? "true" : "false");
    if (hv_bit)
        json_string(hv_vendor);
    else
        printf("null");
    for (int t = 0; t < T_COUNT; t++) {
        int available = t == T_CLOCK_GETTIME || (HAVE_X86 && (t != T_RDTSCP || have_rdtscp));
        if (!available) {
            printf(", \"%s_ns\": null, \"%s_min_ns\": null, \"%s_max_ns\": null, \"%s_iterations\": 0",
                   timer_key[t], timer_key[t], timer_key[t], timer_key[t]);
            continue;
        }
        double median, lo, hi;
        uint64_t iters;
        measure((enum timer)t, rounds, (uint64_t)round_ms * 1000000ull, &median, &lo, &hi, &iters);
        printf(", \"%s_ns\": %.2f, \"%s_min_ns\": %.2f, \"%s_max_ns\": %.2f, \"%s_iterations\": %llu",
               timer_key[t], median, timer_key[t], lo, timer_key[t], hi, timer_key[t],
               (unsigned long long)iters);
    }
    printf("}\n");
    return 0;
}
