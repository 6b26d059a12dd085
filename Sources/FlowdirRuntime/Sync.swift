import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// How git talks to other machines: the user's own `git`, so their ssh
/// config, keys and credential helpers apply (docs/commands.md, "Sync
/// between machines"). A test may give another.
public protocol GitTransport: Sendable {
    /// `environment`: more variables for git (`GIT_SSH_COMMAND` over a shared connection).
    func git(_ args: [String], in directory: String, environment: [String: String]) async -> (status: Int32, output: String)
}

extension GitTransport {
    public func git(_ args: [String], in directory: String) async -> (status: Int32, output: String) {
        await git(args, in: directory, environment: [:])
    }
}

public struct GitCommandTransport: GitTransport {
    public init() {}
    public func git(_ args: [String], in directory: String, environment: [String: String]) async -> (status: Int32, output: String) {
        // Never a prompt nobody can answer: a missing key fails with git's words.
        // Large files' content is flowdir's to fetch, when needed (docs/storage.md):
        // a checkout by clone or merge leaves their pointers (git-lfs's smudge skipped).
        await CommandOutput.run(["git"] + args, in: directory,
                                environment: environment.merging(["GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1"]) { $1 })
    }
}

/// What one sync of one instance did.
public struct SyncReport: Sendable, Equatable {
    public var instance: String
    /// Commits that came in (fetched and merged or fast-forwarded).
    public var incoming = 0
    /// Commits that went out with the push.
    public var outgoing = 0
    public var merged = false
    /// What the merge resolved, in words.
    public var notes: [String] = []
    /// The lease after the sync; whether this machine took (or renewed) it.
    public var lease: Lease?
    public var leaseTaken = false
    /// Large files' content sent before the push (docs/storage.md): how many, how many bytes.
    public var contentSent = 0
    public var contentBytesSent: Int64 = 0
    public init(instance: String) { self.instance = instance }
}

public struct SyncError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// `flowdir sync`: fetch, merge (by `SyncMerge`'s rules), push, in one step.
public struct Syncer: Sendable {
    public var transport: any GitTransport
    public var remote: String
    public var clock: FlowdirClock
    /// Take (or renew) this machine's lease with the push: a lease is this
    /// machine's only once the push that carries it got through (git refuses
    /// a push that has not merged what another machine pushed first).
    public var takeLease = false
    public var leaseDuration: Double = 600

    public init(transport: any GitTransport = GitCommandTransport(), remote: String = "origin", clock: FlowdirClock = .system,
                takeLease: Bool = false, leaseDuration: Double = 600) {
        self.transport = transport
        self.remote = remote
        self.clock = clock
        self.takeLease = takeLease
        self.leaseDuration = leaseDuration
    }

    public func sync(_ path: String) async throws -> SyncReport {
        let clock = self.clock
        return try await sync(path) { merge in
            // Opened as flowdir opens it: a person's pending edits are committed first, never written over.
            let open = try OpenInstance.open(path, purpose: "sync", clock: clock, lockTimeout: 30)
            defer { try? open.close() }
            return try merge(open)
        }
    }

    /// Fetch, merge, push. `withInstance` runs the merge on the instance
    /// under its lock (the watcher gives its own open instance), in the
    /// caller's isolation.
    public func sync(_ path: String, isolation: isolated (any Actor)? = #isolation,
                     withInstance: (_ merge: (OpenInstance) throws -> Merged) throws -> Merged) async throws -> SyncReport {
        // An option where a remote's name goes (`--upload-pack=…`): never handed to git.
        guard GitArguments.isName(remote) else { throw SyncError(GitArguments.refusal("remote", remote)) }
        // Over ssh, the fetch, the content and the push share one connection:
        // each costs an ssh handshake otherwise (~0.5 s on a slow host).
        let content = try? ContentRemotes.forGitRemote(remote, of: GitRepository.open(path), instance: path)
        let gitEnvironment = await content?.startSharing() ?? [:]
        do {
            let report = try await fetchMergePush(path, content: content, gitEnvironment: gitEnvironment, withInstance: withInstance)
            await content?.endSharing()
            return report
        } catch {
            await content?.endSharing()
            throw error
        }
    }

