#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Logging

/// Every job flowdir has on one ssh host, one task at a time: each sent
/// once (its launch on the host is a no-op the second time), all polled
/// with one ssh call over one shared connection, their logs streamed into
/// their runs' `log.txt`, a host that does not answer `Offline` for jobs
/// not yet there and "Reconnecting…" for jobs under way.
actor SSHHostLane {
    let host: String
    let ssh: SSHCommand
    let pollInterval: Double
    let logger: Logger
    let now: @Sendable () -> Double
    let wall: @Sendable () -> Timestamp
    let sleep: @Sendable (Double) async -> Void
    let random: @Sendable () -> Double

    struct Tracked {
        var spec: JobSpec
        var work: SSHWork
        var updates: @Sendable (JobUpdate) -> Void
        /// The run id on the host, once it is launched there.
        var id: String?
        /// Bytes of the host's log already in the local `log.txt`.
        var offset: Int
        var saidRunning = false
        var cancelRequested = false
        /// Ended well: no more polls; the engine fetches its outputs.
        var ready = false
        var noted = false
        var nextPoll = 0.0
    }

    /// By submission key.
    var jobs: [String: Tracked] = [:]
    var paused: Set<String> = []
    var poller: Task<Void, Never>?
    var backoff = Backoff()
    var offlineSince: Timestamp?
    /// A shared connection is up (`SSHCommand.startSharing`).
    var sharing = false
    private(set) var pollCalls = 0

    /// The most of a log one poll brings back, a job.
    static let logChunk = 256 << 10

    init(host: String, ssh: SSHCommand, pollInterval: Double, logger: Logger, now: @escaping @Sendable () -> Double,
         wall: @escaping @Sendable () -> Timestamp,
         sleep: @escaping @Sendable (Double) async -> Void, random: @escaping @Sendable () -> Double) {
        self.host = host
        self.ssh = ssh
        self.pollInterval = pollInterval
        self.logger = logger
        self.now = now
        self.wall = wall
        self.sleep = sleep
        self.random = random
    }

    // MARK: Sending

    func submit(_ job: JobSpec, _ work: SSHWork, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        let key = job.submissionKey
        let run = SSHScripts.runID(key)
        jobs[key] = Tracked(spec: job, work: work, updates: updates, offset: Self.size(of: job.logPath))
        let tar = job.workDir + "/.flowdir-ssh-send.tar"
        do { try await Self.pack(work, stage: job.workDir + "/.flowdir-ssh-send", into: tar) } catch {
            return end(key, .failed(error))
        }
        defer { unlink(tar) }
        var tries = Backoff()
        // Once a launch went unanswered, the job may be running there.
        var maybeLaunched = false
        while jobs[key] != nil {
            if jobs[key]!.cancelRequested {
                if maybeLaunched { _ = await ssh.run(SSHScripts.cancel(dir: work.dir, run: run, grace: 5), input: .none) }
                return end(key, .cancelled(nil))
            }
            await share()
            let r = await ssh.run(SSHScripts.launch(dir: work.dir, run: run, argv: work.argv), input: .file(tar))
            if r.status == 0, r.output.contains("launched") { return accept(key, run) }
            guard SSHScripts.unreachable(r.status, r.errors) else {
                return end(key, .failed(NodeError(summary: "the job could not start on \(host): \(SSHCommand.words(r.errors + "\n" + r.output))",
                                                  code: "sshLaunch", hint: Self.hint(r))))
            }
            maybeLaunched = true
            await unshare()
            let since = offlineSince ?? wall()
            offlineSince = since
            jobs[key]?.updates(.offline(endpoint: host, since: since))
            await sleep(tries.failed(jitter: random()))
        }
    }

    func accept(_ key: String, _ run: String) {
        guard jobs[key] != nil else { return }
        offlineSince = nil
        jobs[key]!.id = run
        jobs[key]!.nextPoll = 0
        jobs[key]!.updates(.submitted(jobID: run))
        clearNote(key)
        if jobs[key]!.cancelRequested { Task { await self.cancel(key) } }
        startPolling()
    }

    /// Followed again after flowdir stopped: by its run id when one was
    /// recorded; else sent again, which launches nothing if it was launched.
    func reattach(_ job: JobSpec, _ work: SSHWork, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        guard let jobID else { return await submit(job, work, updates: updates) }
        jobs[job.submissionKey] = Tracked(spec: job, work: work, updates: updates, id: jobID, offset: Self.size(of: job.logPath))
        startPolling()
    }

    // MARK: Polling

    func startPolling() {
        guard poller == nil else { return }
        poller = Task { await self.pollLoop() }
    }

    func pollLoop() async {
        while jobs.values.contains(where: { $0.id != nil && !$0.ready }) {
            let t = now()
            let live = jobs.filter { $0.value.id != nil && !$0.value.ready && !paused.contains($0.value.spec.instance) }
            guard let soonest = live.values.map(\.nextPoll).min(), soonest <= t else {
                await sleep(max(0.05, (live.values.map(\.nextPoll).min() ?? t + pollInterval) - t))
                continue
            }
            // One call for every job on this host, whatever their number.
            pollCalls += 1
            await share()
            let list = live.map { "\($0.value.id!) \($0.value.offset) \($0.value.work.dir)\n" }.joined()
            let answer = Collected()
            let r = await ssh.run(SSHScripts.poll(chunk: Self.logChunk), input: .bytes(Array(list.utf8)), output: { answer.add($0) })
            guard r.status == 0, let reports = SSHScripts.parse(answer.bytes) else {
                await unshare()
                let delay = backoff.failed(jitter: random())
                let why = r.status == 0 ? "the answer was cut short" : SSHCommand.words(r.errors)
                for key in live.keys {
                    jobs[key]?.nextPoll = now() + delay
                    note(key, "Reconnecting… (ssh \(host): \(why); next try in \(Int(delay.rounded()))s)")
                }
                continue
            }
            backoff.succeeded()
            let next = now() + pollInterval
            let byRun = Dictionary(live.map { ($0.value.id!, $0.key) }, uniquingKeysWith: { a, _ in a })
            for report in reports {
                guard let key = byRun[report.run] else { continue }
                jobs[key]?.nextPoll = next
                clearNote(key)
                take(key, report)
            }
        }
        poller = nil
        await unshareIfIdle()
    }

    func take(_ key: String, _ report: SSHScripts.Report) {
        guard let t = jobs[key] else { return }
        if !report.log.isEmpty {
            Self.append(report.log, to: t.spec.logPath)
            jobs[key]!.offset += report.log.count
            if let p = RemoteLog.lastProgress(String(decoding: report.log, as: UTF8.self)) { t.updates(.progress(p)) }
        }
        // The end is taken once all of its log is here.
        let more = jobs[key]!.offset < report.logSize
        if more { jobs[key]!.nextPoll = 0 }
        switch report.state {
        case "starting":
            break
        case "running":
            if !t.saidRunning {
                jobs[key]!.saidRunning = true
                t.updates(.running)
            }
        case "exit" where !more:
            if t.cancelRequested || report.code == "cancelled" {
                return end(key, .cancelled(t.cancelRequested ? nil : "Cancelled on \(host), outside flowdir"))
            }
            if !t.saidRunning { t.updates(.running) }
            guard report.code == "0" else {
                let code = Int32(report.code) ?? -1
                let last = LogLines.last(1, ofFile: t.spec.logPath)?.first.map { ": " + $0 } ?? ""
                return end(key, .failed(NodeError(summary: "exited with code \(code)" + last, code: "exit(\(code))",
                                                  hint: "see `\(Shell.command(["flowdir", "logs", t.spec.instance, t.spec.node]))`")))
            }
            jobs[key]!.ready = true
            t.updates(.outputsReady)
        case "lost" where !more:
            if t.cancelRequested { return end(key, .cancelled(nil)) }
            end(key, .failed(NodeError(summary: "its processes on \(host) are gone and it left no exit code (the host restarted, or they were killed)",
                                       code: "jobLost", hint: "`\(Shell.command(["flowdir", "retry", t.spec.instance, t.spec.node]))` runs it again")))
        case "none":
            end(key, .failed(NodeError(summary: "its run folder on \(host) (\(t.work.dir)/\(t.id ?? "?")) is gone", code: "jobGone",
                                       hint: "`\(Shell.command(["flowdir", "retry", t.spec.instance, t.spec.node]))` runs it again")))
        default:
            break
        }
    }

    // MARK: Outputs

    func fetchOutputs(_ job: JobSpec, _ work: SSHWork) async throws(NodeError) {
        let key = job.submissionKey
        let tar = job.workDir + "/.flowdir-ssh-fetch.tar"
        defer {
            unlink(tar)
            // Fetched or failed, the engine ends it: this host has one job fewer.
            jobs[key] = nil
            Task { await self.unshareIfIdle() }
        }
        var tries = Backoff()
        while true {
            await share()
            let file = open(tar, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard file >= 0 else { throw NodeError(summary: "cannot write \(tar): \(String(cString: strerror(errno)))", code: "badOutput") }
            let written = Collected()
            let r = await ssh.run(SSHScripts.fetch(dir: work.dir, run: SSHScripts.runID(key), ports: job.outputs.map(\.port)), input: .none,
                                  output: { chunk in
                                      if let base = chunk.baseAddress, write(file, base, chunk.count) != chunk.count { written.fail() }
                                  })
            close(file)
            if r.status == 0, !written.failed {
                var st = stat()
                if stat(tar, &st) == 0, st.st_size > 0 {
                    let x = await PipedCommand.run(["/usr/bin/env", "tar", "-xf", tar, "-C", job.workDir, "--no-same-owner", "--no-same-permissions"],
                                                   input: .none)
                    guard x.status == 0 else {
                        throw NodeError(summary: "the outputs from \(host) cannot be unpacked: \(SSHCommand.words(x.errors))", code: "badOutput")
                    }
                }
                return
            }
            if written.failed {
                throw NodeError(summary: "the outputs from \(host) cannot be written to \(tar): \(String(cString: strerror(errno)))",
                                code: errno == ENOSPC ? "noSpace" : "badOutput")
            }
            guard SSHScripts.unreachable(r.status, r.errors) else {
                throw NodeError(summary: "cannot fetch its outputs from \(host): \(SSHCommand.words(r.errors))", code: "sshFetch",
                                hint: Self.hint(r))
            }
            await unshare()
            let delay = tries.failed(jitter: random())
            note(key, "Reconnecting… (ssh \(host): \(SSHCommand.words(r.errors)); next try in \(Int(delay.rounded()))s)")
            await sleep(delay)
        }
    }

    // MARK: Cancel

    func cancel(_ key: String) async {
        guard let t = jobs[key] else { return }
        jobs[key]!.cancelRequested = true
        guard let id = t.id else { return }  // still being sent: `submit` ends it
        var tries = Backoff()
        for _ in 0..<5 {
            let r = await ssh.run(SSHScripts.cancel(dir: t.work.dir, run: id, grace: 5), input: .none)
            if r.status == 0 { break }
            logger.warning("ssh cancel failed", metadata: ["host": .string(host), "run": .string(id), "errors": .string(SSHCommand.words(r.errors))])
            await sleep(tries.failed(jitter: random()))
        }
        jobs[key]?.nextPoll = 0
    }

    func setPaused(_ isPaused: Bool, instance: String) {
        if isPaused { paused.insert(instance) } else { paused.remove(instance) }
    }

    // MARK: Helpers

    func end(_ key: String, _ how: JobEnd) {
        guard let t = jobs.removeValue(forKey: key) else { return }
        t.updates(.ended(how, log: nil))
        if jobs.isEmpty { Task { await self.unshareIfIdle() } }
    }

    func note(_ key: String, _ text: String) {
        guard jobs[key] != nil else { return }
        jobs[key]!.noted = true
        jobs[key]!.updates(.note(text))
    }

    func clearNote(_ key: String) {
        guard jobs[key]?.noted == true else { return }
        jobs[key]!.noted = false
        jobs[key]!.updates(.note(nil))
    }

    /// One connection for this host's calls while it has jobs; none when
    /// the host does not answer (each call then tries on its own).
    func share() async {
        if !sharing { sharing = await ssh.startSharing() }
    }

    func unshare() async {
        guard sharing else { return }
        sharing = false
        await ssh.stopSharing()
    }

    func unshareIfIdle() async {
        if jobs.isEmpty { await unshare() }
    }

    static func hint(_ r: SSHCommand.Result) -> String {
        let e = r.errors.lowercased()
        if e.contains("permission denied") { return "check that `ssh` reaches the host without a password (a key, or ssh-agent)" }
        if e.contains("host key verification failed") { return "connect once with `ssh` to accept the host's key" }
        return "check that `ssh` reaches the host and that its dir is writable"
    }

    /// Size of a file, 0 when absent.
    static func size(of path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    /// The most of a job's log kept in its run's `log.txt` (it is committed).
    static let logLimit = 8 << 20

    /// Appends to the run's log, up to `logLimit`, then says once that the rest stayed on the host.
    static func append(_ bytes: [UInt8], to path: String) {
        try? Files.makeDirectories(Path.directory(of: path))
        let have = size(of: path)
        guard have < logLimit else { return }
        var bytes = bytes
        if have + bytes.count > logLimit {
            bytes = Array(bytes.prefix(logLimit - have)) + Array("\n… (flowdir kept the first 8 MB of this log; the rest is in the run's folder on the host)\n".utf8)
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// A tar of the inputs (and the tool's folder) as the run folder has
    /// them: links in `stage`, followed as the tar is made.
    static func pack(_ work: SSHWork, stage: String, into tar: String) async throws(NodeError) {
        do {
            try? Files.removeTree(stage)
            try Files.makeDirectories(stage + "/inputs")
            for u in work.uploads where symlink(u.local, stage + "/" + u.remote) != 0 {
                throw NodeError(summary: "cannot stage input \(u.local): \(String(cString: strerror(errno)))", code: "prepareFailed")
            }
            if let tool = work.toolDir, symlink(tool, stage + "/tool") != 0 {
                throw NodeError(summary: "cannot stage the tool's folder \(tool): \(String(cString: strerror(errno)))", code: "prepareFailed")
            }
        } catch let e as NodeError {
            throw e
        } catch {
            throw NodeError(summary: "cannot prepare the ssh job: \(error)", code: "prepareFailed")
        }
        defer { try? Files.removeTree(stage) }
        let r = await PipedCommand.run(["/usr/bin/env", "tar", "-chf", tar, "-C", stage, "."], input: .none)
        guard r.status == 0 else {
            throw NodeError(summary: "cannot pack the job's inputs: \(SSHCommand.words(r.errors))", code: "prepareFailed")
        }
    }
}

/// What an ssh call printed, gathered as it comes (on the thread that
/// spawned it, while the caller waits: never touched at once).
final class Collected: @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    private(set) var failed = false
    func add(_ chunk: UnsafeRawBufferPointer) { bytes.append(contentsOf: chunk) }
    func fail() { failed = true }
}
