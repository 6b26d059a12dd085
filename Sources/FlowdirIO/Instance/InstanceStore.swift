#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FlowdirCore

/// An instance directory as a git repository: every state change is one
/// commit, built from the parent's tree so its cost does not grow with the
/// instance or its history. Holds the instance's lock for as
/// long as it is open.
public final class InstanceStore {
    public enum Change: Sendable, Equatable {
        case write(String, [UInt8])
        case delete(String)
        /// A file already in place in the working tree (a run's log):
        /// committed as it is, not written again; if it is not there, its
        /// absence is committed.
        case existing(String)
        /// A file already put in place with these bytes (an output moved
        /// in, an answer copied): committed as exactly these bytes, even if
        /// the file has changed again by the time the commit is made.
        /// `blob`: their blob id, when the caller has it already (not hashed
        /// again); `stamp`: the file's stat once put in place, for the index
        /// (else looked up when the index is written; see `FileStamp`).
        case placed(String, [UInt8], blob: ObjectID? = nil, stamp: FileStamp? = nil)
        /// Out of the tree, but the file is left where it is (a person's
        /// answer: removed only once the commit that took it is made).
        case untrack(String)
        /// Like `write`, with the bytes made only when the commit is written,
        /// and only if no later change in it is for the same path (a node's
        /// state goes ready → running → succeeded within one group commit).
        case encode(String, Encoding)

        public var path: String {
            switch self {
            case .write(let p, _), .delete(let p), .existing(let p), .placed(let p, _, _, _), .untrack(let p), .encode(let p, _): p
            }
        }

        public static func write(_ path: String, _ text: String) -> Change { .write(path, Array(text.utf8)) }

        /// The bytes of an `encode` change, made on demand (equal only to itself).
        public final class Encoding: Sendable, Equatable {
            let make: @Sendable () -> [UInt8]
            public init(_ make: @escaping @Sendable () -> [UInt8]) { self.make = make }
            public static func == (a: Encoding, b: Encoding) -> Bool { a === b }
        }

        public static func encode(_ path: String, _ make: @escaping @Sendable () -> String) -> Change {
            .encode(path, Encoding { Array(make().utf8) })
        }

        public static func encode(_ path: String, bytes make: @escaping @Sendable () -> [UInt8]) -> Change {
            .encode(path, Encoding(make))
        }
    }

    public let path: String
    public let clock: FlowdirClock
    private var lock: InstanceLock
    let journal: Journal
    /// The repository and HEAD as the store sees them. Reached from outside
    /// through `repository` and `head`, which first wait for commits still
    /// being written in the background (see `commitInBackground`).
    let repo: GitRepository
    var current: CommitInfo?
    /// Index entries of committed paths not yet written to `.git/index`:
    /// empty but between a commit and its index write, or after that write failed.
    var pendingIndex: [String: TreeChange] = [:]
    /// The stat of pending paths as flowdir wrote them (see `FileStamp`).
    var pendingStamps: [String: FileStamp] = [:]
    /// Commits handed off by `commitInBackground`, written in order on one
    /// thread; every other use of the store first waits for them.
    private let committer = BackgroundLane()
    private let queued = Locked(0)
    private let failure = Locked<(any Error)?>(nil)
    var indexWrittenInBackground = false
    /// git's index lock, held from a commit to its index write (see `IndexLock`).
    let indexLock: IndexLock
    /// How long a commit waits for a git command that holds the index lock;
    /// after that the commit fails, its changes kept (see `unsaved`).
    public var gitLockTimeout = 3.0
    /// Commits that failed (a full disk, a lock a git command held, a
    /// folder made read-only), in order, with what each was to change: made
    /// before any later commit, and by `retryFailedWrites`. Until then their
    /// paths stay in the journal, so that if flowdir stops first the next
    /// open puts the files back as HEAD has them: files and HEAD agree
    /// either way, never drift apart for good.
    private var unsaved: [(changes: [Change], message: CommitMessage, author: GitSignature?)] = []
    /// HEAD's `.gitattributes` as last read or written (see `lfsAttributes`).
    var lfsCache: LFSCache?
    /// Whether git's `lfs` filter was set up by this store (see `configureLargeFileFilter`).
    var filterConfigured = false

