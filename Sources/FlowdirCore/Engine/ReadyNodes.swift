/// An instance's ready nodes, kept in graph order as they come and go.
/// The engine takes them in that order on every event; sorting the set
/// each time (a DAG keeps ~20 ready for one free slot) cost more than the
/// rest of its look at them.
public struct ReadyNodes: Sendable {
    private var members: Set<String> = []
    /// Their places in the graph's order, ascending.
    private var places: [Int] = []

    public init() {}

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public func contains(_ id: String) -> Bool { members.contains(id) }

    /// A node not in `graph` is not taken: it can never start.
    public mutating func insert(_ id: String, in graph: WorkflowGraph) {
        guard let place = graph.position(of: id), members.insert(id).inserted else { return }
        places.insert(place, at: slot(of: place))
    }

    public mutating func remove(_ id: String, in graph: WorkflowGraph) {
        guard members.remove(id) != nil, let place = graph.position(of: id) else { return }
        let i = slot(of: place)
        if i < places.count, places[i] == place { places.remove(at: i) }
    }

    /// The ready nodes in graph order.
    public func inOrder(_ graph: WorkflowGraph) -> [String] { places.map { graph.order[$0] } }

    /// The first index whose place is not below `place`.
    private func slot(of place: Int) -> Int {
        var low = 0, high = places.count
        while low < high {
            let mid = (low + high) / 2
            if places[mid] < place { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
