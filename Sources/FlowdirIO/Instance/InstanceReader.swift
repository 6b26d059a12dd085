import Dispatch
import FlowdirCore
import FlowdirTemplates

/// An instance as read from its folder: who it is, its validated workflow,
/// each node's state and params, and its last commit.
public struct InstanceSnapshot: Sendable {
    public var path: String
    public var record: InstanceRecord
    public var workflow: LoadedTemplate
    public var states: [String: NodeStateRecord]
    public var params: [String: [ParamEntry]]
    /// The last commit, if git history is readable.
    public var updatedAt: Timestamp?
    public var pendingAwaits: [String]
    /// The files a migration would write, when the instance is older than this flowdir.
    public var migration: (from: Int, changes: [(String, String)])?
    /// The blob id of each node's params.yaml and state.yaml as read, by
    /// its path in the instance (nil: there was none): people's edits are
    /// found by these (`OpenInstance.commitPersonEdits`, `putBack`) without
    /// reading the files again.
    public var fileBlobs: [String: ObjectID?] = [:]
    /// Each node's last run (`runs/<n>/run.yaml`, n its state's run), when
    /// read with `InstanceReader.readsLastRuns` and readable.
    public var lastRuns: [String: RunRecord] = [:]

    public var graph: WorkflowGraph? { workflow.graph }

    public var summary: InstanceSummary {
        InstanceSummary(states: (graph?.order ?? Array(states.keys.sorted())).compactMap { states[$0]?.state })
    }

    public func state(of node: String) -> NodeStateRecord? { states[node] }
}

/// Reads instances. Nothing of an instance is written (see `InstanceOpener`
/// for the writing side, which also commits migrations); only its local
/// workflow cache may be (`TemplateCache`).
public struct InstanceReader: Sendable {
    public var fileSystem: any FileSystem
    /// The user's tool folders, searched after the instance's and the template's.
    public var userToolDirectories: [String]
    /// Also reads each node's last run.yaml (`InstanceSnapshot.lastRuns`),
    /// with the node files, on every core: the engine needs them all (what
    /// each run used), and reading them one by one after was half of
    /// opening a finished 1,000-node instance.
    public var readsLastRuns = false

    public init(fileSystem: any FileSystem = LocalFileSystem(), userToolDirectories: [String] = []) {
        self.fileSystem = fileSystem
        self.userToolDirectories = userToolDirectories
    }

    public func isInstance(_ path: String) -> Bool {
        fileSystem.isRegularFile(Path.join(path, InstancePaths.instanceFile)) && fileSystem.isDirectory(Path.join(path, ".git"))
    }

    /// The instance `path` is in (`path` itself, or a folder above it:
    /// `inbox/`, `nodes/x` of one), as written or made absolute; `nil` if none.
    public func enclosingInstance(of path: String) -> String? {
        if isInstance(path) { return path }
        guard var dir = Files.realPath(path) else { return nil }
        while dir != "/" && !dir.isEmpty {
            dir = Path.directory(of: dir)
            if isInstance(dir) { return dir }
        }
        return nil
    }

