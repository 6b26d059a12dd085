#ifndef FLOWDIR_SYS_SHIM_H
#define FLOWDIR_SYS_SHIM_H
/* Linux calls Swift's Glibc module leaves out: glibc declares them only
 * under _GNU_SOURCE, which that module is built without. All are in
 * glibc >= 2.34 (Debian 12 has 2.36) and Linux >= 5.3.
 * SwiftPM does not see a change to this header: after editing it, touch
 * the Swift files that import it (Sources/FlowdirIO/Process/), or the
 * static inline functions below stay as they were built. */
#include <spawn.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/resource.h>

extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
extern int pipe2(int fds[2], int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);

/* Asks the scheduler for a short time slice for the calling thread, in
 * nanoseconds (sched_setattr(2)'s sched_runtime for SCHED_OTHER: EEVDF's
 * custom slice, Linux >= 6.12). A thread with a shorter slice than the
 * running task's may preempt it when it wakes, instead of queueing behind
 * it; its share of the CPU is unchanged (nice stays 0). No privilege is
 * needed; older kernels ignore the field. Returns 0, or -1 with errno. */
struct flowdir_sched_attr {
    unsigned int size, sched_policy;
    unsigned long long sched_flags;
    int sched_nice;
    unsigned int sched_priority;
    unsigned long long sched_runtime, sched_deadline, sched_period;
    unsigned int sched_util_min, sched_util_max;
};
static inline int flowdir_short_slice(unsigned long long nanoseconds) {
    struct flowdir_sched_attr attr = {0};
    attr.size = sizeof attr;
    attr.sched_policy = 0; /* SCHED_OTHER */
    attr.sched_nice = getpriority(PRIO_PROCESS, 0);
    attr.sched_runtime = nanoseconds;
    /* Not for the jobs this thread starts: a child gets the default slice. */
    attr.sched_flags = 0x01; /* SCHED_FLAG_RESET_ON_FORK */
    return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}
/* `flowdir_short_slice` once per thread (for pool threads, which a caller does not make). */
static inline void flowdir_short_slice_once(unsigned long long nanoseconds) {
    static __thread int done;
    if (!done) { done = 1; (void)flowdir_short_slice(nanoseconds); }
}

/* openat2(2) (Linux 5.6), which glibc does not wrap: `path` opened below
 * `dirfd` with `resolve` flags (RESOLVE_NO_SYMLINKS: no link on the way,
 * nor the file itself; RESOLVE_BENEATH: no `..` or absolute path out).
 * Returns the fd, or -1 with errno (ENOSYS on an older kernel). */
struct flowdir_open_how { unsigned long long flags, mode, resolve; };
static const unsigned long long flowdir_RESOLVE_NO_SYMLINKS = 0x04;
static const unsigned long long flowdir_RESOLVE_BENEATH = 0x08;
static inline int flowdir_openat2(int dirfd, const char *path, int flags, unsigned long long resolve) {
#ifdef SYS_openat2
    struct flowdir_open_how how = {0};
    how.flags = (unsigned long long)(unsigned int)flags;
    how.resolve = resolve;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* waitid(2)'s idtype for a pidfd (Linux 5.4). */
static const idtype_t flowdir_P_PIDFD = (idtype_t)3;

/* The exit code or signal in a waitid(2) result. */
static inline int flowdir_siginfo_status(const siginfo_t *info) { return info->si_status; }
static inline pid_t flowdir_siginfo_pid(const siginfo_t *info) { return info->si_pid; }
/* Starting a job: what posix_spawn(3) does for flowdir's one set of
 * options, on a stack kept from one start to the next. glibc maps a fresh
 * stack for each child and unmaps it after, and unmapping memory in a
 * process with many threads stops every CPU that runs one of them to flush
 * its TLB: a tenth of what starting a job cost. Like glibc, the child is
 * made with clone(CLONE_VM | CLONE_VFORK): it shares our memory until it
 * execs, we wait until it has, and with every signal blocked it runs no
 * handler of ours meanwhile. Everything it calls is a system call. */
extern int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);

