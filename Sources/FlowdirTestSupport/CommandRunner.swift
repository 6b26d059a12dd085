#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The outcome of running a command.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs the built `flowdir` binary, for end-to-end tests.
public enum CommandRunner {
    /// - Parameter timeout: seconds after which the child is killed and `TimedOut` thrown; nil: none.
    public static func flowdir(_ arguments: [String], in directory: String? = nil,
                               environment: [String: String] = [:], timeout: Double? = nil) throws -> CommandResult {
        try run(RepositoryPaths.flowdirExecutable, arguments, in: directory, environment: environment, timeout: timeout)
    }

    /// A command that had not ended after its timeout (a hang guard): it was killed.
    public struct TimedOut: Error, CustomStringConvertible {
        public var command: [String]
        public var seconds: Double
        public var stdout: String
        public var stderr: String
        public var description: String {
            "`\(command.joined(separator: " "))` had not ended after \(Int(seconds)) s and was killed; its output:\n\(stdout)\(stderr)"
        }
    }

    public static func run(_ executable: String, _ arguments: [String], in directory: String? = nil,
                           environment: [String: String] = [:], timeout: Double? = nil) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = nil
        for (k, v) in environment { env[k] = v }
        process.environment = env
        // Files, not pipes: a chatty child can never block on a full pipe.
        let dir = FileManager.default.temporaryDirectory
        let outURL = dir.appendingPathComponent("flowdir-out-\(UUID().uuidString)")
        let errURL = dir.appendingPathComponent("flowdir-err-\(UUID().uuidString)")
        // A file that could not be made fails the FileHandle below, with why.
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        try process.run()
        if let timeout, ended.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try out.close()
            try err.close()
            throw TimedOut(command: [executable] + arguments, seconds: timeout,
                           stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                           stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
        }
        process.waitUntilExit()
        try out.close()
        try err.close()
        return CommandResult(status: process.terminationStatus,
                             stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
                             stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}

/// Runs blocking work (waiting on processes, sleeping) on a thread of its
/// own, so it never holds one of the few cooperative threads that the
/// engine's async work, and other tests, need. It stays in the caller's
/// task (a task executor of one thread, not a bare thread), so task-locals
/// hold: an `#expect` inside is the test's issue, not «unknown»'s.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let executor = OneThreadExecutor()
    defer { executor.finish() }
    return try await withTaskExecutorPreference(executor) { try body() }
}

/// A task executor that runs its jobs in order on one thread, started for it.
final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init() {
        let thread = Thread { [self] in run() }
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Its thread ends once the jobs already given are run.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
