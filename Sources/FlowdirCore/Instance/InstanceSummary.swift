/// The first state of each node of a new instance: what can start, and why
/// the rest cannot (docs/engine.md, gating, before anything has run).
public enum InitialStates {
    public static func of(_ graph: WorkflowGraph) -> [String: NodeState] {
        var states: [String: NodeState] = [:]
        for id in graph.order {
            guard let node = graph.node(id) else { continue }
            if node.tool == nil {
                states[id] = .blocked(.toolNotInstalled(kind: node.spec.kind))
                continue
            }
            // Required inputs, and optional ones with a producer, wait for it.
            let waiting = node.inputs.lazy.compactMap { port -> BlockReason? in
                guard let edge = graph.incoming[id]?[port.name] else { return nil }
                return .waitingFor(port: port.name, node: edge.from.node)
            }.first
            states[id] = waiting.map(NodeState.blocked) ?? .ready
        }
        return states
    }
}

/// How an instance reads in a list: its status and `n/m steps`.
public struct InstanceSummary: Hashable, Sendable {
    public enum Status: String, Sendable, CaseIterable {
        case running, waiting, blocked, ready, failed, done, empty

        /// For `ls --filter`: active is anything not finished.
        public var isActive: Bool { self != .done && self != .failed && self != .empty }
    }

    public var status: Status
    public var finishedSteps: Int
    public var totalSteps: Int

    public init(states: [NodeState]) {
        totalSteps = states.count
        finishedSteps = states.filter { if case .succeeded = $0 { true } else if case .skipped = $0 { true } else { false } }.count
        if states.isEmpty { status = .empty }
        else if states.contains(where: { if case .failed = $0 { true } else { false } }) { status = .failed }
        else if finishedSteps == totalSteps { status = .done }
        else if states.contains(where: \.isActive) { status = .running }
        else if states.contains(.awaitingUser) { status = .waiting }
        else if states.contains(.ready) { status = .ready }
        else if states.allSatisfy({ $0.isTerminal }) { status = .done }
        else { status = .blocked }
    }

    public var steps: String { "\(finishedSteps)/\(totalSteps)" }
}

/// A folder name from a title: `My Photo #2` → `my-photo-2`.
public enum Slug {
    public static func make(_ title: String) -> String {
        var out = ""
        var dash = false
        for c in title.lowercased().unicodeScalars {
            if (c >= "a" && c <= "z") || (c >= "0" && c <= "9") {
                out.unicodeScalars.append(c)
                dash = false
            } else if !dash, !out.isEmpty {
                out += "-"
                dash = true
            }
        }
        while out.hasSuffix("-") { out.removeLast() }
        return out.isEmpty ? "workflow" : String(out.prefix(60))
    }
}

/// The param digest of a tool card: the tool's `summary` params as they are
/// set (`steps=30 · cfg=4.0`).
public enum ParamDigest {
    public static func make(_ params: [ParamEntry], tool: ToolDefinition?) -> String {
        guard let tool else { return "" }
        return tool.params.filter(\.summary).compactMap { schema in
            let value = params[key: schema.name]?.value ?? schema.defaultValue
            return value.map { "\(schema.name)=\($0.plainText)" }
        }.joined(separator: " · ")
    }
}
