import FlowdirCore
import FlowdirTemplates

/// An instance opened for writing: its lock held, any old schema migrated
/// and committed, its snapshot at hand.
public final class OpenInstance {
    public let store: InstanceStore
    public let reader: InstanceReader
    /// The instance as read when it was opened (after any migration).
    public let snapshot: InstanceSnapshot
    /// What HEAD held for each node when it was opened (see `HeadFiles`).
    public let headFiles: HeadFiles?
    /// Files of flowdir's a person had changed or removed, put back as HEAD has them when it was opened.
    public private(set) var putBack: [String] = []

    public var path: String { store.path }

    public static func open(_ path: String, purpose: String, reader: InstanceReader = InstanceReader(),
                            clock: FlowdirClock = .system, lockTimeout: Double = 2) throws -> OpenInstance {
        guard reader.isInstance(path) else { throw InstanceError.notAnInstance(path) }
        let store = try InstanceStore.open(path, purpose: purpose, clock: clock, lockTimeout: lockTimeout)
        return try open(store: store, reader: reader)
    }

    /// Finishes opening an instance whose store (and lock) is already held.
    public static func open(store: InstanceStore, reader: InstanceReader = InstanceReader()) throws -> OpenInstance {
        // People's edits are found by the blob ids of the files as just read
        // (not by reading every params.yaml again). After an edit the folder
        // is read again, for the time of the last commit.
        // What HEAD holds for them is looked up while the workflow loads.
        var inHead: HeadFiles?
        var snapshot: InstanceSnapshot
        var putBackFiles: [String] = []
        do {
            snapshot = try reader.read(store.path, whileLoading: { inHead = try? HeadFiles(store) })
        } catch {
            // A state.yaml made unreadable by hand: put back, then read again.
            guard Self.isUnreadableState(error), let head = try HeadFiles(store) else { throw error }
            putBackFiles = try putBack(store, head: head, read: nil)
            guard !putBackFiles.isEmpty else { throw error }
            inHead = head
            snapshot = try reader.read(store.path)
        }
        if let inHead {
            let more = try putBack(store, head: inHead, read: snapshot.fileBlobs)
            if !more.isEmpty { snapshot = try reader.read(store.path) }
            putBackFiles += more
        }
        let edited = try commitPersonEdits(store, read: snapshot.fileBlobs, inHead: inHead)
        if !edited.isEmpty { snapshot = try reader.read(store.path) }
        if let migration = snapshot.migration {
            try store.commit(migration.changes.map { InstanceStore.Change.write($0.0, $0.1) },
                             message: CommitMessage(summary: "Migrate instance from schema \(migration.from) to \(InstanceRecord.currentSchemaVersion)",
                                                    event: "migrate"))
            try store.flushIndex()
            snapshot = try reader.read(store.path)
        }
        let open = OpenInstance(store: store, reader: reader, snapshot: snapshot, headFiles: inHead)
        open.putBack = putBackFiles
        return open
    }

    private init(store: InstanceStore, reader: InstanceReader, snapshot: InstanceSnapshot, headFiles: HeadFiles?) {
        self.store = store
        self.reader = reader
        self.snapshot = snapshot
        self.headFiles = headFiles
    }


