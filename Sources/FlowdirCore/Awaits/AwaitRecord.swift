/// A file a person is asked to drop into `inbox/` for one output port.
public struct ExpectedFile: Hashable, Sendable {
    public var port: String
    public var type: PortType
    /// The name to save it under: `mask1.mask.png`. Any extension of the
    /// port's type is taken (`load1.image.jpg` for an ImageRef).
    public var file: String

    public init(port: String, type: PortType, file: String) {
        self.port = port
        self.type = type
        self.file = file
    }
}

/// A file that helps to answer: an input of the node, by port name.
public struct ContextFile: Hashable, Sendable {
    public var name: String
    /// Relative to the instance: `nodes/load1/out/image.png`.
    public var path: String

    public init(name: String, path: String) {
        self.name = name
        self.path = path
    }
}

/// Someone holding an await for a while, so two people don't answer it.
public struct AwaitClaim: Hashable, Sendable {
    public var by: String
    public var until: Timestamp

    public init(by: String, until: Timestamp) {
        self.by = by
        self.until = until
    }
}

/// How an await left the inbox (recorded in its `inbox/done/` copy).
public enum AwaitOutcome: String, Sendable, CaseIterable {
    case answered
    case skipped
    case expired
    case rejected
    /// The node stopped waiting for another reason (cancelled, rerun upstream).
    case withdrawn
}

/// `inbox/<node>.await.yaml` (docs/instance-folder.md): a question for a person, and,
/// once a person has written into it, their answer.
public struct AwaitRecord: Hashable, Sendable {
    public var id: String
    public var node: String
    public var type: AwaitType
    public var title: String
    public var detail: String?
    public var urgency: Urgency
    public var createdAt: Timestamp
    public var expiresAt: Timestamp?
    public var onTimeout: TimeoutPolicy
    public var skippable: Bool
    public var expects: [ExpectedFile]
    /// Files that help to answer: an input's name → its path in the instance.
    public var context: [ContextFile]
    /// A `choice`: its options and the one `autoDefault` takes.
    public var choices: [String]
    public var defaultChoice: String?
    /// A `confirm_params`: the params to confirm (a person may edit them).
    public var params: [ParamEntry]
    public var snoozeUntil: Timestamp?
    public var snoozeCount: Int
    public var claim: AwaitClaim?
    public var link: String

    // What a person wrote into the file.
    /// `answer:` (any type) or `choice:` (a choice).
    public var answer: ParamValue?
    /// `approve: true|false` (confirm_params).
    public var approve: Bool?

    // Filled in when it moves to inbox/done/.
    public var outcome: AwaitOutcome?
    public var doneAt: Timestamp?
    public var doneBy: String?
    public var note: String?

    public init(id: String, node: String, type: AwaitType, title: String, detail: String? = nil, urgency: Urgency = .normal,
                createdAt: Timestamp, expiresAt: Timestamp? = nil, onTimeout: TimeoutPolicy = .cancel, skippable: Bool = false,
                expects: [ExpectedFile] = [], context: [ContextFile] = [], choices: [String] = [],
                defaultChoice: String? = nil, params: [ParamEntry] = [], link: String) {
        self.id = id
        self.node = node
        self.type = type
        self.title = title
        self.detail = detail
        self.urgency = urgency
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.onTimeout = onTimeout
        self.skippable = skippable
        self.expects = expects
        self.context = context
        self.choices = choices
        self.defaultChoice = defaultChoice
        self.params = params
        self.snoozeCount = 0
        self.link = link
    }

    /// A choice or a confirmation is answered in the file; the others by files.
    public var answeredInFile: Bool { type == .choice || type == .confirmParams }
}
