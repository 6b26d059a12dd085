import FlowdirCore

/// The executor for `run.command`: a local process through `LocalRunner`.
/// A local job dies with the machine's processes, not with flowdir's
/// records: after a crash it is not reattached but ended and run again
/// (`Engine.recoverInterrupted`), so `reattach` is `submit`.
public struct LocalExecutor: Executor {
    let runner = LocalRunner()

    public init() {}

    public func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let cancel = CancelToken()
        guard case .command(let work) = job.work else {
            updates(.ended(.spawnFailed("the local executor runs only run.command"), log: nil))
            return cancel
        }
        var local = LocalJob(argv: work.argv, workingDirectory: job.workDir, environment: work.environment,
                             logPath: job.logPath, grace: work.grace)
        local.newLogFolders = work.newLogFolders
        runner.start(local, cancel: cancel, onProgress: { updates(.progress($0)) },
                     onExit: { end, log in updates(.ended(end.jobEnd, log: log)) })
        return cancel
    }
}

extension CancelToken: JobHandle {}

extension LocalTermination {
    public var jobEnd: JobEnd {
        switch self {
        case .exited(let code): .exited(code)
        case .signaled(let signal): .signaled(signal)
        case .spawnFailed(let why): .spawnFailed(why)
        }
    }
}