    /// The files people are meant to edit (params, the workflow, the title):
    /// changes to them not yet committed are committed first, as the
    /// person's, so no edit is lost or mixed into flowdir's own commits.
    /// `read`: blob ids of files as just read, by path (nil: none there),
    /// taken instead of reading those files again.
    /// `inHead`: HEAD as already walked (used if HEAD has not moved since).
    @discardableResult
    public static func commitPersonEdits(_ store: InstanceStore, read: [String: ObjectID?] = [:],
                                         inHead: HeadFiles? = nil) throws -> [String] {
        guard let files = try HeadFiles.current(store, walked: inHead) else { return [] }
        // The files as they are on disk, each with its blob in HEAD.
        var candidates = [InstancePaths.instanceFile, InstancePaths.workflowFile].map { ($0, files.top[$0]) }
        for id in (try? LocalFileSystem().listDirectory(Path.join(store.path, InstancePaths.nodes))) ?? [] {
            candidates.append((InstancePaths.params(id), files.nodes[id]?.params ?? nil))
        }
        var changes: [InstanceStore.Change] = []
        var edited: [String] = []
        for (rel, committed) in candidates {
            // Compared by blob id: hashing the file costs less than reading the committed blob back.
            if let known = read[rel], known == committed { continue }
            // A link is refused, not committed as a person's edit with its target's bytes.
            let current: [UInt8]?
            do throws(FileSystemError) { current = try store.readChecked(rel) } catch .symbolicLink(let link) { throw InstanceError.symbolicLink(link) } catch { current = nil }
            guard let current else {
                // Gone (`rm -rf nodes/x`): a node or the instance is not removed
                // by deleting its file; put back as HEAD has it.
                if let committed { _ = try Files.writeAtomically(Path.join(store.path, rel), try store.repository.readBlob(committed)) }
                continue
            }
            if GitRepository.blobID(of: current) != committed {
                // As it is on disk: the person's file is never written over,
                // and never put back as HEAD has it if flowdir stops mid-commit.
                changes.append(.existing(rel))
                edited.append(rel)
            }
        }
        guard !changes.isEmpty else { return [] }
        let what = edited.map { $0.hasPrefix("nodes/") ? "params of " + $0.split(separator: "/")[1] : $0 }
        try store.commit(changes, message: CommitMessage(summary: "Edit " + what.joined(separator: ", "), event: "edit"),
                         author: store.personSignature())
        return edited
    }

    /// What one commit (HEAD when opened) holds for what opening asks of
    /// each node: its params.yaml (people's edits are found against it)
    /// and its out/ folder (the engine's facts). Read in one walk of
    /// `nodes/`, each node's tree once, where a lookup by path per file
    /// walked from the root each time (two thousand of them for 1,000 nodes).
    public struct HeadFiles {
        public let head: ObjectID
        /// By node id: its params.yaml and state.yaml blobs and its out/ tree in that commit.
        public let nodes: [String: (params: ObjectID?, state: ObjectID?, outputs: ObjectID?, runs: ObjectID?)]
        /// Its top-level files' blobs (instance.yaml, workflow.yaml).
        let top: [String: ObjectID]

        /// HEAD's, `nil` before the first commit.
        public init?(_ store: InstanceStore) throws {
            guard let commit = store.head else { return nil }
            let repo = store.repository
            head = commit.id
            var top: [String: ObjectID] = [:]
            var nodes: [String: (params: ObjectID?, state: ObjectID?, outputs: ObjectID?, runs: ObjectID?)] = [:]
            for e in try repo.rawEntries(ofTree: commit.tree) {
                if !e.isTree { top[e.name] = e.id; continue }
                guard e.name == InstancePaths.nodes else { continue }
                for node in try repo.rawEntries(ofTree: e.id) where node.isTree {
                    var files: (params: ObjectID?, state: ObjectID?, outputs: ObjectID?, runs: ObjectID?) = (nil, nil, nil, nil)
                    for f in try repo.rawEntries(ofTree: node.id) {
                        if f.name == InstancePaths.paramsFile, !f.isTree { files.params = f.id }
                        if f.name == InstancePaths.stateFile, !f.isTree { files.state = f.id }
                        if f.name == InstancePaths.outputsFolder, f.isTree { files.outputs = f.id }
                        if f.name == "runs", f.isTree { files.runs = f.id }
                    }
                    nodes[node.name] = files
                }
            }
            self.top = top
            self.nodes = nodes
        }

        /// HEAD's: `walked` if HEAD has not moved since it was walked (an
        /// edit committed since moves it), else walked again; nil before the first commit.
        public static func current(_ store: InstanceStore, walked: HeadFiles?) throws -> HeadFiles? {
            if let walked, walked.head == store.head?.id { return walked }
            return try HeadFiles(store)
        }

        /// The files of `node`'s out/ folder in that commit (none when it has no out/).
        public func outputs(of node: String, in repo: GitRepository) throws(GitError) -> [TreeEntry] {
            guard let tree = nodes[node]?.outputs else { return [] }
            return try repo.entries(ofTree: tree)
        }
    }

