#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

public struct EngineOptions: Sendable {
    /// Machine-wide caps, over every instance's own.
    public var machineCaps: QueueCaps
    /// SIGTERM → SIGKILL grace on cancel.
    public var grace: Double
    /// With `--node`: only these nodes (and nothing downstream of them) start.
    public var onlyNodes: Set<String>?
    /// Told of every commit, for progress on a terminal.
    public var report: @Sendable (String) -> Void
    /// Told of what a person should know that is not an error (a file of
    /// flowdir's edited by hand, put back).
    public var warn: @Sendable (String) -> Void = { _ in }
    /// Told of new awaits, failures and finished instances, once committed.
    public var notifier: any Notifier
    /// The largest answer file taken from an inbox.
    public var answerSizeLimit: Int
    /// Outputs and answers at least this large are kept beside git as Git
    /// LFS pointers and content (docs/storage.md; config `storage.bigFile`).
    public var bigFile: Int = 512 << 10
    /// While jobs end in quick succession, at most one commit per this long
    /// (see CommitGrouping.swift). At 20 ms a run of 1,000 short steps made
    /// ~55 commits and wrote each node's state ~3 times; at 100 ms, ~11
    /// commits and 8% less CPU. History lags a burst by at most this much.
    public var commitWindow: Duration = .milliseconds(100)
    /// How often `flowdir run` looks for requests from other terminals and
    /// answers dropped meanwhile (it has no watcher to tell it).
    public var pollInterval: Duration = .milliseconds(200)
    /// How long a lease lasts (renewed while the instance has jobs here).
    public var leaseDuration: Double = 600
    /// Called with an instance's folder once its lease is renewed: a shared
    /// instance's renewal must reach the other machines before it lapses there.
    public var leaseRenewed: @Sendable (String) -> Void = { _ in }
    /// The git remote whose content store inputs kept beside git are fetched from.
    public var syncRemote = "origin"

    public init(machineCaps: QueueCaps = QueueCaps(local: 2, remote: 8), grace: Double = 5,
                onlyNodes: Set<String>? = nil, notifier: any Notifier = SilentNotifier(),
                answerSizeLimit: Int = AnswerCheck.defaultSizeLimit, report: @escaping @Sendable (String) -> Void = { _ in }) {
        self.machineCaps = machineCaps
        self.grace = grace
        self.onlyNodes = onlyNodes
        self.notifier = notifier
        self.answerSizeLimit = answerSizeLimit
        self.report = report
    }
}

struct RunKey: Hashable, Sendable {
    var instance: String
    var node: String
}

/// A job under way.
struct RunningJob {
    var run: Int
    var record: RunRecord
    var workDir: String
    var handle: any JobHandle
    var cancelReason: String?
    var launchedAt: Moment
    /// What its executor was given, and the executor: for fetching outputs.
    var spec: JobSpec?
    var executor: (any Executor)?
    /// Its executor said its endpoint cannot be reached (and has not sent it since).
    var offline = false
}

enum EngineEvent: Sendable {
    /// What an executor says of run `run` of a node (see `JobUpdate`).
    case job(RunKey, run: Int, JobUpdate)
    case tick
    /// A held group of commits is due (see CommitGrouping.swift).
    case flushDue
    /// The watcher saw something in these instances.
    case touched(WatchNews)
    /// A fetch of a node's inputs' content has ended (see `fetchesInputsFirst`).
    case fetched(RunKey, failure: ContentRemoteError?)
    /// SIGTERM or SIGINT (see Stopping.swift).
    case stop
}

