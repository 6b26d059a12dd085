#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys

/// Starting a job, wrapped once (`flowdir_spawn_start` in CFlowdirSys):
/// what posix_spawn(3) does, with clone(CLONE_VM | CLONE_VFORK) as glibc
/// does it, so starting a job costs the same whatever flowdir's size, as
/// make's own spawns do; but on stacks kept from one start to the next,
/// where glibc maps and unmaps one per child.
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
    /// `masked`: the calling thread keeps every signal but SIGCHLD blocked
    /// (a spawning thread of `ChildWatch` with `dropsChildSignals`).
    static func start(_ program: String, argv: [String], environment: [[UInt8]], directory: String,
                      output: Int32, masked: Bool = false) -> Result<Child, Errno> {
        guard devNull >= 0 else { return .failure(Errno(ENOENT)) }
        var pidfd: Int32 = -1
        let pid: pid_t = withCStrings(argv) { args in
            environment.withPointers { env in
                program.withCString { path in
                    directory.withCString { dir in
                        args.withUnsafeBufferPointer { a in
                            env.withUnsafeBufferPointer { e in
                                var request = flowdir_spawn(path: path, argv: a.baseAddress, envp: e.baseAddress, directory: dir,
                                                            input: devNull, output: output, reset: resetSignals, error: 0)
                                let stack = StackTop.take()
                                defer { StackTop.give(stack) }
                                return flowdir_spawn_start(&request, stack.pointer, masked ? 1 : 0, &pidfd)
                            }
                        }
                    }
                }
            }
        }
        guard pid > 0 else { return .failure(Errno(-pid)) }
        return .success(Child(pid: pid, pidfd: pidfd))
    }

    /// The signals a child puts back to their default before it execs: the
    /// ones ignored when flowdir made its first job (inherited ignored,
    /// as `nohup` or a shell's background job leaves SIGHUP, SIGINT and
    /// SIGQUIT), and those a library may ignore later to handle them
    /// another way (swift-service-lifecycle ignores SIGTERM and SIGINT and
    /// reads them from a dispatch source; SIGPIPE is commonly ignored).
    /// A handled signal needs nothing: exec puts it back to its default.
    static let resetSignals: UInt64 = {
        var mask = UInt64(flowdir_ignored_signals())
        for signal in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU] {
            mask |= 1 << UInt64(signal - 1)
        }
        return mask
    }()

    /// /dev/null, opened once for every child's stdin.
    private static let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)

    /// A stack for children (its high end), made once and kept: one start at a time uses each.
    struct StackTop: @unchecked Sendable {
        static let size = 64 << 10
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64) + size
        private static let free = Locked<[StackTop]>([])

        static func take() -> StackTop { free.locked { $0.popLast() } ?? StackTop() }
        static func give(_ stack: StackTop) { free.locked { $0.append(stack) } }
    }

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

