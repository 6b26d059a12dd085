/// The executor seam (ARCHITECTURE.md, "Seams"): the engine knows jobs only
/// through this protocol. A local process, a job API and a Slurm cluster
/// are implementations; which one runs a node follows from its tool's
/// `run` (`JobWork`), looked up in an `ExecutorSet` the engine is given.
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
    /// `run.http`: a prediction on a job API endpoint.
    case http(HTTPWork)
    /// `run.slurm`: a batch job on a cluster.
    case slurm(CommandWork, options: [ParamEntry])

    /// Which of an `ExecutorSet`'s executors runs it.
    public var form: Form {
        switch self {
        case .command: .command
        case .http: .http
        case .slurm: .slurm
        }
    }

    public enum Form: Hashable, Sendable { case command, http, slurm }

    /// Whether the job lives outside this process's children: it survives
    /// flowdir stopping, is submitted once, and is reattached after.
    public var isRemote: Bool { form != .command }
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

/// A prediction, as a tool's `run.http` describes it, with this run's
/// inputs and params filled in (files by path: the executor turns them into
/// `data:` URIs or uploads).
public struct HTTPWork: Sendable {
    public var endpoint: String
    public var model: String?
    public var version: String?
    /// The prediction's `input`, placeholders expanded (`HTTPInput`).
    public var input: [(key: String, value: HTTPInputValue)]
    /// Port → where its file is in the prediction's `output` (`output`, `output[0]`, `output.image`).
    public var outputs: [String: String]

    public init(endpoint: String, model: String?, version: String?, input: [(key: String, value: HTTPInputValue)], outputs: [String: String]) {
        self.endpoint = endpoint
        self.model = model
        self.version = version
        self.input = input
        self.outputs = outputs
    }
}

/// One value of a prediction's input.
public indirect enum HTTPInputValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case integer(Int)
    case bool(Bool)
    case null
    /// An input file, sent as a `data:` URI or through the files API.
    case file(path: String)
    case array([HTTPInputValue])
    case object([String: HTTPInputValue])
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

/// The executors an engine has, by the form of `run` they carry out.
public struct ExecutorSet: Sendable {
    private var byForm: [JobWork.Form: any Executor]

    public init(_ executors: [JobWork.Form: any Executor]) { byForm = executors }

    public func executor(for work: JobWork) -> (any Executor)? { byForm[work.form] }

    public mutating func set(_ form: JobWork.Form, _ executor: any Executor) { byForm[form] = executor }

    public var all: [any Executor] { Array(byForm.values) }
}