    private init(path: String, repository: GitRepository, lock: InstanceLock, clock: FlowdirClock) throws {
        self.path = path
        self.repo = repository
        self.lock = lock
        self.clock = clock
        self.indexLock = IndexLock(gitDirectory: repository.gitDirectory, clock: clock)
        self.journal = try Journal(path: path + "/" + InstancePaths.local + "/journal")
        self.current = try repository.head()
    }

    deinit {
        // A failed index write leaves git's index lock held and the journal
        // as it is: the next open removes the lock and brings the index in step.
        try? flushIndex()
        committer.close()  // its threads hold it: it would never go by itself
    }

    /// The instance's repository, once no commit is being written in the background.
    public var repository: GitRepository {
        settleBackground()
        return repo
    }

    /// HEAD, once no commit is being written in the background.
    public var head: CommitInfo? {
        settleBackground()
        return current
    }

    /// Whether HEAD is no longer the commit this store last saw or made:
    /// someone else committed (a person's `git pull` or `git commit`).
    public var headMovedByOthers: Bool {
        settleBackground()
        return repo.headID() != current?.id
    }

    /// A new repository at `path` (created if needed), locked for writing.
    public static func create(at path: String, clock: FlowdirClock = .system) throws -> InstanceStore {
        try Files.makeDirectories(path)
        let repo = try GitRepository.create(at: path)
        // .flowdir/ holds the lock, work dirs and caches: never committed.
        try Files.writeAtomically(repo.gitDirectory + "/info/exclude", excludes.joined(separator: "\n") + "\n")
        let lock = try InstanceLock(instance: path, purpose: "create", clock: clock)
        return try InstanceStore(path: repo.workdir, repository: repo, lock: lock, clock: clock)
    }

    /// Opens an instance for writing: takes its lock (waiting up to
    /// `lockTimeout`), then repairs what a crash mid-commit left.
    public static func open(_ path: String, purpose: String, clock: FlowdirClock = .system,
                            lockTimeout: Double = 2) throws -> InstanceStore {
        let lock = try InstanceLock(instance: path, purpose: purpose, timeout: lockTimeout, clock: clock)
        let repo = try GitRepository.open(path)
        // A flowdir that died holding git's index lock left it behind.
        IndexLock.removeStale(gitDirectory: repo.gitDirectory)
        let store = try InstanceStore(path: repo.workdir, repository: repo, lock: lock, clock: clock)
        // Every instance has its first commit from `create`: a HEAD without
        // one while other branches have commits names the wrong branch, and
        // a commit there would start a new history without the instance's files.
        if store.current == nil, let unborn = repo.unbornHead(), !unborn.branches.isEmpty {
            throw InstanceError.headMissing(path: repo.workdir, branch: unborn.branch, branches: unborn.branches)
        }
        try store.recoverIfNeeded()
        // A clone (`git clone`, `flowdir sync`) has git's own exclude file:
        // without this, .flowdir/ shows as untracked, and `git add -A` would commit it.
        store.ensureExcludes()
        // A clone marks large files but has no filter of its own yet.
        if let marked = try? store.lfsAttributes().paths, !marked.isEmpty { store.configureLargeFileFilter() }
        return store
    }

    /// Writes pending index entries and releases the lock. A commit that
    /// failed is tried once more; if it fails again its files are put back
    /// as HEAD has them when the instance is next opened.
    public func close() throws {
        defer {
            committer.close()
            lock.release()
        }
        if hasFailedWrites { try? retryFailedWrites() }
        try flushIndex()
    }

    /// Takes the lock again after `close()`, for a holder that kept its
    /// view of the instance in memory (the watcher's idle instances).
    /// Returns `false`, lock held, when that view may be stale: HEAD moved
    /// meanwhile, or another flowdir died leaving work in the journal. Then
    /// the caller closes and opens the instance afresh.
    public func reopen(purpose: String, lockTimeout: Double = 0) throws -> Bool {
        settleBackground()
        lock = try InstanceLock(instance: path, purpose: purpose, timeout: lockTimeout, clock: clock)
        repo.forgetWrittenObjects()
        person = nil  // git's config may have changed meanwhile
        return repo.headID() == current?.id && journal.isEmptyOnDisk
    }

