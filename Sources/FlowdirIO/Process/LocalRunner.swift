#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys
import FlowdirCore
import Synchronization

/// One local job: an argv run without a shell, in its own process group.
public struct LocalJob: Sendable {
    public var argv: [String]
    public var workingDirectory: String
    public var environment: [String: String]
    public var logPath: String
    /// How long SIGTERM has before SIGKILL, on cancel.
    public var grace: Double
    /// Folders above the log that do not exist yet: 1, its own; 2 when its
    /// parent is new too (`runs/` on a node's first run). Made top down.
    public var newLogFolders = 1

    public init(argv: [String], workingDirectory: String, environment: [String: String] = [:], logPath: String, grace: Double = 5) {
        self.argv = argv
        self.workingDirectory = workingDirectory
        self.environment = environment
        self.logPath = logPath
        self.grace = grace
    }
}

public enum LocalTermination: Sendable, Equatable {
    case exited(Int32)
    case signaled(Int32)
    /// It could not be started at all.
    case spawnFailed(String)
}

/// Lets another task ask a running job to stop.
public final class CancelToken: Sendable {
    private let state = Locked<(cancelled: Bool, handler: (@Sendable () -> Void)?)>((false, nil))

    public init() {}

    public func cancel() {
        let handler = state.locked { s -> (@Sendable () -> Void)? in
            s.cancelled = true
            defer { s.handler = nil }
            return s.handler
        }
        handler?()
    }

    /// `handler` runs once on `cancel()`: now, if that was already asked.
    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let now = state.locked { s -> Bool in
            if s.cancelled { return true }
            s.handler = handler
            return false
        }
        if now { handler() }
    }
}

/// Runs local jobs: spawned without a shell (`Spawn`) in a process group
/// of their own, output (stdout and stderr together) to a bounded log with
/// `progress:` lines reported, waited on by one thread for all of them
/// (`ChildWatch`), cancel as SIGTERM to the group and SIGKILL after the
/// grace period, and the group swept once the job ends so no stray child
/// outlives it.
///
/// Not swift-subprocess, the library one would reach for: on this Linux it costs
/// 0.3 ms of CPU per job above a bare posix_spawn (a thread hop to spawn,
/// another to wait, the environment checked row by row), which alone made
/// a run of a thousand short jobs 1.5× make's time; `flowdir-bench
/// spawn-timing` measures both.
public struct LocalRunner: Sendable {
    /// Times the grace between SIGTERM and SIGKILL.
    public let clock: FlowdirClock

    public init(clock: FlowdirClock = .system) { self.clock = clock }

    /// Starts `job` on a spawning thread and returns at once; `onProgress`
    /// and `onExit` (on the watching thread, or the spawning one if the job
    /// never got that far) say what becomes of it. `onExit` is called
    /// exactly once, also when the job could not be started, with what the
    /// log file holds when that is small (else nil: read the file).
    public func start(_ job: LocalJob, cancel: CancelToken, onProgress: @escaping @Sendable (Double) -> Void = { _ in },
                      onExit: @escaping @Sendable (LocalTermination, _ log: [UInt8]?) -> Void) {
        let clock = self.clock
        ChildWatch.shared.spawn { Self.launch(job, cancel: cancel, clock: clock, onProgress: onProgress, onExit: onExit) }
    }

    /// `start`, waiting for the job's end.
    public func run(_ job: LocalJob, cancel: CancelToken,
                    onProgress: @escaping @Sendable (Double) -> Void = { _ in }) async -> LocalTermination {
        await withCheckedContinuation { done in
            start(job, cancel: cancel, onProgress: onProgress) { end, _ in done.resume(returning: end) }
        }
    }

    private static func launch(_ job: LocalJob, cancel: CancelToken, clock: FlowdirClock,
                               onProgress: @escaping @Sendable (Double) -> Void,
                               onExit: @escaping @Sendable (LocalTermination, [UInt8]?) -> Void) {
        guard let program = job.argv.first, !program.isEmpty else { return onExit(.spawnFailed("the command is empty"), nil) }
        let log = BoundedLog(path: job.logPath, newFolders: job.newLogFolders)
        func failed(_ why: String) {
            log.append(Array("flowdir: could not run \(program): \(why)\n".utf8))
            onExit(.spawnFailed(why), log.close())
        }
        let resolved = program.contains("/") ? program
            : ProgramCache.shared.find(program, path: job.environment["PATH"], from: job.workingDirectory)
        guard let resolved else { return failed("not found on PATH") }
        // Only the read end is non-blocking: the tool's stdout stays as tools expect it.
        var ends: [Int32] = [-1, -1]
        guard pipe2(&ends, O_CLOEXEC) == 0 else { return failed("cannot make a pipe: \(Errno.current)") }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        let started = Spawn.start(resolved, argv: job.argv, environment: environment(job.environment),
                                  directory: job.workingDirectory, output: ends[1], masked: ChildWatch.shared.spawnersMasked)
        let child: Spawn.Child
        switch started {
        case .success(let c): child = c
        case .failure(let e):
            Syscall.close(ends[0])
            Syscall.close(ends[1])
            return failed("\(e)")
        }
        let watch = ChildWatch.shared
        let watched = ChildWatch.Job(pid: child.pid, pidfd: child.pidfd, pipe: ends[0], writeEnd: ends[1], log: log,
                                     onProgress: onProgress, onExit: onExit)
        let grace = job.grace
        cancel.onCancel {
            watch.signal(watched, SIGTERM)
            Task.detached {
                try? await clock.sleep(seconds: grace)
                watch.signal(watched, SIGKILL)
            }
        }
        watch.watch(watched)
    }
}