/// The engine: decides what runs, runs it, records it. One actor owns the
/// open instances and their stores, so commits never race.
public actor Engine {
    let clock: FlowdirClock
    let options: EngineOptions
    /// Who runs jobs, by the form of the tool's `run` (ARCHITECTURE.md, "Seams").
    let executors: ExecutorSet
    var instances: [String: InstanceRuntime] = [:]
    var running: [RunKey: RunningJob] = [:]
    var launchQueue: [(String, String, Prepared)] = []
    /// Inputs' content being fetched before their node starts, and when to
    /// try again for nodes blocked until it comes (see InputFetch.swift).
    var fetching: [RunKey: Task<Void, Never>] = [:]
    var fetchRetry: [RunKey: (at: Timestamp, delay: Double)] = [:]
    var serveCounter = 0
    /// Events delivered and not yet handled; handled together, so that jobs
    /// ending at the same time share one commit. Delivered from any thread
    /// (a job's end comes straight from the thread that saw it).
    nonisolated let inbox = EventInbox()
    /// Off for `settle`: answers and requests are taken, nothing is started.
    var starting = true
    /// Since a stop was asked for (see Stopping.swift).
    var stopping = false
    /// The watcher's idle instances, closed but kept in memory (see `park`).
    var parked: [String: InstanceRuntime] = [:]
    var parkOrder: [String] = []
    /// Jobs ending in quick succession share commits (see CommitGrouping.swift).
    var grouping: CommitGrouping
    var holdCommits: Bool { grouping.holding }
    /// While `run`'s loop runs jobs: their commits are written in the background
    /// (see `commitBatch`, `InstanceStore.commitInBackground`).
    var backgroundCommits = false

    /// For a process that exits after its run (the `flowdir` executable):
    /// a run's instance is kept in memory, not freed, once closed. Freeing
    /// a 1,000-node instance's facts, graph and template cost 4 ms after
    /// its last job; the process's end takes it all back at once.
    nonisolated(unsafe) public static var keepsRunsUntilExit = false

    public init(clock: FlowdirClock = .system, options: EngineOptions = EngineOptions(), executors: ExecutorSet? = nil) {
        self.clock = clock
        self.grouping = CommitGrouping(window: options.commitWindow, now: clock.instant)
        self.options = options
        self.executors = executors ?? ExecutorSet([JobWork.commandKey: LocalExecutor()])
    }

    nonisolated func deliver(_ event: EngineEvent) { inbox.post(event) }

    func nextEvents() async -> [EngineEvent] { await inbox.next() }

    // MARK: flowdir run

    /// Opens the instance and advances it until nothing more can happen.
    /// - Parameter retryFrom: the run the nodes in `retry` are retried from (nil: each one's last).
    public func run(_ path: String, retry: [String] = [], retryFrom: Int? = nil, rerun: [String] = [], downstream: Bool = false,
                    reader: InstanceReader = InstanceReader()) async throws -> RunOutcome {
        guard reader.isInstance(path) else { throw InstanceError.notAnInstance(path) }
        let store = try InstanceStore.open(path, purpose: "flowdir run", clock: clock)
        // Nothing moved since a run that found nothing to do: the same answer.
        var cacheable = false
        if retry.isEmpty, rerun.isEmpty, options.onlyNodes == nil, !stopping,
           let record = (try? reader.read(instanceRecordOnly: store.path)) ?? nil {
            cacheable = true
            // Stat'ing every file is worth it only when a run has noted an outcome.
            if let noted = NoopCache.noted(store),
               let known = NoopCache.lookup(noted, fingerprint: NoopCache.fingerprint(store, toolDirectories: toolDirectories(reader, store.path, record)),
                                            now: clock.now()) {
                try store.close()
                return known
            }
        }
        NoopCache.forget(store.path)
        let open = try OpenInstance.open(store: store, reader: reader.withLastRuns)
        defer { try? open.close() }
        let rt = try adopt(open)
        defer {
            instances[rt.path] = nil
            // A reference never given back: nothing else holds it, so no lock or list is needed.
            if Engine.keepsRunsUntilExit { _ = Unmanaged.passRetained(rt) }
        }
        for node in retry { try requestRetry(rt, node, from: retryFrom) }
        for node in rerun { try requestRerun(rt, node, downstream: downstream) }
        try flush()
        try handleRequests()
        try await loop(.run(poll: options.pollInterval))
        try rt.store.flushIndex()
        var outcome = RunOutcome(states: rt.facts.mapValues(\.state.state), order: rt.graph.order)
        outcome.refused = rt.inboxLook.refusals.sorted { $0.key < $1.key }.map { (InstancePaths.inbox + "/" + $0.key, $0.value) }
        outcome.stopped = stopping
        // Where this run stopped, nothing more can happen: the next run would
        // find the same (see NoopCache), unless a question may expire before it.
        // A remote job waiting for its endpoint is not "nothing more can happen".
        let waitsOnRemote = rt.facts.values.contains { f in
            if case .blocked(.offline) = f.state.state { return true }
            if case .blocked(.inputNotHere) = f.state.state { return true }
            return f.state.state.isActive
        }
        // Nor is a node that waits for another machine's lease to lapse.
        if cacheable, !stopping, !waitsOnRemote, mayStart(rt), !rt.awaits.values.contains(where: { $0.expiresAt != nil }) {
            NoopCache.save(store, fingerprint: NoopCache.fingerprint(store, toolDirectories: toolDirectories(reader, store.path, open.snapshot.record)),
                           outcome: outcome, until: rt.doneAwaitFiles().compactMap { $0.1.doneAt.map { $0 + AwaitPolicy.doneRetention } }.min())
        }
        return outcome
    }

    /// Carries out requests and takes answers waiting in the inbox, and
    /// commits what follows (downstream nodes become ready), without
    /// starting any job: what `flowdir answer`, `snooze`, `skip` and
    /// `claim` do when no other flowdir holds the instance. Returns `false`
    /// when one does (it will carry out the request itself).
    public func settle(_ path: String, reader: InstanceReader = InstanceReader()) async throws -> Bool {
        let open: OpenInstance
        do {
            open = try OpenInstance.open(path, purpose: "flowdir (inbox)", reader: reader.withLastRuns, clock: clock, lockTimeout: 0)
        } catch is InstanceLock.Busy {
            return false
        }
        defer { try? open.close() }
        starting = false
        defer { starting = true }
        let rt = try adopt(open, recover: false)
        defer { instances[rt.path] = nil }
        try flush()
        try handleRequests()
        // One turn of the loop: nothing starts, so nothing is left to wait for.
        try await loop(.settle)
        try rt.store.flushIndex()
        NoopCache.forget(rt.path)
        return true
    }

    /// Takes an opened instance in: its facts loaded, what a crash left
    /// running recovered (unless `recover` is false), old done awaits
    /// pruned. On failure it is closed again and not taken in.
    func adopt(_ open: OpenInstance, recover: Bool = true) throws -> InstanceRuntime {
        do {
            let rt = try InstanceRuntime(open: open, now: clock.now())
            instances[rt.path] = rt
            if rt.polling == .paused { for executor in executors.all { executor.setPolling(paused: true, instance: rt.path) } }
            if !open.putBack.isEmpty { warnPutBack(rt.path, open.putBack) }
            noteBlockedForInputs(rt, now: clock.now())
            do {
                // Another machine runs its jobs: what runs there is not interrupted.
                // what ran there is not interrupted; only this machine's own leftovers are recorded.
                if recover { try recoverInterrupted(rt, holder: mayStart(rt)) }
                try pruneDone(rt)
            } catch {
                instances[rt.path] = nil
                throw error
            }
            return rt
        } catch {
            try? open.close()
            throw error
        }
    }

    func warnPutBack(_ instance: String, _ files: [String]) {
        let list = files.prefix(5).joined(separator: ", ") + (files.count > 5 ? " and \(files.count - 5) more" : "")
        options.warn("\(instance): put back \(list) as the last commit has \(files.count == 1 ? "it" : "them"): "
            + "a node's state and outputs are flowdir's record (change them with retry, rerun, rollback or an answer)")
    }

    /// Every folder a tool of this instance may come from.
    nonisolated func toolDirectories(_ reader: InstanceReader, _ path: String, _ record: InstanceRecord) -> [String] {
        reader.toolDirectories(path, record) + reader.userToolDirectories
    }

    /// Advances several instances together, sharing the machine's caps
    /// (fairness across instances; the watcher uses the same loop).
    public func runAll(_ paths: [String], reader: InstanceReader = InstanceReader()) async throws -> [String: RunOutcome] {
        var opened: [InstanceRuntime] = []
        defer { for rt in opened { try? rt.open.close(); instances[rt.path] = nil } }
        for path in paths {
            let open = try OpenInstance.open(path, purpose: "flowdir run", reader: reader.withLastRuns, clock: clock)
            opened.append(try adopt(open))
        }
        try flush()
        try handleRequests()
        try await loop(.run(poll: options.pollInterval))
        var out: [String: RunOutcome] = [:]
        for rt in opened {
            try rt.store.flushIndex()
            out[rt.path] = RunOutcome(states: rt.facts.mapValues(\.state.state), order: rt.graph.order)
        }
        return out
    }

    /// A remote job not yet sent, blocked until its endpoint answers.
    func waitsOffline(_ key: RunKey) -> Bool {
        running[key]?.offline == true
    }

    /// One event's consequences: gating, starts and launches, one commit;
    /// then each answer, expiry or refusal in the inboxes, one commit each
    /// with what follows from it.
    ///
    /// Jobs are launched before the commit that records their start: the
    /// spawn runs on another thread while the commit is written, so a
    /// downstream job starts a commit's time sooner. Should flowdir die in
    /// between, the next open ends the job and undoes what it left
    /// (`recoverInterrupted`, the log named in the journal by `launch`).
    func step() throws {
        if !running.isEmpty { try renewLeases() }
        try evaluateAndStart()
        if starting { try launchQueued() }
        try flush()
        var rounds = 0
        // While commits are held (jobs ending in quick succession) inboxes
        // wait for the next tick: a person's answer never shares a held commit.
        while !holdCommits, rounds < 10_000, try takeInboxEvent() {
            try evaluateAndStart()
            if starting { try launchQueued() }
            try flush()
            rounds += 1
        }
    }

    /// Whether an inbox holds something to act on now (the next `step` takes it).
    func inboxHasNews() throws -> Bool {
        guard try takeInboxEvent() else { return false }
        try evaluateAndStart()
        try flush()
        return true
    }

    // MARK: Deciding

    func evaluateAndStart() throws {
        let now = clock.now()
        var requests: [SlotRequest] = []
        // What runs, by instance and queue, and each instance's caps: made
        // once an instance has a node ready, not on every event.
        var tables: (counts: [String: [ResourceClass: Int]], caps: [String: QueueCaps])?
        func slotTables() -> (counts: [String: [ResourceClass: Int]], caps: [String: QueueCaps]) {
            if let tables { return tables }
            var counts: [String: [ResourceClass: Int]] = [:]
            for key in running.keys {
                let c = instances[key.instance]?.graph.resourceClass(of: key.node) ?? .local
                counts[key.instance, default: [:]][c, default: 0] += 1
            }
            var caps: [String: QueueCaps] = [:]
            for rt in instances.values {
                let o = rt.graph.template.options
                caps[rt.path] = QueueCaps(local: o.localConcurrency, remote: o.remoteConcurrency)
            }
            tables = (counts, caps)
            return (counts, caps)
        }
        for rt in instances.values {
            var transitions: [Transition] = []
            var changes: [InstanceStore.Change] = []
            let touched = rt.touched
            rt.touched = []
            for (node, state) in Gating.evaluate(rt.graph, facts: rt.facts, touched: touched) {
                // A retried or rerun node is taken off blocked/finished by its request, not by gating.
                let (t, c) = try rt.set(state, on: node, now: now)
                transitions.append(t)
                changes.append(c)
            }
            rt.touched = []  // what gating itself changed has been seen
            if !fetchRetry.isEmpty, starting, mayStart(rt) { try retryFetches(rt, now: now) }
            // Interactive nodes wait for a person instead of a queue, with
            // a question in inbox/ (unless a person has just answered it).
            // Only the ready nodes, in graph order: looking up every node on every event cost N².
            let ready = rt.ready.inOrder(rt.graph)
            // Another machine holds its lease: it shows, takes answers and
            // edits, syncs; it never opens a question or starts a node here.
            let elsewhere = !mayStart(rt)
            for id in ready where !elsewhere && rt.graph.isInteractive(id) && !rt.answered.contains(id) {
                let (t, c) = try rt.apply(.awaitUser, to: id, now: now)
                transitions.append(t)
                changes.append(c)
                if let question = openAwait(rt, id, now: now) { changes.append(question) }
            }
            try commit(rt, changes, transitions, event: "evaluate")
            guard rt.halted == nil, starting, !rt.ready.isEmpty, !elsewhere else { continue }
            // Only as many of each queue as this instance has room for: the
            // scheduler takes an instance's requests of a queue in order and
            // never more than that (a DAG keeps ~20 ready for one free slot).
            let (counts, caps) = slotTables()
            var room = caps[rt.path] ?? options.machineCaps
            for queue in ResourceClass.allCases { room[queue] -= counts[rt.path]?[queue] ?? 0 }
            for id in ready where rt.ready.contains(id) {
                // Every queue full: the rest of the ready nodes wait (a DAG keeps ~20).
                if ResourceClass.allCases.allSatisfy({ room[$0] <= 0 }) { break }
                let queue = rt.graph.resourceClass(of: id) ?? .local
                let key = RunKey(instance: rt.path, node: id)
                guard room[queue] > 0, running[key] == nil, fetching[key] == nil else { continue }
                if let only = options.onlyNodes, !only.contains(id) { continue }
                requests.append(SlotRequest(instance: rt.path, node: id, resourceClass: queue,
                                            touchedAt: rt.touchedAt, lastServed: rt.lastServed))
                room[queue] -= 1
            }
        }
        guard !requests.isEmpty else { return }
        let (counts, caps) = slotTables()
        let picked = Scheduler.select(requests, running: counts, instanceCaps: caps, machineCaps: options.machineCaps)
        // One commit per instance for everything it starts now.
        for (instance, group) in Dictionary(grouping: picked, by: \.instance) {
            guard let rt = instances[instance] else { continue }
            serveCounter += 1
            rt.lastServed = serveCounter
            try start(rt, group.map(\.node))
        }
    }

    // MARK: Starting

    func start(_ rt: InstanceRuntime, _ nodes: [String]) throws {
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        var launches: [(String, Prepared)] = []
        for id in nodes {
            let node = rt.graph.node(id)!
            let pending = rt.pending.removeValue(forKey: id)
            // An input's content is not here: it is fetched first, and the node starts once it has come.
            if fetchesInputsFirst(rt, node, pending: pending) {
                rt.pending[id] = pending
                continue
            }
            let prepared: Prepared
            do {
                prepared = try Preparation.prepare(rt, node: node, pending: pending, now: now)
            } catch {
                // It cannot even start (a frozen input is gone, an input file vanished): it fails, with why.
                let err = NodeError(summary: "\(error)", code: "prepareFailed", hint: "`\(Shell.command(["flowdir", "rerun", rt.path, id]))` uses the current inputs")
                let (t, c) = try rt.apply(.fail(err), to: id, run: rt.nextRunNumber(id), now: now)
                transitions.append(t)
                changes.append(c)
                continue
            }
            if let spec = prepared.spec, spec.work.isRemote {
                // Submitted once (docs/engine.md): the intent, with the key that
                // finds the job again, is committed before it is sent (`launchQueued`).
                let (t, c) = try rt.apply(.enqueueRemote, to: id, run: prepared.record.run, submission: spec.submissionKey, now: now)
                transitions.append(t)
                changes.append(c)
            } else if node.resourceClass == .remote {
                let (t1, _) = try rt.apply(.enqueueRemote, to: id, run: prepared.record.run, now: now)
                transitions.append(t1)
                let (t2, c2) = try rt.apply(.startRemote, to: id, run: prepared.record.run, now: now)
                transitions.append(t2)
                changes.append(c2)
            } else {
                let (t, c) = try rt.apply(.startLocal, to: id, run: prepared.record.run, now: now)
                transitions.append(t)
                changes.append(c)
            }
            let record = prepared.record
            changes.append(.encode(InstancePaths.run(id, record.run) + "/run.yaml", bytes: { RunRecordCodec.encodeBytes(record) }))
            launches.append((id, prepared))
        }
        if let lease = leaseChange(rt, now: now) { changes.append(lease) }
        try commit(rt, changes, transitions, event: "start")
        // Launched only after the start is committed (see `step`): a
        // crash then never leaves a process the files do not know about.
        launchQueue += launches.map { (rt.path, $0.0, $0.1) }
    }

    func launchQueued() throws {
        let queue = launchQueue
        launchQueue = []
        // A remote job is sent only once its intent is in a commit on disk:
        // after a crash, that commit is what says to look for it.
        let remote = Set(queue.filter { $0.2.spec?.work.isRemote ?? false }.map(\.0))
        for path in remote {
            guard let rt = instances[path] else { continue }
            if !rt.batch.isEmpty { try commitBatch(rt) }
            try rt.store.waitForBackgroundCommits()
        }
        for (instance, id, prepared) in queue {
            if let rt = instances[instance] { launch(rt, id, prepared) }
        }
    }

    func launch(_ rt: InstanceRuntime, _ id: String, _ prepared: Prepared) {
        let key = RunKey(instance: rt.path, node: id)
        // Its start may not be in HEAD yet (the commit is held or being written): a
        // crash now must not leave its log behind as a folder no commit knows.
        // Its outputs' usual places too, where `Outputs.collect` moves them
        // in: one write to the journal a job, not two.
        if !rt.batch.isEmpty || rt.store.isCommittingInBackground {
            try? rt.store.intend([InstancePaths.run(id, prepared.record.run) + "/log.txt"] + prepared.outputFiles)
        }
        let inbox = self.inbox
        let run = prepared.record.run
        let handle: any JobHandle
        var executor: (any Executor)?
        switch prepared.action {
        case .job(var spec):
            if case .command(var work) = spec.work {
                work.grace = options.grace
                spec.work = .command(work)
            }
            guard let chosen = executors.executor(for: spec.work) else {
                inbox.post(.job(key, run: run, .ended(.failed(NodeError(
                    summary: "this flowdir has no executor for run.\(spec.work.key)", code: "noExecutor",
                    hint: "configure the endpoint or cluster the tool names (see `flowdir --help`)")), log: nil)))
                handle = CancelToken()
                break
            }
            executor = chosen
            // A local job: nothing is written down of its process; should
            // flowdir be killed, the next run finds it by its work folder
            // (`ProcessGroups`). A remote one: its id is committed when known.
            handle = chosen.submit(spec) { inbox.post(.job(key, run: run, $0)) }
        case .copy(let source, let destination):
            handle = CancelToken()
            Task {
                let ok = (try? LocalFileSystem().readFile(source, limit: 1 << 34)).map { bytes in
                    (try? Files.writeAtomically(destination, bytes)) != nil
                } ?? false
                inbox.post(.job(key, run: run, .ended(ok ? .exited(0) : .spawnFailed("cannot read \(source)"), log: nil)))
            }
        }
        running[key] = RunningJob(run: run, record: prepared.record, workDir: prepared.workDir,
                                  handle: handle, cancelReason: nil, launchedAt: clock.instant, spec: prepared.spec, executor: executor)
    }
}