    /// Brings `.git/index` in step with every commit made so far, so `git
    /// status` is clean. Call when a batch of work is done.
    public func flushIndex() throws {
        settleBackground()
        guard !pendingIndex.isEmpty || indexWrittenInBackground else {
            indexLock.release()
            return
        }
        do {
            try writeIndex()
            indexWriteFailed = false
        } catch {
            // Kept (its entries stay pending, git's index lock held): written again by `retryFailedWrites`.
            indexWriteFailed = true
            throw CommitFailure(instance: path, cause: error, what: "write git's index")
        }
        indexWrittenInBackground = false
        // A failed commit's paths stay: recovery puts them back if it never succeeds.
        if unsaved.isEmpty { try journal.clear() }
    }

    func writeIndex(keepingLock: Bool = false) throws {
        guard !pendingIndex.isEmpty else {
            if !keepingLock { indexLock.release() }
            return
        }
        try updateIndex(Array(pendingIndex.values), stamps: pendingStamps, timeout: 0)
        pendingIndex = [:]
        pendingStamps = [:]
        if !keepingLock { indexLock.release() }
    }

    /// Every index write goes through here: under flowdir's own marked
    /// lock, never libgit2's. A flowdir killed mid-write leaves a lock the
    /// next open knows as its own and removes (libgit2's looks like git's,
    /// and held up every later commit). A lock already held (from a commit
    /// to its index write) stays held.
    func updateIndex(_ changes: [TreeChange], stamps: [String: FileStamp], timeout: Double) throws {
        let took = !indexLock.isHeld
        if took { try indexLock.take(timeout: timeout) }
        defer { if took { indexLock.release() } }
        try repo.updateIndex(changes, stamps: stamps)
    }

    // MARK: Committing

    /// Paths about to change before their commit is made (an output moved
    /// into `out/`, a run's log being written): should flowdir die first,
    /// the next open puts them back as HEAD has them (see `recoverIfNeeded`).
    public func intend(_ relativePaths: [String]) throws {
        try journal.record(relativePaths)
    }

    /// Writes the changes to the working tree and records them as one
    /// commit. Returns `nil` when nothing changed (same bytes are no change).
    @discardableResult
    public func commit(_ changes: [Change], message: CommitMessage, author: GitSignature? = nil) throws -> ObjectID? {
        settleBackground()
        return try write(changes, message: message, author: author, inBackground: false)
    }

    /// Like `commit`, but written on the store's own thread while the caller
    /// goes on (`flowdir run`'s job bookkeeping: the engine need not wait
    /// for each commit before starting the next job). Commits are made in
    /// the order handed in; `done` is called on that thread once each is
    /// made. After one fails, none is made any more and this throws its error.
    public func commitInBackground(_ changes: [Change], message: CommitMessage,
                                   done: @escaping @Sendable (ObjectID?) -> Void = { _ in }) throws {
        // The journal is left as it is: it may already name what the
        // caller is about to move in for a later commit.
        try inBackground { store in
            let start = store.clock.instant
            let id = try store.write(changes, message: message, author: nil, inBackground: true)
            let seconds = (store.clock.instant - start).seconds
            store.writeCost.locked { $0.seconds += seconds; $0.changes += changes.count }
            done(id)
        }
    }

    /// What a change has cost to commit on the store's thread so far, in
    /// seconds (0 before the first): how long a group handed off now takes.
    /// Over all of them, so that large groups count for what they hold, and
    /// only once there are enough (a first small commit is mostly set-up).
    public var secondsPerChange: Double { writeCost.locked { $0.changes < 64 ? 0 : $0.seconds / Double($0.changes) } }
    private let writeCost = Locked((seconds: 0.0, changes: 0))

    /// `flushIndex` on the store's thread, once the commits handed off
    /// before it are made. The journal is cleared by the next `flushIndex`:
    /// by then it may name paths of later commits.
    public func flushIndexInBackground() throws {
        try inBackground { store in
            try store.writeIndex()
            store.indexWrittenInBackground = true
        }
    }

    private func inBackground(_ work: @escaping (InstanceStore) throws -> Void) throws {
        let job = BackgroundJob(store: self, work: work)
        queued.locked { $0 += 1 }
        committer.submit { job.run() }
    }

