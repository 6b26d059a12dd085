/// Why a node cannot run yet, in the words of DESIGN.md §5.
public enum BlockReason: Hashable, Sendable {
    case waitingFor(port: String, node: String)
    case upstreamFailed(node: String)
    case upstreamSkipped(node: String)
    case inputChanged(node: String)
    case paramsChanged
    case paramsConflict
    case toolNotInstalled(kind: String)
    case offline
    /// Anything else, already in words (read back from a file).
    case other(String)

    public var text: String {
        switch self {
        case .waitingFor(let port, let node): "Waiting for '\(port)' from '\(node)'"
        case .upstreamFailed(let node): "Upstream failed: '\(node)'"
        case .upstreamSkipped(let node): "Upstream skipped: '\(node)'"
        case .inputChanged(let node): "Input from '\(node)' has changed"
        case .paramsChanged: "Params changed"
        case .paramsConflict: "Params conflict"
        case .toolNotInstalled(let kind): "Tool not installed: \(kind)"
        case .offline: "offline"
        case .other(let text): text
        }
    }

    /// Reads the words back; unknown wording is kept as `.other`.
    public init(text: String) {
        func quoted(_ s: Substring) -> [String] {
            s.split(separator: "'", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        let s = Substring(text)
        if s.hasPrefix("Waiting for '"), case let q = quoted(s), q.count == 2 { self = .waitingFor(port: q[0], node: q[1]) }
        else if s.hasPrefix("Upstream failed: '"), let n = quoted(s).first { self = .upstreamFailed(node: n) }
        else if s.hasPrefix("Upstream skipped: '"), let n = quoted(s).first { self = .upstreamSkipped(node: n) }
        else if s.hasPrefix("Input from '"), s.hasSuffix("' has changed"), let n = quoted(s).first { self = .inputChanged(node: n) }
        else if text == "Params changed" { self = .paramsChanged }
        else if text == "Params conflict" { self = .paramsConflict }
        else if s.hasPrefix("Tool not installed: ") { self = .toolNotInstalled(kind: String(s.dropFirst(20))) }
        else if text == "offline" { self = .offline }
        else { self = .other(text) }
    }
}

/// What went wrong in a run: a summary, a code a machine can match, and what to do.
public struct NodeError: Hashable, Sendable {
    public var summary: String
    public var code: String
    public var hint: String?

    public init(summary: String, code: String, hint: String? = nil) {
        self.summary = summary
        self.code = code
        self.hint = hint
    }
}

/// The state of one node (DESIGN.md §5); cases carry their data.
public enum NodeState: Hashable, Sendable {
    case blocked(BlockReason)
    case ready
    case awaitingUser
    case runningLocal
    case queuedRemote
    case runningRemote
    case downloading
    case succeeded
    case failed(NodeError)
    case cancelled(reason: String?)
    case skipped

    public var name: String {
        switch self {
        case .blocked: "blocked"
        case .ready: "ready"
        case .awaitingUser: "awaitingUser"
        case .runningLocal: "runningLocal"
        case .queuedRemote: "queuedRemote"
        case .runningRemote: "runningRemote"
        case .downloading: "downloading"
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .skipped: "skipped"
        }
    }

    public static let names = ["blocked", "ready", "awaitingUser", "runningLocal", "queuedRemote", "runningRemote",
                               "downloading", "succeeded", "failed", "cancelled", "skipped"]

    /// The words of `reason:` in state.yaml, when the state has one.
    public var reason: String? {
        switch self {
        case .blocked(let r): r.text
        case .failed(let e): e.summary
        case .cancelled(let r): r
        default: nil
        }
    }

    public var isTerminal: Bool {
        switch self {
        case .succeeded, .failed, .cancelled, .skipped: true
        default: false
        }
    }

    /// Work is under way (a process or a remote job exists).
    public var isActive: Bool {
        switch self {
        case .runningLocal, .queuedRemote, .runningRemote, .downloading: true
        default: false
        }
    }
}

/// `nodes/<id>/state.yaml`: written by flowdir, read by people.
public struct NodeStateRecord: Hashable, Sendable {
    public var state: NodeState
    /// The current or last run number; 0 before the first run.
    public var run: Int
    public var progress: Double?
    public var updatedAt: Timestamp
    /// A remote job's id.
    public var job: String?

    public init(state: NodeState, run: Int = 0, progress: Double? = nil, updatedAt: Timestamp, job: String? = nil) {
        self.state = state
        self.run = run
        self.progress = progress
        self.updatedAt = updatedAt
        self.job = job
    }
}

/// A run's failure can travel as a thrown error inside the engine.
extension NodeError: Error {}
