/// The executor seam (ARCHITECTURE.md, "Seams"): the engine knows jobs only
/// through this protocol. A local process and each backend (a job API, a
/// Slurm cluster, an ssh host) are implementations; which one runs a node
/// follows from its tool's `run` (`JobWork.key`), looked up in an
/// `ExecutorSet` the engine is given.
public protocol Executor: Sendable {
    /// Starts `job` and returns at once; what becomes of it comes through
    /// `updates`, ending with exactly one `.ended`.
    func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle

    /// After flowdir stopped (even `kill -9`) while `job` was under way:
    /// follow it again. `jobID` is the backend's id when it was recorded;
    /// without one the executor looks the job up by `job.submissionKey`,
    /// submits it if it finds for certain that it was never made, and ends
    /// it with `.unknownSubmission` when it cannot tell. Never submits twice.
    func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle

    /// Once a job said `.outputsReady`: its outputs are put into
    /// `job.workDir` under their declared names (a remote job's downloaded),
    /// for the engine to check and move in as it does a local tool's.
    func fetchOutputs(_ job: JobSpec, jobID: String?) async throws(NodeError)

    /// Status checks for an instance's jobs stop (`flowdir polling pause`)
    /// or start again; its jobs go on running where they run.
    func setPolling(paused: Bool, instance: String)
}

extension Executor {
    public func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        submit(job, updates: updates)
    }
    public func fetchOutputs(_ job: JobSpec, jobID: String?) async throws(NodeError) {}
    public func setPolling(paused: Bool, instance: String) {}
}

/// A job under way, as its executor lets the engine stop it.
public protocol JobHandle: Sendable {
    /// Stop it (local: SIGTERM to its group, then SIGKILL; remote: the
    /// backend's cancel). Its `.ended` follows.
    func cancel()
}

/// What a node's run asks of an executor.
public struct JobSpec: Sendable {
    /// The instance's folder.
    public var instance: String
    public var node: String
    public var run: Int
    /// Unique to this run of this node of this instance: what finds the
    /// job on the backend when flowdir stopped between sending it and
    /// recording the backend's id.
    public var submissionKey: String
    /// When the run was recorded as started, before anything was sent: a
    /// job the backend made earlier is another run's (another instance's
    /// run of the same input looks alike). Nil when unknown.
    public var startedAt: Timestamp?
    /// Where the run works; outputs end up here under `outputs`' names.
    public var workDir: String
    /// The run's `log.txt` (absolute).
    public var logPath: String
    public var work: JobWork
    /// The declared outputs: port, file name in `workDir`, type.
    public var outputs: [JobOutput]

    public init(instance: String, node: String, run: Int, submissionKey: String, workDir: String, logPath: String,
                work: JobWork, outputs: [JobOutput] = [], startedAt: Timestamp? = nil) {
        self.instance = instance
        self.startedAt = startedAt
        self.node = node
        self.run = run
        self.submissionKey = submissionKey
        self.workDir = workDir
        self.logPath = logPath
        self.work = work
        self.outputs = outputs
    }
}

public struct JobOutput: Sendable, Equatable {
    public var port: String
    public var file: String
    public var type: PortType
    public var optional: Bool

    public init(port: String, file: String, type: PortType, optional: Bool = false) {
        self.port = port
        self.file = file
        self.type = type
        self.optional = optional
    }
}

/// What to run, as the tool's `run` says (docs/templates-and-tools.md, "Tools").
public enum JobWork: Sendable {
    /// `run.command`: an argv, no shell.
    case command(CommandWork)
    /// `run.<key>`: what the backend of that key made of the node, in its
    /// own terms; only that backend's executor reads `payload`.
    case backend(key: String, payload: any Sendable)

    /// `ExecutorSet`'s key for local processes (`run.command`).
    public static let commandKey = "command"

    /// Which of an `ExecutorSet`'s executors runs it: `command`, or the backend's key.
    public var key: String {
        switch self {
        case .command: Self.commandKey
        case .backend(let key, _): key
        }
    }

    /// The backend's payload, when it is of type `T`.
    public func payload<T>(as type: T.Type) -> T? {
        if case .backend(_, let payload) = self { return payload as? T }
        return nil
    }

    /// Whether the job lives outside this process's children: it survives
    /// flowdir stopping, is submitted once, and is reattached after.
    public var isRemote: Bool {
        if case .backend = self { return true }
        return false
    }
}

public struct CommandWork: Sendable {
    public var argv: [String]
    public var environment: [String: String]
    /// SIGTERM → SIGKILL, on cancel.
    public var grace: Double
    /// Folders above the log that do not exist yet (see `LocalJob`).
    public var newLogFolders: Int

    public init(argv: [String], environment: [String: String] = [:], grace: Double = 5, newLogFolders: Int = 1) {
        self.argv = argv
        self.environment = environment
        self.grace = grace
        self.newLogFolders = newLogFolders
    }
}

/// What the engine hears of a job.
public enum JobUpdate: Sendable {
    /// The backend took it under this id: committed before anything else.
    case submitted(jobID: String)
    /// The backend started it.
    case running
    case progress(Double)
    /// What a card should say while the job itself is fine (`Reconnecting…`); nil clears it.
    case note(String?)
    /// The endpoint cannot be reached: the node is blocked, offline, until
    /// the executor gets through (then `.submitted` or `.running`).
    case offline(endpoint: String, since: Timestamp)
    /// It succeeded: its outputs can be fetched (`Executor.fetchOutputs`).
    case outputsReady
    /// The end; `log` is what the run's log holds when the executor kept it.
    case ended(JobEnd, log: [UInt8]?)
}

public enum JobEnd: Sendable, Equatable {
    /// A local process exited (0: its outputs are in the work folder).
    case exited(Int32)
    case signaled(Int32)
    case spawnFailed(String)
    /// A remote job succeeded and its outputs are in the work folder.
    case succeeded
    /// It failed, in the backend's words, with a hint.
    case failed(NodeError)
    /// The backend says it was cancelled (asked by us or by someone else).
    case cancelled(String?)
}

/// The executors an engine has, by the key of the `run` they carry out
/// (`JobWork.key`: `command`, or a backend's).
public struct ExecutorSet: Sendable {
    private var byKey: [String: any Executor]

    public init(_ executors: [String: any Executor]) { byKey = executors }

    public func executor(for work: JobWork) -> (any Executor)? { byKey[work.key] }

    public func executor(forKey key: String) -> (any Executor)? { byKey[key] }

    public mutating func set(_ key: String, _ executor: any Executor) { byKey[key] = executor }

    public var all: [any Executor] { Array(byKey.values) }
}