    /// One piece of work for the store's thread.
    private struct BackgroundJob {
        let store: InstanceStore
        let work: (InstanceStore) throws -> Void

        func run() {
            defer { store.queued.locked { $0 -= 1 } }
            // After a failure, later commits are still handed in: each first
            // makes the failed ones (see `unsaved`), or is kept behind them.
            do {
                try work(store)
                if store.unsaved.isEmpty { store.failure.locked { $0 = nil } }
            } catch {
                store.failure.locked { $0 = error }
            }
        }
    }

    /// Whether work handed off (commits, an index write) is still being done.
    public var isCommittingInBackground: Bool { queued.locked { $0 } > 0 }

    /// The error of a commit that failed in the background and was not made since.
    public var backgroundFailure: (any Error)? { failure.locked { $0 } }

    /// Waits until every commit handed off is made; throws if one failed and is still not made.
    public func waitForBackgroundCommits() throws {
        settleBackground()
        if let error = backgroundFailure { throw error }
    }

    func settleBackground() {
        if isCommittingInBackground { committer.wait() }
    }

    /// `inBackground`: written on the store's thread (`commitInBackground`).
    /// Such a commit leaves the journal (it may name later commits' paths),
    /// and merges small packs, which a commit the caller waits for leaves
    /// to them, up to a point (the last commit of `flowdir run` is waited
    /// for, and a merge there was a third of what the run did after its last job).
    private func write(_ changes: [Change], message: CommitMessage, author: GitSignature?, inBackground: Bool) throws -> ObjectID? {
        guard !changes.isEmpty else { return nil }
        do {
            try makeUnsaved(inBackground: inBackground)
            return try writeOne(changes, message: message, author: author, inBackground: inBackground)
        } catch {
            unsaved.append((changes, message, author))
            throw CommitFailure(instance: path, cause: error)
        }
    }

    private func writeOne(_ changes: [Change], message: CommitMessage, author: GitSignature?, inBackground: Bool) throws -> ObjectID? {
        if inBackground { try yieldToPersonsGit() }
        // One pack for the commit's objects, not a file each.
        return try repo.batchingObjects(defersPackMerges: !inBackground) {
            try writeBatched(changes, message: message, author: author, clearsJournal: !inBackground && unsaved.isEmpty)
        }
    }

    /// The failed commits, in order, each as it was to be.
    func makeUnsaved(inBackground: Bool) throws {
        while let first = unsaved.first {
            _ = try writeOne(first.changes, message: first.message, author: first.author, inBackground: inBackground)
            unsaved.removeFirst()
        }
    }

    /// Whether a commit, or the index write after commits, failed and is
    /// not made yet (see `retryFailedWrites`).
    public var hasFailedWrites: Bool {
        settleBackground()
        return !unsaved.isEmpty || indexWriteFailed
    }
    var indexWriteFailed = false

    /// Makes the commits that failed, in order, then the index write;
    /// throws `CommitFailure` if one fails again.
    public func retryFailedWrites() throws {
        settleBackground()
        do {
            try makeUnsaved(inBackground: false)
            failure.locked { $0 = nil }
        } catch {
            throw CommitFailure(instance: path, cause: error)
        }
        if indexWriteFailed { try flushIndex() }
    }