    func fetchMergePush(_ path: String, content: (any ContentRemote)?, gitEnvironment: [String: String],
                        isolation: isolated (any Actor)? = #isolation,
                        withInstance: (_ merge: (OpenInstance) throws -> Merged) throws -> Merged) async throws -> SyncReport {
        // A push refused because the other side pushed meanwhile: fetch and merge again.
        for attempt in 1...3 {
            // --prune: a branch the remote no longer has (a hub made anew) is not taken as pushed,
            // else the content of what it seemed to hold would never be sent.
            let fetched = await transport.git(["fetch", "--quiet", "--prune", "--", remote], in: path, environment: gitEnvironment)
            guard fetched.status == 0 else {
                throw SyncError("git fetch \(remote) failed in \(path): \(Self.words(fetched.output))\n  hint: check the remote (`\(Shell.command(["git", "-C", path, "remote", "-v"]))`) and that you can reach it")
            }
            let merged = try withInstance { open in
                var m = try merge(open)
                if takeLease { try lease(open, &m) }
                let theirs = try? open.store.repository.resolve(revision: "refs/remotes/\(remote)/\(m.branch)")
                m.outgoingContent = try open.store.repository.pointersAdded(from: m.commit, hiding: theirs)
                return m
            }
            var report = SyncReport(instance: path)
            report.lease = merged.lease
            report.leaseTaken = merged.leaseTaken
            report.incoming = merged.incoming
            report.outgoing = merged.outgoing
            report.merged = merged.merged
            report.notes = merged.notes
            guard merged.outgoing > 0 || merged.pushNeeded else { return report }
            // Content first, as Git LFS's pre-push does: the remote never holds a pointer without it.
            if !merged.outgoingContent.isEmpty {
                (report.contentSent, report.contentBytesSent) = try await sendContent(merged.outgoingContent, path: path, to: content)
            }
            if merged.outgoing >= PushPack.commitThreshold, let repo = try? GitRepository.open(path) {
                let theirs = try? repo.resolve(revision: "refs/remotes/\(remote)/\(merged.branch)")
                _ = await PushPack.write(gitDirectory: repo.gitDirectory, commit: merged.commit, hiding: theirs)
            }
            let pushed = await transport.git(["push", "--quiet", "--", remote, "\(merged.commit.hex):refs/heads/\(merged.branch)"], in: path,
                                             environment: gitEnvironment)
            if pushed.status == 0 { return report }
            let words = Self.words(pushed.output)
            let raced = words.contains("rejected") || words.contains("fetch first") || words.contains("non-fast-forward")
            // Not pushed, so not taken: another machine may hold it by now (the next merge says).
            if merged.leaseTaken { try withInstance { open in try untakeLease(open, merged) } }
            if !raced || attempt == 3 {
                throw SyncError("git push \(remote) failed in \(path): \(words)\n  hint: what came in is merged here; `flowdir sync` again once the remote takes pushes")
            }
        }
        return SyncReport(instance: path)
    }

    /// What a merge did: the branch and the commit to push, and what moved.
    public struct Merged: Sendable {
        public var branch: String
        public var commit: ObjectID
        public var incoming = 0
        public var outgoing = 0
        public var merged = false
        /// The remote lacks the branch: push even with nothing counted.
        public var pushNeeded = false
        public var notes: [String] = []
        /// The lease in HEAD after the merge (and after taking it).
        public var lease: Lease?
        public var leaseTaken = false
        var leaseBefore: Lease?
        /// Pointers the push adds, whose content must be on the remote first.
        public var outgoingContent: [LFSPointer] = []
    }

