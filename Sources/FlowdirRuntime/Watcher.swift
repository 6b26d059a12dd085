import FlowdirCore
import FlowdirIO

/// What a batch of events asks of the engine.
public struct WatchNews: Sendable {
    /// Instances to look at.
    public var touched: Set<String> = []
    /// Instances where a file a person edits changed (params, the workflow, the title).
    public var edited: Set<String> = []
    /// Inbox files known complete (closed after writing, or moved in), by instance.
    public var completed: [String: Set<String>] = [:]
    /// The event queue overflowed: everything is looked at again.
    public var rescan = false
    /// Instances where a person's git command is at work (see `WatchRules.isGitCommandAtWork`).
    public var gitActive: Set<String> = []

    public init(touched: Set<String> = [], edited: Set<String> = []) {
        self.touched = touched
        self.edited = edited
    }

    mutating func merge(_ o: WatchNews) {
        touched.formUnion(o.touched)
        edited.formUnion(o.edited)
        for (k, v) in o.completed { completed[k, default: []].formUnion(v) }
        rescan = rescan || o.rescan
        gitActive.formUnion(o.gitActive)
    }

    /// What this holds for one instance, taken out of it.
    mutating func take(_ path: String) -> WatchNews {
        var one = WatchNews()
        if touched.remove(path) != nil { one.touched = [path] }
        if edited.remove(path) != nil { one.edited = [path] }
        if let names = completed.removeValue(forKey: path) { one.completed = [path: names] }
        return one
    }
}

/// The watch table (docs/commands.md, "The watcher"): every folder under the roots that may
/// hold an instance, and in each instance the folders whose files give
/// work. It turns inotify events into "look at these instances".
/// Used from one task only.
public final class Watcher: @unchecked Sendable {
    enum Place: Equatable {
        /// A root, or a folder under one that is not an instance (yet).
        case container(String, depth: Int)
        case folder(instance: String, WatchRules.Folder, path: String)
    }

    public let roots: [String]
    let inotify: Inotify
    let reader: InstanceReader
    var table: [Int32: Place] = [:]
    public private(set) var instances: Set<String> = []
    /// Instances a person's git command was last seen at work in, and until when it counts as at work.
    var gitAtWork: [String: Moment] = [:]
    /// How deep under a root instances are looked for (as `flowdir ls` does).
    static let depth = 4

    /// Where the instances it watches are remembered (see `InstanceRegistry`), if anywhere.
    let registry: InstanceRegistry?

    /// Times how long a person's git command counts as at work.
    let clock: FlowdirClock

    public init(roots: [String], reader: InstanceReader = InstanceReader(), registry: InstanceRegistry? = nil,
                clock: FlowdirClock = .system) throws(WatchError) {
        self.clock = clock
        self.roots = roots
        self.reader = reader
        self.registry = registry
        self.inotify = try Inotify()
    }

    private func remember(_ paths: some Sequence<String>) {
        guard let registry else { return }
        registry.remember(paths.compactMap { path -> (id: String, path: String)? in
            guard let record = (try? reader.read(instanceRecordOnly: path)) ?? nil else { return nil }
            return (record.id, path)
        })
    }

    public func events() -> AsyncStream<[InotifyEvent]> { inotify.events() }
    public func stop() { inotify.stop() }

    /// Watches everything under the roots; returns every instance found.
    @discardableResult
    public func scan() throws(WatchError) -> Set<String> {
        for root in roots { try walk(root, depth: Self.depth) }
        remember(instances)
        return instances
    }

    func walk(_ dir: String, depth: Int) throws(WatchError) {
        if reader.isInstance(dir) {
            try addInstance(dir)
            return
        }
        let wd = try inotify.watch(dir)
        table[wd] = .container(dir, depth: depth)
        guard depth > 0 else { return }
        for name in ((try? LocalFileSystem().listDirectory(dir)) ?? []).sorted() where !name.hasPrefix(".") {
            let child = Path.join(dir, name)
            if LocalFileSystem().isDirectory(child) { try walk(child, depth: depth - 1) }
        }
    }

