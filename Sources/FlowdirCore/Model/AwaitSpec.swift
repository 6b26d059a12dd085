/// What a person is asked to do for an interactive node.
public enum AwaitType: String, Sendable, CaseIterable, Codable {
    case drawMask = "draw_mask"
    case selectAsset = "select_asset"
    case confirmParams = "confirm_params"
    case choice
}

public enum Urgency: String, Sendable, CaseIterable, Codable, Comparable {
    case blocking
    case normal
    case low

    /// Most urgent first.
    public var rank: Int {
        switch self {
        case .blocking: 0
        case .normal: 1
        case .low: 2
        }
    }

    public static func < (l: Urgency, r: Urgency) -> Bool { l.rank < r.rank }
}

public enum TimeoutPolicy: String, Sendable, CaseIterable, Codable {
    case cancel
    case autoDefault
    case skip
}

/// The `await:` block of a node.
public struct AwaitSpec: Sendable, Equatable {
    public var type: AwaitType
    public var blocking: Bool
    public var urgency: Urgency
    public var expiresIn: FlowDuration?
    public var notificationTitle: String?
    public var notificationBody: String?
    public var onTimeout: TimeoutPolicy
    /// Whether a person may skip it; by default only when a timeout would skip.
    public var allowSkip: Bool
    /// The options of a `choice`.
    public var choices: [String]
    /// What `autoDefault` picks for a `choice`.
    public var defaultChoice: String?
    /// A hint for an editor (the seed's `ui: mask-sheet`); flowdir keeps it.
    public var ui: String?
    public var location: SourceLocation?

    public init(type: AwaitType, blocking: Bool = true, urgency: Urgency = .normal,
                expiresIn: FlowDuration? = nil, notificationTitle: String? = nil,
                notificationBody: String? = nil, onTimeout: TimeoutPolicy = .cancel,
                allowSkip: Bool? = nil, choices: [String] = [], defaultChoice: String? = nil,
                ui: String? = nil, location: SourceLocation? = nil) {
        self.type = type
        self.blocking = blocking
        self.urgency = urgency
        self.expiresIn = expiresIn
        self.notificationTitle = notificationTitle
        self.notificationBody = notificationBody
        self.onTimeout = onTimeout
        self.allowSkip = allowSkip ?? (onTimeout == .skip)
        self.choices = choices
        self.defaultChoice = defaultChoice
        self.ui = ui
        self.location = location
    }
}
