#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Logging

/// Every job flowdir has on the cluster, one task at a time: sent once,
/// all polled with one `squeue`, a controller that does not answer only
/// "Reconnecting…".
actor SlurmLane {
    let pollInterval: Double
    let commands: SlurmCommands
    let logger: Logger
    let random: @Sendable () -> Double
    let clock: FlowdirClock

    struct Tracked {
        var spec: JobSpec
        var updates: @Sendable (JobUpdate) -> Void
        var id: String?
        var saidRunning = false
        var reason: String?
        var cancelRequested = false
        var noted = false
        var nextPoll = 0.0
    }

    var jobs: [String: Tracked] = [:]
    var byID: [String: String] = [:]
    var paused: Set<String> = []
    var poller: Task<Void, Never>?
    var backoff = Backoff()
    private(set) var squeueCalls = 0

    init(pollInterval: Double, commands: SlurmCommands, logger: Logger, random: @escaping @Sendable () -> Double,
         clock: FlowdirClock = .system) {
        self.clock = clock
        self.pollInterval = pollInterval
        self.commands = commands
        self.logger = logger
        self.random = random
    }

    /// Seconds on the monotonic clock: when polls are due. Never the wall,
    /// which may jump (a clock set, a laptop woken) or stand still (FLOWDIR_NOW).
    nonisolated func now() -> Double { clock.instant.sinceOrigin.seconds }

    /// `flowdir-<instance id>-<node>-<run>`: the submission key, as Slurm keeps a name.
    static func jobName(_ key: String) -> String {
        "flowdir-" + key.replacingOccurrences(of: "/", with: "-")
    }

    /// Runs the job's argv as it is: sbatch gives this script the argv as
    /// its arguments, and it runs them without a shell reading them.
    static let runner = """
        #!/bin/sh
        # Written by flowdir: runs the tool's argv as given (no shell reads it), then notes its exit code.
        "$@"
        code=$?
        echo "$code" > .flowdir-exit
        exit "$code"

        """

    // MARK: Sending

    func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        let key = job.submissionKey
        guard let slurm = job.work.payload(as: SlurmWork.self) else {
            return updates(.ended(.failed(NodeError(summary: "not a run.slurm job", code: "noExecutor")), log: nil))
        }
        let (work, options) = (slurm.command, slurm.options)
        jobs[key] = Tracked(spec: job, updates: updates)
        let script = job.workDir + "/.flowdir-slurm.sh"
        do {
            try Files.makeDirectories(Path.directory(of: job.logPath))
            try Files.writeAtomically(script, Array(Self.runner.utf8))
            chmod(script, 0o755)
        } catch {
            return end(key, .failed(NodeError(summary: "cannot prepare the Slurm job: \(error)", code: "prepareFailed")))
        }
        // The job's environment through sbatch's own (it exports all of it by default).
        var argv = ["env"] + work.environment.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" }
        argv += ["sbatch", "--parsable", "--job-name=" + Self.jobName(key), "--chdir=" + job.workDir,
                    "--output=" + job.logPath, "--open-mode=append"]
        for o in options {
            guard let value = o.value.stringValue ?? o.value.numberValue.map(ParamValue.plainNumber) else { continue }
            switch o.key {
            case "partition": argv.append("--partition=" + value)
            case "time": argv.append("--time=" + Self.slurmTime(value))
            case "cpus": argv.append("--cpus-per-task=" + value)
            case "mem": argv.append("--mem=" + value)
            case "gres": argv.append("--gres=" + value)
            case "account": argv.append("--account=" + value)
            default: break
            }
        }
        argv.append(script)
        argv += work.argv
        // After an sbatch the controller did not answer, the job may be in
        // the queue all the same: its name says, and it is never sent again
        // until the controller says it does not have it.
        var maybeSent = false
        while jobs[key] != nil {
            if jobs[key]!.cancelRequested { return end(key, .cancelled(nil)) }
            if maybeSent {
                if let id = await find(key) { return accept(key, id) }
                if !controllerAnswered {
                    note(key, "Reconnecting… (sbatch: the Slurm controller does not answer)")
                    await sleep(backoff.failed(jitter: random()))
                    continue
                }
            }
            let r = await commands.run(argv)
            if r.status == 0, let id = r.output.split(whereSeparator: { $0 == "\n" || $0 == ";" }).first.map(String.init), Int(id) != nil {
                return accept(key, id)
            }
            if Self.controllerDown(r.output) {
                maybeSent = true
                continue
            }
            let words = r.output.split(separator: "\n").map(String.init).last { !$0.isEmpty } ?? "exit \(r.status)"
            return end(key, .failed(NodeError(summary: "Slurm refused the job: \(words)", code: "sbatch(\(r.status))",
                                              hint: r.status == 127 ? "is Slurm installed here (sbatch on PATH)?"
                                                  : "check partition, time, cpus, mem, gres and account under run.slurm of the tool")))
        }
    }

    func accept(_ key: String, _ id: String) {
        guard jobs[key] != nil else { return }
        jobs[key]!.id = id
        jobs[key]!.nextPoll = 0
        byID[id] = key
        jobs[key]!.updates(.submitted(jobID: id))
        clearNote(key)
        if jobs[key]!.cancelRequested { Task { await self.cancel(key) } }
        startPolling()
    }

    func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        let key = job.submissionKey
        if let jobID {
            jobs[key] = Tracked(spec: job, updates: updates, id: jobID)
            byID[jobID] = key
            startPolling()
            return
        }
        jobs[key] = Tracked(spec: job, updates: updates)
        while jobs[key] != nil {
            if let id = await find(key) { return accept(key, id) }
            if controllerAnswered {
                jobs[key] = nil
                return await submit(job, updates: updates)
            }
            note(key, "Reconnecting… (the Slurm controller does not answer)")
            await sleep(backoff.failed(jitter: random()))
        }
    }

    var controllerAnswered = false

    /// The job of this key, by its name, among every job Slurm still knows.
    func find(_ key: String) async -> String? {
        let name = Self.jobName(key)
        let r = await commands.run(["scontrol", "show", "job", "--oneliner"])
        controllerAnswered = r.status == 0 || r.output.contains("No jobs in the system")
        guard controllerAnswered else { return nil }
        for line in r.output.split(separator: "\n") where line.contains(" JobName=\(name) ") {
            if let id = Self.field("JobId", in: line) { return id }
        }
        return nil
    }

    // MARK: Polling

    func startPolling() {
        guard poller == nil else { return }
        poller = Task { await self.pollLoop() }
    }

    func pollLoop() async {
        while jobs.values.contains(where: { $0.id != nil }) {
            let now = self.now()
            let live = jobs.values.filter { $0.id != nil && !paused.contains($0.spec.instance) }
            guard let soonest = live.map(\.nextPoll).min(), soonest <= now else {
                await sleep(max(0.05, (live.map(\.nextPoll).min() ?? now + pollInterval) - now))
                continue
            }
            // One squeue for every job of ours, whatever their number.
            squeueCalls += 1
            let r = await commands.run(["squeue", "--noheader", "--format=%i|%T|%r", "--user=" + Host.user])
            guard r.status == 0 else {
                let delay = backoff.failed(jitter: random())
                for t in live { if let id = t.id, let key = byID[id] {
                    jobs[key]?.nextPoll = self.now() + delay
                    note(key, "Reconnecting… (squeue: \(Self.firstLine(r.output)); next try in \(Int(delay.rounded()))s)")
                } }
                continue
            }
            backoff.succeeded()
            var seen: [String: SlurmState] = [:]
            for line in r.output.split(separator: "\n") {
                let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                guard f.count >= 3 else { continue }
                seen[f[0]] = SlurmState.parse(f[1], reason: f[2], exitCode: nil)
            }
            let next = self.now() + pollInterval
            for t in live {
                guard let id = t.id, let key = byID[id] else { continue }
                jobs[key]?.nextPoll = next
                clearNote(key)
                if let state = seen[id] { take(key, state) } else { await leftQueue(key, id) }
            }
        }
        poller = nil
    }

    /// A job squeue no longer lists: scontrol knows how it ended (for
    /// MinJobAge); after that, the exit code its script noted.
    func leftQueue(_ key: String, _ id: String) async {
        let r = await commands.run(["scontrol", "show", "job", id, "--oneliner"])
        if r.status == 0, let line = r.output.split(separator: "\n").first, let state = Self.field("JobState", in: line) {
            return take(key, SlurmState.parse(state, reason: Self.field("Reason", in: line) ?? "", exitCode: Self.field("ExitCode", in: line)))
        }
        if Self.controllerDown(r.output) { return note(key, "Reconnecting… (the Slurm controller does not answer)") }
        guard let t = jobs[key] else { return }
        if let text = try? LocalFileSystem().readFile(t.spec.workDir + "/.flowdir-exit", limit: 64),
           let code = Int32(String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) {
            return take(key, code == 0 ? .completed : .failed("exited with code \(code)"))
        }
        end(key, .failed(NodeError(summary: "Slurm no longer knows job \(id), and it left no exit code", code: "jobGone",
                                   hint: "see `flowdir logs`; `flowdir retry` runs it again")))
    }

    func take(_ key: String, _ state: SlurmState) {
        guard let t = jobs[key] else { return }
        switch state {
        case .pending(let reason):
            // A requeued job runs again: say so when it does.
            if t.saidRunning { jobs[key]?.saidRunning = false }
            if t.reason != reason, let reason {
                jobs[key]?.reason = reason
                t.updates(.note("Pending in Slurm: \(reason)"))
            }
        case .running:
            if !t.saidRunning {
                jobs[key]?.saidRunning = true
                t.updates(.running)
                if t.reason != nil { jobs[key]?.reason = nil; t.updates(.note(nil)) }
            }
            if let p = LogLines.last(5, ofFile: t.spec.logPath)?.reversed().lazy.compactMap({ Progress.parse(Array($0.utf8)) }).first {
                t.updates(.progress(p))
            }
        case .completed:
            if !t.saidRunning { t.updates(.running) }
            if t.reason != nil { t.updates(.note(nil)) }
            // The outputs are in the run's work folder, which the cluster shares: nothing to download.
            end(key, .succeeded)
        case .failed(let why):
            end(key, .failed(NodeError(summary: why, code: "slurm", hint: "its output is in `\(Shell.command(["flowdir", "logs", t.spec.instance, t.spec.node]))`")))
        case .cancelled:
            end(key, .cancelled(t.cancelRequested ? nil : "Cancelled in Slurm, outside flowdir (scancel)"))
        case .unknown(let s):
            logger.warning("unknown Slurm state", metadata: ["state": .string(s), "job": .string(t.id ?? "?")])
        }
    }

    func end(_ key: String, _ how: JobEnd) {
        guard let t = jobs.removeValue(forKey: key) else { return }
        if let id = t.id { byID[id] = nil }
        t.updates(.ended(how, log: nil))
    }

    func note(_ key: String, _ text: String) {
        guard jobs[key] != nil else { return }
        jobs[key]?.noted = true
        jobs[key]?.updates(.note(text))
    }

    func clearNote(_ key: String) {
        guard jobs[key]?.noted == true else { return }
        jobs[key]?.noted = false
        jobs[key]?.updates(.note(nil))
    }

    func setPaused(_ isPaused: Bool, instance: String) {
        if isPaused { paused.insert(instance) } else { paused.remove(instance) }
    }

    // MARK: Cancel

    func cancel(_ key: String) async {
        guard jobs[key] != nil else { return }
        jobs[key]?.cancelRequested = true
        guard let id = jobs[key]?.id else { return }
        var tries = Backoff()
        for _ in 0..<5 {
            let r = await commands.run(["scancel", id])
            if r.status == 0 { break }
            logger.warning("scancel failed", metadata: ["job": .string(id), "output": .string(Self.firstLine(r.output))])
            await sleep(tries.failed(jitter: random()))
        }
        jobs[key]?.nextPoll = 0
    }

    // MARK: Helpers

    func sleep(_ seconds: Double) async {
        try? await clock.sleep(seconds: seconds)
    }

    static func controllerDown(_ output: String) -> Bool {
        let lower = output.lowercased()
        return lower.contains("unable to contact slurm controller") || lower.contains("connection refused")
            || lower.contains("socket timed out") || lower.contains("slurm_load_jobs error") && !lower.contains("invalid job id")
            || lower.contains("zero bytes were transmitted")
    }

    static func field(_ name: String, in line: some StringProtocol) -> String? {
        for part in line.split(separator: " ") where part.hasPrefix(name + "=") {
            return String(part.dropFirst(name.count + 1))
        }
        return nil
    }

    static func firstLine(_ s: String) -> String { s.split(separator: "\n").first.map(String.init) ?? "" }

    /// flowdir's durations (`2h`, `90s`, `PT1H`) as Slurm's `[days-]hours:minutes:seconds`; Slurm's own forms as given.
    static func slurmTime(_ value: String) -> String {
        if value.contains(":") || value.contains("-") || Int(value) != nil { return value }
        guard let d = FlowDuration(parsing: value) else { return value }
        let total = Int(d.seconds.rounded(.up))
        let days = total / 86_400, h = total % 86_400 / 3600, m = total % 3600 / 60, s = total % 60
        let hms = String(format: "%02d:%02d:%02d", h, m, s)
        return days > 0 ? "\(days)-\(hms)" : hms
    }
}
