/// `~/.config/flowdir/config.yaml` (or `$FLOWDIR_CONFIG`): docs/commands.md.
public struct FlowdirConfig: Sendable, Equatable {
    /// Folders whose instances `ls`, `status` and the watcher cover.
    public var roots: [String]
    /// Extra folders of `<Kind>.yaml` tool files, searched after the user's.
    public var toolPaths: [String]
    /// Commands (argv arrays) run on events, with the event in their environment.
    public var hooks: [FlowEvent.Kind: [[String]]]
    /// A hook still running after this long is stopped.
    public var hookTimeout: Double
    /// Desktop notifications (`notify-send`) when one can be shown.
    public var desktopNotifications: Bool
    /// The largest answer file taken from an inbox.
    public var answerSizeLimit: Int
    /// Job API endpoints by name; tokens are in secrets.yaml.
    public var endpoints: [String: EndpointConfig] = [:]
    /// Each backend's own section, by its key, as written and as it checked
    /// it (`slurm: { pollInterval: 10s }`).
    public var backendSettings: [String: [ParamEntry]] = [:]
    /// `sync: { every: 5m, remote: origin }`: the watcher syncs this often
    /// (nil: only when asked), with this git remote.
    public var syncEvery: Double?
    /// A `sync:` section is there: the watcher syncs (on `every`, and after what it commits has been quiet a while).
    public var syncEnabled = false
    public var syncRemote = "origin"
    /// How long the lease of a shared instance lasts, renewed while it has jobs here (`sync: { lease: 10m }`).
    public var leaseDuration: Double = 600
    /// Machine-wide caps on jobs at once, over every instance's own (`concurrency: { local: 2, remote: 8 }`).
    public var localConcurrency: Int?
    public var remoteConcurrency: Int?
    /// Where the watcher listens for webhooks when an endpoint's `webhook:`
    /// host is not this machine's (a port forward): `webhookListen: 0.0.0.0`.
    /// Without it, only the address the webhook URL names is bound.
    public var webhookListen: String?
    /// Outputs and answers at least this large are kept beside git, as Git
    /// LFS pointers and content (`storage: { bigFile: 512KB }`, docs/storage.md).
    public var bigFile: Int = 512 << 10
    /// What the thumbnails `flowdir serve` keeps may take on disk, least
    /// recently used dropped first (`storage: { thumbnails: 200MB }`, docs/storage.md).
    public var thumbnails: Int = 200 << 20

    public init(roots: [String] = [], toolPaths: [String] = [], hooks: [FlowEvent.Kind: [[String]]] = [:],
                hookTimeout: Double = 30, desktopNotifications: Bool = true,
                answerSizeLimit: Int = AnswerCheck.defaultSizeLimit) {
        self.roots = roots
        self.toolPaths = toolPaths
        self.hooks = hooks
        self.hookTimeout = hookTimeout
        self.desktopNotifications = desktopNotifications
        self.answerSizeLimit = answerSizeLimit
    }
}
