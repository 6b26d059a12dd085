import FlowdirCore
import FlowdirTemplates
import Logging

/// A backend (ARCHITECTURE.md, "Adding a backend"): a folder under
/// `Backends/` and a line in `Backends.all`. It declares its `run.<key>`
/// and its traits and checks its own entries (`BackendSyntax`), makes one
/// run of a node into a job of its own (`job(for:)`), and gives the
/// executor that carries such jobs out. The engine knows it only by key.
public protocol Backend: BackendSyntax {
    /// One run of a node, as this backend's job: what its executor will be
    /// handed in `JobWork.backend(key:payload:)`, and how the run record
    /// shows what ran. Throws (`BackendRun.Invalid`) when the tool's entry
    /// cannot make one.
    func job(for run: BackendRun) throws -> BackendJob

    /// Its executor, set up from the config; nil when this machine has none
    /// for it (a job API with no endpoint configured).
    func executor(_ setup: BackendSetup) throws -> (any Executor)?
}

/// One run of a node, as a backend is asked to make a job of it.
public struct BackendRun: Sendable {
    public var tool: ToolDefinition
    /// `run.<key>` of the tool, as written (and as the backend checked it).
    public var entries: [ParamEntry]
    /// The instance folder the run is in.
    public var instance: String
    public var node: String
    public var run: Int
    /// Where the run works; its outputs end up here.
    public var workDir: String
    /// The folder the tool's file is in (`{tool.dir}`).
    public var toolDir: String
    /// Port → path of the input file (an absent optional input is absent).
    public var inputs: [String: String]
    /// Port → path in `workDir` where the output goes.
    public var outputs: [String: String]
    /// Params as text, the tool's defaults included (for placeholders).
    public var params: [String: String]
    /// The node's params as given, typed.
    public var typedParams: [ParamEntry]

    public init(tool: ToolDefinition, entries: [ParamEntry], instance: String, node: String, run: Int, workDir: String,
                toolDir: String, inputs: [String: String], outputs: [String: String], params: [String: String],
                typedParams: [ParamEntry]) {
        self.tool = tool
        self.entries = entries
        self.instance = instance
        self.node = node
        self.run = run
        self.workDir = workDir
        self.toolDir = toolDir
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.typedParams = typedParams
    }

    /// A tool's entry that makes no job, in words that name the tool.
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// The environment a command run for this run sees (as a local one's).
    public var environment: [String: String] {
        ["FLOWDIR_INSTANCE": instance, "FLOWDIR_NODE": node, "FLOWDIR_RUN": String(run), "FLOWDIR_RUN_DIR": workDir]
    }
}

/// What a backend made of a run.
public struct BackendJob: Sendable {
    /// Read only by the backend's own executor.
    public var payload: any Sendable
    /// What ran, for `run.yaml`'s `command:`.
    public var command: [String]

    public init(payload: any Sendable, command: [String]) {
        self.payload = payload
        self.command = command
    }
}

/// What a backend's executor is set up from.
public struct BackendSetup {
    public var config: FlowdirConfig
    /// The job API endpoints to use (the watcher leaves out webhooks it cannot receive).
    public var endpoints: [String: EndpointConfig]
    public var logger: Logger
    /// Time for the backend's polls, backoff and timeouts (a manual one in tests).
    public var clock: FlowdirClock
    /// The tokens and webhook secrets, read when a backend needs them.
    public var secrets: () throws -> Secrets

    public init(config: FlowdirConfig, endpoints: [String: EndpointConfig]? = nil, logger: Logger, clock: FlowdirClock = .system,
                secrets: @escaping () throws -> Secrets) {
        self.config = config
        self.endpoints = endpoints ?? config.endpoints
        self.logger = logger
        self.clock = clock
        self.secrets = secrets
    }

    /// The backend's own section of the config, as written.
    public func settings(_ key: String) -> [ParamEntry] { config.backendSettings[key] ?? [] }
}
