#ifndef FLOWDIR_SYS_SHIM_H
#define FLOWDIR_SYS_SHIM_H
/* Linux calls Swift's Glibc module leaves out: glibc declares them only
 * under _GNU_SOURCE, which that module is built without. All are in
 * glibc >= 2.34 (Debian 12 has 2.36) and Linux >= 5.3. */
#include <spawn.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/epoll.h>
#include <pthread.h>

extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pidfd_open(pid_t pid, unsigned int flags);
extern int pipe2(int fds[2], int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);

/* waitid(2)'s idtype for a pidfd (Linux 5.4). */
static const idtype_t flowdir_P_PIDFD = (idtype_t)3;

/* The exit code or signal in a waitid(2) result. */
static inline int flowdir_siginfo_status(const siginfo_t *info) { return info->si_status; }
static inline pid_t flowdir_siginfo_pid(const siginfo_t *info) { return info->si_pid; }
#endif
