#!/usr/bin/env bash
# What the kernel charges for the file operations a `flowdir run` step needs
# by the instance folder's layout (docs/instance-folder.md), in C, 2,000 of
# each, in a folder on TMPDIR: the floor under flowdir's own per-step cost on
# this machine; and a whole step's file work against make's (which makes its
# output only).
#
#   [TMPDIR=/dev/shm] bash Benchmarks/fs-costs.sh
set -Eeuo pipefail
# A step that fails ends the script with why, never silently (-E: in functions and $(…) too).
trap 'echo "${0##*/}: no figure: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/fs.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
enum { N = 2000 };
static const char *root;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void report(const char *what, double start) { printf("%-44s %6.2f us\n", what, (now() - start) / N); }
// `<dir>/n<i>/<name>` written as flowdir writes a file: a temp file beside it, renamed over it.
static void atomic_write(const char *dir, int i, const char *name) {
    char tmp[512], final[512];
    snprintf(final, sizeof final, "%s/n%d/%s", dir, i, name);
    const char *base = strrchr(final, '/') + 1;
    snprintf(tmp, sizeof tmp, "%.*s.%s.tmp", (int)(base - final), final, base);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, "state: ready\nrun: 0\n", 20) != 20) { perror(tmp); exit(1); }
    close(fd);
    if (rename(tmp, final) != 0) { perror(final); exit(1); }
}
int main(int argc, char **argv) {
    root = argv[1];
    char p[512], nodes[512], work[512];
    snprintf(nodes, sizeof nodes, "%s/inst/nodes", root);
    snprintf(work, sizeof work, "%s/inst/.flowdir/work", root);
    snprintf(p, sizeof p, "mkdir -p %s %s", nodes, work);
    if (system(p) != 0) return 1;
    for (int i = 0; i < N; i++) { snprintf(p, sizeof p, "%s/n%d", nodes, i); mkdir(p, 0755); }
    double t = now();
    for (int i = 0; i < N; i++) syscall(SYS_getppid);
    report("a null system call", t);
    t = now();
    for (int i = 0; i < N; i++) { snprintf(p, sizeof p, "%s/n%d.1", work, i); mkdir(p, 0755); }
    report("mkdir (a run's work folder)", t);
    t = now();
    for (int i = 0; i < N; i++) { snprintf(p, sizeof p, "%s/n%d.1", work, i); rmdir(p); }
    report("rmdir", t);
    t = now();
    for (int i = 0; i < N; i++) atomic_write(nodes, i, "state.yaml");
    report("new file written atomically (temp + rename)", t);
    t = now();
    for (int i = 0; i < N; i++) atomic_write(nodes, i, "state.yaml");
    report("the same over the existing file", t);
    t = now();
    for (int i = 0; i < N; i++) {
        char buf[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/n%d/state.yaml", nodes, i);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) != 0 || read(fd, buf, sizeof buf) < 0) { perror(p); return 1; }
        close(fd);
    }
    report("a small file read (open, fstat, read, close)", t);
    // A whole step's file work, as the layout asks (docs/instance-folder.md), the
    // tool's output included; against make's step, which makes its output
    // and nothing else. What the kernel alone charges per step, either way.
    snprintf(p, sizeof p, "%s/out", root);
    mkdir(p, 0755);
    t = now();
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "%s/out/n%d", root, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) { perror(p); return 1; }
        close(fd);
    }
    double make_step = (now() - t) / N;
    t = now();
    for (int i = 0; i < N; i++) {
        char w[512], q[512], buf[4096];
        struct stat st;
        snprintf(w, sizeof w, "%s/n%d.1", work, i);
        mkdir(w, 0755);                                       // the run's work folder
        snprintf(q, sizeof q, "%s/n%d/runs", nodes, i); mkdir(q, 0755);
        snprintf(q, sizeof q, "%s/n%d/runs/1", nodes, i); mkdir(q, 0755);
        atomic_write(nodes, i, "runs/1/run.yaml");
        snprintf(q, sizeof q, "%s/out.bin", w);               // the tool's output
        int fd = open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0644); close(fd);
        fd = open(q, O_RDONLY | O_CLOEXEC);                   // read, to hash it
        if (fd < 0 || fstat(fd, &st) != 0 || read(fd, buf, sizeof buf) < 0) { perror(q); return 1; }
        close(fd);
        snprintf(p, sizeof p, "%s/n%d/out", nodes, i);       // the work folder, holding
        rename(w, p);                                         // just the output, becomes out/
        atomic_write(nodes, i, "state.yaml");                 // over the last one
        snprintf(p, sizeof p, "%s/n%d/runs/1/log.txt", nodes, i);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); close(fd);
    }
    double flowdir_step = (now() - t) / N;
    printf("%-44s %6.2f us\n", "make's step (its output made)", make_step);
    printf("%-44s %6.2f us\n", "a flowdir step's files, as the layout asks", flowdir_step);
    printf("%-44s %6.0f ms   (3 folders and 4 files made, 3 renames)\n",
           "  the difference, over 1,000 steps", (flowdir_step - make_step));
    return 0;
}
C
cc -O2 -o "$work/fs" "$work/fs.c"
echo "on $(df --output=fstype "$work" | tail -1) ($work), $(nproc) cores:"
"$work/fs" "$work"
