import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// A retry or rerun asked for, waiting for its node to be started.
struct PendingRun {
    var trigger: RunTrigger
    /// Retry: the run whose inputs (blob ids) and params are used again.
    var frozen: RunRecord?
    /// A person's answer that let it run (a confirmed or chosen tool node).
    var answer: AnswerNote? = nil
    var by: String? = nil
}

/// What the engine keeps about one open instance: its lock and store, its
/// graph, and the facts gating needs, loaded once and then kept up to date
/// as runs finish (no rescanning of the folder per decision).
final class InstanceRuntime {
    let open: OpenInstance
    let graph: WorkflowGraph
    var facts: [String: NodeFacts] = [:]
    var touchedAt: Timestamp
    /// fail-fast: set once a node fails; nothing new starts after it.
    var halted: String?
    /// When it last got a slot, for round-robin.
    var lastServed: Int?
    var pending: [String: PendingRun] = [:]
    /// What the current event changed, committed as one (docs/engine.md, "Commits").
    var batch = Batch()
    /// Nodes whose facts changed since gating last looked (nil: look at all).
    var touched: Set<String>? = nil
    /// The open questions, by node (`inbox/<node>.await.yaml`).
    var awaits: [String: AwaitRecord] = [:]
    /// Its inbox between looks: complete files, checks, refusals, the next look.
    var inboxLook = InboxLook()
    /// Nodes a person has answered that now run (not asked again).
    var answered: Set<String> = []
    /// To tell people about, once committed.
    var notices: [FlowEvent] = []
    var wasDone = false
    /// The workflow or the title was edited while open, or someone else
    /// committed (a `git pull`): read it again once idle.
    var reopen = false
    /// A person's git command is at work in it (`GitHolds`): its inbox is
    /// not looked at, nothing is committed, its index not written.
    var heldForGit = false
    /// When the watcher last had an event for it (it lingers open a moment after).
    var lastActive: Moment?
    var title: String { open.snapshot.record.title }
    /// `instance.yaml: polling:`, as changed by `flowdir polling` since it was read.
    lazy var polling: PollingMode = open.snapshot.record.polling
    /// `instance.yaml: lease:`, as taken or renewed since it was read.
    lazy var lease: Lease? = open.snapshot.record.lease
    /// Whether it is synced with another machine (has a git remote): only
    /// then does the machine running its jobs hold a lease.
    lazy var isShared: Bool = store.repository.hasRemotes
    /// `instance.yaml` as it is now: read, with this process's changes.
    var record: InstanceRecord {
        var r = open.snapshot.record
        r.polling = polling
        r.lease = lease
        return r
    }
    /// The folder name, as people type it (`flowdir answer my-photo/mask1`).
    var name: String { Path.basename(path) }
    var path: String { open.path }
    var store: InstanceStore { open.store }

    init(open: OpenInstance, now: Timestamp) throws {
        guard let graph = open.snapshot.graph, open.snapshot.workflow.isValid else {
            throw InstanceError.invalidWorkflow(path: open.path, diagnostics: open.snapshot.workflow.diagnostics,
                                                sources: open.snapshot.workflow.sources)
        }
        self.open = open
        self.graph = graph
        self.touchedAt = open.snapshot.updatedAt ?? now
        // Sized once: growing them by rehashing 1,000 node facts was a third of this.
        facts.reserveCapacity(graph.order.count)
        states.reserveCapacity(graph.order.count)
        // HEAD as walked when opened, unless an edit committed since moved it.
        let walked = try OpenInstance.HeadFiles.current(store, walked: open.headFiles)
        for id in graph.order {
            facts[id] = try loadFacts(id, walked: walked)
            noteState(id, facts[id]!.state.state)
        }
        wasDone = graph.order.allSatisfy { states[$0] == .succeeded || states[$0] == .skipped }
        loadAwaits()
    }

