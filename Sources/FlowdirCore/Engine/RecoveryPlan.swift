/// One run of one node.
public struct NodeRun: Hashable, Sendable, CustomStringConvertible {
    public var node: String
    public var run: Int
    public init(_ node: String, _ run: Int) {
        self.node = node
        self.run = run
    }
    public var description: String { "\(node).\(run)" }

    /// A job's work folder's name, `<node>.<run>`; nil for any other name.
    public init?(workFolder name: String) {
        guard let dot = name.lastIndex(of: "."), let run = Int(name[name.index(after: dot)...]),
              RunRecord.runNumbers.contains(run) else { return nil }
        self.init(String(name[..<dot]), run)
    }
}

/// What picking up after a crash (even kill -9) does, decided from HEAD's
/// node states and the work folders the stopped flowdir left. Pure, so
/// that each case is tested without a crash (`RecoveryPlanTests`); the
/// engine carries it out (`Engine.recoverInterrupted`), and the kill
/// scripts in `Benchmarks/reliability` test the whole for real.
///
/// The rule it keeps: nothing stays "running", nothing runs twice under
/// one number, and no execution goes unrecorded.
public struct RecoveryPlan: Equatable, Sendable {
    /// A node as HEAD has it.
    public struct Node: Sendable {
        public var id: String
        public var state: NodeState
        /// The run its state names (0: it never ran).
        public var run: Int
        /// A remote backend's node whose submission is recorded: its job may go on without us.
        public var submittedRemote: Bool
        public init(id: String, state: NodeState, run: Int, submittedRemote: Bool) {
            self.id = id
            self.state = state
            self.run = run
            self.submittedRemote = submittedRemote
        }
    }

    /// Remote runs that went on without flowdir: followed again, never sent twice.
    public var follow: [String] = []
    /// Runs HEAD has as under way here: recorded as failed ("interrupted"), and run again.
    public var interrupted: [NodeRun] = []
    /// Launched, but no commit records their start: recorded as interrupted
    /// under their own numbers, so the next run has the next number.
    public var unrecorded: [NodeRun] = []
    /// Nodes that never ran: their state now names the run recorded for them
    /// (the next number is taken from the state alone).
    public var renumber: [NodeRun] = []

    public init() {}

    /// - Parameters:
    ///   - nodes: in the graph's order.
    ///   - workFolders: the names in `.flowdir/work/`.
    ///   - holder: whether this machine runs the instance's jobs (its
    ///     lease). If not, only what this machine itself left is dealt with.
    ///   - nextRun: the number a new run of a node would take.
    ///   - ranHere: whether HEAD's record of that run says this machine ran it.
    public static func make(nodes: [Node], workFolders: [String], holder: Bool,
                            nextRun: (String) -> Int, ranHere: (NodeRun) -> Bool) -> RecoveryPlan {
        var plan = RecoveryPlan()
        var byID: [String: Node] = [:]
        for n in nodes { byID[n.id] = n }
        if holder {
            plan.follow = nodes.filter { n in
                guard n.submittedRemote else { return false }
                if case .blocked(.offline) = n.state { return true }
                return n.state.isActive
            }.map(\.id)
            let following = Set(plan.follow)
            plan.interrupted = nodes.filter { $0.state.isActive && !following.contains($0.id) }.map { NodeRun($0.id, $0.run) }
            // A folder for a run HEAD has at that number or later is recorded already.
            plan.unrecorded = workFolders.compactMap(NodeRun.init(workFolder:))
                .filter { r in byID[r.node].map { $0.run < r.run } ?? false }
                .sorted { ($0.node, $0.run) < ($1.node, $1.run) }
            var highest: [String: Int] = [:]
            for r in plan.unrecorded { highest[r.node] = max(highest[r.node] ?? 0, r.run) }
            plan.renumber = highest.filter { byID[$0.key]?.run == 0 }.map { NodeRun($0.key, $0.value) }
                .sorted { $0.node < $1.node }
        } else {
            // Another machine ran these nodes on since, under the same
            // numbers: what ran here is recorded after its runs, unless
            // HEAD has it as this machine's.
            var taken: [String: Int] = [:]
            let left = workFolders.compactMap(NodeRun.init(workFolder:)).sorted { ($0.node, $0.run) < ($1.node, $1.run) }
            for r in left where byID[r.node] != nil && !ranHere(r) {
                let next = max(nextRun(r.node), (taken[r.node] ?? 0) + 1)
                taken[r.node] = next
                plan.unrecorded.append(NodeRun(r.node, next))
            }
        }
        return plan
    }
}
