/// Why a node cannot run yet, in the words docs/engine.md lists.
public enum BlockReason: Hashable, Sendable {
    case waitingFor(port: String, node: String)
    case upstreamFailed(node: String)
    case upstreamSkipped(node: String)
    case inputChanged(node: String)
    case paramsChanged
    case paramsConflict
    case toolNotInstalled(kind: String)
    /// A job API endpoint cannot be reached (the node's job waits to be sent).
    case offline(endpoint: String, since: Timestamp)
    /// An input's content is kept beside git and is not on this machine, and
    /// could not be fetched: `detail` says from where and why (`origin
    /// unreachable`). Fetched again by the engine until it comes.
    case inputNotHere(detail: String)
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
        case .offline(let endpoint, let since): "Offline: '\(endpoint)' unreachable since \(since.iso8601)"
        case .inputNotHere(let detail): "Input not on this machine: \(detail)"
        case .other(let text): text
        }
    }

    /// Reads the words back; unknown wording is kept as `.other`. Only the
    /// exact words `text` writes are read as a case (so reading back what
    /// was written gives the same words); names never hold a `'`. Read by
    /// bytes: every blocked node's state.yaml is read when an instance is
    /// opened, and splitting Strings on `'` cost 4 µs a node.
    public init(text: String) {
        let bytes = Array(text.utf8)
        if let inner = Self.inner(bytes, "Waiting for '", "'") {
            // A port name holds no `'`: the separator starts at the first
            // one. (`firstRange(of:)` built a searcher for each state read,
            // a fifth of reading an instance's node files.)
            let separator = "' from '".utf8
            if let at = inner.firstIndex(of: UInt8(ascii: "'")), inner[at...].starts(with: separator),
               let port = Self.name(inner[..<at]), let node = Self.name(inner[(at + separator.count)...]) {
                self = .waitingFor(port: port, node: node)
                return
            }
        } else if let node = Self.inner(bytes, "Upstream failed: '", "'").flatMap(Self.name) {
            self = .upstreamFailed(node: node)
            return
        } else if let node = Self.inner(bytes, "Upstream skipped: '", "'").flatMap(Self.name) {
            self = .upstreamSkipped(node: node)
            return
        } else if let node = Self.inner(bytes, "Input from '", "' has changed").flatMap(Self.name) {
            self = .inputChanged(node: node)
            return
        } else if let inner = Self.inner(bytes, "Offline: '", ""),
                  let quote = inner.firstIndex(of: UInt8(ascii: "'")), inner[quote...].starts(with: "' unreachable since ".utf8),
                  let endpoint = Self.name(inner[..<quote]),
                  let since = Timestamp(iso8601: String(decoding: inner[(quote + "' unreachable since ".utf8.count)...], as: UTF8.self)) {
            self = .offline(endpoint: endpoint, since: since)
            return
        } else if let detail = Self.inner(bytes, "Input not on this machine: ", ""), !detail.isEmpty {
            self = .inputNotHere(detail: String(decoding: detail, as: UTF8.self))
            return
        } else if let kind = Self.inner(bytes, "Tool not installed: ", ""), !kind.isEmpty {
            self = .toolNotInstalled(kind: String(decoding: kind, as: UTF8.self))
            return
        }
        switch text {
        case "Params changed": self = .paramsChanged
        case "Params conflict": self = .paramsConflict
        default: self = .other(text)
        }
    }

    /// The bytes between `prefix` and `suffix`, when `bytes` has both.
    private static func inner(_ bytes: [UInt8], _ prefix: StaticString, _ suffix: StaticString) -> ArraySlice<UInt8>? {
        let head = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        let tail = UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount)
        guard bytes.count >= head.count + tail.count, bytes.starts(with: head),
              bytes[(bytes.count - tail.count)...].elementsEqual(tail) else { return nil }
        return bytes[head.count..<(bytes.count - tail.count)]
    }

    /// A quoted name: not empty, no `'` in it.
    private static func name(_ bytes: ArraySlice<UInt8>) -> String? {
        bytes.isEmpty || bytes.contains(UInt8(ascii: "'")) ? nil : String(decoding: bytes, as: UTF8.self)
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

/// The state of one node (docs/engine.md, "Node states"); cases carry their data.
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

    /// Ended without its outputs: a person may supply them instead (docs/instance-folder.md, "inbox/").
    public var isFailedOrCancelled: Bool {
        switch self {
        case .failed, .cancelled: true
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
    /// A remote job's id, once the backend gave one.
    public var job: String?
    /// A remote run's submission key, recorded before it is sent (docs/engine.md):
    /// what finds the job should flowdir stop before `job` is recorded.
    public var submission: String?
    /// What a card says of a job that is otherwise fine: `Reconnecting…`.
    public var note: String?

    public init(state: NodeState, run: Int = 0, progress: Double? = nil, updatedAt: Timestamp, job: String? = nil,
                submission: String? = nil, note: String? = nil) {
        self.state = state
        self.run = run
        self.progress = progress
        self.updatedAt = updatedAt
        self.job = job
        self.submission = submission
        self.note = note
    }
}

/// A run's failure can travel as a thrown error inside the engine.
extension NodeError: Error {}