    /// Pushes HEAD as it is now (a lease renewed while jobs run), content
    /// first, as `sync` pushes: a plain `git push` would leave the remote
    /// pointers to outputs committed since the last sync without their
    /// content, and the next sync would not send it (the remote's branch
    /// already has them).
    public func pushHead(_ path: String) async throws {
        guard GitArguments.isName(remote) else { throw SyncError(GitArguments.refusal("remote", remote)) }
        let repo = try GitRepository.open(path)
        guard let branch = repo.headBranch(), let head = repo.headID() else { throw SyncError("\(path): HEAD is not on a branch\n  hint: `git -C \(path) switch main`") }
        let theirs = try? repo.resolve(revision: "refs/remotes/\(remote)/\(branch)")
        let content = try repo.pointersAdded(from: head, hiding: theirs)
        if !content.isEmpty { _ = try await sendContent(content, path: path) }
        // This commit, not HEAD by name: HEAD may have moved on to pointers whose content was not sent.
        let pushed = await transport.git(["push", "--quiet", "--", remote, "\(head.hex):refs/heads/\(branch)"], in: path)
        guard pushed.status == 0 else { throw SyncError("git push \(remote) failed in \(path): \(Self.words(pushed.output))") }
    }

    /// Sends what the remote lacks of `pointers`' content; refuses (nothing
    /// pushed) when some content is neither here nor there.
    func sendContent(_ pointers: [LFSPointer], path: String, to shared: (any ContentRemote)? = nil) async throws -> (Int, Int64) {
        let repo = try GitRepository.open(path)
        let store = ContentStore(gitDirectory: repo.gitDirectory)
        do {
            let target = try shared ?? ContentRemotes.forGitRemote(remote, of: repo, instance: path)
            // All here (the usual case): the upload sends what the remote lacks, without a question first.
            if pointers.allSatisfy(store.has) {
                let sent = try await target.upload(pointers, from: store)
                return (sent.count, pointers.filter { sent.contains($0.oid) }.reduce(0) { $0 + $1.size })
            }
            let held = try await target.holding(pointers)
            let missing = pointers.filter { !held.contains($0.oid) }
            if let absent = missing.first(where: { !store.has($0) }) {
                throw SyncError("not pushed: the content of a large file (sha256:\(absent.oid.prefix(12))…, \(ByteCount(Int(absent.size)))) is neither here nor on \(remote); "
                                + "a push would leave a pointer without its content\n  hint: sync from the machine that made it first, or `flowdir storage get` it here")
            }
            try await target.upload(missing, from: store)
            return (missing.count, missing.reduce(0) { $0 + $1.size })
        } catch let error as ContentRemoteError {
            throw SyncError("not pushed: the content of large files could not be sent to \(remote): \(error)\n  hint: \(error.hint ?? "check the remote, then `flowdir sync` again")")
        }
    }

    /// `instance.yaml` as HEAD has it now (after a merge, before the working tree is read again).
    static func headRecord(_ open: OpenInstance) throws -> InstanceRecord? {
        let repo = open.store.repository
        guard let head = repo.headID(), let bytes = try repo.blob(at: InstancePaths.instanceFile, inTree: repo.commit(head).tree),
              case .success(let doc) = InstanceCodec.document(bytes, file: InstancePaths.instanceFile) else { return nil }
        return try? InstanceCodec.decodeInstance(doc, file: InstancePaths.instanceFile)
    }

    /// This machine's lease, committed to go out with the push, unless
    /// another machine's is live.
    func lease(_ open: OpenInstance, _ m: inout Merged) throws {
        guard var record = try Self.headRecord(open) else { return }
        let now = clock.now()
        m.lease = record.lease
        if let l = record.lease, l.heldElsewhere(than: Host.name, at: now) { return }
        if let l = record.lease, l.host == Host.name, l.until.seconds - now.seconds > leaseDuration / 2 { return }
        m.leaseBefore = record.lease
        record.lease = Lease(host: Host.name, until: now + leaseDuration)
        guard let id = try open.store.commit([.write(InstancePaths.instanceFile, InstanceCodec.encode(record))],
                                             message: CommitMessage(summary: "Lease of '\(record.title)' taken by \(Host.name)", event: "lease")) else { return }
        try open.store.flushIndex()
        m.commit = id
        m.outgoing += 1
        m.lease = record.lease
        m.leaseTaken = true
    }

