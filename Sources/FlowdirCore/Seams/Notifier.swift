/// Something people may want to hear about (docs/commands.md, "Config": hooks).
public struct FlowEvent: Hashable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        /// A new question in an inbox.
        case await
        /// A node failed.
        case failed
        /// Every node of an instance finished well.
        case done
    }

    public var kind: Kind
    /// The instance folder.
    public var instance: String
    public var instanceTitle: String
    public var node: String?
    /// The await file (absolute), for `await`.
    public var awaitFile: String?
    public var link: String?
    /// The page of `flowdir serve` that shows it, when one serves the instance.
    public var url: String?
    /// One line for a notification: the question, the failure, "finished".
    public var title: String
    public var body: String?

    public init(kind: Kind, instance: String, instanceTitle: String, node: String? = nil, awaitFile: String? = nil,
                link: String? = nil, title: String, body: String? = nil) {
        self.kind = kind
        self.instance = instance
        self.instanceTitle = instanceTitle
        self.node = node
        self.awaitFile = awaitFile
        self.link = link
        self.title = title
        self.body = body
    }

    /// The environment a hook gets.
    public var environment: [String: String] {
        var env = ["FLOWDIR_EVENT": kind.rawValue, "FLOWDIR_INSTANCE": instance]
        env["FLOWDIR_NODE"] = node ?? ""
        env["FLOWDIR_AWAIT_FILE"] = awaitFile ?? ""
        env["FLOWDIR_LINK"] = link ?? ""
        env["FLOWDIR_URL"] = url ?? ""
        return env
    }
}

/// Tells people about events: desktop notifications and hook commands.
/// It must return at once; whatever it runs must never hold up the engine.
public protocol Notifier: Sendable {
    func notify(_ event: FlowEvent)
}

/// Tells no one.
public struct SilentNotifier: Notifier {
    public init() {}
    public func notify(_ event: FlowEvent) {}
}
