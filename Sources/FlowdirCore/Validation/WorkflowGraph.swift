/// A node with its tool resolved and its effective ports: the tool's ports,
/// with the types the node declares for them (and, for built-in interactive
/// kinds, whatever ports the node adds).
public struct ResolvedNode: Sendable {
    public var spec: NodeSpec
    /// `nil` when no tool provides the kind: the node is blocked, "Tool not installed".
    public var tool: ToolDefinition?
    public var inputs: [PortSpec]
    public var outputs: [PortSpec]

    public var id: String { spec.id }

    public init(spec: NodeSpec, tool: ToolDefinition?, inputs: [PortSpec], outputs: [PortSpec]) {
        self.spec = spec
        self.tool = tool
        self.inputs = inputs
        self.outputs = outputs
    }

    /// With no tool and no declared ports, the ports are unknown until the
    /// tool is installed: edges to them are taken on trust.
    public var inputsKnown: Bool { tool != nil || spec.inputs != nil }
    public var outputsKnown: Bool { tool != nil || spec.outputs != nil }
    public var resourceClass: ResourceClass { spec.resourceClass ?? tool?.resourceClass ?? .local }

    /// The await that applies: the node's own block, or the default of an
    /// interactive tool kind.
    public var awaitSpec: AwaitSpec? {
        if let own = spec.awaitSpec { return own }
        guard let type = tool?.interaction else { return nil }
        if spec.kind == "ImageLoader", spec.params[key: "path"]?.value.stringValue?.isEmpty == false {
            return nil  // a loader with a path just copies it
        }
        return AwaitSpec(type: type)
    }
}

/// The validated DAG: nodes in template order, edges indexed both ways, and
/// a topological order (template order among independent nodes).
public struct WorkflowGraph: Sendable {
    public var template: WorkflowTemplate
    public var nodes: [ResolvedNode]
    public var order: [String]
    private var index: [String: Int]
    /// node → its place in `order`
    private var position: [String: Int] = [:]
    /// consumer node → input port → the edge feeding it
    public var incoming: [String: [String: EdgeSpec]]
    /// producer node → edges leaving it
    public private(set) var outgoing: [String: [EdgeSpec]]
    /// Per node, by its index in `nodes`: asked of every ready node on
    /// every event, where copying the whole node out to ask cost more.
    private var interactive: [Bool]
    private var classes: [ResourceClass]
    /// producer node → the nodes consuming it, each once (asked on every state change)
    private var consumerLists: [String: [String]] = [:]
    /// By place in `order`: the node's id, its index in `nodes`, its
    /// consumers' places, and its inputs as gating reads them. Gating runs
    /// on every event; reading these by place, not through dictionaries
    /// keyed by name, halved its cost.
    private var ordered: [OrderedNode] = []

    struct OrderedNode: Sendable {
        var id: String
        var index: Int
        var consumers: [Int]
        var feeds: [Feed]
    }

    /// An input port and the output feeding it.
    struct Feed: Sendable {
        var port: String
        var optional: Bool
        var producer: String
        var producerPort: String
    }

    /// `index` (id → place in `nodes`) and `successors` (per node, the
    /// places of its edges' consumers, an entry per edge) as the validator
    /// already has them: all edges' ends are known nodes.
    init(template: WorkflowTemplate, nodes: [ResolvedNode], index: [String: Int], successors: [[Int]]) {
        self.template = template
        self.nodes = nodes
        self.index = index
        interactive = nodes.map { $0.awaitSpec != nil }
        classes = nodes.map(\.resourceClass)
        var incoming: [String: [String: EdgeSpec]] = [:]
        var outgoing: [String: [EdgeSpec]] = [:]
        incoming.reserveCapacity(nodes.count)
        outgoing.reserveCapacity(nodes.count)
        for e in template.edges {
            if incoming[e.to.node]?[e.to.port] == nil { incoming[e.to.node, default: [:]][e.to.port] = e }
            outgoing[e.from.node, default: []].append(e)
        }
        self.incoming = incoming
        self.outgoing = outgoing
        consumerLists.reserveCapacity(outgoing.count)
        for (i, next) in successors.enumerated() where !next.isEmpty {
            var consumers: [String] = []
            // A handful each: a scan beats a set.
            for c in next where !consumers.contains(nodes[c].id) { consumers.append(nodes[c].id) }
            consumerLists[nodes[i].id] = consumers
        }
        self.order = GraphAlgorithms.topologicalOrder(count: nodes.count, successors: { successors[$0] }).map { nodes[$0].id }
        position.reserveCapacity(order.count)
        for (i, id) in order.enumerated() { position[id] = i }
        ordered = order.map { id in
            let n = index[id]!
            let edges = incoming[id] ?? [:]
            return OrderedNode(id: id, index: n, consumers: (consumerLists[id] ?? []).compactMap { position[$0] },
                               feeds: nodes[n].inputs.compactMap { port in
                                   edges[port.name].map { Feed(port: port.name, optional: port.optional, producer: $0.from.node, producerPort: $0.from.port) }
                               })
        }
    }

    /// A graph validated before, from its parts as `GraphCodec` keeps them:
    /// the template with its valid edges, and its nodes resolved, in
    /// template order. `nil` when they do not fit together.
    public init?(restoring template: WorkflowTemplate, nodes: [ResolvedNode]) {
        guard template.nodes.count == nodes.count else { return nil }
        var index: [String: Int] = [:]
        index.reserveCapacity(nodes.count)
        for (i, node) in nodes.enumerated() where index.updateValue(i, forKey: node.id) != nil { return nil }
        // As the validator has them: an entry per edge, in edge order.
        var successors = [[Int]](repeating: [], count: nodes.count)
        for e in template.edges {
            guard let from = index[e.from.node], let to = index[e.to.node] else { return nil }
            successors[from].append(to)
        }
        self.init(template: template, nodes: nodes, index: index, successors: successors)
    }