    func writeBatched(_ changes: [Change], message: CommitMessage, author: GitSignature?, clearsJournal: Bool,
                              merging other: ObjectID? = nil, adopting: ObjectID? = nil) throws -> ObjectID? {
        // git's index lock first: no git command may build on the index
        // while it is behind the commits made here (see `IndexLock`).
        try indexLock.take(timeout: gitLockTimeout)
        // Someone else committed meanwhile (`git pull`, `git commit` by hand):
        // build on their commit, never over it.
        if let moved = repo.headID(), moved != current?.id { current = try repo.head() }
        // One change per path, the last: an earlier version would only be a dangling blob.
        var last: [String: Int] = [:]
        for (i, c) in changes.enumerated() { last[c.path] = i }
        // Large files' pointers come with the `.gitattributes` lines that mark them.
        let (changes, marked) = try withLargeFileAttributes(changes.enumerated().filter { last[$0.element.path] == $0.offset }.map(\.element))
        // Untracked paths are not in the journal: recovery would delete the
        // file. A file committed as it is (a person's edit) is recorded for
        // its index entry only: recovery must not put it back as HEAD has it.
        try journal.record(changes.compactMap {
            switch $0 {
            case .untrack: nil
            case .existing(let rel): Journal.indexOnly + rel
            default: $0.path
            }
        })
        var treeChanges: [TreeChange] = []
        treeChanges.reserveCapacity(changes.count)
        var stamps: [String: FileStamp] = [:]
        for change in changes {
            let full = path + "/" + change.path
            switch change {
            case .write(let rel, let bytes):
                // A pointer (a rollback, a merge): its content in the working tree when here.
                stamps[rel] = try materialize(rel, bytes)
                treeChanges.append(.blob(path: rel, id: try repo.writeBlob(bytes)))
            case .encode(let rel, let encoding):
                let bytes = encoding.make()
                stamps[rel] = try Files.writeAtomically(full, bytes)
                treeChanges.append(.blob(path: rel, id: try repo.writeBlob(bytes)))
            case .delete(let rel):
                try Files.remove(full)
                // inbox/ stays even when empty: people drop answers into it.
                Files.removeEmptyParents(of: full, upTo: rel.hasPrefix(InstancePaths.inbox + "/") ? path + "/" + InstancePaths.inbox : path)
                treeChanges.append(.remove(path: rel))
            case .existing(let rel) where marked?.contains(rel) ?? false:
                // A large file a person replaced: its content to the store, its pointer to git.
                if let pointer = try ingestExisting(rel) {
                    treeChanges.append(.blob(path: rel, id: pointer))
                } else {
                    treeChanges.append(.remove(path: rel))
                }
            case .existing(let rel):
                // Gone by now (a person removed a log), or never made: its absence is committed.
                // Never through a link: what is committed is the instance's own file (`.symbolicLink` otherwise).
                guard let bytes = try LocalFileSystem().readFile(inside: path, rel, limit: 1 << 36) else {
                    treeChanges.append(.remove(path: rel))
                    continue
                }
                treeChanges.append(.blob(path: rel, id: try repo.writeBlob(bytes)))
            case .placed(let rel, let bytes, let blob, let stamp):
                stamps[rel] = stamp
                treeChanges.append(.blob(path: rel, id: try repo.writeBlob(bytes, id: blob)))
            case .untrack(let rel):
                treeChanges.append(.remove(path: rel))
            }
        }
        let committer = flowdirSignature()
        var attempts = 0
        var lockWaited = 0.0, lockPause = 0.002
        var indexStaged = false
        while true {
            let tree = try repo.updatedTree(base: current?.tree, changes: treeChanges)
            if let head = current, tree == head.tree, other == nil, adopting == nil {
                if pendingIndex.isEmpty {
                    if clearsJournal { try journal.clear() }
                    indexLock.release()
                }
                return nil
            }
            if !indexStaged {
                try stageIndex(treeChanges, stamps: stamps)
                indexStaged = true
            }
            let id: ObjectID
            let parents = (current.map { [$0.id] } ?? []) + (other.map { [$0] } ?? [])
            do {
                if let adopting {
                    try repo.moveHead(to: adopting, from: current?.id)
                    id = adopting
                } else {
                    id = try repo.createCommit(tree: tree, parents: parents, message: message.text,
                                               author: author ?? committer, committer: committer)
                }
            } catch {
                // The branch's lock held by a git command (a person's commit,
                // `git gc` packing refs): wait for it, as for the index's.
                if error.isLocked, lockWaited < gitLockTimeout {
                    clock.pause(for: .seconds(lockPause))
                    lockWaited += lockPause
                    lockPause = min(lockPause * 2, 0.1)
                    continue
                }
                // HEAD moved between our look and our commit (a `git pull` at
                // that moment): build the same changes on the new HEAD.
                attempts += 1
                guard attempts < 5, let moved = repo.headID(), moved != current?.id else {
                    unstageIndex(treeChanges)
                    throw error
                }
                let now = try repo.head()
                // Unless it is this very commit: libgit2 moved the branch, then
                // failed after (a reflog that git held locked), and a try again
                // found it moved. It is made; its index entries must not be lost.
                if let now, now.tree == tree, now.parents == parents || now.id == adopting {
                    id = now.id
                } else {
                    current = now
                    continue
                }
            }
            current = adopting != nil ? try repo.commit(id)
                : CommitInfo(id: id, tree: tree, parents: parents, message: message.text, author: author ?? committer, committer: committer)
            // What this commit marks, known without reading `.gitattributes`
            // back, when it was built on the HEAD those lines were read from.
            if let marked, let before = lfsCache, before.head == parents.first, other == nil, adopting == nil {
                var text = before.text
                if case .write(_, let bytes)? = changes.last(where: { $0.path == LFSAttributes.path }) {
                    text = String(decoding: bytes, as: UTF8.self)
                }
                lfsCache = LFSCache(head: id, text: text, paths: marked)
            }
            // The index holds this commit already (see `stageIndex`): git's lock goes now.
            if !indexWriteFailed { indexLock.release() }
            // `flushIndex` clears the journal, which may name later commits' paths (see `commitInBackground`).
            indexWrittenInBackground = true
            return id
        }
    }