    /// The open questions of nodes waiting for a person, and which ready
    /// nodes a person already answered (their answered await is in done/).
    func loadAwaits() {
        for id in graph.order where states[id] == .awaitingUser {
            // The question as flowdir committed it: the working file may
            // hold a person's answer (or edited params), not yet taken.
            let file = InstancePaths.awaitFile(id)
            let committed = store.head.flatMap { try? store.repository.blob(at: file, inTree: $0.tree) }
            if let bytes = committed ?? store.read(file), case .success(var a) = AwaitCodec.decode(bytes, file: file), a.node == id {
                a.answer = nil
                a.approve = nil
                awaits[id] = a
            }
        }
        let interactiveReady = graph.order.filter { states[$0] == .ready && graph.isInteractive($0) }
        guard !interactiveReady.isEmpty else { return }
        for a in doneAwaits() where a.outcome == .answered || (a.outcome == .expired && a.note?.hasPrefix("autoDefault") == true) {
            guard interactiveReady.contains(a.node), let done = a.doneAt else { continue }
            // Answered since the node last ran: it runs now, without asking
            // again, and its run records the answer (taken by another flowdir,
            // `flowdir answer` with none holding the instance).
            if done >= (facts[a.node]?.lastRun?.startedAt ?? Timestamp(seconds: 0)) {
                answered.insert(a.node)
                if pending[a.node] == nil {
                    let value = a.answer ?? (a.type == .confirmParams ? .string("approved") : nil)
                    pending[a.node] = PendingRun(trigger: .answer, frozen: nil, answer: AnswerNote(awaitID: a.id, value: value), by: a.doneBy)
                }
            }
        }
    }

    /// `inbox/done/`, as records with their file names.
    func doneAwaits() -> [AwaitRecord] {
        doneAwaitFiles().map(\.1)
    }

    func doneAwaitFiles() -> [(String, AwaitRecord)] {
        let dir = Path.join(path, InstancePaths.inboxDone)
        return ((try? LocalFileSystem().listDirectory(dir)) ?? []).sorted().compactMap { name in
            let rel = InstancePaths.inboxDone + "/" + name
            guard name.hasSuffix(".await.yaml"), let bytes = store.read(rel),
                  case .success(let a) = AwaitCodec.decode(bytes, file: rel) else { return nil }
            return (rel, a)
        }
    }

    /// Moves an await to `inbox/done/` with how it ended; its error note goes too.
    func retire(_ node: String, _ outcome: AwaitOutcome, by: String?, note: String?, answer: ParamValue? = nil, now: Timestamp) {
        guard var a = awaits.removeValue(forKey: node) else { return }
        a.answer = answer
        inboxLook.awaitStamps[node] = nil
        a.outcome = outcome
        a.doneAt = now
        a.doneBy = by
        a.note = note
        a.claim = nil
        batch.add(.delete(InstancePaths.awaitFile(node)))
        batch.add(.write(InstancePaths.inboxDone + "/\(node)-\(a.id.prefix(8)).await.yaml",
                                    AwaitCodec.encode(a, instanceName: name)))
        let error = InstancePaths.inbox + "/\(node).error.txt"
        if Files.exists(Path.join(path, error)) || store.isTracked(error) { batch.add(.delete(error)) }
    }

    /// `walked`: HEAD's node folders (nil before the first commit).
    func loadFacts(_ id: String, walked: OpenInstance.HeadFiles?) throws -> NodeFacts {
        let snapshot = open.snapshot
        let state = snapshot.states[id] ?? NodeStateRecord(state: .blocked(.other("no state")), updatedAt: Timestamp(seconds: 0))
        let params = try snapshot.params[id] ?? {
            guard let node = graph.node(id) else { throw EngineError.unknownNode(id) }
            return InstanceCodec.effectiveParams(node.spec.params, tool: node.tool)
        }()
        // Read with the snapshot, for the run its state names (see `InstanceReader.readsLastRuns`).
        var lastRun = snapshot.lastRuns[id]
        if lastRun == nil, state.run > 0, let bytes = store.read(InstancePaths.run(id, state.run) + "/run.yaml"),
           case .success(let r) = RunRecordCodec.decode(bytes, file: InstancePaths.run(id, state.run) + "/run.yaml") {
            lastRun = r
        }
        var outputs: [String: OutputRef] = [:]
        for e in try walked?.outputs(of: id, in: store.repository) ?? [] where !e.isTree {
            let port = Path.removingExtension(e.name)
            let file = InstancePaths.outputs(id) + "/" + e.name
            // A large output is committed as its pointer: its run's record
            // names the content's blob, which is what consumers compare.
            if let o = lastRun?.outputs.first(where: { $0.port == port && InstancePaths.node(id) + "/" + $0.file == file }),
               let pointer = o.pointer, GitRepository.blobID(of: pointer.bytes) == e.id {
                outputs[port] = OutputRef(blob: o.blob, file: file, run: state.run, sha256: o.sha256)
                continue
            }
            // A pointer committed by hand (with git) in place of the run's:
            // never content, so a consumer is refused it (`LargeInputs.ensurePresent`).
            if let p = store.repository.pointer(inBlob: e.id) {
                let recorded = lastRun?.outputs.first(where: { $0.port == port })?.sha256
                outputs[port] = OutputRef(blob: e.id.hex, file: file, run: state.run, sha256: recorded ?? p.oid)
                continue
            }
            outputs[port] = OutputRef(blob: e.id.hex, file: file, run: state.run)
        }
        return NodeFacts(state: state, lastRun: lastRun, params: params, outputs: outputs)
    }