    /// `whileLoading`: the caller's own work, done once, before this
    /// returns, by whichever of the two start-up threads is free first: the
    /// one loading the workflow, or this one once the node files are read.
    /// (Parsed, a 1,000-node workflow took longer than the node files; from
    /// its cache it takes less.)
    public func read(_ path: String, whileLoading: @escaping () -> Void = {}) throws(InstanceError) -> InstanceSnapshot {
        guard isInstance(path) else { throw .notAnInstance(path) }
        // Folders whose files flowdir reads, writes or commits: never a link.
        if let link = fileSystem.firstLink(inside: path, among: Self.folders) { throw .symbolicLink(link) }
        let instanceFile = Path.join(path, InstancePaths.instanceFile)
        var instanceDoc = try document(path, InstancePaths.instanceFile)
        // Every file of the instance read by the loader too (workflow.yaml, tools/) is read without following a link.
        let loader = TemplateLoader(fileSystem: ConfinedFileSystem(fileSystem, root: path), userToolDirectories: userToolDirectories)
        let workflowFile = Path.join(path, InstancePaths.workflowFile)
        // The workflow is loaded on another core while the node files are
        // read (it needs only instance.yaml, when that is of this schema).
        var early: (record: InstanceRecord, workflow: Background<LoadedTemplate>)?
        let aside = FirstFree(whileLoading)
        if InstanceMigration.version(of: instanceDoc) == InstanceRecord.currentSchemaVersion,
           let record = try? InstanceCodec.decodeInstance(instanceDoc, file: instanceFile) {
            let dirs = toolDirectories(path, record)
            early = (record, Background {
                let loaded = TemplateCache.load(instance: path, workflowFile: workflowFile, toolDirectories: dirs, loader: loader)
                aside.run()
                return loaded
            })
        }
        // Nothing started here goes on after this returns, or throws.
        defer { _ = early?.workflow.value() }
        let nodeIDs = (try? fileSystem.listDirectory(Path.join(path, InstancePaths.nodes))) ?? []
        // Of this schema, the states are decoded where they are read, on every core.
        let current = InstanceMigration.version(of: instanceDoc) == InstanceRecord.currentSchemaVersion
        let documents = try nodeDocuments(path, nodeIDs, decodingStates: current)
        var stateDocs = documents.states
        var migration: (from: Int, changes: [(String, String)])?
        switch InstanceMigration.migrate(.init(instance: instanceDoc, states: stateDocs)) {
        case .current:
            break
        case .tooNew(let v):
            throw .newerSchema(path: path, found: v)
        case .migrated(let from, let docs):
            instanceDoc = docs.instance
            stateDocs = docs.states
            var changes = [(InstancePaths.instanceFile, YAMLWriter.document(docs.instance, comments: ["A flowdir instance. `title` may be edited; flowdir manages the rest."]))]
            for (id, doc) in docs.states.sorted(by: { $0.key < $1.key }) {
                changes.append((InstancePaths.state(id), YAMLWriter.document(doc, comments: ["Written by flowdir. Change a node with flowdir commands or inbox/ files, not here."])))
            }
            migration = (from, changes)
        }
        let record: InstanceRecord
        do { record = try InstanceCodec.decodeInstance(instanceDoc, file: instanceFile) } catch { throw .malformed(error) }
        var states: [String: NodeStateRecord] = [:]
        if migration == nil, let decoded = documents.decoded {
            states = decoded
        } else {
            for (id, doc) in stateDocs {
                do { states[id] = try InstanceCodec.decodeState(doc, file: Path.join(path, InstancePaths.state(id))) } catch { throw .malformed(error) }
            }
        }
        let params = documents.params
        // What else is to read is read while the workflow may still load.
        let awaits = ((try? fileSystem.listDirectory(Path.join(path, InstancePaths.inbox))) ?? []).filter { $0.hasSuffix(".await.yaml") }
        let updatedAt = lastCommitTime(path)
        aside.run()
        let workflow = early?.record == record ? early!.workflow.value()
            : TemplateCache.load(instance: path, workflowFile: workflowFile, toolDirectories: toolDirectories(path, record), loader: loader)
        return InstanceSnapshot(path: path, record: record, workflow: workflow, states: states, params: params,
                                updatedAt: updatedAt, pendingAwaits: awaits, migration: migration,
                                fileBlobs: documents.fileBlobs, lastRuns: migration == nil ? documents.lastRuns : [:])
    }

    /// Only instance.yaml (cheap), for questions that need no more; `nil`
    /// when it is not of the current schema (the full read migrates or refuses it).
    public func read(instanceRecordOnly path: String) throws(InstanceError) -> InstanceRecord? {
        let file = Path.join(path, InstancePaths.instanceFile)
        let doc = try document(path, InstancePaths.instanceFile)
        guard InstanceMigration.version(of: doc) == InstanceRecord.currentSchemaVersion else { return nil }
        do { return try InstanceCodec.decodeInstance(doc, file: file) } catch { throw .malformed(error) }
    }

