#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Requests from people: retry, rerun, cancel, and picking up after a crash.
extension Engine {
    /// Retry: the same inputs (blob ids) and params as the last run. Refused
    /// before anything starts if a frozen blob is gone.
    func requestRetry(_ rt: InstanceRuntime, _ node: String) throws {
        guard let f = rt.facts[node] else { throw EngineError.unknownNode(node) }
        guard let last = f.lastRun, !f.state.state.isActive else { throw EngineError.notRetryable(node: node, state: f.state.state.name) }
        for input in last.inputs {
            guard let oid = ObjectID(hex: input.blob), rt.store.repository.contains(oid) else {
                throw EngineError.frozenInputGone(node: node, port: input.port, blob: input.blob)
            }
        }
        let (t, c) = try rt.apply(.becomeReady, to: node, now: clock.now())
        rt.pending[node] = PendingRun(trigger: .retry, frozen: last)
        try commit(rt, [c], [t], event: "retry", summary: "Retry \(node) with the inputs of run \(last.run)")
    }

    /// Rerun: current inputs and params; with `downstream`, everything
    /// downstream runs again after it.
    func requestRerun(_ rt: InstanceRuntime, _ node: String, downstream: Bool) throws {
        guard let f = rt.facts[node] else { throw EngineError.unknownNode(node) }
        guard !f.state.state.isActive else { throw EngineError.unexpected("'\(node)' is running; cancel it first") }
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        if rt.state(node) != .ready {
            let (t, c) = try rt.apply(.becomeReady, to: node, now: now)
            transitions.append(t)
            changes.append(c)
        }
        rt.pending[node] = PendingRun(trigger: .rerun, frozen: nil)
        if downstream {
            for d in rt.graph.descendants(of: node) where !rt.state(d).isActive && rt.state(d) != .awaitingUser {
                rt.pending[d] = PendingRun(trigger: .rerun, frozen: nil)
                let reason = BlockReason.waitingFor(port: rt.graph.incoming[d]?.first?.key ?? "input", node: node)
                if rt.state(d) != .blocked(reason) {
                    let (t, c) = try rt.apply(.block(reason), to: d, now: now)
                    transitions.append(t)
                    changes.append(c)
                }
            }
        }
        try commit(rt, changes, transitions, event: "rerun", summary: "Rerun \(node)" + (downstream ? " and downstream" : ""))
    }

    /// A person's `flowdir cancel` from another terminal drops a file in
    /// `.flowdir/requests/`; the running engine picks it up here.
    func handleRequests() throws {
        for rt in instances.values {
            let dir = Path.join(rt.path, InstancePaths.local + "/requests")
            for name in (try? LocalFileSystem().listDirectory(dir)) ?? [] where name.hasSuffix(".cancel") {
                let file = Path.join(dir, name)
                let node = (try? LocalFileSystem().readFile(file, limit: 4096)).map { String(decoding: $0, as: UTF8.self) }?
                    .trimmed() ?? ""
                try? Files.remove(file)
                try cancel(rt, node, reason: "Cancelled by \(Host.user)")
            }
        }
    }

    func cancel(_ rt: InstanceRuntime, _ node: String, reason: String) throws {
        let key = RunKey(instance: rt.path, node: node)
        if let job = running[key] {
            running[key]?.cancelReason = reason
            job.cancel.cancel()  // SIGTERM to the group; finish() records it
            return
        }
        switch rt.state(node) {
        case .ready, .awaitingUser, .queuedRemote, .blocked:
            let (t, c) = try rt.apply(.cancel(reason: reason), to: node, now: clock.now())
            try commit(rt, [c], [t], event: "cancel")
        default:
            break
        }
    }

    /// After a crash (even kill -9) nothing stays "running": each attempt
    /// that was under way is recorded as failed, "interrupted", its
    /// leftover processes are ended, and the node runs again.
    func recoverInterrupted(_ rt: InstanceRuntime) throws {
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        for id in rt.graph.order where rt.state(id).isActive {
            let run = rt.facts[id]!.state.run
            let work = rt.path + "/" + InstancePaths.local + "/work/\(id)/\(run)"
            ProcessGroups.endLeftover(pidFile: work + "/pid")
            try? Files.removeTree(work)
            let err = NodeError(summary: "interrupted", code: "interrupted", hint: "flowdir stopped while it ran; it runs again")
            let runYAML = InstancePaths.run(id, run) + "/run.yaml"
            if let bytes = rt.store.read(runYAML), case .success(var record) = RunRecordCodec.decode(bytes, file: runYAML) {
                record.finishedAt = now
                record.error = err
                changes.append(.write(runYAML, RunRecordCodec.encode(record)))
            }
            if Files.exists(rt.path + "/" + InstancePaths.run(id, run) + "/log.txt") {
                changes.append(.existing(InstancePaths.run(id, run) + "/log.txt"))
            }
            let (t1, _) = try rt.apply(.fail(err), to: id, now: now)
            let (t2, c2) = try rt.apply(.becomeReady, to: id, now: now)
            transitions += [t1, t2]
            changes.append(c2)
            rt.pending[id] = PendingRun(trigger: .auto, frozen: nil)
        }
        try commit(rt, changes, transitions, event: "recover", summary: transitions.isEmpty ? nil : "Recover interrupted runs")
    }
}

/// Ending a job's process group that outlived a crashed flowdir.
enum ProcessGroups {
    static func endLeftover(pidFile: String) {
        guard let bytes = try? LocalFileSystem().readFile(pidFile, limit: 64),
              let pid = Int32(String(decoding: bytes, as: UTF8.self).trimmed()), pid > 1 else { return }
        // Only if that process is alive and still leads its own group (the job's).
        guard ProcessTable.liveGroup(of: pid) == pid else { return }
        _ = killpg(pid, SIGKILL)
    }
}
