/// The well-formedness check for a template (docs/templates-and-tools.md,
/// "Validation"): everything that can be known before anything runs, all
/// reported at once.
public enum TemplateValidator {
    public struct Result: Sendable {
        public var diagnostics: [Diagnostic]
        /// The graph, when there are no errors.
        public var graph: WorkflowGraph?
    }

    /// - Parameter tools: finds the tool for a kind.
    public static func validate(_ template: WorkflowTemplate, tools: (String) -> ToolLookup) -> Result {
        var diags: [Diagnostic] = []
        let fallback = template.file.map { SourceLocation(file: $0, line: 1, column: 1) }

        // Nodes: ids, tools, effective ports, params. From here on a node is
        // its index in `resolved`: a 1,000-node template is checked on every
        // open, and hashing ids and port names again and again was most of it.
        var position: [String: Int] = [:]
        position.reserveCapacity(template.nodes.count)
        var resolved: [ResolvedNode] = []
        resolved.reserveCapacity(template.nodes.count)
        var toolCache: [String: ToolLookup] = [:]
        for node in template.nodes {
            if let first = position[node.id] {
                diags.append(.error(.duplicateNodeId, "node id '\(node.id)' is used more than once",
                                    at: node.location ?? fallback,
                                    hint: "first defined at \(resolved[first].spec.location.map(\.lineColumn) ?? "an earlier node"); node ids must be unique"))
                continue
            }
            position[node.id] = resolved.count
            let lookup: ToolLookup
            if let cached = toolCache[node.kind] { lookup = cached } else {
                lookup = tools(node.kind)
                toolCache[node.kind] = lookup
            }
            let tool = lookup.tool
            let here = node.location ?? fallback
            if case .notInstalled = lookup {
                diags.append(.warning(.toolNotInstalled,
                                      "node '\(node.id)' will be blocked — Tool not installed: \(node.kind)",
                                      at: node.kindLocation ?? here,
                                      hint: "add tools/\(node.kind).yaml beside the template or in ~/.config/flowdir/tools/"))
            }
            let (inputs, inDiags) = effectivePorts(node.inputs, tool: tool, toolPorts: tool?.inputs, node: node,
                                                   direction: "input", fallback: here)
            let (outputs, outDiags) = effectivePorts(node.outputs, tool: tool, toolPorts: tool?.outputs, node: node,
                                                     direction: "output", fallback: here)
            diags += inDiags + outDiags
            if let tool {
                diags += ParamValidator.check(node.params, node: node, tool: tool, fallback: node.paramsLocation ?? here)
            }
            if let a = node.awaitSpec { diags += checkAwait(a, node: node, fallback: here) }
            resolved.append(ResolvedNode(spec: node, tool: tool, inputs: inputs, outputs: outputs))
        }

        let ids = resolved.map(\.id)

        // Edges: ends exist, types fit, one producer per input port.
        // Per consumer (by index): its fed input ports, with the edge feeding each.
        var producers = [[(port: String, edge: EdgeSpec)]](repeating: [], count: resolved.count)
        // Inputs that some edge aims at, even a wrong one: they are not also
        // reported as unbound (one mistake, one error).
        var aimedAt = [[String]](repeating: [], count: resolved.count)
        var hasBadInputEdge = [Bool](repeating: false, count: resolved.count)
        var validEdges: [EdgeSpec] = []
        validEdges.reserveCapacity(template.edges.count)
        // Per producer (by index): its consumers' indices, an entry per valid edge.
        var successors = [[Int]](repeating: [], count: resolved.count)
        for edge in template.edges {
            let at = edge.location ?? fallback
            var ok = true
            var typesKnown = true
            var fromPort: PortSpec?, toPort: PortSpec?
            var ends = (from: -1, to: -1)
            for isFrom in [true, false] {
                let end = isFrom ? edge.from : edge.to
                let endAt = end.location ?? at
                guard let index = position[end.node] else {
                    diags.append(.error(.unknownNode, "edge '\(edge)' refers to node '\(end.node)', which does not exist",
                                        at: endAt, hint: Suggest.hint(for: end.node, in: ids)))
                    ok = false
                    continue
                }
                if isFrom { ends.from = index } else { ends.to = index }
                let ports = isFrom ? resolved[index].outputs : resolved[index].inputs
                if !(isFrom ? resolved[index].outputsKnown : resolved[index].inputsKnown) {
                    typesKnown = false
                    if !isFrom { aimedAt[index].append(end.port) }
                } else if let port = ports[port: end.port] {
                    if isFrom { fromPort = port } else { toPort = port; aimedAt[index].append(end.port) }
                } else {
                    if !isFrom { hasBadInputEdge[index] = true }
                    let kind = isFrom ? "output" : "input"
                    let names = ports.map(\.name)
                    diags.append(.error(.unknownPort, "node '\(end.node)' has no \(kind) port '\(end.port)'", at: endAt,
                                        hint: Suggest.hint(for: end.port, in: names)
                                            ?? (names.isEmpty ? "'\(end.node)' has no \(kind) ports"
                                                : "its \(kind) ports are: " + names.joined(separator: ", "))))
                    ok = false
                }
            }
            guard ok else { continue }
            guard typesKnown, let from = fromPort, let to = toPort else {
                validEdges.append(edge)
                successors[ends.from].append(ends.to)
                continue
            }
            if !from.type.isSubtype(of: to.type) {
                diags.append(.error(.portTypeMismatch,
                                    "edge '\(edge)' connects \(from.type) to \(to.type)",
                                    at: edge.to.location ?? at,
                                    hint: "'\(edge.to)' accepts \(to.type) or a subtype of it; '\(edge.from)' gives \(from.type)"))
                continue
            }
            if let first = producers[ends.to].first(where: { $0.port == edge.to.port })?.edge {
                let code: DiagnosticCode = to.optional ? .multiProducerOnOptionalPort : .multiProducerOnRequiredPort
                let kind = to.optional ? "optional" : "required"
                diags.append(.error(code, "\(kind) input '\(edge.to)' has more than one producer: '\(first.from)' and '\(edge.from)'",
                                    at: edge.location ?? at,
                                    hint: "the first edge is at \(first.location.map(\.lineColumn) ?? "?"); keep one edge into '\(edge.to)'"))
                continue
            }
            producers[ends.to].append((edge.to.port, edge))
            validEdges.append(edge)
            successors[ends.from].append(ends.to)
        }

        // Required inputs with nothing feeding them.
        for (i, node) in resolved.enumerated() where !hasBadInputEdge[i] {
            for port in node.inputs where !port.optional && !aimedAt[i].contains(port.name) {
                diags.append(.error(.unboundRequiredPort, "required input '\(node.id).\(port.name)' (\(port.type)) has no edge feeding it",
                                    at: port.location ?? node.spec.location ?? fallback,
                                    hint: "add an edge such as \"<node>.<port> -> \(node.id).\(port.name)\", or declare it optional as '\(port.type)?'"))
            }
        }

        // Cycles, each reported once, with its path.
        for component in GraphAlgorithms.cycles(count: resolved.count, successors: successors) {
            let path = GraphAlgorithms.cyclePath(from: component[0], within: Set(component), successors: successors)
            let names = path.map { resolved[$0].id }
            let (a, b) = (names[path.count - 2], names[path.count - 1])
            let closing = validEdges.first { $0.from.node == a && $0.to.node == b }
            diags.append(.error(.cycleDetected, "the graph has a cycle: \(names.joined(separator: " → "))",
                                at: closing?.location ?? resolved[path[0]].spec.location ?? fallback,
                                hint: "a workflow must be acyclic; remove one of the edges on this path"))
        }

        let graph = diags.hasErrors ? nil : WorkflowGraph(
            template: { var t = template; t.edges = validEdges; return t }(), nodes: resolved,
            index: position, successors: successors)
        return Result(diagnostics: diags, graph: graph)
    }

