#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Picking up after a crash: carrying out the `RecoveryPlan`, and following
/// remote runs again.
extension Engine {
    /// After a crash (even kill -9) nothing stays "running": each attempt
    /// that was under way is recorded as failed, "interrupted", its
    /// leftover processes are ended, and the node runs again.
    /// - Parameter holder: whether this machine runs the instance's jobs (its
    ///   lease); if not, only what this machine itself left (work folders,
    ///   processes, launches never recorded) is dealt with.
    func recoverInterrupted(_ rt: InstanceRuntime, holder: Bool = true) throws {
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        // Every job a stopped flowdir left has a work folder, whether HEAD has
        // it running or it was launched before its start was committed (see
        // `Engine.step`): its process group is ended and the folder removed.
        let workRoot = rt.path + "/" + InstancePaths.local + "/work"
        let entries = ((try? LocalFileSystem().listDirectory(workRoot)) ?? []).map { workRoot + "/" + $0 }
        // `<node>.<run>`; an older flowdir's `<node>/<run>` are ended as well.
        var left = entries
        for dir in entries where !Path.basename(dir).contains(".") {
            left += ((try? LocalFileSystem().listDirectory(dir)) ?? []).map { dir + "/" + $0 }
        }
        let nodes = rt.graph.order.map { id in
            RecoveryPlan.Node(id: id, state: rt.state(id), run: rt.facts[id]?.state.run ?? 0,
                              submittedRemote: rt.facts[id]?.state.submission != nil && (rt.graph.node(id)?.tool?.run.isRemote ?? false))
        }
        let plan = RecoveryPlan.make(nodes: nodes, workFolders: entries.map(Path.basename), holder: holder,
                                     nextRun: rt.nextRunNumber) { r in
            let file = InstancePaths.run(r.node, r.run) + "/run.yaml"
            guard let bytes = rt.store.read(file), case .success(let record) = RunRecordCodec.decode(bytes, file: file) else { return false }
            return record.host == Host.name
        }
        // A remote run's folder and processes are its backend's (a job in a
        // folder the cluster shares may run there): not ended.
        let kept = Set(plan.follow.map { Preparation.workDirectory(rt, $0, rt.facts[$0]!.state.run) })
        ProcessGroups.endLeftover(left.filter { !kept.contains($0) })
        for r in plan.interrupted {
            let err = NodeError(summary: "interrupted", code: "interrupted", hint: "flowdir stopped while it ran; it runs again")
            let runYAML = InstancePaths.run(r.node, r.run) + "/run.yaml"
            if let bytes = rt.store.read(runYAML), case .success(var record) = RunRecordCodec.decode(bytes, file: runYAML) {
                record.finishedAt = now
                record.error = err
                changes.append(.write(runYAML, RunRecordCodec.encodeBytes(record)))
            }
            changes.append(.existing(InstancePaths.run(r.node, r.run) + "/log.txt"))  // absent if it never began
            let (t1, _) = try rt.apply(.fail(err), to: r.node, now: now)
            let (t2, c2) = try rt.apply(.becomeReady, to: r.node, now: now)
            transitions += [t1, t2]
            changes.append(c2)
            rt.pending[r.node] = PendingRun(trigger: .auto, frozen: nil)
        }
        // Launched before the commit that records its start was made: the
        // execution still goes into the history, as interrupted, under its
        // own number, so the next one has the next (never the same twice).
        for r in plan.unrecorded {
            let kind = rt.graph.node(r.node)?.spec.kind ?? "unknown"
            var record = RunRecord(run: r.run, node: r.node, kind: kind, trigger: .auto, params: [], inputs: [],
                                   startedAt: now, host: Host.name, user: Host.user)
            record.finishedAt = now
            record.error = NodeError(summary: "interrupted before its start was recorded", code: "interrupted",
                                     hint: "flowdir stopped just after it launched this run; it runs again")
            changes.append(.write(InstancePaths.run(r.node, r.run) + "/run.yaml", RunRecordCodec.encodeBytes(record)))
            changes.append(.existing(InstancePaths.run(r.node, r.run) + "/log.txt"))
        }
        for r in plan.renumber {
            let (t, c) = try rt.renumber(r.node, run: r.run, now: now)
            transitions.append(t)
            changes.append(c)
        }
        try commit(rt, changes, transitions, event: "recover", summary: transitions.isEmpty ? nil : "Recover interrupted runs")
        // The work folders are what says a run was launched: they go once that is committed.
        if !plan.unrecorded.isEmpty, !rt.batch.isEmpty { try commitBatch(rt) }
        // A remote run's folder stays: a cluster job may still be writing its outputs there.
        for dir in entries where !kept.contains(dir) { try? Files.removeTree(dir) }
        for id in plan.follow { try reattach(rt, id) }
    }

