/* ibtsc: the rate of the CPU's time-stamp counter (rdtsc ticks per second), as JSON on stdout.
 *
 * Suricata's rule profiler counts rdtsc ticks; turning them into seconds needs this rate. Each round reads
 * the TSC and CLOCK_MONOTONIC_RAW (not slewed by NTP) together, sleeps --round-ms, reads both again and
 * divides; a reading is the tightest of a few tries of rdtsc, clock_gettime, rdtsc (its clock time is
 * matched to the midpoint of the two ticks). The median over --rounds rounds is printed with the spread
 * (max - min over the median, in ppm). Off x86 there is no rdtsc: tsc_hz is null and "error" says why.
 * Plain C and libc only (-static: it can run in a VM guest too).
 *
 * usage: ibtsc [--rounds N] [--round-ms MS]
 */
#define _GNU_SOURCE
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

#define MAX_ROUNDS 51
#define TRIES 16

#if HAVE_X86
static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static double raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One (tick, ns) pair: of TRIES brackets rdtsc / clock_gettime / rdtsc, the one with the fewest ticks
 * between its two reads (no preemption or interrupt in between). */
static void pair(double *tick, double *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < TRIES; i++) {
        uint64_t t0 = rdtsc();
        double n = raw_ns();
        uint64_t t1 = rdtsc();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *tick = (double)t0 + (double)(t1 - t0) / 2.0;
            *ns = n;
        }
    }
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = 3, round_ms = 50;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--round-ms") && i + 1 < argc)
            round_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: ibtsc [--rounds N] [--round-ms MS]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || round_ms < 1 || round_ms > 10000) {
        fprintf(stderr, "ibtsc: --rounds must be 1..%d and --round-ms 1..10000\n", MAX_ROUNDS);
        return 2;
    }
#if HAVE_X86
    double rates[MAX_ROUNDS];
    struct timespec nap = {round_ms / 1000, (long)(round_ms % 1000) * 1000000L};
    for (int r = 0; r < rounds; r++) {
        double t0, n0, t1, n1;
        pair(&t0, &n0);
        nanosleep(&nap, NULL);
        pair(&t1, &n1);
        rates[r] = (t1 - t0) / (n1 - n0) * 1e9;
    }
    qsort(rates, (size_t)rounds, sizeof rates[0], cmp_double);
    double median = rounds % 2 ? rates[rounds / 2] : (rates[rounds / 2 - 1] + rates[rounds / 2]) / 2.0;
    double spread_ppm = median > 0 ? (rates[rounds - 1] - rates[0]) / median * 1e6 : 0.0;
    printf("{\"tsc_hz\": %.0f, \"rounds\": %d, \"round_ms\": %d, \"spread_ppm\": %.1f, "
           "\"clock\": \"CLOCK_MONOTONIC_RAW\"}\n", median, rounds, round_ms, spread_ppm);
#else
    (void)cmp_double;
    printf("{\"tsc_hz\": null, \"rounds\": 0, \"round_ms\": %d, \"error\": \"no rdtsc on this architecture\"}\n",
           round_ms);
#endif
    return 0;
}
