#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Logging

/// The executor for `run.slurm` (docs/templates-and-tools.md): `sbatch` the tool's
/// argv (no shell: each argument reaches the job as it is), one `squeue`
/// a poll for all of flowdir's jobs, `scontrol` for one that left the
/// queue, `scancel` to cancel. A job's name carries its submission key, so
/// one sent but never recorded is found again.
public final class SlurmExecutor: Executor {
    let lane: SlurmLane

    public init(pollInterval: Double = 10, commands: SlurmCommands = .system, logger: Logger = Logger(label: "flowdir.slurm"),
                random: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }, clock: FlowdirClock = .system) {
        lane = SlurmLane(pollInterval: pollInterval, commands: commands, logger: logger, random: random, clock: clock)
    }

    public func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let lane = self.lane
        Task { await lane.submit(job, updates: updates) }
        return SlurmHandle(lane: lane, key: job.submissionKey)
    }

    public func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let lane = self.lane
        Task { await lane.reattach(job, jobID: jobID, updates: updates) }
        return SlurmHandle(lane: lane, key: job.submissionKey)
    }

    public func setPolling(paused: Bool, instance: String) {
        let lane = self.lane
        Task { await lane.setPaused(paused, instance: instance) }
    }

    /// `squeue` calls made so far (for benchmarks).
    public func squeueCalls() async -> Int { await lane.squeueCalls }
}

struct SlurmHandle: JobHandle {
    let lane: SlurmLane
    let key: String
    func cancel() { Task { await lane.cancel(key) } }
}

/// How Slurm's commands are run: the real ones, or a test's.
public struct SlurmCommands: Sendable {
    public var run: @Sendable ([String]) async -> (status: Int32, output: String)

    public init(run: @escaping @Sendable ([String]) async -> (status: Int32, output: String)) { self.run = run }

    /// The commands on PATH, stdout and stderr together.
    public static let system = SlurmCommands { argv in await CommandOutput.run(argv) }
}

/// Slurm's word for a job's state, as a node's state follows it
/// (docs/templates-and-tools.md, `run.slurm`).
enum SlurmState: Equatable {
    /// Waiting, with Slurm's reason ("Priority", "Resources", or a state
    /// like "requeued"); nil when Slurm gives none.
    case pending(reason: String?)
    case running
    case completed
    case failed(String)
    case cancelled
    case unknown(String)

    static func parse(_ state: String, reason: String, exitCode: String?) -> SlurmState {
        let s = state.split(separator: " ").first.map(String.init) ?? state
        let why = reason == "None" || reason.isEmpty ? nil : reason
        switch s {
        case "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED", "RESIZING", "CONFIGURING", "PREEMPTED":
            return .pending(reason: why ?? (s == "PENDING" ? nil : s.lowercased()))
        case "RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING":
            return .running
        case "COMPLETED":
            return .completed
        case "CANCELLED":
            return .cancelled
        case "FAILED":
            let code = exitCode.flatMap { $0.split(separator: ":").first }.map(String.init) ?? "?"
            return .failed("exited with code \(code)" + (why.map { " (\($0))" } ?? ""))
        case "TIMEOUT", "DEADLINE":
            return .failed("ran past its time limit (Slurm: \(s))")
        case "OUT_OF_MEMORY":
            return .failed("ran out of memory (Slurm: OUT_OF_MEMORY)")
        case "NODE_FAIL", "BOOT_FAIL":
            return .failed("its node failed (Slurm: \(s)\(why.map { ", \($0)" } ?? ""))")
        default:
            return .unknown(s)
        }
    }
}
