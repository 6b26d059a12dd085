#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Inputs fetched on demand (docs/storage.md): a node whose input's
/// content is kept beside git and is not on this machine gets it from the
/// sync remote before it starts; when that cannot be done now, the node is
/// blocked "Input not on this machine: origin unreachable" and tried again
/// later, resuming by itself once the content comes.
extension Engine {
    /// Whether `node` must wait for its inputs' content: if so, a fetch is
    /// under way and the node starts once it has come. False when nothing
    /// is missing, or when there is no remote to ask (then the start fails
    /// and says how to get it).
    func fetchesInputsFirst(_ rt: InstanceRuntime, _ node: ResolvedNode, pending: PendingRun?) -> Bool {
        let key = RunKey(instance: rt.path, node: node.id)
        if fetching[key] != nil { return true }
        let missing = LargeInputs.absent(rt, node: node, pending: pending)
        guard !missing.isEmpty, let remote = try? ContentRemotes.forGitRemote(options.syncRemote, of: rt.store.repository, instance: rt.path)
        else { return false }
        let store = rt.store.contentStore
        let inbox = self.inbox
        let bytes = missing.reduce(Int64(0)) { $0 + $1.size }
        options.report("\(node.id): fetching \(missing.count) input file\(missing.count == 1 ? "" : "s") (\(ByteCount(Int(bytes)))) from \(remote.name)")
        fetching[key] = Task {
            var failure: ContentRemoteError?
            do throws(ContentRemoteError) { try await remote.download(missing, into: store) } catch { failure = error }
            inbox.post(.fetched(key, failure: failure))
        }
        return true
    }

    /// A fetch has ended. Its node starts (made ready again if it was
    /// blocked), is blocked until the next try, or fails when trying again
    /// cannot help. Returns whether anything changed.
    func fetched(_ key: RunKey, failure: ContentRemoteError?) throws -> Bool {
        fetching[key] = nil
        guard let rt = instances[key.instance] else { return false }
        let now = clock.now()
        let state = rt.state(key.node)
        guard let failure else {
            fetchRetry[key] = nil
            if case .blocked(.inputNotHere) = state {
                let (t, c) = try rt.set(.ready, on: key.node, now: now)
                try commit(rt, [c], [t], event: "fetched")
            }
            return true
        }
        // Cancelled, skipped or taken back by gating meanwhile: not ours to change.
        switch state {
        case .ready, .blocked(.inputNotHere): break
        default: return false
        }
        if let detail = Self.retryable(failure) {
            let delay = min(Self.fetchRetryLimit, (fetchRetry[key]?.delay ?? Self.fetchRetryFirst / 2) * 2)
            fetchRetry[key] = (now + delay, delay)
            guard state != .blocked(.inputNotHere(detail: detail)) else { return false }
            let (t, c) = try rt.set(.blocked(.inputNotHere(detail: detail)), on: key.node, now: now)
            try commit(rt, [c], [t], event: "blocked")
            return true
        }
        fetchRetry[key] = nil
        let err = NodeError(summary: "an input's content could not be fetched: \(failure)", code: "inputNotFetched",
                            hint: failure.hint ?? "`\(Shell.command(["flowdir", "storage", "get", rt.path]))` once that is fixed, then `flowdir run`")
        let (t, c) = try rt.apply(.fail(err), to: key.node, run: rt.nextRunNumber(key.node), now: now)
        try commit(rt, [c], [t], event: "fail")
        return true
    }

    /// Tries again, once due, to fetch the inputs of nodes blocked for
    /// them; a node whose content came meanwhile (`flowdir storage get`)
    /// is made ready at once. Only the nodes `fetchRetry` names are looked
    /// at: this runs on every event.
    func retryFetches(_ rt: InstanceRuntime, now: Timestamp) throws {
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        for (key, retry) in fetchRetry where key.instance == rt.path && retry.at <= now && fetching[key] == nil {
            guard case .blocked(.inputNotHere) = rt.state(key.node), let node = rt.graph.node(key.node) else {
                fetchRetry[key] = nil  // it moved on by other means (gating, cancel, skip)
                continue
            }
            if LargeInputs.absent(rt, node: node, pending: rt.pending[key.node]).isEmpty
                || !fetchesInputsFirst(rt, node, pending: rt.pending[key.node]) {
                // Here now; or no remote to ask any more: ready, so that its start says what is missing.
                fetchRetry[key] = nil
                let (t, c) = try rt.set(.ready, on: key.node, now: now)
                transitions.append(t)
                changes.append(c)
            }
        }
        try commit(rt, changes, transitions, event: "fetched")
    }

    /// An instance just opened: its nodes blocked for their inputs' content
    /// are tried again at once (a new `flowdir run`), or when their retry
    /// is due (the watcher taking an instance up again).
    func noteBlockedForInputs(_ rt: InstanceRuntime, now: Timestamp) {
        for (id, f) in rt.facts {
            guard case .blocked(.inputNotHere) = f.state.state else { continue }
            let key = RunKey(instance: rt.path, node: id)
            if fetchRetry[key] == nil { fetchRetry[key] = (now, Self.fetchRetryFirst / 2) }
        }
    }

    /// The soonest retry of a fetch, and the instances it is for.
    func nextFetchRetry() -> (at: Timestamp, paths: Set<String>)? {
        guard let soonest = fetchRetry.values.map(\.at).min() else { return nil }
        return (soonest, Set(fetchRetry.filter { $0.value.at <= soonest + 0.05 }.map(\.key.instance)))
    }

    /// What a node blocked for its input says, for failures that another
    /// try may mend; nil for those it cannot (refused, changed content).
    static func retryable(_ failure: ContentRemoteError) -> String? {
        switch failure {
        case .unreachable(let remote, _): "\(remote) unreachable"
        case .missing(let remote, _): "\(remote) does not have it yet"
        case .local(let f) where f.isNoSpace: "no space left here to fetch it"
        default: nil
        }
    }

    static let fetchRetryFirst = 5.0
    static let fetchRetryLimit = 60.0
}
