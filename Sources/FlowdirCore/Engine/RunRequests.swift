/// What a person's `flowdir retry` and `rerun` ask of the engine, decided
/// from the node's facts alone (`RunRequestsTests`); the engine carries it
/// out and commits it (`Engine.requestRetry`, `requestRerun`).
public enum RunRequests {
    public enum Retry: Equatable, Sendable {
        /// Run again with that run's inputs (blob ids) and params.
        case from(RunRecord)
        /// No run ever started (its inputs were missing, its tool gone): what
        /// there is to retry is the start itself, with the current inputs.
        case startAgain
        /// Running, or never tried: nothing to retry.
        case refused
        /// The run asked for has no record.
        case noSuchRun(Int)
    }

    /// - Parameters:
    ///   - from: the run to retry from (a person's choice in the run history); nil: the last that started.
    ///   - record: the record of a run by its number.
    ///   - lastStarted: the newest run record below the node's current run,
    ///     read only when its last attempt froze nothing.
    public static func retry(_ facts: NodeFacts, from: Int? = nil, record: (Int) -> RunRecord? = { _ in nil },
                             lastStarted: () -> RunRecord?) -> Retry {
        guard !facts.state.state.isActive else { return .refused }
        if let from {
            if facts.lastRun?.run == from, let last = facts.lastRun { return .from(last) }
            return record(from).map { .from($0) } ?? .noSuchRun(from)
        }
        // Its last attempt failed before it started: that attempt froze
        // nothing; the last run that started did.
        if let last = facts.lastRun ?? lastStarted() { return .from(last) }
        return facts.state.run > 0 ? .startAgain : .refused
    }

    /// Rerun of `node`, and with `downstream` of everything after it that is
    /// neither running nor asking a person: each runs again, and each of
    /// those below `node` waits for it first.
    public static func rerun(_ node: String, downstream: Bool, graph: WorkflowGraph,
                             state: (String) -> NodeState) -> (again: [String], wait: [(node: String, reason: BlockReason)]) {
        var again = [node]
        var wait: [(node: String, reason: BlockReason)] = []
        guard downstream else { return (again, wait) }
        for d in graph.descendants(of: node) where !state(d).isActive && state(d) != .awaitingUser {
            again.append(d)
            let reason = BlockReason.waitingFor(port: graph.incoming[d]?.first?.key ?? "input", node: node)
            if state(d) != .blocked(reason) { wait.append((d, reason)) }
        }
        return (again, wait)
    }
}
