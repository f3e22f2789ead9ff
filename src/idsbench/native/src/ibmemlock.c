/* ibmemlock: an LD_PRELOAD library for Suricata's eBPF/XDP bypass (idsbench.bypass).
 *
 * Suricata 7 and 8 raise RLIMIT_MEMLOCK to infinity before loading an eBPF object and give up when that
 * fails (util-ebpf.c: "Unable to lock memory"). A process without CAP_SYS_RESOURCE (a container, this
 * kind of VM) cannot raise its hard limit, although since Linux 5.11 BPF maps are charged to the memory
 * cgroup, not to RLIMIT_MEMLOCK. This library lets that one call succeed when the kernel refuses it with
 * EPERM; every other call, and every other resource, goes to the C library unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/resource.h>

typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);

int setrlimit(__rlimit_resource_t resource, const struct rlimit *rlim)
{
    static setrlimit_fn real;
    if (!real)
        real = (setrlimit_fn)dlsym(RTLD_NEXT, "setrlimit");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int rc = real(resource, rlim);
    if (rc != 0 && errno == EPERM && resource == RLIMIT_MEMLOCK)
        return 0;
    return rc;
}