    private static func isUnreadableState(_ error: any Error) -> Bool {
        // A link (`.symbolicLink`) is not put back: it is refused, with its name.
        guard let error = error as? InstanceError, case .malformed(let d) = error else { return false }
        let file = d.location?.file ?? d.file ?? ""
        return file.hasSuffix("/" + InstancePaths.stateFile)
    }

    /// The files flowdir writes in a node's folder, as a person changed or
    /// removed them by hand, put back as HEAD has them; returns their paths.
    /// A node's state is flowdir's record of what happened (people change
    /// it through commands and inbox files): one typed in would make `show`
    /// claim a step done that never ran, and its consumers wait for outputs
    /// that never came. A deleted output would fail its consumers later.
    /// `read`: the blob ids of the files as just read (nil: read them now).
    public static func putBack(_ store: InstanceStore, head: HeadFiles, read: [String: ObjectID?]?) throws -> [String] {
        let repo = store.repository
        var restored: [String] = []
        func restore(_ rel: String, _ blob: ObjectID) throws {
            _ = try store.materialize(rel, try repo.readBlob(blob))
            restored.append(rel)
        }
        for (id, files) in head.nodes.sorted(by: { $0.key < $1.key }) {
            let state = InstancePaths.state(id)
            if let committed = files.state {
                let current = read?[state] ?? store.read(state).map { GitRepository.blobID(of: $0) }
                if current != committed { try restore(state, committed) }
            }
            if let committed = files.params, (read?[InstancePaths.params(id)] ?? store.read(InstancePaths.params(id)).map { _ in committed }) == nil {
                try restore(InstancePaths.params(id), committed)
            }
            for e in try head.outputs(of: id, in: repo) where !e.isTree {
                let rel = InstancePaths.outputs(id) + "/" + e.name
                if !Files.exists(Path.join(store.path, rel)) { try restore(rel, e.id) }
            }
            // Its history of runs removed (the whole folder, say): back, every record and log.
            if let runs = files.runs, !Files.exists(Path.join(store.path, InstancePaths.runs(id))) {
                for file in try repo.changedFiles(from: nil, to: runs) {
                    if let new = file.new, !new.isTree { try restore(InstancePaths.runs(id) + "/" + file.path, new.id) }
                }
            }
        }
        return restored
    }

    /// Commits through the store. `snapshot` stays as read at open: reading
    /// the whole instance again after each commit cost more than any caller used.
    @discardableResult
    public func commit(_ changes: [InstanceStore.Change], message: CommitMessage, author: GitSignature? = nil) throws -> ObjectID? {
        try store.commit(changes, message: message, author: author)
    }

    public func close() throws { try store.close() }
}

/// Makes a new instance folder from a validated template (`flowdir new`).
/// It is built in a hidden sibling folder and renamed into place, so a
/// failure at any step leaves nothing behind.
public struct InstanceCreator {
    public var clock: FlowdirClock
    public var fileSystem: any FileSystem
    /// Where the new instance is remembered (see `InstanceRegistry`), if anywhere.
    public var registry: InstanceRegistry?

    public init(clock: FlowdirClock = .system, fileSystem: any FileSystem = LocalFileSystem(), registry: InstanceRegistry? = nil) {
        self.clock = clock
        self.fileSystem = fileSystem
        self.registry = registry
    }

    /// `node.param=value`, the value read as YAML (`30`, `4.5`, `true`, `[a, b]`).
    public struct Override: Sendable {
        public var node: String
        public var param: String
        public var value: ParamValue
        public var text: String