    /// Node states, kept beside the facts: the loop asks for states of
    /// every node on every event, and copying whole facts for that costs.
    var states: [String: NodeState] = [:]
    /// The nodes that are ready now.
    var ready = ReadyNodes()
    /// Outputs this process moved into `out/` while running the instance
    /// (`flowdir run`, which has no watcher to see them go): a consumer's
    /// start does not look for them again (a stat each, every job).
    var movedIn: Set<String> = []
    /// How many nodes wait for an input from upstream (`blocked — Waiting for …`),
    /// to tell how much of a run is left (`Engine.heldGroupIsDue`).
    private(set) var waiting = 0

    func state(_ id: String) -> NodeState { states[id] ?? .blocked(.other("no state")) }

    func noteState(_ id: String, _ s: NodeState) {
        if case .blocked(.waitingFor)? = states.updateValue(s, forKey: id) { waiting -= 1 }
        if case .blocked(.waitingFor) = s { waiting += 1 }
        if s == .ready { ready.insert(id, in: graph) } else { ready.remove(id, in: graph) }
    }

    /// Applies `event` to `node` through the state machine; an invalid move
    /// is an error, never silently applied. Returns the transition and the
    /// state file to commit.
    func apply(_ event: NodeEvent, to node: String, run: Int? = nil, progress: Double? = nil, job: String? = nil,
               submission: String? = nil, now: Timestamp) throws -> (Transition, InstanceStore.Change) {
        guard let before = facts[node]?.state else { throw EngineError.unknownNode(node) }
        let from = before.state
        let to = try NodeMachine.apply(event, to: from).get()
        // A question nobody needs answered any more leaves the inbox.
        if from == .awaitingUser, to != .awaitingUser, awaits[node] != nil {
            retire(node, .withdrawn, by: nil, note: to.reason.map { "\(to.name): \($0)" } ?? to.name, now: now)
        }
        var state = NodeStateRecord(state: to, run: run ?? before.run, progress: progress, updatedAt: now, job: job,
                                    submission: submission)
        // A remote run keeps its job id and submission key through its states
        // (and in the record of how it ended).
        if event != .enqueueRemote || submission == nil, before.submission != nil || before.job != nil, Self.keepsJob(to) {
            state.job = job ?? before.job
            state.submission = submission ?? before.submission
        }
        facts[node]!.state = state  // in place: not a copy of the node's whole facts
        noteState(node, to)
        // Gating looks at the node and at what consumes it next time.
        if touched != nil {
            touched!.insert(node)
            for c in graph.consumers(of: node) { touched!.insert(c) }
        }
        let written = state
        return (Transition(node: node, from: from.name, to: to.name, run: written.run),
                .encode(InstancePaths.state(node)) { InstanceCodec.encode(written) })
    }

    /// Whether a node in `state` still names its remote job: while under
    /// way, blocked offline, and in how it ended; not once it is to run again.
    static func keepsJob(_ state: NodeState) -> Bool {
        switch state {
        case .ready, .awaitingUser, .skipped: false
        case .blocked(.offline): true
        case .blocked: false
        default: true
        }
    }

    /// Sets a state directly where gating decided it (blocked ↔ ready).
    func set(_ state: NodeState, on node: String, now: Timestamp) throws -> (Transition, InstanceStore.Change) {
        let event: NodeEvent
        switch state {
        case .ready: event = .becomeReady
        case .blocked(let r): event = .block(r)
        case .awaitingUser: event = .awaitUser
        default: throw EngineError.unexpected("gating cannot set \(state.name)")
        }
        return try apply(event, to: node, now: now)
    }

    /// The node's state as it is, under a later run number: a run that was
    /// launched and is recorded as interrupted (see `Engine.recoverInterrupted`).
    func renumber(_ node: String, run: Int, now: Timestamp) throws -> (Transition, InstanceStore.Change) {
        guard let before = facts[node]?.state else { throw EngineError.unknownNode(node) }
        let state = NodeStateRecord(state: before.state, run: run, progress: nil, updatedAt: now, job: nil)
        facts[node]!.state = state
        return (Transition(node: node, from: before.state.name, to: before.state.name, run: run),
                .encode(InstancePaths.state(node)) { InstanceCodec.encode(state) })
    }

