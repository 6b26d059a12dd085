/// What sets one backend apart from another, as data the engine reads
/// (ARCHITECTURE.md, "Adding a backend"): never a branch on its name.
public struct BackendTraits: Sendable, Equatable {
    /// The queue its nodes take when neither tool nor node names one
    /// (`resources:`).
    public var queue: ResourceClass
    /// It runs in the run's work folder, on a file system the cluster
    /// shares with this machine (Slurm): the instance folder is recorded
    /// (`run.yaml: folder`), so a machine that takes the instance over
    /// follows the job there, and the job's log is written there by it.
    public var runsInSharedFolder: Bool
    /// Its outputs are in the work folder when it ends (`.succeeded` with
    /// nothing to download); otherwise it says `.outputsReady` and its
    /// executor fetches them.
    public var writesOutputsInPlace: Bool
    /// Its backend can call this machine when a job ends (webhooks); polling
    /// stays the fallback.
    public var takesWebhooks: Bool

    public init(queue: ResourceClass = .remote, runsInSharedFolder: Bool = false, writesOutputsInPlace: Bool = false,
                takesWebhooks: Bool = false) {
        self.queue = queue
        self.runsInSharedFolder = runsInSharedFolder
        self.writesOutputsInPlace = writesOutputsInPlace
        self.takesWebhooks = takesWebhooks
    }
}
