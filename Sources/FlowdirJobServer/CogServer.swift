#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
import Foundation
import Logging
import NIOCore

/// A cog server this job server runs itself (`--model NAME=cog:DIR`): cog
/// without Docker, `python -m cog.server.http` in the predictor's folder
/// DIR with the venv's python first on PATH, on a free loopback port, in a
/// process group of its own (`LocalRunner`), its output in
/// `DIR/cog/<name>.log` (bounded; the previous start's kept as `.1`).
///
/// Nothing it starts outlives it: it is stopped with SIGTERM to its group
/// and SIGKILL after a grace period, and since cog's worker is a child of
/// cog's server (it would be orphaned when the server is killed, and left
/// a zombie where PID 1 does not reap), this process becomes a child
/// subreaper and reaps what is left of the group itself.
actor CogServer {
    let name: String
    let predictor: String
    let venv: String
    let logDir: String
    let startTimeout: Duration
    let logger: Logger
    let http: HTTPClient

    private(set) var port = 0
    /// The server's pid, which is its process group's id; 0 when not running.
    private(set) var pid: pid_t = 0
    private var cancel: CancelToken?
    private var ended: Task<LocalTermination, Never>?
    /// Set while this stops it: its end is then no news.
    private var stopping = false
    private var onExit: (@Sendable (String) async -> Void)?
    /// Never started again (the job server is stopping).
    private var closed = false
    let clock: FlowdirClock

    struct Failed: Error, CustomStringConvertible { var description: String }

    init(name: String, predictor: String, venv: String, logDir: String, startTimeout: Duration, logger: Logger, http: HTTPClient = .shared,
         clock: FlowdirClock = .system) {
        self.clock = clock
        self.name = name
        self.predictor = predictor.hasPrefix("/") ? predictor : Path.join(Files.currentDirectory, predictor)
        self.venv = venv
        self.logDir = logDir
        self.startTimeout = startTimeout
        self.logger = logger
        self.http = http
    }

    var url: String { "http://127.0.0.1:\(port)" }
    var logPath: String { logDir + "/" + FileStore.safeName(name.replacingOccurrences(of: "/", with: "_")) + ".log" }
    var pidPath: String { logPath.dropLast(4) + ".pid" }

    /// Called when it ends by itself (it died or was killed by someone else), saying how.
    func setOnExit(_ handler: @escaping @Sendable (String) async -> Void) { onExit = handler }

    /// Starts it and returns once it answers READY; throws why not (with
    /// the end of its log).
    func start() async throws(Failed) {
        guard !closed else { throw Failed(description: "the job server is stopping") }
        guard cancel == nil else { return }
        guard Files.exists(predictor + "/predict.py") else {
            throw Failed(description: "cog:\(predictor) has no predict.py (a folder with predict.py and its class Predictor)")
        }
        guard Files.exists(venv + "/bin/python") else {
            throw Failed(description: "no python at \(venv)/bin/python to run cog with; give --cog-python VENV (a venv with cog installed)")
        }
        _ = Self.subreaper
        do { try Files.makeDirectories(logDir) } catch { throw Failed(description: "cannot make \(logDir): \(error)") }
        Self.killLeftover(pidPath)
        _ = rename(logPath, logPath + ".1")
        unlink(pidPath)
        guard let free = Self.freePort() else { throw Failed(description: "no free port for the cog server: \(Errno.current)") }
        port = free
        let token = CancelToken()
        cancel = token
        stopping = false
        finished = false
        let (ends, ending) = AsyncStream<LocalTermination>.makeStream()
        // The shell writes its pid (the group's id: it is the group's leader)
        // and becomes python, which asks to be killed if this process dies
        // (SIGKILL of the job server leaves no cog server behind), then runs
        // cog's server as `python -m cog.server.http` does.
        let script = "import ctypes, runpy, signal; ctypes.CDLL(None).prctl(1, signal.SIGKILL); "
            + "runpy.run_module('cog.server.http', run_name='__main__', alter_sys=True)"
        let job = LocalJob(argv: ["/bin/sh", "-c", "echo $$ > \"$0\"; exec \"$1\" -c \"$2\" --host 127.0.0.1", pidPath, venv + "/bin/python", script],
                           workingDirectory: predictor,
                           environment: ["PATH": venv + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"),
                                         "PORT": String(free), "COG_PREDICT_TYPE_STUB": "predict.py:Predictor", "PYTHONUNBUFFERED": "1"],
                           logPath: logPath, grace: 3)
        LocalRunner().start(job, cancel: token) { end, _ in
            ending.yield(end)
            ending.finish()
        }
        let endedTask = Task { () -> LocalTermination in
            for await e in ends { return e }
            return .spawnFailed("no end was reported")
        }
        ended = endedTask
        Task { await self.exited(await endedTask.value, token: token) }
        let deadline = clock.instant + startTimeout
        while clock.instant < deadline {
            if pid == 0, let text = try? LocalFileSystem().readFile(pidPath, limit: 64),
               let p = pid_t(String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) {
                pid = p
                // With its start time, so a later start never kills another process that got the pid.
                _ = try? Files.writeAtomically(pidPath, Array("\(p) \(Self.startTime(p) ?? 0)\n".utf8))
            }
            if finished { throw Failed(description: "the cog server for \(name) exited before it was ready: \(logTail())") }
            guard cancel === token else { throw Failed(description: "the cog server for \(name) was stopped before it was ready") }
            switch await health() {
            case "READY"?:
                logger.info("cog server ready", metadata: ["model": .string(name), "url": .string(url), "pid": .stringConvertible(pid)])
                return
            case "SETUP_FAILED"?, "DEFUNCT"?:
                await stop()
                throw Failed(description: "the cog server for \(name) failed its setup: \(logTail())")
            default:
                break
            }
            try? await clock.sleep(for: .milliseconds(200))
        }
        await stop()
        throw Failed(description: "the cog server for \(name) was not ready within \(startTimeout) (--cog-start-timeout): \(logTail())")
    }

    private var finished = false

    private func exited(_ end: LocalTermination, token: CancelToken) async {
        guard cancel === token else { return }
        finished = true
        let group = pid
        pid = 0
        cancel = nil
        await Self.reapOrphans(group: group, clock: clock)
        // A new start began while its group was reaped (a restart): the pid
        // file is the new server's now, and this end is no news. Removing it
        // left the new server's pid unread, 0, for good.
        guard cancel == nil else { return }
        unlink(pidPath)
        let how = switch end {
        case .exited(let code): "it exited with code \(code)"
        case .signaled(let signal): "it was killed by signal \(signal)"
        case .spawnFailed(let why): "it could not start: \(why)"
        }
        guard !stopping else { return }
        logger.warning("cog server ended by itself", metadata: ["model": .string(name), "how": .string(how)])
        await onExit?(how + "; " + logTail())
    }

    /// Stops it for good (the job server is stopping).
    func close() async {
        closed = true
        await stop()
    }

    /// Stops it and returns once it and all of its group are gone.
    func stop() async {
        guard let token = cancel else { return }
        stopping = true
        let group = pid
        token.cancel()
        if let ended { _ = await ended.value }
        // `exited` may not have run yet: the group is reaped here too.
        await Self.reapOrphans(group: group, clock: clock)
        if cancel === token { cancel = nil }
        pid = 0
    }

    /// What cog says of itself: READY, BUSY, STARTING, SETUP_FAILED…; nil when it does not answer.
    func health(timeout: Int64 = 2) async -> String? {
        guard port > 0 else { return nil }
        let request = HTTPClientRequest(url: url + "/health-check")
        guard let response = try? await http.execute(request, timeout: .seconds(timeout)),
              let body = try? await response.body.collect(upTo: 1 << 16) else { return nil }
        return JSONValue.parse(Array(buffer: body))?["status"]?.stringValue ?? "?"
    }

    /// The last lines of its log, for an error that says why.
    func logTail() -> String {
        let text = (try? LocalFileSystem().readFile(logPath, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let lines = text.split(separator: "\n").suffix(6).map { String($0.prefix(300)) }
        return lines.isEmpty ? "it printed nothing (\(logPath))" : "its log (\(logPath)) ends: " + lines.joined(separator: " | ")
    }

    // MARK: Processes

    /// Orphans of this process's children come to it (not to PID 1), so it
    /// can reap them. Set once; `prctl` is variadic in C, so it is called
    /// through a pointer with the arguments it takes here.
    static let subreaper: Void = {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl") else { return }
        _ = unsafeBitCast(symbol, to: Prctl.self)(36 /* PR_SET_CHILD_SUBREAPER */, 1, 0, 0, 0)
    }()

    /// Kills what is left of `group` that came to this process (cog's
    /// worker, once its server is gone) and reaps it, until none is left
    /// (a few seconds at most).
    static func reapOrphans(group: pid_t, clock: FlowdirClock) async {
        guard group > 0 else { return }
        for _ in 0..<100 {
            let left = ProcessScan.children(of: getpid()).filter { $0.group == group && $0.pid != group }
            if left.isEmpty { return }
            for p in left {
                if p.state == "Z" {
                    var status: Int32 = 0
                    _ = waitpid(p.pid, &status, WNOHANG)
                } else {
                    kill(p.pid, SIGKILL)
                }
            }
            try? await clock.sleep(for: .milliseconds(30))
        }
    }

    /// A cog server a killed job server left running (its pidfile names
    /// it, with its start time): killed, so it does not hold a GPU or a port.
    static func killLeftover(_ pidPath: String) {
        guard let text = try? LocalFileSystem().readFile(pidPath, limit: 64) else { return }
        let fields = String(decoding: text, as: UTF8.self).split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard fields.count == 2, let p = pid_t(fields[0]), p > 1, let started = UInt64(fields[1]), started > 0,
              startTime(p) == started else { return }
        killpg(p, SIGKILL)
    }

    /// The process's start time (clock ticks after boot), from /proc/PID/stat.
    static func startTime(_ pid: pid_t) -> UInt64? {
        ProcessScan.stat(pid).flatMap { $0.fields.count > 19 ? UInt64($0.fields[19]) : nil }
    }

    static func freePort() -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}

/// Processes as /proc shows them.
enum ProcessScan {
    struct Entry {
        var pid: pid_t
        var state: Character
        var parent: pid_t
        var group: pid_t
        /// The fields after the command's name: state is [0], parent [1], group [2].
        var fields: [Substring]
    }

    static func stat(_ pid: pid_t) -> Entry? {
        guard let bytes = try? LocalFileSystem().readFile("/proc/\(pid)/stat", limit: 4096) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // The name is in parentheses and may hold spaces or parentheses itself.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 3, let state = fields[0].first, let parent = pid_t(fields[1]), let group = pid_t(fields[2]) else { return nil }
        return Entry(pid: pid, state: state, parent: parent, group: group, fields: fields)
    }

    /// This machine's processes whose parent is `parent`.
    static func children(of parent: pid_t) -> [Entry] {
        ((try? LocalFileSystem().listDirectory("/proc")) ?? []).compactMap { pid_t($0) }.compactMap(stat).filter { $0.parent == parent }
    }
}
