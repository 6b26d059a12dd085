/// A node's current output on one port: the file and the exact bytes.
public struct OutputRef: Hashable, Sendable {
    public var blob: String
    /// Relative to the instance: `nodes/load1/out/image.png`.
    public var file: String
    public var run: Int
    /// The content's SHA-256 when it is kept beside git (its file is committed as a pointer).
    public var sha256: String?

    public init(blob: String, file: String, run: Int, sha256: String? = nil) {
        self.blob = blob
        self.file = file
        self.run = run
        self.sha256 = sha256
    }
}

/// What the engine knows about one node when it evaluates.
public struct NodeFacts: Sendable {
    public var state: NodeStateRecord
    /// The run whose outputs are current (a succeeded node's last run).
    public var lastRun: RunRecord?
    public var params: [ParamEntry]
    public var outputs: [String: OutputRef]

    public init(state: NodeStateRecord, lastRun: RunRecord? = nil, params: [ParamEntry] = [], outputs: [String: OutputRef] = [:]) {
        self.state = state
        self.lastRun = lastRun
        self.params = params
        self.outputs = outputs
    }
}

/// An input a run will use.
public struct InputBinding: Hashable, Sendable {
    public var port: String
    public var node: String
    public var sourcePort: String
    public var output: OutputRef
}

/// The gating rule and stale outputs of docs/engine.md, as a pure function
/// from what is known to the state each node should be in.
public enum Gating {
    /// The state each node should move to, where it differs from now. Nodes
    /// are taken in graph order, so a change upstream is seen downstream in
    /// the same pass.
    ///
    /// - Parameter touched: only these nodes, and the consumers of any node
    ///   whose state changes on the way, are looked at (`nil`: all). An event
    ///   touches a node or two; looking at every node on every event would
    ///   make a run of N nodes cost N².
    public static func evaluate(_ graph: WorkflowGraph, facts: [String: NodeFacts],
                                touched: Set<String>? = nil) -> [(node: String, state: NodeState)] {
        var known = Known(facts: facts)
        // Places in graph order still to look at, smallest first: consumers
        // always come later, so one pass from the first touched node sees
        // every knock-on change. An event touches a node or two: a heap of
        // a few places, not a flag for each of the graph's nodes.
        var pending = GraphAlgorithms.Heap(ascending: touched == nil ? Array(graph.order.indices)
            : (touched ?? []).compactMap { graph.position(of: $0) }.sorted())
        var changes: [(node: String, state: NodeState)] = []
        var last = -1
        while let place = pending.pop() {
            guard place != last else { continue }  // queued twice: the copies come out together
            last = place
            let entry = graph.ordered(at: place)
            guard let current = facts[entry.id]?.state.state else { continue }
            let effective = known.effective[entry.id] ?? current
            guard let next = desired(graph, entry, current: effective, known: known), next != effective else { continue }
            known.effective[entry.id] = next
            changes.append((entry.id, next))
            // Later in the order (on a cycle, which a valid graph has none of, not).
            for c in entry.consumers where c > place { pending.push(c) }
        }
        return changes
    }

    /// The facts, and the states this pass has already changed.
    struct Known {
        let facts: [String: NodeFacts]
        var effective: [String: NodeState] = [:]

        func state(_ id: String) -> NodeState? {
            if !effective.isEmpty, let s = effective[id] { return s }
            return facts[id]?.state.state
        }
    }

    static func desired(_ graph: WorkflowGraph, _ entry: WorkflowGraph.OrderedNode, current: NodeState, known: Known) -> NodeState? {
        switch current {
        case .succeeded:
            // Stale? Same bytes and same params never count as a change.
            let rerun = graph.template.options.onChange == .rerun
            guard let f = known.facts[entry.id], let run = f.lastRun else { return nil }
            if !sameParams(run.params, f.params) { return rerun ? .ready : .blocked(.paramsChanged) }
            for used in run.inputs {
                guard let edge = graph.incoming[entry.id]?[used.port] else { continue }
                let now = known.facts[edge.from.node]?.outputs[edge.from.port]
                if let now, now.blob != used.blob {
                    return rerun ? .ready : .blocked(.inputChanged(node: edge.from.node))
                }
            }
            return nil
        case .blocked(.paramsChanged), .blocked(.inputChanged), .blocked(.paramsConflict):
            return nil  // waits for `flowdir rerun` (or onChange: rerun, handled above)
        case .blocked(.offline):
            return nil  // its job waits for the endpoint, with its executor
        case .blocked(.inputNotHere):
            // Its inputs are there to use, but one's content is not on this
            // machine: the engine fetches it and makes the node ready
            // (`Engine.fetchInputs`). Gating takes it back only when an input is not.
            let gated = gate(entry.feeds, state: known.state, facts: known.facts)
            return gated == .ready ? nil : gated
        case .blocked, .ready:
            if graph.nodes[entry.index].tool == nil { return .blocked(.toolNotInstalled(kind: graph.nodes[entry.index].spec.kind)) }
            return gate(entry.feeds, state: known.state, facts: known.facts)
        default:
            return nil  // under way, waiting for a person, or finished: not gating's to change
        }
    }

    /// `ready` when every required input is bound to a succeeded producer's
    /// output; otherwise blocked, saying exactly why.
    static func gate(_ feeds: [WorkflowGraph.Feed], state: (String) -> NodeState?, facts: [String: NodeFacts]) -> NodeState {
        for feed in feeds {
            let producer = feed.producer
            switch state(producer) {
            case .succeeded?:
                if facts[producer]?.outputs[feed.producerPort] != nil { continue }
                if feed.optional { continue }  // succeeded without this output: absent
                return .blocked(.waitingFor(port: feed.port, node: producer))
            case .failed?, .cancelled?:
                if feed.optional { continue }
                return .blocked(.upstreamFailed(node: producer))
            case .skipped?:
                if feed.optional { continue }
                return .blocked(.upstreamSkipped(node: producer))
            case .blocked(.upstreamFailed(let root))?:
                if feed.optional { continue }
                return .blocked(.upstreamFailed(node: root))
            default:
                return .blocked(.waitingFor(port: feed.port, node: producer))
            }
        }
        return .ready
    }

    /// The inputs a run of `node` would use now; absent optional inputs are left out.
    public static func bindings(_ node: ResolvedNode, graph: WorkflowGraph, facts: [String: NodeFacts]) -> [InputBinding] {
        node.inputs.compactMap { port in
            guard let edge = graph.incoming[node.id]?[port.name],
                  facts[edge.from.node]?.state.state == .succeeded,
                  let out = facts[edge.from.node]?.outputs[edge.from.port] else { return nil }
            return InputBinding(port: port.name, node: edge.from.node, sourcePort: edge.from.port, output: out)
        }
    }

    public static func sameParams(_ a: [ParamEntry], _ b: [ParamEntry]) -> Bool {
        guard a.count == b.count else { return false }
        var map: [String: ParamValue] = [:]
        for e in a { map[e.key] = e.value }
        return b.allSatisfy { e in map[e.key].map { same($0, e.value) } ?? false }
    }

    /// `4` and `4.0` are the same number.
    static func same(_ a: ParamValue, _ b: ParamValue) -> Bool {
        if let x = a.numberValue, let y = b.numberValue { return x == y }
        return a == b
    }
}
