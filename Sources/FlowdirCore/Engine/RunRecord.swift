/// How a run was started.
public enum RunTrigger: String, Sendable, Codable, CaseIterable {
    case auto
    case retry
    case rerun
    case answer
}

/// One input a run used: which output of which node, from which run, and
/// the blob id of the exact bytes (docs/instance-folder.md, provenance).
public struct InputUse: Hashable, Sendable {
    public var port: String
    public var node: String
    public var sourcePort: String
    public var run: Int
    public var blob: String
    /// The content's SHA-256 when it is kept beside git (docs/storage.md).
    public var sha256: String?

    public init(port: String, node: String, sourcePort: String, run: Int, blob: String, sha256: String? = nil) {
        self.port = port
        self.node = node
        self.sourcePort = sourcePort
        self.run = run
        self.blob = blob
        self.sha256 = sha256
    }
}

public struct OutputRecord: Hashable, Sendable {
    public var port: String
    public var blob: String
    public var size: Int
    public var type: PortType
    /// Relative to the node's folder: `out/image.png`.
    public var file: String
    /// The content's SHA-256 when it is kept beside git, committed as a
    /// Git LFS pointer (docs/storage.md); `blob` is still the content's blob id.
    public var sha256: String?

    public init(port: String, blob: String, size: Int, type: PortType, file: String, sha256: String? = nil) {
        self.port = port
        self.blob = blob
        self.size = size
        self.type = type
        self.file = file
        self.sha256 = sha256
    }

    /// The Git LFS pointer committed for it, when its content is kept beside git.
    public var pointer: LFSPointer? { sha256.flatMap { LFSPointer(oid: $0, size: Int64(size)) } }
}

/// A person's answer that made a run: which await, which files, what value.
public struct AnswerNote: Hashable, Sendable {
    public var awaitID: String
    /// The inbox files taken, as dropped: `inbox/mask1.mask.png`.
    public var files: [String]
    /// A choice, `approved`/`rejected`, or nothing for files.
    public var value: ParamValue?

    public init(awaitID: String, files: [String] = [], value: ParamValue? = nil) {
        self.awaitID = awaitID
        self.files = files
        self.value = value
    }
}

/// `nodes/<id>/runs/<n>/run.yaml`: the provenance of one attempt.
public struct RunRecord: Hashable, Sendable {
    /// Run numbers flowdir reads (state.yaml, run.yaml, `runs/<n>/`): a
    /// number beyond is a file flowdir did not write (a hand edit, a
    /// collaborator's commit), refused by name; the next run's number is
    /// always one more than any of these, never an overflow.
    public static let runNumbers = 0...1_000_000_000

    public var run: Int
    public var node: String
    public var kind: String
    public var trigger: RunTrigger
    public var params: [ParamEntry]
    public var inputs: [InputUse]
    public var outputs: [OutputRecord]
    public var command: [String]
    public var startedAt: Timestamp
    public var finishedAt: Timestamp?
    public var exitCode: Int32?
    public var job: String?
    /// The instance folder, on `host`, in whose work folder a job that
    /// writes where it runs (Slurm) was started: where a machine taking the
    /// instance over finds its outputs.
    public var folder: String?
    public var error: NodeError?
    public var host: String
    public var user: String
    /// Set when a person's answer made this run (trigger `answer`).
    public var answer: AnswerNote?

    public init(run: Int, node: String, kind: String, trigger: RunTrigger, params: [ParamEntry], inputs: [InputUse],
                outputs: [OutputRecord] = [], command: [String] = [], startedAt: Timestamp, finishedAt: Timestamp? = nil,
                exitCode: Int32? = nil, job: String? = nil, error: NodeError? = nil, host: String, user: String) {
        self.run = run
        self.node = node
        self.kind = kind
        self.trigger = trigger
        self.params = params
        self.inputs = inputs
        self.outputs = outputs
        self.command = command
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.exitCode = exitCode
        self.job = job
        self.error = error
        self.host = host
        self.user = user
    }

    public func input(_ port: String) -> InputUse? { inputs.first { $0.port == port } }
}