        public init(parsing text: String) throws(InstanceError) {
            guard let eq = text.firstIndex(of: "=") else {
                throw .badOverride(text, reason: "write it as node.param=value")
            }
            let key = text[..<eq], raw = String(text[text.index(after: eq)...])
            let parts = key.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw .badOverride(text, reason: "write it as node.param=value")
            }
            self.node = String(parts[0])
            self.param = String(parts[1])
            self.text = text
            if raw.isEmpty {
                value = .string("")
            } else if case .success(let parsed) = DocumentReader.read(Array(raw.utf8), file: "--set", format: .yaml) {
                value = parsed.value.paramValue
            } else {
                value = .string(raw)  // not YAML: take it as it is
            }
        }
    }

    /// - Parameters:
    ///   - templatePath: recorded in instance.yaml; tools are looked up beside it.
    ///   - extraFiles: files to add as they are (a duplicated instance's tools/).
    @discardableResult
    public func create(template: LoadedTemplate, templatePath: String, directory: String, title: String?,
                       overrides: [Override], extraFiles: [(String, [UInt8])] = []) throws -> String {
        guard let graph = template.graph, template.isValid else {
            throw InstanceError.invalidWorkflow(path: templatePath, diagnostics: template.diagnostics, sources: template.sources)
        }
        if Files.exists(directory) {
            let entries = (try? fileSystem.listDirectory(directory)) ?? ["?"]
            if !entries.isEmpty { throw InstanceError.exists(directory) }
        }
        // Params: the template's, then --set, each checked against the tool.
        var params: [String: [ParamEntry]] = [:]
        for node in graph.nodes { params[node.id] = node.spec.params }
        for o in overrides {
            guard let node = graph.node(o.node) else {
                throw InstanceError.badOverride(o.text, reason: "there is no node '\(o.node)'"
                    + (Suggest.hint(for: o.node, in: graph.order).map { "; \($0)" } ?? ""))
            }
            if let tool = node.tool, !tool.acceptsAnyParams {
                guard let schema = tool.param(o.param) else {
                    throw InstanceError.badOverride(o.text, reason: "tool \(tool.kind) has no param '\(o.param)'"
                        + (Suggest.hint(for: o.param, in: tool.params.map(\.name)).map { "; \($0)" } ?? ""))
                }
                if let problem = ParamValidator.problem(with: o.value, schema: schema) {
                    throw InstanceError.badOverride(o.text, reason: "'\(o.param)' \(problem.message)")
                }
            }
            var list = params[o.node] ?? []
            if let i = list.firstIndex(where: { $0.key == o.param }) { list[i].value = o.value } else {
                list.append(ParamEntry(key: o.param, value: o.value))
            }
            params[o.node] = list
        }

        let now = clock.now()
        let record = InstanceRecord(id: RandomID.uuid(), title: title ?? graph.template.name,
                                    template: Files.realPath(templatePath) ?? templatePath, createdAt: now)
        var changes: [InstanceStore.Change] = [
            .write(InstancePaths.instanceFile, InstanceCodec.encode(record)),
            .write(InstancePaths.workflowFile, workflowText(template)),
        ]
        changes += extraFiles.map { InstanceStore.Change.write($0.0, $0.1) }
        let states = InitialStates.of(graph)
        var transitions: [Transition] = []
        for id in graph.order {
            let node = graph.node(id)!
            changes.append(.write(InstancePaths.params(id), InstanceCodec.encodeParams(params[id] ?? [], node: node.spec, tool: node.tool)))
            let state = states[id] ?? .ready
            changes.append(.write(InstancePaths.state(id), InstanceCodec.encode(NodeStateRecord(state: state, updatedAt: now))))
            transitions.append(Transition(node: id, from: nil, to: state.name, run: 0))
        }

        let parent = Path.directory(of: directory)
        try Files.makeDirectories(parent)
        StagingFolders.removeLeftovers(beside: directory)
        let staging = Path.join(parent, StagingFolders.name(for: directory))
        do {
            let store = try InstanceStore.create(at: staging, clock: clock)
            try store.commit(changes, message: CommitMessage(
                summary: "Create '\(record.title)' from \(Path.basename(templatePath))", event: "create", transitions: transitions))
            try Files.makeDirectories(Path.join(staging, InstancePaths.inbox))
            try store.close()
            try Files.rename(staging, directory)
        } catch {
            try? Files.removeTree(staging)
            throw error
        }
        registry?.remember(id: record.id, path: directory)
        return directory
    }

    /// A YAML template is kept as written, comments and all; JSON and JSONC
    /// are converted, since workflow.yaml is YAML.
    private func workflowText(_ template: LoadedTemplate) -> String {
        let path = template.file
        let text = template.sources[path] ?? ""
        if ["yaml", "yml"].contains(Path.fileExtension(path)) { return text }
        guard case .success(let parsed) = DocumentReader.read(Array(text.utf8), file: path),
              case .object(let entries) = parsed.value.paramValue else { return text }
        return YAMLWriter.document(entries, comments: ["Instantiated from \(Path.basename(path)), converted to YAML."])
    }
}
