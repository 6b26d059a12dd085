import FlowdirCore
import Logging

/// The executor for `run.ssh` (docs/ssh-backend.md): one `SSHHostLane` a
/// host, which sends each job once, polls all of that host's jobs with one
/// ssh call over one shared connection, streams their logs, fetches their
/// outputs and cancels them.
public final class SSHExecutor: Executor {
    let pollInterval: Double
    let sshCommand: String
    let logger: Logger
    let now: @Sendable () -> Double
    let wall: @Sendable () -> Timestamp
    let sleep: @Sendable (Double) async -> Void
    let random: @Sendable () -> Double
    private let lanes = Locked<[String: SSHHostLane]>([:])

    /// - Parameters:
    ///   - sshCommand: the user's ssh as shell words (`ssh -F ~/.ssh/other`); nil: `ssh`.
    ///   - now, sleep: monotonic time in seconds (when polls are due) and a wait, injected so tests can drive them.
    ///   - wall: the time of day, for what is shown ("Offline since").
    public init(pollInterval: Double = 10, sshCommand: String? = nil, logger: Logger = Logger(label: "flowdir.ssh"),
                now: @escaping @Sendable () -> Double = { FlowdirClock.system.instant.sinceOrigin.seconds },
                wall: @escaping @Sendable () -> Timestamp = { FlowdirClock.system.now() },
                sleep: @escaping @Sendable (Double) async -> Void = { try? await FlowdirClock.system.sleep(for: .seconds($0)) },
                random: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }) {
        self.pollInterval = pollInterval
        // A host that stops answering is noticed in seconds, not when TCP gives up.
        self.sshCommand = (sshCommand ?? "ssh") + " -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
        self.logger = logger
        self.now = now
        self.wall = wall
        self.sleep = sleep
        self.random = random
    }

    func lane(_ host: String) -> SSHHostLane {
        lanes.locked { lanes in
            if let lane = lanes[host] { return lane }
            let lane = SSHHostLane(host: host, ssh: SSHCommand(destination: host, port: nil, sshCommand: sshCommand),
                                   pollInterval: pollInterval, logger: logger, now: now, wall: wall, sleep: sleep, random: random)
            lanes[host] = lane
            return lane
        }
    }

    public func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        guard let work = job.work.payload(as: SSHWork.self) else {
            updates(.ended(.failed(NodeError(summary: "not a run.ssh job", code: "noExecutor")), log: nil))
            return SSHHandle(lane: nil, key: job.submissionKey)
        }
        let lane = lane(work.host)
        Task { await lane.submit(job, work, updates: updates) }
        return SSHHandle(lane: lane, key: job.submissionKey)
    }

    public func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        guard let work = job.work.payload(as: SSHWork.self) else { return submit(job, updates: updates) }
        let lane = lane(work.host)
        Task { await lane.reattach(job, work, jobID: jobID, updates: updates) }
        return SSHHandle(lane: lane, key: job.submissionKey)
    }

    public func fetchOutputs(_ job: JobSpec, jobID: String?) async throws(NodeError) {
        guard let work = job.work.payload(as: SSHWork.self) else {
            throw NodeError(summary: "not a run.ssh job", code: "noExecutor")
        }
        try await lane(work.host).fetchOutputs(job, work)
    }

    public func setPolling(paused: Bool, instance: String) {
        for lane in lanes.locked({ Array($0.values) }) { Task { await lane.setPaused(paused, instance: instance) } }
    }

    /// ssh calls made to poll `host` so far (one a poll, whatever the number of jobs).
    public func pollCalls(_ host: String) async -> Int { await lane(host).pollCalls }
}

struct SSHHandle: JobHandle {
    let lane: SSHHostLane?
    let key: String
    func cancel() {
        guard let lane else { return }
        Task { await lane.cancel(key) }
    }
}