    /// The instance's own tools/, then the template's (docs/templates-and-tools.md, "Tools").
    public func toolDirectories(_ path: String, _ record: InstanceRecord) -> [String] {
        var dirs = [Path.join(path, InstancePaths.tools)]
        if !record.template.isEmpty { dirs.append(Path.join(Path.directory(of: record.template), "tools")) }
        return dirs
    }

    /// Every node's state and params documents. A 1,000-node instance has
    /// 2,000 small files to read and parse: the machine's cores share them.
    /// Errors are reported as a sequential read would: states first, in order.
    private func nodeDocuments(_ path: String, _ ids: [String], decodingStates: Bool) throws(InstanceError)
        -> (states: [String: [ParamEntry]], params: [String: [ParamEntry]], fileBlobs: [String: ObjectID?],
            decoded: [String: NodeStateRecord]?, lastRuns: [String: RunRecord])
    {
        typealias Read = Result<(doc: [ParamEntry], blob: ObjectID?)?, InstanceError>
        // Opened once for all: each file then one openat2 (no link on the way), as one open was.
        let folder = fileSystem.folder(path)
        let read = { @Sendable (rel: String, hashed: Bool) -> Read in
            let file = Path.join(path, rel)
            let bytes: [UInt8]
            do throws(FileSystemError) {
                guard let b = try folder.read(rel, limit: DocumentReader.maxSize) else { return .success(nil) }
                bytes = b
            } catch .symbolicLink(let link) {
                return .failure(.symbolicLink(link))
            } catch {
                return .failure(.malformed(.error(.unreadableFile, "\(error)", file: file)))
            }
            switch InstanceCodec.document(bytes, file: file) {
            case .success(let doc): return .success((doc, hashed ? GitRepository.blobID(of: bytes) : nil))
            case .failure(let d): return .failure(.malformed(d))
            }
        }
        typealias Decoded = Result<NodeStateRecord, InstanceError>?
        let readsLastRuns = readsLastRuns
        var results = [(state: Read, params: Read, decoded: Decoded, lastRun: RunRecord?)](
            repeating: (.success(nil), .success(nil), nil, nil), count: ids.count)
        results.withUnsafeMutableBufferPointer { buffer in
            let out = Unchecked(buffer)  // each slot is written by one worker only
            DispatchQueue.concurrentPerform(iterations: ids.count) { i in
                let file = Path.join(path, InstancePaths.state(ids[i]))
                let state = read(InstancePaths.state(ids[i]), true)
                var decoded: Decoded = nil
                if decodingStates, case .success(let doc?) = state {
                    do throws(Diagnostic) {
                        decoded = .success(try InstanceCodec.decodeState(doc.doc, file: file))
                    } catch {
                        decoded = .failure(.malformed(error))
                    }
                }
                // What a run did is kept as it was: one that cannot be read is left out (the engine reads it again).
                var lastRun: RunRecord?
                if readsLastRuns, case .success(let record)? = decoded, record.run > 0 {
                    let rel = InstancePaths.run(ids[i], record.run) + "/run.yaml"
                    let file = Path.join(path, rel)
                    if let bytes = try? folder.read(rel, limit: DocumentReader.maxSize),
                       case .success(let run) = RunRecordCodec.decode(bytes, file: file), run.run == record.run {
                        lastRun = run
                    }
                }
                var params = read(InstancePaths.params(ids[i]), true)
                // Where its outputs and runs are written and committed from: never a link either.
                // (The node's folder itself was checked by the reads of its files.)
                if case .success = params, let link = [InstancePaths.outputs(ids[i]), InstancePaths.runs(ids[i])].first(where: folder.isLink) {
                    params = .failure(.symbolicLink(Path.join(path, link)))
                }
                out.value[i] = (state, params, decoded, lastRun)
            }
        }
        // Taken from the results in place, and into tables sized once: copying
        // each node's whole result out, and rehashing, was a millisecond here,
        // on the way to the first job.
        var states: [String: [ParamEntry]] = [:], params: [String: [ParamEntry]] = [:], blobs: [String: ObjectID?] = [:]
        states.reserveCapacity(ids.count)
        params.reserveCapacity(ids.count)
        blobs.reserveCapacity(2 * ids.count)
        var decoded: [String: NodeStateRecord]? = decodingStates ? Dictionary(minimumCapacity: ids.count) : nil
        var lastRuns: [String: RunRecord] = [:]
        lastRuns.reserveCapacity(readsLastRuns ? ids.count : 0)
        for i in ids.indices {
            let state = try results[i].state.get()
            if let state { states[ids[i]] = state.doc }
            blobs[InstancePaths.state(ids[i])] = .some(state?.blob)
            if let d = results[i].decoded { decoded?[ids[i]] = try d.get() }
            if let run = results[i].lastRun { lastRuns[ids[i]] = run }
        }
        for i in ids.indices {
            let read = try results[i].params.get()
            if let read { params[ids[i]] = read.doc }
            blobs[InstancePaths.params(ids[i])] = .some(read?.blob)
        }
        return (states, params, blobs, decoded, lastRuns)
    }