    /// Makes the working tree and the index match `tree` exactly, as one
    /// new commit (rollback): history is never rewritten.
    @discardableResult
    public func commitTree(_ tree: ObjectID, message: CommitMessage, author: GitSignature? = nil) throws -> ObjectID? {
        settleBackground()
        guard let base = current else { return nil }
        let changed = try repo.changedFiles(from: base.tree, to: tree)
        var changes: [Change] = []
        for file in changed {
            if let new = file.new, !new.isTree {
                changes.append(.write(file.path, try repo.readBlob(new.id)))
            } else if file.old != nil, file.old?.isTree == false {
                changes.append(.delete(file.path))
            }
        }
        return try commit(changes, message: message, author: author)
    }

    /// What git leaves out: flowdir's local state, and refused answers
    /// (kept for their owner, never committed: they may be huge or not files).
    static let excludes = ["# flowdir's local state, and answers it refused", "/\(InstancePaths.local)/", "/\(InstancePaths.inbox)/*.rejected"]

    /// Adds what the exclude file lacks: an older instance's, or a clone's
    /// (git's own). Done on every open for writing.
    func ensureExcludes() {
        let file = repo.gitDirectory + "/info/exclude"
        let text = (try? LocalFileSystem().readFile(file, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let lines = Set(text.split(separator: "\n").map(String.init))
        let missing = Self.excludes.dropFirst().filter { !lines.contains($0) }
        guard !missing.isEmpty else { return }
        _ = try? Files.writeAtomically(file, text + (text.isEmpty || text.hasSuffix("\n") ? "" : "\n") + missing.joined(separator: "\n") + "\n")
    }

    /// Whether HEAD has a file at `relativePath`.
    public func isTracked(_ relativePath: String) -> Bool {
        settleBackground()
        if let moved = repo.headID(), moved != current?.id, let now = try? repo.head() { current = now }
        guard let tree = current?.tree, let e = try? repo.entry(at: relativePath, inTree: tree) else { return false }
        return !e.isTree
    }

    // MARK: Reading

    /// A file of the working tree, or `nil` if it is absent, not a regular
    /// file, or reached through a symbolic link (never followed: see `readChecked`).
    public func read(_ relativePath: String) -> [UInt8]? {
        (try? readChecked(relativePath)) ?? nil
    }

    /// A file of the working tree, or `nil` if it is absent; a symbolic
    /// link on the way is `FileSystemError.symbolicLink`, never followed.
    public func readChecked(_ relativePath: String) throws(FileSystemError) -> [UInt8]? {
        settleBackground()
        return try LocalFileSystem().readFile(inside: path, relativePath, limit: 64 << 20)
    }

    // MARK: Identities

    /// flowdir's own commits: `flowdir <flowdir@HOST>`.
    public func flowdirSignature() -> GitSignature {
        GitSignature(name: "flowdir", email: "flowdir@\(Host.name)", time: Int64(clock.now().seconds))
    }

    /// A person's edits: their git identity when configured, else user@host.
    /// Read from git's config once while the lock is held (each read parses
    /// every config file; an answer asked for it several times).
    public func personSignature() -> GitSignature {
        settleBackground()
        var signature = person ?? .person(in: repo, time: 0)
        person = signature
        signature.time = Int64(clock.now().seconds)
        return signature
    }
    private var person: GitSignature?
}
