#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Committing: what an event changed is gathered in the instance's batch and
/// committed by `flush`, at once or, while jobs end in quick succession,
/// held for up to `EngineOptions.commitWindow` (see CommitGrouping.swift).
extension Engine {
    /// Whether the held group should go now, before its window closes.
    func heldGroupIsDue() -> Bool {
        var left = running.count
        var changes = 0
        var perChange = 0.0
        for rt in instances.values {
            left += rt.ready.count + rt.waiting
            changes += rt.batch.changes.count
            perChange = max(perChange, rt.store.secondsPerChange)
        }
        return grouping.isDue(nodesLeft: left, running: running.count, heldChanges: changes, secondsPerChange: perChange)
    }

    /// A held group is committed when its window closes, even if no job ends by then.
    func scheduleHeldFlush() {
        guard instances.values.contains(where: { !$0.batch.isEmpty }) else { return }
        let inbox = self.inbox
        grouping.scheduleFlush(clock: clock) { inbox.post(.flushDue) }
    }

    /// Adds to the instance's batch; `flush` makes the batch one commit.
    func commit(_ rt: InstanceRuntime, _ changes: [InstanceStore.Change], _ transitions: [Transition], event: String,
                summary: String? = nil) throws {
        guard !changes.isEmpty else { return }
        // A file put in place again while an earlier version waits in a held
        // group: that version is committed first, so its blob is kept.
        if holdCommits, !rt.batch.placed.isEmpty, changes.contains(where: { rt.batch.placed.contains($0.path) }) {
            try commitBatch(rt)
        }
        rt.batch.add(contentsOf: changes)
        rt.batch.transitions += transitions
        if rt.batch.event == nil { rt.batch.event = event }
        if let summary { rt.batch.summaries.append(summary) }
    }

    func flush() throws {
        guard !holdCommits else { return }
        for rt in instances.values where !rt.batch.isEmpty && !rt.heldForGit { try commitBatch(rt) }
    }

    func commitBatch(_ rt: InstanceRuntime) throws {
        let b = rt.batch
        rt.batch = Batch()
        let summary = b.summaries.isEmpty ? Summary.of(b.transitions)
            : Summary.of(b.transitions, prefix: b.summaries.joined(separator: "; "))
        let message = CommitMessage(summary: summary, event: b.event ?? "update", transitions: b.transitions)
        grouping.committed(at: clock.instant)
        if !rt.wasDone, b.transitions.contains(where: { $0.to == "succeeded" || $0.to == "skipped" }),
           rt.graph.order.allSatisfy({ rt.state($0) == .succeeded || rt.state($0) == .skipped }) {
            rt.wasDone = true
            rt.notices.append(FlowEvent(kind: .done, instance: rt.path, instanceTitle: rt.title,
                                        title: "finished", body: "\(rt.graph.order.count) steps done"))
        }
        // Jobs' bookkeeping (files under nodes/ only, nobody to tell) is
        // written on the store's thread while the loop goes on; anything a
        // person did or will be told of is committed before going on.
        let report = options.report
        let workDirectories = b.workDirectories
        if backgroundCommits, b.author == nil, b.removeAfterCommit.isEmpty, rt.notices.isEmpty,
           b.changes.allSatisfy({ $0.path.hasPrefix(InstancePaths.nodes + "/") }) {
            try rt.store.commitInBackground(b.changes, message: message) { _ in
                report(message.summary)
                Engine.remove(workDirectories)
            }
            return
        }
        try rt.store.commit(b.changes, message: message, author: b.author)
        for file in b.removeAfterCommit { try? Files.remove(file) }
        Engine.remove(workDirectories)
        report(message.summary)
        // People hear of it only once it is in git.
        for n in rt.notices { options.notifier.notify(n) }
        rt.notices = []
    }

    /// Ended jobs' work folders: usually empty, their outputs moved out.
    static func remove(_ workDirectories: [String]) {
        for dir in workDirectories where rmdir(dir) != 0 { try? Files.removeTree(dir) }
    }
}