extension LocalRunner {
    /// This process's environment as `KEY=VALUE` rows, each ending in a NUL
    /// as `posix_spawn`'s envp wants it, read once: not parsed again for
    /// every job (at a thousand jobs that was a tenth of what each cost).
    public static let inherited: [[UInt8]] = {
        var rows: [[UInt8]] = []
        var p = environ
        while let entry = p.pointee {
            rows.append(Array(UnsafeBufferPointer(start: UnsafeRawPointer(entry).assumingMemoryBound(to: UInt8.self), count: strlen(entry) + 1)))
            p += 1
        }
        return rows
    }()

    /// The inherited environment with `overrides` set.
    static func environment(_ overrides: [String: String]) -> [[UInt8]] {
        guard !overrides.isEmpty else { return inherited }
        let keys = overrides.keys.sorted()
        var rows = base.locked {
            // Every job sets the same names (FLOWDIR_NODE, …): the inherited rows without them are kept.
            if let (names, rows) = $0, names == keys { return rows }
            let names = Set(keys.map { Array($0.utf8) })
            let rows = inherited.filter { row in
                guard let eq = row.firstIndex(of: UInt8(ascii: "=")) else { return true }
                return !names.contains(Array(row[..<eq]))
            }
            $0 = (keys, rows)
            return rows
        }
        for name in keys { rows.append(Array("\(name)=\(overrides[name]!)".utf8) + [0]) }
        return rows
    }

    private static let base = Locked<([String], [[UInt8]])?>(nil)
}

/// `progress: 0.42`, `progress: 42%` or `PROGRESS 42%` on a line of its own.
public enum Progress {
    public static func parse(_ line: some Collection<UInt8>) -> Double? {
        var text = String(decoding: line, as: UTF8.self)
        while text.last == "\r" || text.last == " " { text.removeLast() }
        let lower = text.lowercased()
        guard lower.hasPrefix("progress") else { return nil }
        var rest = lower.dropFirst(8)
        if rest.first == ":" { rest = rest.dropFirst() }
        let value = rest.trimmed(" ")
        let percent = value.hasSuffix("%")
        guard let number = Double(percent ? String(value.dropLast()) : value), number >= 0 else { return nil }
        let fraction = percent ? number / 100 : number
        return fraction <= 1 ? fraction : nil
    }
}

/// A run's log, at most `limit` bytes: the start is kept as written (and
/// can be followed live); past the limit, only the newest output is kept,
/// and the file is rewritten as start + a marker + end when the job ends.
/// Raw media never goes here: only what the tool itself prints.
///
/// The file (and its run's folders) is made at the first output, not
/// before the job starts: most short jobs print nothing, and two folders
/// and a file made on the way to every spawn were a fifth of what starting
/// one cost. A log never made is handed back as empty, for the commit to write.
final class BoundedLog: Sendable {
    static let head = 256 << 10
    static let tail = 768 << 10
    /// What the file holds is also kept here up to this size, so that it
    /// is committed without being read back.
    static let kept = 64 << 10
    private let file: Mutex<File>

    /// `newFolders`: how many folders above the log are new (its run's; and
    /// `runs/` too on a node's first run), made from the top down at once.
    init(path: String, newFolders: Int = 1) {
        file = Mutex(File(path: path, newFolders: newFolders))
    }

    func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        file.withLock { $0.append(bytes) }
    }

    /// Closes the file; returns what it holds when that was kept (see
    /// `kept`): empty, with no file made, when nothing was written.
    @discardableResult
    func close() -> [UInt8]? {
        file.withLock { $0.close() }
    }

    /// The log's file and what was written to it, used under `file`'s lock.
    private struct File {
        let path: String
        let newFolders: Int
        /// -1 until the first output; then the file, or -2 if it could not be made.
        var fd: Int32 = -1
        var closed = false
        var written = 0
        var ring: [UInt8] = []
        var dropped = 0
        /// All that was written, while it is small and every write went through whole.
        var copy: [UInt8]? = []

        /// The file, made now if it is not yet (with its new folders).
        mutating func opened() -> Int32 {
            guard fd == -1 else { return fd }
            var folders = [Path.directory(of: path)]
            while folders.count < newFolders { folders.append(Path.directory(of: folders.last!)) }
            for folder in folders.reversed() where mkdir(folder, 0o755) != 0 && errno != EEXIST {
                // More is missing above than was said: made the long way.
                if (try? Files.makeDirectories(folder)) == nil { break }
            }
            // Never through a link a commit put there: a job's output goes only into its own log.
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd < 0 { fd = -2 }
            return fd
        }

        mutating func append(_ bytes: [UInt8]) {
            guard !closed else { return }
            var bytes = bytes[...]
            if written < BoundedLog.head {
                let n = min(bytes.count, BoundedLog.head - written)
                let out = opened()
                let done = out < 0 ? -1 : bytes.prefix(n).withContiguousStorageIfAvailable { write(out, $0.baseAddress, n) } ?? -1
                if done == n, written + n <= BoundedLog.kept { copy? += bytes.prefix(n) } else { copy = nil }
                written += n
                bytes = bytes.dropFirst(n)
            }
            guard !bytes.isEmpty else { return }
            copy = nil
            ring += bytes
            if ring.count > BoundedLog.tail {
                dropped += ring.count - BoundedLog.tail
                ring.removeFirst(ring.count - BoundedLog.tail)
            }
        }

        mutating func close() -> [UInt8]? {
            guard !closed else { return nil }
            closed = true
            guard fd != -1 else { return [] }
            guard fd >= 0 else { return nil }
            if !ring.isEmpty {
                let marker = dropped > 0 ? Array("\n[… \(dropped) bytes of output left out …]\n".utf8) : []
                let tail = marker + ring
                _ = tail.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            Glibc.close(fd)
            fd = -1
            return copy
        }
    }
}