    /// The node at `place` in `order`.
    func ordered(at place: Int) -> OrderedNode { ordered[place] }

    /// Whether a person is asked before `id` runs (it has an await).
    public func isInteractive(_ id: String) -> Bool { index[id].map { interactive[$0] } ?? false }

    /// The queue `id` runs in.
    public func resourceClass(of id: String) -> ResourceClass? { index[id].map { classes[$0] } }

    /// Where `id` comes in `order`.
    public func position(of id: String) -> Int? { position[id] }

    public func node(_ id: String) -> ResolvedNode? { index[id].map { nodes[$0] } }

    /// Where `id` is in `nodes`.
    public func index(of id: String) -> Int? { index[id] }

    /// Nodes that consume `id`'s outputs, directly.
    public func consumers(of id: String) -> [String] { consumerLists[id] ?? [] }

    /// Every node downstream of `id`, in graph order.
    public func descendants(of id: String) -> [String] {
        var seen: Set<String> = [id]
        var stack = [id]
        while let next = stack.popLast() {
            for c in consumers(of: next) where seen.insert(c).inserted { stack.append(c) }
        }
        seen.remove(id)
        return order.filter(seen.contains)
    }
}

enum GraphAlgorithms {
    /// Kahn's algorithm; among nodes ready at once, the lowest index first.
    /// Nodes on a cycle are appended at the end in index order.
    static func topologicalOrder(count: Int, successors: (Int) -> [Int]) -> [Int] {
        var indegree = [Int](repeating: 0, count: count)
        var succ = [[Int]](repeating: [], count: count)
        for i in 0..<count {
            succ[i] = successors(i)
            for s in succ[i] { indegree[s] += 1 }
        }
        var ready = Heap()
        for i in 0..<count where indegree[i] == 0 { ready.push(i) }
        var out: [Int] = []
        out.reserveCapacity(count)
        while let i = ready.pop() {
            out.append(i)
            for s in succ[i] {
                indegree[s] -= 1
                if indegree[s] == 0 { ready.push(s) }
            }
        }
        if out.count < count {
            let placed = Set(out)
            out += (0..<count).filter { !placed.contains($0) }
        }
        return out
    }

    /// Strongly connected components with more than one node, or with a
    /// self-loop: each is a cycle to report. Iterative Tarjan, so a long
    /// chain cannot overflow the stack.
    static func cycles(count: Int, successors: [[Int]]) -> [[Int]] {
        var indexOf = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var next = 0
        var result: [[Int]] = []
        for root in 0..<count where indexOf[root] == -1 {
            var work: [(node: Int, edge: Int)] = [(root, 0)]
            indexOf[root] = next; low[root] = next; next += 1
            stack.append(root); onStack[root] = true
            while var frame = work.popLast() {
                let v = frame.node
                if frame.edge < successors[v].count {
                    let w = successors[v][frame.edge]
                    frame.edge += 1
                    work.append(frame)
                    if indexOf[w] == -1 {
                        indexOf[w] = next; low[w] = next; next += 1
                        stack.append(w); onStack[w] = true
                        work.append((w, 0))
                    } else if onStack[w] {
                        low[v] = min(low[v], indexOf[w])
                    }
                    continue
                }
                if let parent = work.last { low[parent.node] = min(low[parent.node], low[v]) }
                if low[v] == indexOf[v] {
                    var component: [Int] = []
                    while let w = stack.popLast() {
                        onStack[w] = false
                        component.append(w)
                        if w == v { break }
                    }
                    if component.count > 1 || successors[v].contains(v) {
                        result.append(component.sorted())
                    }
                }
            }
        }
        return result.sorted { $0[0] < $1[0] }
    }

    /// One cycle through `start` using only nodes of `component`, as a path
    /// that ends where it began.
    static func cyclePath(from start: Int, within component: Set<Int>, successors: [[Int]]) -> [Int] {
        var parent: [Int: Int] = [:]
        var queue = [start]
        var head = 0
        while head < queue.count {
            let v = queue[head]; head += 1
            for w in successors[v] where component.contains(w) {
                if w == start {
                    var path = [start]
                    var cur = v
                    while cur != start { path.append(cur); cur = parent[cur]! }
                    return [start] + path.dropFirst().reversed() + [start]
                }
                if parent[w] == nil { parent[w] = v; queue.append(w) }
            }
        }
        return [start, start]
    }

    /// A binary min-heap of indices.
    struct Heap {
        private var items: [Int] = []
        init() {}
        /// Already in order, it is a heap as it is.
        init(ascending: [Int]) { items = ascending }
        mutating func push(_ x: Int) {
            items.append(x)
            var i = items.count - 1
            while i > 0 {
                let p = (i - 1) / 2
                if items[p] <= items[i] { break }
                items.swapAt(p, i); i = p
            }
        }
        mutating func pop() -> Int? {
            guard !items.isEmpty else { return nil }
            let top = items[0]
            let last = items.removeLast()
            if !items.isEmpty {
                items[0] = last
                var i = 0
                while true {
                    let l = 2 * i + 1, r = l + 1
                    var m = i
                    if l < items.count, items[l] < items[m] { m = l }
                    if r < items.count, items[r] < items[m] { m = r }
                    if m == i { break }
                    items.swapAt(i, m); i = m
                }
            }
            return top
        }
    }
}