    /// The next run number: past the state's and any runs/ folder left over.
    func nextRunNumber(_ id: String) -> Int {
        // A node that never ran has no run in any commit: a run is committed
        // with the state that names it, and what a crash left uncommitted is
        // undone on open (the journal). Run 1, without a look at the folder
        // (a stat a job, a twentieth of the engine's time per job).
        if (facts[id]?.state.run ?? 0) == 0 { return 1 }
        let existing = ((try? LocalFileSystem().listDirectory(Path.join(path, InstancePaths.runs(id)))) ?? []).compactMap(Int.init)
            .filter(RunRecord.runNumbers.contains)  // a folder named past them is not a run (see `RunRecord.runNumbers`)
        return max(facts[id]?.state.run ?? 0, existing.max() ?? 0) + 1
    }
}

public enum EngineError: Error, CustomStringConvertible {
    case unknownNode(String)
    case unexpected(String)
    case frozenInputGone(node: String, port: String, blob: String)
    case notRetryable(node: String, state: String)
    /// A retry from a run that has no record.
    case noSuchRun(node: String, run: Int)
    /// Content kept beside git that is not on this machine.
    case contentNotHere(what: String, sha256: String, size: Int64?)
    /// A Git LFS pointer in the folder that is not the one its node's run committed.
    case pointerNotTheOutput(what: String, sha256: String, node: String)

    public var description: String {
        switch self {
        case .unknownNode(let n): "there is no node '\(n)'"
        case .unexpected(let m): m
        case .frozenInputGone(let node, let port, let blob):
            "cannot retry '\(node)': its input '\(port)' (blob \(blob.prefix(12))) is no longer in the repository; use `flowdir rerun` to run it with the current inputs"
        case .contentNotHere(let what, let sha, let size):
            "\(what) is not on this machine\(size.map { " (\(ByteCount(Int($0))))" } ?? "") (content sha256:\(sha.prefix(12))…): "
                + "get it with `flowdir storage get`, or `flowdir sync` from the machine that made it"
        case .pointerNotTheOutput(let what, let sha, let node):
            "\(what) is a Git LFS pointer that does not name the content '\(node)' made (sha256:\(sha.prefix(12))…): it was changed by hand, so it is not used; "
                + "`git log -p -- <file>` shows the change; `flowdir rerun` of '\(node)' makes the output again"
        case .notRetryable(let node, let state):
            "'\(node)' has no run to retry (it is \(state)); use `flowdir rerun` or `flowdir run`"
        case .noSuchRun(let node, let run):
            "'\(node)' has no run \(run) to retry from; `flowdir history` lists its runs"
        }
    }
}

/// The changes caused by one event, made one commit.
struct Batch {
    private(set) var changes: [InstanceStore.Change] = []
    /// The paths of `.placed` changes in it, kept as they come: a held
    /// group of a burst holds hundreds of changes, looked through per event.
    private(set) var placed: Set<String> = []

    mutating func add(_ change: InstanceStore.Change) {
        changes.append(change)
        if case .placed(let path, _, _, _) = change { placed.insert(path) }
    }

    mutating func add(contentsOf more: [InstanceStore.Change]) {
        for c in more { add(c) }
    }
    var transitions: [Transition] = []
    /// The first event names the commit (`finish`, `start`…); others follow from it.
    var event: String?
    var summaries: [String] = []
    /// A person's answer or request is committed as theirs.
    var author: GitSignature?
    /// Files to remove once the commit is made (answers taken from the inbox).
    var removeAfterCommit: [String] = []
    /// Ended jobs' work folders, removed once the commit is made: on the
    /// store's thread when that writes it, off the way to the next job. One
    /// left by a crash is removed by the next run (`recoverInterrupted`).
    var workDirectories: [String] = []

    var isEmpty: Bool { changes.isEmpty }
}

/// Commit summaries that read well in `git log --oneline`.
enum Summary {
    static func of(_ transitions: [Transition], prefix: String? = nil) -> String {
        let parts = transitions.prefix(3).map { "\($0.node) → \($0.to)" }
        var text = parts.joined(separator: "; ")
        if transitions.count > 3 { text += "; +\(transitions.count - 3) more" }
        if let prefix { text = text.isEmpty ? prefix : prefix + "; " + text }
        return text
    }
}

extension InstanceReader {
    /// For an instance the engine takes in: its nodes' last runs read too
    /// (`InstanceRuntime.loadFacts` needs each).
    var withLastRuns: InstanceReader {
        var reader = self
        reader.readsLastRuns = true
        return reader
    }
}