    /// The lease as it was, since the push that carried this machine's failed.
    func untakeLease(_ open: OpenInstance, _ m: Merged) throws -> Merged {
        guard var record = try Self.headRecord(open), record.lease?.host == Host.name else { return m }
        record.lease = m.leaseBefore
        _ = try open.store.commit([.write(InstancePaths.instanceFile, InstanceCodec.encode(record))],
                                  message: CommitMessage(summary: "Lease of '\(record.title)' not taken: the push did not go through", event: "lease"))
        try open.store.flushIndex()
        return m
    }

    /// Merges the fetched branch into HEAD under the instance's lock; gives
    /// the branch and the commit to push.
    public func merge(_ open: OpenInstance) throws -> Merged {
        let path = open.path
        let repo = open.store.repository
        guard let branch = repo.headBranch() else { throw SyncError("\(path): HEAD is not on a branch\n  hint: `git -C \(path) switch main`") }
        guard let ours = repo.headID() else { throw SyncError("\(path): no commit yet") }
        var result = Merged(branch: branch, commit: ours)
        guard let theirs = try? repo.resolve(revision: "refs/remotes/\(remote)/\(branch)") else {
            // The remote has no such branch yet (a new bare repository): everything goes out.
            result.outgoing = try count(repo, from: ours, notIn: nil)
            result.pushNeeded = true
            return result
        }
        let base = try repo.mergeBase(ours, theirs)
        if theirs == ours || base == theirs {
            result.outgoing = try count(repo, from: ours, notIn: theirs)
            return result
        }
        result.incoming = try count(repo, from: theirs, notIn: ours)
        if base == ours {
            try open.store.fastForward(to: theirs)
            result.commit = theirs
            return result
        }
        result.outgoing = try count(repo, from: ours, notIn: theirs)
        let baseTree = try base.map { (b) throws(GitError) in try repo.commit(b).tree }
        let hex = { (files: [String: ObjectID]) in files.mapValues(\.hex) }
        let outcome = SyncMerge.merge(base: hex(try repo.files(ofTree: baseTree)), ours: hex(try repo.files(ofTree: repo.commit(ours).tree)),
                                      theirs: hex(try repo.files(ofTree: repo.commit(theirs).tree))) { blob in
            ObjectID(hex: blob).flatMap { try? repo.readBlob($0) }
        }
        var changes: [String: [UInt8]?] = [:]
        for (file, action) in outcome.changes {
            switch action {
            case .blob(let blob): changes[file] = .some(try repo.readBlob(ObjectID(hex: blob)!))
            case .bytes(let bytes): changes[file] = .some(bytes)
            case .delete: changes[file] = .some(nil)
            }
        }
        // A node whose params conflict waits, blocked, for a person.
        let now = clock.now()
        let oursTree = try repo.commit(ours).tree
        for node in outcome.paramsConflicts {
            let file = InstancePaths.state(node)
            let inOurs = try repo.blob(at: file, inTree: oursTree)
            let current: [UInt8]?? = changes[file] ?? .some(inOurs)
            guard let bytes = current.flatMap({ $0 }), case .success(let doc) = InstanceCodec.document(bytes, file: file),
                  var record = try? InstanceCodec.decodeState(doc, file: file) else { continue }
            record.state = .blocked(.paramsConflict)
            record.updatedAt = now
            changes[file] = .some(Array(InstanceCodec.encode(record).utf8))
        }
        let list: [InstanceStore.Change] = changes.sorted { $0.key < $1.key }.map { file, bytes in
            bytes.map { .write(file, $0) } ?? .delete(file)
        }
        let summary = "Sync: merge \(result.incoming) commit\(result.incoming == 1 ? "" : "s") from \(remote)/\(branch)"
        let body = outcome.notes.isEmpty ? nil : outcome.notes.map { "- " + $0 }.joined(separator: "\n")
        let merged = try open.store.commitMerge(list, merging: theirs, message: CommitMessage(summary: summary, event: "sync", body: body))
        try open.store.flushIndex()
        result.merged = true
        result.notes = outcome.notes
        result.commit = merged ?? ours
        return result
    }

    func count(_ repo: GitRepository, from: ObjectID, notIn: ObjectID?) throws -> Int {
        try repo.countCommits(from: from, hiding: notIn)
    }

    static func words(_ output: String) -> String {
        output.split(separator: "\n").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }.joined(separator: "; ")
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
