/* ibtick: run a program and send it a signal at a fixed interval, for idsbench's capture engine.
 *
 * tcpdump prints its counters (captured, received by filter, dropped by kernel) when it gets SIGUSR1
 * and has no periodic report of its own; ibtick makes one. Before each signal it writes
 *   ibtick: tick t_unix=<seconds> uptime_s=<seconds>
 * to stderr (shared with the child), so each report that follows can be dated.
 *
 *   ibtick [--interval S] [--signal USR1|USR2|HUP] -- PROGRAM [ARGS...]
 *
 * A tick is skipped while the child does not catch the signal yet (its default action would kill it).
 * SIGTERM, SIGINT and SIGHUP are passed on to the child; ibtick exits when the child does, with its
 * exit status (128 + signal when it was killed). It works as PID 1 in a container: the signals it
 * forwards are blocked and taken with sigtimedwait, never left to the default action.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *msg)
{
    fprintf(stderr, "ibtick: error: %s: %s\n", msg, strerror(errno));
    exit(127);
}

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Does process `pid` catch signal `sig` yet (its handler installed)? /proc/PID/status, SigCgt. A
 * signal sent before that would kill it (SIGUSR1's default action), so ticks wait for it. */
static int catches(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long mask = 0;
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
            found = 1;
            break;
        }
    fclose(f);
    return found && (mask >> (sig - 1)) & 1ull;
}

static int parse_signal(const char *name)
{
    if (!strcmp(name, "USR1")) return SIGUSR1;
    if (!strcmp(name, "USR2")) return SIGUSR2;
    if (!strcmp(name, "HUP")) return SIGHUP;
    fprintf(stderr, "ibtick: error: --signal must be USR1, USR2 or HUP, got '%s'\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    double interval = 1.0;
    int tick_signal = SIGUSR1;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            char *end = NULL;
            interval = strtod(argv[++i], &end);
            if (!end || *end || interval < 0.01 || interval > 86400) {
                fprintf(stderr, "ibtick: error: --interval must be seconds in 0.01..86400\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--signal") && i + 1 < argc) {
            tick_signal = parse_signal(argv[++i]);
        } else {
            fprintf(stderr, "usage: ibtick [--interval S] [--signal USR1|USR2|HUP] -- PROGRAM [ARGS...]\n");
            return 2;
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "usage: ibtick [--interval S] [--signal USR1|USR2|HUP] -- PROGRAM [ARGS...]\n");
        return 2;
    }
    char **command = &argv[i + 1];

    sigset_t wanted, previous;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGTERM);
    sigaddset(&wanted, SIGINT);
    sigaddset(&wanted, SIGHUP);
    sigaddset(&wanted, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &wanted, &previous) < 0)
        die("sigprocmask");

    double start = now(CLOCK_MONOTONIC);
    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &previous, NULL);
        execvp(command[0], command);
        fprintf(stderr, "ibtick: error: cannot run %s: %s\n", command[0], strerror(errno));
        _exit(127);
    }

    double next = start + interval;
    for (;;) {
        double wait_s = next - now(CLOCK_MONOTONIC);
        if (wait_s < 0)
            wait_s = 0;
        struct timespec ts = {.tv_sec = (time_t)wait_s, .tv_nsec = (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        int sig = sigtimedwait(&wanted, NULL, &ts);
        if (sig == SIGCHLD) {
            int status;
            pid_t done = waitpid(child, &status, WNOHANG);
            if (done == child) {
                if (WIFEXITED(status))
                    return WEXITSTATUS(status);
                return 128 + WTERMSIG(status);
            }
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            kill(child, sig);
            continue;
        }
        if (sig < 0 && errno == EAGAIN && catches(child, tick_signal)) {
            fprintf(stderr, "ibtick: tick t_unix=%.6f uptime_s=%.6f\n", now(CLOCK_REALTIME),
                    now(CLOCK_MONOTONIC) - start);
            fflush(stderr);
            kill(child, tick_signal);
        }
        if (sig < 0 && errno == EAGAIN) {
            next += interval;
            if (next < now(CLOCK_MONOTONIC))
                next = now(CLOCK_MONOTONIC) + interval; /* descheduled for long: no burst of ticks */
        }
    }
}