    /// Follows node `id`'s remote run again after a restart: prepared as it
    /// was started (its run record's inputs and params), handed to its
    /// executor with the job id if one was recorded.
    func reattach(_ rt: InstanceRuntime, _ id: String) throws {
        guard let node = rt.graph.node(id), let state = rt.facts[id]?.state else { return }
        let run = state.run
        let runYAML = InstancePaths.run(id, run) + "/run.yaml"
        var record: RunRecord?
        if let bytes = rt.store.read(runYAML), case .success(let r) = RunRecordCodec.decode(bytes, file: runYAML) { record = r }
        let key = RunKey(instance: rt.path, node: id)
        // A job that writes where it runs (`BackendTraits.runsInSharedFolder`), started in another
        // folder (another machine's clone, on the file system the cluster
        // shares): followed there, where its outputs and log will be.
        let startedIn = record?.folder.flatMap { $0 != rt.path && LocalFileSystem().isDirectory($0) ? $0 : nil }
        let prepared: Prepared
        do {
            prepared = try Preparation.prepare(rt, node: node, pending: record.map { PendingRun(trigger: $0.trigger, frozen: $0) },
                                               run: run, startedIn: startedIn, now: record?.startedAt ?? clock.now())
        } catch {
            // Its inputs are gone: it cannot be sent again, but it may still be
            // followed by its id; without one, it fails and says why.
            guard state.job == nil else {
                throw EngineError.unexpected("\(id): cannot follow job \(state.job!) again: \(error)")
            }
            let err = NodeError(summary: "cannot pick up its remote run \(run): \(error)", code: "reattachFailed",
                                hint: "`\(Shell.command(["flowdir", "rerun", rt.path, id]))` sends it again with the current inputs")
            let (t, c) = try rt.apply(.fail(err), to: id, now: clock.now())
            try commit(rt, [c], [t], event: "recover")
            return
        }
        var kept = record ?? prepared.record
        kept.job = state.job
        let inbox = self.inbox
        let handle: any JobHandle
        let executor = prepared.spec.flatMap { executors.executor(for: $0.work) }
        if var spec = prepared.spec, let executor {
            // Only a start that was recorded bounds what the backend may have made for it.
            spec.startedAt = record?.startedAt
            handle = executor.reattach(spec, jobID: state.job) { inbox.post(.job(key, run: run, $0)) }
        } else {
            handle = CancelToken()
            inbox.post(.job(key, run: run, .ended(.failed(NodeError(
                summary: "this flowdir cannot follow remote run \(run) (\(state.job.map { "job \($0)" } ?? "not yet sent")): no executor for it",
                code: "noExecutor", hint: "configure the endpoint the tool names, then `flowdir retry`")), log: nil)))
        }
        running[key] = RunningJob(run: run, record: kept, workDir: prepared.workDir, handle: handle, cancelReason: nil,
                                  launchedAt: clock.instant, spec: prepared.spec, executor: executor)
    }
}

/// Ending the process groups of jobs that outlived a crashed flowdir,
/// found by the work folders they were started in (see `ProcessTable.jobGroups`).
enum ProcessGroups {
    static func endLeftover(_ workDirectories: [String]) {
        guard !workDirectories.isEmpty else { return }
        for group in ProcessTable.jobGroups(runDirectories: workDirectories).values.reduce(into: Set(), { $0.formUnion($1) }) {
            _ = killpg(group, SIGKILL)
        }
    }
}
