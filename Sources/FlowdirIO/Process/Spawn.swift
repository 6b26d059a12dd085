#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys

/// posix_spawn(3), wrapped once. glibc spawns with clone(CLONE_VM |
/// CLONE_VFORK): the child shares our memory until it execs, so starting a
/// job costs the same whatever flowdir's size, as make's own spawns do.
enum Spawn {
    struct Child {
        let pid: pid_t
        /// A pidfd: readable once the child has exited (see `ChildWatch`).
        let pidfd: Int32
    }

    /// Starts `program` (a path) with `argv` and `environment` (rows of
    /// `KEY=VALUE\0`) in `directory`, in a process group of its own, with
    /// default signal handling and an empty signal mask, /dev/null as
    /// stdin, `output` as stdout and stderr, and no other descriptor of ours.
    static func start(_ program: String, argv: [String], environment: [[UInt8]], directory: String,
                      output: Int32) -> Result<Child, Errno> {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        // /dev/null is opened once, here, not once in every child.
        var rc = devNull >= 0 ? posix_spawn_file_actions_adddup2(&actions, devNull, 0)
            : posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if rc == 0 { rc = posix_spawn_file_actions_adddup2(&actions, output, 1) }
        if rc == 0 { rc = posix_spawn_file_actions_adddup2(&actions, output, 2) }
        if rc == 0 { rc = posix_spawn_file_actions_addchdir_np(&actions, directory) }
        if rc == 0 { rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3) }
        // Its own group, so cancel reaches the whole job; signals as a fresh
        // process has them (a service may ignore SIGTERM to handle it itself).
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        if rc == 0 { rc = posix_spawnattr_setpgroup(&attributes, 0) }
        if rc == 0 { rc = posix_spawnattr_setsigmask(&attributes, &none) }
        if rc == 0 { rc = posix_spawnattr_setsigdefault(&attributes, &all) }
        if rc == 0 {
            rc = posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        }
        guard rc == 0 else { return .failure(Errno(rc)) }
        var pid: pid_t = 0
        rc = withCStrings(argv) { args in
            environment.withPointers { env in posix_spawn(&pid, program, &actions, &attributes, args, env) }
        }
        guard rc == 0 else { return .failure(Errno(rc)) }
        let pidfd = pidfd_open(pid, 0)
        guard pidfd >= 0 else {
            let e = Errno.current
            _ = killpg(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            return .failure(e)
        }
        return .success(Child(pid: pid, pidfd: pidfd))
    }

    private static let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)

    /// `strings` as a NULL-ended array of C strings, for the duration of `body`.
    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { strdup($0) } + [nil]
        defer { for p in copies { free(p) } }
        return body(copies)
    }
}

extension [[UInt8]] {
    /// Rows that each end in NUL as a NULL-ended array of C strings.
    func withPointers<T>(_ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        guard !isEmpty else { return body([nil]) }
        var flat: [UInt8] = []
        flat.reserveCapacity(reduce(0) { $0 + $1.count })
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for row in self {
            offsets.append(flat.count)
            flat += row
        }
        return flat.withUnsafeMutableBufferPointer { buffer in
            let base = UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            return body(offsets.map { base + $0 } + [nil])
        }
    }
}

