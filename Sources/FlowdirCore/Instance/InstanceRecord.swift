/// Whether a remote job's status is being polled (docs/engine.md: there is
/// no pause of the work itself, only of the checks).
public enum PollingMode: String, Sendable, CaseIterable, Codable {
    case active
    case paused
}

/// `instance.yaml`: who this instance is.
public struct InstanceRecord: Hashable, Sendable {
    /// The instance format this flowdir writes and reads.
    public static let currentSchemaVersion = 1

    public var id: String
    public var title: String
    /// The template it was made from, as given to `flowdir new`.
    public var template: String
    public var createdAt: Timestamp
    public var schemaVersion: Int
    public var archived: Bool
    public var polling: PollingMode
    /// Which machine runs its jobs, until when (docs/commands.md, "Sync between
    /// machines"); nil: none does.
    public var lease: Lease?

    public init(id: String, title: String, template: String, createdAt: Timestamp,
                schemaVersion: Int = currentSchemaVersion, archived: Bool = false, polling: PollingMode = .active, lease: Lease? = nil) {
        self.id = id
        self.title = title
        self.template = template
        self.createdAt = createdAt
        self.schemaVersion = schemaVersion
        self.archived = archived
        self.polling = polling
        self.lease = lease
    }
}

/// `lease: { host, until }`: the machine that runs an instance's jobs. Another
/// never starts a node while it is live; after `until` anyone may take it.
public struct Lease: Hashable, Sendable {
    public var host: String
    public var until: Timestamp

    public init(host: String, until: Timestamp) {
        self.host = host
        self.until = until
    }

    public func isLive(at now: Timestamp) -> Bool { until.seconds > now.seconds }

    /// Held live by a machine other than `me`: nothing may start here.
    public func heldElsewhere(than me: String, at now: Timestamp) -> Bool { host != me && isLive(at: now) }
}

/// The fixed paths of an instance directory (docs/instance-folder.md).
public enum InstancePaths {
    /// Whether `relative` (a path in an instance, links resolved) is in
    /// git's or flowdir's own folder, never an instance's file to show.
    public static func isPrivate(_ relative: String) -> Bool {
        let first = relative.split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        return first == ".git" || first == local
    }

    public static let instanceFile = "instance.yaml"
    public static let workflowFile = "workflow.yaml"
    public static let tools = "tools"
    public static let nodes = "nodes"
    public static let inbox = "inbox"
    public static let inboxDone = "inbox/done"
    /// Local only, never committed.
    public static let local = ".flowdir"

    /// In a node's folder: its params, and the folder of its outputs.
    public static let paramsFile = "params.yaml"
    public static let stateFile = "state.yaml"
    public static let outputsFolder = "out"

    public static func node(_ id: String) -> String { "nodes/\(id)" }
    public static func params(_ id: String) -> String { "nodes/\(id)/\(paramsFile)" }
    public static func state(_ id: String) -> String { "nodes/\(id)/\(stateFile)" }
    public static func outputs(_ id: String) -> String { "nodes/\(id)/\(outputsFolder)" }
    public static func runs(_ id: String) -> String { "nodes/\(id)/runs" }
    public static func run(_ id: String, _ n: Int) -> String { "nodes/\(id)/runs/\(n)" }
    public static func awaitFile(_ id: String) -> String { "inbox/\(id).await.yaml" }
}