    func addInstance(_ path: String) throws(WatchError) {
        instances.insert(path)
        let nodes = (try? LocalFileSystem().listDirectory(Path.join(path, InstancePaths.nodes))) ?? []
        for (rel, folder) in WatchRules.folders(nodes: nodes.filter { !$0.hasPrefix(".") }) {
            let dir = rel.isEmpty ? path : Path.join(path, rel)
            guard LocalFileSystem().isDirectory(dir) else { continue }
            let wd = try inotify.watch(dir)
            table[wd] = .folder(instance: path, folder, path: dir)
        }
    }

    /// What a batch of events asks for: the instances to look at, and
    /// whether everything must be looked at again (the queue overflowed).
    public func interpret(_ batch: [InotifyEvent]) throws(WatchError) -> WatchNews {
        var news = WatchNews()
        for e in batch {
            if e.isOverflow {
                news.rescan = true
                continue
            }
            guard let place = table[e.wd] else { continue }
            if e.watchGone {
                if e.watchDropped { table[e.wd] = nil }
                if case .folder(let instance, .instance, _) = place { instances.remove(instance) }
                continue
            }
            let arrived = e.arrived, removed = e.removed
            switch place {
            case .container(let dir, let depth):
                guard !e.name.hasPrefix(".") || e.name == ".git" else { continue }
                // A folder moved or created here may be (or become) an instance;
                // a clone or a sync makes instance.yaml and .git inside it later.
                if reader.isInstance(dir) {
                    if !instances.contains(dir) {
                        try addInstance(dir)
                        remember([dir])
                        news.touched.insert(dir)
                        news.edited.insert(dir)
                    }
                    continue
                }
                if e.isDirectory, arrived, e.name != ".git" {
                    let child = Path.join(dir, e.name)
                    try walk(child, depth: max(0, depth - 1))
                    let found = instances.filter { $0 == child || $0.hasPrefix(child + "/") }
                    news.touched.formUnion(found)
                    news.edited.formUnion(found)
                }
            case .folder(let instance, .git, _):
                // Once git is seen at work, its every write there (the index
                // above all) says it still is: flowdir writes nothing in a held one.
                let now = clock.instant
                guard WatchRules.isGitCommandAtWork(e.name) || gitAtWork[instance].map({ $0 > now }) == true else {
                    gitAtWork[instance] = nil
                    continue
                }
                gitAtWork[instance] = now + GitHolds.quiet
                news.touched.insert(instance)
                news.gitActive.insert(instance)
            case .folder(let instance, let folder, let dir):
                if e.isDirectory, arrived, let sub = WatchRules.subfolder(e.name, of: folder) {
                    let wd = try inotify.watch(Path.join(dir, e.name))
                    table[wd] = .folder(instance: instance, sub, path: Path.join(dir, e.name))
                    news.touched.insert(instance)  // what it holds already may matter (requests, a node's params)
                    news.edited.insert(instance)
                    continue
                }
                guard !e.isDirectory || folder == .inbox else { continue }
                // A file counts when it is complete (closed after writing, or
                // moved in), not when it is created empty. One created in
                // inbox/ is looked at all the same: a hard link (`ln`) is
                // never closed or moved in, and is taken once it is quiet.
                let complete = e.completed
                guard complete || removed || e.isDirectory || (folder == .inbox && arrived) else { continue }
                guard WatchRules.matters(e.name, in: folder, removed: removed && !arrived) else { continue }
                if !removed, isOwnWrite(instance, dir: dir, name: e.name, folder: folder) { continue }
                news.touched.insert(instance)
                if folder != .inbox && folder != .requests { news.edited.insert(instance) }
                if folder == .inbox, complete { news.completed[instance, default: []].insert(e.name) }
            }
        }
        if news.rescan {
            try scan()
            news.touched.formUnion(instances)
            news.edited.formUnion(instances)
        }
        return news
    }

    /// A tracked file whose bytes are what HEAD has: flowdir's own write
    /// (or a no-op save), which gives no work.
    func isOwnWrite(_ instance: String, dir: String, name: String, folder: WatchRules.Folder) -> Bool {
        switch folder {
        case .instance, .node, .inbox: break
        default: return false
        }
        guard name.hasSuffix(".yaml") else { return false }
        let full = Path.join(dir, name)
        let rel = String(full.dropFirst(instance.count + 1))
        guard let repo = try? GitRepository.open(instance), let head = try? repo.head(),
              let committed = try? repo.blob(at: rel, inTree: head.tree),
              let current = try? LocalFileSystem().readFile(full, limit: 16 << 20) else { return false }
        return committed == current
    }
}