    /// The folders of an instance whose files flowdir reads or commits (the
    /// node folders and their runs are covered as their files are read).
    static let folders = [InstancePaths.nodes, InstancePaths.inbox, InstancePaths.inboxDone, InstancePaths.tools]

    private func document(_ path: String, _ rel: String) throws(InstanceError) -> [ParamEntry] {
        let file = Path.join(path, rel)
        let bytes: [UInt8]
        do throws(FileSystemError) {
            guard let b = try fileSystem.readFile(inside: path, rel, limit: DocumentReader.maxSize) else {
                throw FileSystemError.notFound(file)
            }
            bytes = b
        } catch .symbolicLink(let link) {
            throw .symbolicLink(link)
        } catch {
            throw .malformed(.error(.unreadableFile, "\(error)", file: file))
        }
        switch InstanceCodec.document(bytes, file: file) {
        case .success(let doc): return doc
        case .failure(let d): throw .malformed(d)
        }
    }

    private func lastCommitTime(_ path: String) -> Timestamp? {
        guard let repo = try? GitRepository.open(path), let head = try? repo.head() else { return nil }
        return Timestamp(seconds: Double(head.committer.time))
    }

    /// Every instance under `root` (itself included), not looking inside
    /// instances or hidden folders; `depth` bounds the search.
    public func instances(under root: String, depth: Int = 4) -> [String] {
        if isInstance(root) { return [root] }
        guard depth > 0, let names = try? fileSystem.listDirectory(root) else { return [] }
        var found: [String] = []
        for name in names where !name.hasPrefix(".") {
            // The kernel's own folders hold links to every process's folders.
            if root == "/", Self.virtualRoots.contains(name) { continue }
            let child = Path.join(root, name)
            guard fileSystem.isDirectory(child) else { continue }
            // A link is followed only to an instance: walking linked folders
            // finds the same instances twice, or loops.
            if Files.isSymbolicLink(child) {
                if isInstance(child) { found.append(child) }
                continue
            }
            found += instances(under: child, depth: depth - 1)
        }
        return found
    }

    static let virtualRoots: Set<String> = ["proc", "sys", "dev", "run"]
}

/// Work done once, by the first thread to ask (the caller's work, handed
/// to whichever thread that is: it is run once, never on two at a time).
private final class FirstFree: Sendable {
    private let work: Locked<Unchecked<() -> Void>?>
    init(_ work: @escaping () -> Void) { self.work = Locked(Unchecked(work)) }
    func run() { work.locked { w in defer { w = nil }; return w }?.value() }
}
