import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// What executors say of jobs under way, taken into node states and
/// commits (docs/engine.md): submitted → queued/running → downloading → ended.
extension Engine {
    /// One update of run `run` of a node. Returns whether something may
    /// follow from it (a job ended: others may start).
    func handle(_ update: JobUpdate, of key: RunKey, run: Int) throws -> Bool {
        // A late word from a run that is over (cancelled, then run again).
        guard let job = running[key], job.run == run, let rt = instances[key.instance] else { return false }
        let now = clock.now()
        switch update {
        case .ended(let end, let log):
            try finish(key, end, log: log)
            return true
        case .progress(let p):
            try recordProgress(key, p)
        case .submitted(let id):
            running[key]?.offline = false
            var transitions: [Transition] = []
            var changes: [InstanceStore.Change] = []
            if case .blocked(.offline) = rt.state(key.node) {
                let (t, c) = try rt.apply(.enqueueRemote, to: key.node, run: run, job: id, now: now)
                transitions.append(t)
                changes.append(c)
            } else {
                changes.append(rt.updateState(key.node, now: now) { $0.job = id; $0.note = nil })
            }
            running[key]?.record.job = id
            try commit(rt, changes, transitions, event: "submitted", summary: "\(key.node) submitted as job \(id)")
        case .running:
            running[key]?.offline = false
            var transitions: [Transition] = []
            var changes: [InstanceStore.Change] = []
            if case .blocked(.offline) = rt.state(key.node) {
                let (t, c) = try rt.apply(.enqueueRemote, to: key.node, run: run, now: now)
                transitions.append(t)
                changes.append(c)
            }
            if rt.state(key.node) == .queuedRemote {
                let (t, c) = try rt.apply(.startRemote, to: key.node, run: run, now: now)
                transitions.append(t)
                changes.append(c)
            }
            try commit(rt, changes, transitions, event: "running")
        case .note(let text):
            guard rt.facts[key.node]?.state.note != text else { return false }
            let change = rt.updateState(key.node, now: now) { $0.note = text }
            try commit(rt, [change], [], event: "note", summary: "\(key.node): \(text ?? "back in touch")")
        case .offline(let endpoint, let since):
            running[key]?.offline = true
            guard rt.state(key.node) == .queuedRemote else { return false }
            let (t, c) = try rt.apply(.block(.offline(endpoint: endpoint, since: since)), to: key.node, run: run, now: now)
            try commit(rt, [c], [t], event: "offline")
        case .outputsReady:
            var transitions: [Transition] = []
            var changes: [InstanceStore.Change] = []
            if case .blocked(.offline) = rt.state(key.node) {
                let (t, c) = try rt.apply(.enqueueRemote, to: key.node, run: run, now: now)
                transitions.append(t)
                changes.append(c)
            }
            if rt.state(key.node) != .downloading {
                let (t, c) = try rt.apply(.startDownload, to: key.node, run: run, now: now)
                transitions.append(t)
                changes.append(c)
            }
            try commit(rt, changes, transitions, event: "download")
            guard let spec = job.spec, let executor = job.executor else { return false }
            let jobID = rt.facts[key.node]?.state.job
            let inbox = self.inbox
            Task {
                do throws(NodeError) {
                    try await executor.fetchOutputs(spec, jobID: jobID)
                    inbox.post(.job(key, run: run, .ended(.succeeded, log: nil)))
                } catch {
                    inbox.post(.job(key, run: run, .ended(.failed(error), log: nil)))
                }
            }
        }
        return false
    }
}

extension InstanceRuntime {
    /// A change to a node's state record that is no transition (its job
    /// id, a note): the new record, to commit.
    func updateState(_ node: String, now: Timestamp, _ change: (inout NodeStateRecord) -> Void) -> InstanceStore.Change {
        change(&facts[node]!.state)
        facts[node]!.state.updatedAt = now
        let state = facts[node]!.state
        return .encode(InstancePaths.state(node)) { InstanceCodec.encode(state) }
    }
}
