#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Subprocess
import SystemPackage

/// One local job: an argv run without a shell, in its own process group.
public struct LocalJob: Sendable {
    public var argv: [String]
    public var workingDirectory: String
    public var environment: [String: String]
    public var logPath: String
    /// How long SIGTERM has before SIGKILL, on cancel.
    public var grace: Double

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
    private let continuation: AsyncStream<Void>.Continuation
    private let stream: AsyncStream<Void>

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public func cancel() { continuation.yield(()) }

    func wait() async {
        for await _ in stream { return }
    }
}

/// Runs local jobs with swift-subprocess: output (stdout and stderr
/// together) to a bounded log, `progress:` lines reported, cancel as
/// SIGTERM to the process group and SIGKILL after the grace period, and
/// the group swept once the job ends so no stray child outlives it.
public struct LocalRunner: Sendable {
    public init() {}

    public func run(_ job: LocalJob, cancel: CancelToken, onStart: @Sendable (Int32) -> Void = { _ in },
                    onProgress: @Sendable (Double) -> Void = { _ in }) async -> LocalTermination {
        guard let program = job.argv.first, !program.isEmpty else { return .spawnFailed("the command is empty") }
        let log: BoundedLog
        do { log = try BoundedLog(path: job.logPath) } catch { return .spawnFailed("cannot write the log: \(error)") }
        defer { log.close() }
        var options = PlatformOptions()
        options.processGroupID = 0  // a group of its own: signals reach the whole job
        let resolved = program.contains("/") ? program
            : ProgramCache.shared.find(program, path: job.environment["PATH"], from: job.workingDirectory)
        guard let resolved else {
            log.append(Array("flowdir: could not run \(program): not found on PATH\n".utf8))
            return .spawnFailed("\(program): not found on PATH")
        }
        let executable = Executable.path(FilePath(resolved))
        let leader = Box()
        do {
            let result = try await Subprocess.run(
                executable, arguments: Arguments(Array(job.argv.dropFirst())),
                environment: .custom(Self.environment(job.environment)),
                workingDirectory: FilePath(job.workingDirectory), platformOptions: options,
                input: .none, output: .sequence, error: .combinedWithOutput
            ) { execution in
                let pid = execution.processIdentifier.value
                leader.set(pid)
                onStart(pid)
                let stopper = Task {
                    await cancel.wait()
                    guard !Task.isCancelled else { return }
                    _ = killpg(pid, SIGTERM)
                    try? await Task.sleep(for: .milliseconds(Int(job.grace * 1000)))
                    _ = killpg(pid, SIGKILL)
                }
                defer { stopper.cancel() }
                var pending: [UInt8] = []
                for try await buffer in execution.standardOutput {
                    let bytes = buffer.withUnsafeBytes { Array($0) }
                    log.append(bytes)
                    pending += bytes
                    while let nl = pending.firstIndex(of: 0x0A) {
                        if let p = Progress.parse(pending[..<nl]) { onProgress(p) }
                        pending.removeSubrange(...nl)
                    }
                    if pending.count > 4096 { pending.removeAll() }  // a very long line carries no progress
                }
            }
            // The job is over and reaped: nothing of its group may outlive it.
            // (Not at end of output: many tools close stdout before they exit.)
            if let pid = leader.value { _ = killpg(pid, SIGKILL) }
            switch result.terminationStatus {
            case .exited(let code): return .exited(code)
            case .signaled(let signal): return .signaled(signal)
            }
        } catch {
            log.append(Array("flowdir: could not run \(program): \(error)\n".utf8))
            return .spawnFailed("\(error)")
        }
    }
}

extension LocalRunner {
    /// This process's environment as `KEY=VALUE` rows, read once: with
    /// `.inherit`, swift-subprocess parses `environ` into a dictionary on
    /// every spawn (twice), a tenth of what a short job costs flowdir.
    /// Each row ends in a NUL: swift-subprocess 1.0.2 `strdup`s raw rows
    /// as they are, reading past the end of one that has none.
    static let inherited: [[UInt8]] = {
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
final class BoundedLog: @unchecked Sendable {
    static let head = 256 << 10
    static let tail = 768 << 10
    private let path: String
    private var fd: Int32
    private var written = 0
    private var ring: [UInt8] = []
    private var dropped = 0
    private let lock = Mutex()

    init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0, errno == ENOENT {  // the run's folder is usually new
            try Files.makeDirectories(Path.directory(of: path))
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        }
        if fd < 0 { throw LocalFileSystem.map(Errno.current, path) }
    }

    func append(_ bytes: [UInt8]) {
        lock.locked {
            var bytes = bytes[...]
            if written < Self.head {
                let n = min(bytes.count, Self.head - written)
                _ = bytes.prefix(n).withContiguousStorageIfAvailable { write(fd, $0.baseAddress, n) }
                written += n
                bytes = bytes.dropFirst(n)
            }
            guard !bytes.isEmpty else { return }
            ring += bytes
            if ring.count > Self.tail {
                dropped += ring.count - Self.tail
                ring.removeFirst(ring.count - Self.tail)
            }
        }
    }

    func close() {
        lock.locked {
            guard fd >= 0 else { return }
            if !ring.isEmpty {
                let marker = dropped > 0 ? Array("\n[… \(dropped) bytes of output left out …]\n".utf8) : []
                let tail = marker + ring
                _ = tail.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            Glibc.close(fd)
            fd = -1
        }
    }
}

/// The job's pid, set inside the run closure and read after it.
final class Box: @unchecked Sendable {
    private let lock = Mutex()
    private var pid: Int32?
    func set(_ p: Int32) { lock.locked { pid = p } }
    var value: Int32? { lock.locked { pid } }
}