struct flowdir_spawn {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *directory;
    int input;    /* becomes the child's stdin */
    int output;   /* becomes its stdout and stderr */
    unsigned long long reset;  /* bit n-1: signal n goes back to its default (see below) */
    volatile int error;  /* why it could not exec, set by the child */
};

/* The kernel's own sigaction, called directly: glibc's refuses its two
 * internal signals. */
struct flowdir_kernel_sigaction { void *handler; unsigned long flags; void *restorer; unsigned long mask; };

/* The signals this process ignores now, bit n-1 for signal n. */
static inline unsigned long long flowdir_ignored_signals(void) {
    struct flowdir_kernel_sigaction old;
    unsigned long long ignored = 0;
    for (int sig = 1; sig < 65; sig++) {
        if (syscall(SYS_rt_sigaction, sig, 0, &old, sizeof old.mask) == 0 && old.handler == (void *)SIG_IGN)
            ignored |= 1ULL << (sig - 1);
    }
    return ignored;
}

static inline int flowdir_spawn_child(void *argument) {
    struct flowdir_spawn *s = (struct flowdir_spawn *)argument;
    /* What we ignore, a tool must not: those signals go back to their
     * default, as a fresh process has them. Only those: exec itself puts
     * every handled signal back to its default, and until then a handler
     * of ours takes nothing here (all is blocked, but SIGCHLD at its
     * default and the faults these few calls cannot raise, until the line
     * before execve; only flowdir signals the new process, with SIGTERM or
     * SIGKILL). A call for each of the 62 signals cost 20 us a job. */
    struct flowdir_kernel_sigaction dfl = { 0, 0, 0, 0 };
    for (int sig = 1; sig < 65; sig++) {
        if (s->reset >> (sig - 1) & 1) syscall(SYS_rt_sigaction, sig, &dfl, 0, sizeof dfl.mask);
    }
    /* Out of 0-2 first (flowdir may have been started with one of those
     * closed, and /dev/null or the pipe got it): each dup2 then makes a new
     * descriptor, without close-on-exec, and none overwrites the other. */
    int input = s->input < 3 ? fcntl(s->input, F_DUPFD, 3) : s->input;
    int output = s->output < 3 ? fcntl(s->output, F_DUPFD, 3) : s->output;
    int e = 0;
    if (input < 0 || output < 0 || setpgid(0, 0) != 0 || dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(output, 2) < 0
        || chdir(s->directory) != 0 || syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        e = errno;
    } else {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, 0);
        execve(s->path, s->argv, s->envp);
        e = errno;
    }
    s->error = e ? e : EINVAL;
    _exit(127);
}

/* The child's pid, or -errno when it could not be started (then it has
 * been reaped). `stack_top` is the high end of at least 16 KiB, used by one
 * start at a time. `masked`: the calling thread keeps every signal blocked
 * but SIGCHLD, which is at its default (ignored: never handled in the child
 * either), and the faults its own code could raise; its mask is then left
 * alone, two calls fewer a start. `pidfd` receives the child's pidfd. */
static inline pid_t flowdir_spawn_start(struct flowdir_spawn *s, void *stack_top, int masked, int *pidfd) {
    sigset_t all, old;
    if (!masked) {
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
    }
    s->error = 0;
    /* CLONE_PIDFD: its pidfd comes with it (close-on-exec), no pidfd_open after. */
    pid_t pid = clone(flowdir_spawn_child, stack_top,
                      0x00000100 /* CLONE_VM */ | 0x00004000 /* CLONE_VFORK */ | 0x00001000 /* CLONE_PIDFD */ | SIGCHLD, s, pidfd);
    int e = errno;
    if (!masked) pthread_sigmask(SIG_SETMASK, &old, 0);
    if (pid < 0) return -e;
    if (s->error != 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        close(*pidfd);
        return -s->error;
    }
    return pid;
}
#endif