    /// The tool's ports, with the node's declared types; or the node's own
    /// ports when the tool is unknown or takes any ports.
    private static func effectivePorts(_ declared: [PortSpec]?, tool: ToolDefinition?, toolPorts: [PortSpec]?,
                                       node: NodeSpec, direction: String,
                                       fallback: SourceLocation?) -> ([PortSpec], [Diagnostic]) {
        guard let tool, let toolPorts else { return (declared ?? [], []) }
        guard let declared else {
            return (toolPorts.map { var p = $0; p.location = node.location ?? fallback; return p }, [])
        }
        var diags: [Diagnostic] = []
        var result: [PortSpec] = tool.flexiblePorts ? [] : toolPorts.map {
            var p = $0; p.location = node.location ?? fallback; return p
        }
        for port in declared {
            guard let toolPort = toolPorts[port: port.name] else {
                if tool.flexiblePorts { result.append(port); continue }
                diags.append(.error(.unknownPort, "node '\(node.id)': tool \(tool.kind) has no \(direction) port '\(port.name)'",
                                    at: port.location ?? fallback,
                                    hint: Suggest.hint(for: port.name, in: toolPorts.map(\.name))
                                        ?? "its \(direction) ports are: " + (toolPorts.isEmpty ? "(none)" : toolPorts.map(\.name).joined(separator: ", "))))
                continue
            }
            // An input may be narrowed (the tool takes FileRef, the node
            // wants ImageRef); an output may be widened.
            let fits = direction == "input" ? port.type.isSubtype(of: toolPort.type) : toolPort.type.isSubtype(of: port.type)
            if !fits {
                diags.append(.error(.portTypeMismatch,
                                    "node '\(node.id)' declares \(direction) '\(port.name)' as \(port.type), but tool \(tool.kind) has it as \(toolPort.type)",
                                    at: port.location ?? fallback,
                                    hint: "declare it as \(toolPort.type)" + (direction == "input" ? " or a subtype of it" : " or a supertype of it")))
                continue
            }
            var merged = port
            merged.ext = port.ext ?? toolPort.ext
            if let i = result.firstIndex(where: { $0.name == port.name }) { result[i] = merged } else { result.append(merged) }
        }
        return (result, diags)
    }

    private static func checkAwait(_ a: AwaitSpec, node: NodeSpec, fallback: SourceLocation?) -> [Diagnostic] {
        let at = a.location ?? fallback
        var out: [Diagnostic] = []
        if a.type == .choice, a.choices.isEmpty {
            out.append(.error(.invalidAwait, "node '\(node.id)': a choice await needs `choices`", at: at,
                              hint: "add `choices: [a, b]` to the await block"))
        }
        if let d = a.defaultChoice, !a.choices.isEmpty, !a.choices.contains(d) {
            out.append(.error(.invalidAwait, "node '\(node.id)': default '\(d)' is not one of the choices", at: at,
                              hint: Suggest.hint(for: d, in: a.choices) ?? "the choices are: " + a.choices.joined(separator: ", ")))
        }
        if a.onTimeout == .autoDefault, a.type == .choice, a.defaultChoice == nil, a.choices.count != 1 {
            out.append(.error(.invalidAwait, "node '\(node.id)': onTimeout autoDefault needs a `default` choice", at: at,
                              hint: "add `default: <choice>`, or use onTimeout cancel or skip"))
        }
        return out
    }
}

extension SourceLocation {
    /// `line 7, column 3`, for pointing at a second place in a hint.
    public var lineColumn: String { "line \(line), column \(column)" }
}
