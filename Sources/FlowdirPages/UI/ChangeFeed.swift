#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import Logging
import ServiceLifecycle

/// What changed, for the pages: an instance (by id), or the list (nil).
public struct UIChange: Sendable, Equatable {
    public var instance: String?

    public init(instance: String?) { self.instance = instance }
}

/// Tells the open pages what changed, learnt from inotify, never by
/// reading the disk on a timer: a commit moves `.git/refs/heads/<branch>`
/// (or `packed-refs`, `HEAD`) whoever made it (the watcher, a command, a
/// sync); a file dropped into `inbox/` is seen before anyone takes it; a
/// folder made or removed under a root is a new or a gone instance.
public final class ChangeFeed: Service, @unchecked Sendable {
    enum Place { case refs, gitDir, inbox, root }

    struct State {
        /// Watch descriptor → what it watches, and for which instance folder.
        var watches: [Int32: (place: Place, folder: String)] = [:]
        var watchedFolders: Set<String> = []
        var ids: [String: String] = [:]
        var subscribers: [Int: AsyncStream<UIChange>.Continuation] = [:]
        var next = 0
        var finished = false
    }

    let backend: any UIBackend
    let logger: Logger
    let inotify: Inotify
    let state = Locked(State())

    public init(backend: any UIBackend, logger: Logger) throws(WatchError) {
        self.backend = backend
        self.logger = logger
        inotify = try Inotify()
    }

    /// The changes from now on, until the feed stops (or the page goes).
    public func subscribe() -> AsyncStream<UIChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: UIChange.self, bufferingPolicy: .bufferingNewest(64))
        let key: Int? = state.locked { s in
            guard !s.finished else { return nil }
            s.next += 1
            s.subscribers[s.next] = continuation
            return s.next
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [state] _ in state.locked { _ = $0.subscribers.removeValue(forKey: key) } }
        return stream
    }

    public var subscriberCount: Int { state.locked { $0.subscribers.count } }

    func publish(_ changes: Set<UIChange>) {
        let targets = state.locked { Array($0.subscribers.values) }
        for c in targets { for change in changes { c.yield(change) } }
    }

    /// Watches the roots and every instance under them (again after a root changed).
    func rescan() {
        for root in backend.roots() {
            _ = add(root, .root, folder: root)
        }
        let folders = backend.instanceFolders()
        for folder in folders where !state.locked({ $0.watchedFolders.contains(folder) }) {
            let id = backend.id(ofFolder: folder)
            state.locked { s in
                s.watchedFolders.insert(folder)
                if let id { s.ids[folder] = id }
            }
            _ = add(folder + "/.git/refs/heads", .refs, folder: folder)
            _ = add(folder + "/.git", .gitDir, folder: folder)
            _ = add(folder + "/inbox", .inbox, folder: folder)
        }
    }

    @discardableResult
    func add(_ path: String, _ place: Place, folder: String) -> Bool {
        do {
            let wd = try inotify.watch(path)
            state.locked { $0.watches[wd] = (place, folder) }
            return true
        } catch {
            // An instance without inbox/ yet, say: its commits are still seen.
            if case .watchLimit = error { logger.warning("\(error)") }
            return false
        }
    }

    public func run() async throws {
        rescan()
        let events = inotify.events()
        await withGracefulShutdownHandler {
            for await batch in events {
                var changes = Set<UIChange>()
                var rescanNeeded = false
                for e in batch {
                    if e.isOverflow {
                        rescanNeeded = true
                        changes.insert(UIChange(instance: nil))
                        continue
                    }
                    guard let (place, folder) = state.locked({ $0.watches[e.wd] }) else { continue }
                    if e.watchDropped {
                        state.locked { s in
                            s.watches[e.wd] = nil
                            if place == .gitDir { s.watchedFolders.remove(folder) }
                        }
                        continue
                    }
                    switch place {
                    case .root:
                        guard e.isDirectory else { continue }
                        rescanNeeded = true
                        changes.insert(UIChange(instance: nil))
                    case .refs:
                        guard !e.name.hasSuffix(".lock") else { continue }
                        changes.insert(self.change(folder))
                    case .gitDir:
                        // refs/heads made by the first commit; packed-refs by git gc; HEAD by a checkout.
                        if e.name == "refs" || e.name == "heads" { _ = add(folder + "/.git/refs/heads", .refs, folder: folder) }
                        guard e.name == "HEAD" || e.name == "packed-refs" else { continue }
                        changes.insert(self.change(folder))
                    case .inbox:
                        guard !e.name.hasPrefix("."), !e.isDirectory else { continue }
                        changes.insert(self.change(folder))
                    }
                }
                if rescanNeeded { rescan() }
                if !changes.isEmpty { publish(changes) }
            }
        } onGracefulShutdown: { [inotify] in
            inotify.stop()
        }
        finishSubscribers()
    }

    /// Open pages' streams end (and new ones end at once), so that the
    /// server can stop.
    func finishSubscribers() {
        let open = state.locked { s in
            s.finished = true
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for c in open { c.finish() }
    }

    func change(_ folder: String) -> UIChange {
        if let id = state.locked({ $0.ids[folder] }) { return UIChange(instance: id) }
        let id = backend.id(ofFolder: folder)
        if let id { state.locked { $0.ids[folder] = id } }
        return UIChange(instance: id)
    }
}

extension UIChange: Hashable {}
