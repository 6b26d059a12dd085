/// A validated graph, with the warnings found on the way, in `BinaryWriter`'s
/// form: what the workflow cache of an instance holds. Every stored field of
/// the model is written, locations included, so that a graph read back is
/// the graph that was written (`GraphCodecTests` compares them whole).
/// Enums travel by raw value; the cache is only read by the binary that
/// wrote it, so the format needs no versions of its own.
public enum GraphCodec {
    /// `base`: the folder the workflow is in; paths under it are kept relative (`BinaryWriter`).
    public static func encode(_ graph: WorkflowGraph, diagnostics: [Diagnostic], base: String? = nil) -> [UInt8] {
        var w = BinaryWriter(base: base)
        let t = graph.template
        w.string(t.schema)
        w.string(t.name)
        w.optional(t.file) { $0.path($1) }
        w.int(t.options.remoteConcurrency)
        w.int(t.options.localConcurrency)
        w.string(t.options.errorPolicy.rawValue)
        w.string(t.options.onChange.rawValue)
        // Each kind resolves to one tool: written once, named by place.
        var tools: [ToolDefinition] = []
        var place: [String: Int] = [:]
        for node in graph.nodes {
            if let tool = node.tool, place[tool.kind] == nil { place[tool.kind] = tools.count; tools.append(tool) }
        }
        w.array(tools, writeTool)
        w.array(graph.nodes) { w, node in
            writeNode(&w, node.spec)
            w.uint(node.tool.map { UInt64(place[$0.kind]! + 1) } ?? 0)
            w.array(node.inputs, writePort)
            w.array(node.outputs, writePort)
        }
        w.array(t.edges) { w, e in
            writePortRef(&w, e.from)
            writePortRef(&w, e.to)
            w.optional(e.location, writeLocation)
        }
        w.array(diagnostics) { w, d in
            w.string(d.severity.rawValue)
            w.string(d.code.rawValue)
            w.string(d.message)
            w.optional(d.location, writeLocation)
            w.optional(d.file) { $0.path($1) }
            w.optional(d.hint) { $0.string($1) }
        }
        return w.finish()
    }

    /// `nil` when the bytes are not a graph this code wrote. `base`: where
    /// the workflow is now; relative paths are read under it.
    public static func decode(_ bytes: ArraySlice<UInt8>, base: String = "") -> (graph: WorkflowGraph, diagnostics: [Diagnostic])? {
        do throws(BinaryReader.Malformed) {
            var r = try BinaryReader(bytes, base: base)
            var t = WorkflowTemplate(schema: try r.string(), name: try r.string())
            t.file = try r.optional { r throws(BinaryReader.Malformed) in try r.path() }
            t.options = WorkflowOptions(remoteConcurrency: try r.int(), localConcurrency: try r.int(),
                                        errorPolicy: try r.raw(ErrorPolicy.self), onChange: try r.raw(ChangePolicy.self))
            let tools = try r.array(readTool)
            let nodes = try r.array { r throws(BinaryReader.Malformed) -> ResolvedNode in
                let spec = try readNode(&r)
                let tool = Int(try r.uint())
                guard tool <= tools.count else { throw BinaryReader.Malformed() }
                return ResolvedNode(spec: spec, tool: tool == 0 ? nil : tools[tool - 1],
                                    inputs: try r.array(readPort), outputs: try r.array(readPort))
            }
            t.nodes = nodes.map(\.spec)
            t.edges = try r.array { r throws(BinaryReader.Malformed) in
                EdgeSpec(from: try readPortRef(&r), to: try readPortRef(&r), location: try r.optional(readLocation))
            }
            let diagnostics = try r.array { r throws(BinaryReader.Malformed) in
                let severity = try r.raw(Severity.self), code = try r.raw(DiagnosticCode.self), message = try r.string()
                let location = try r.optional(readLocation)
                var d = Diagnostic(severity, code, message, at: location)
                d.file = try r.optional { r throws(BinaryReader.Malformed) in try r.path() }
                d.hint = try r.optional { r throws(BinaryReader.Malformed) in try r.string() }
                return d
            }
            guard r.isAtEnd, let graph = WorkflowGraph(restoring: t, nodes: nodes) else { return nil }
            return (graph, diagnostics)
        } catch {
            return nil
        }
    }

    // MARK: Parts

    private static func writeLocation(_ w: inout BinaryWriter, _ l: SourceLocation) {
        w.path(l.file)
        w.int(l.line)
        w.int(l.column)
    }

    private static func readLocation(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> SourceLocation {
        SourceLocation(file: try r.path(), line: try r.int(), column: try r.int())
    }

    private static func writePortRef(_ w: inout BinaryWriter, _ p: PortRef) {
        w.string(p.node)
        w.string(p.port)
        w.optional(p.location, writeLocation)
    }

    private static func readPortRef(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> PortRef {
        PortRef(node: try r.string(), port: try r.string(), location: try r.optional(readLocation))
    }

    private static func writePort(_ w: inout BinaryWriter, _ p: PortSpec) {
        w.string(p.name)
        w.string(p.type.rawValue)
        w.bool(p.optional)
        w.optional(p.ext) { $0.string($1) }
        w.optional(p.location, writeLocation)
    }

    private static func readPort(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> PortSpec {
        PortSpec(name: try r.string(), type: try r.raw(PortType.self), optional: try r.bool(),
                 ext: try r.optional { r throws(BinaryReader.Malformed) in try r.string() }, location: try r.optional(readLocation))
    }

    private static func writeValue(_ w: inout BinaryWriter, _ v: ParamValue) {
        switch v {
        case .null: w.uint(0)
        case .bool(let b): w.uint(1); w.bool(b)
        case .int(let i): w.uint(2); w.int(i)
        case .double(let d): w.uint(3); w.double(d)
        case .string(let s): w.uint(4); w.string(s)
        case .array(let items): w.uint(5); w.array(items, writeValue)
        case .object(let entries): w.uint(6); w.array(entries, writeEntry)
        }
    }

    private static func readValue(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> ParamValue {
        switch try r.uint() {
        case 0: .null
        case 1: .bool(try r.bool())
        case 2: .int(try r.int())
        case 3: .double(try r.double())
        case 4: .string(try r.string())
        case 5: .array(try r.array(readValue))
        case 6: .object(try r.array(readEntry))
        default: throw BinaryReader.Malformed()
        }
    }

    private static func writeEntry(_ w: inout BinaryWriter, _ e: ParamEntry) {
        w.string(e.key)
        writeValue(&w, e.value)
        w.optional(e.location, writeLocation)
    }

    private static func readEntry(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> ParamEntry {
        ParamEntry(key: try r.string(), value: try readValue(&r), location: try r.optional(readLocation))
    }

    private static func writeAwait(_ w: inout BinaryWriter, _ a: AwaitSpec) {
        w.string(a.type.rawValue)
        w.bool(a.blocking)
        w.string(a.urgency.rawValue)
        w.optional(a.expiresIn) { w, d in w.double(d.seconds); w.string(d.text) }
        w.optional(a.notificationTitle) { $0.string($1) }
        w.optional(a.notificationBody) { $0.string($1) }
        w.string(a.onTimeout.rawValue)
        w.bool(a.allowSkip)
        w.array(a.choices) { $0.string($1) }
        w.optional(a.defaultChoice) { $0.string($1) }
        w.optional(a.ui) { $0.string($1) }
        w.optional(a.location, writeLocation)
    }

    private static func readAwait(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> AwaitSpec {
        let string = { (r: inout BinaryReader) throws(BinaryReader.Malformed) in try r.string() }
        return AwaitSpec(type: try r.raw(AwaitType.self), blocking: try r.bool(), urgency: try r.raw(Urgency.self),
                         expiresIn: try r.optional { r throws(BinaryReader.Malformed) in
                             // A cache file is read like any other: a duration out of range is a broken one.
                             guard let s = FlowDuration.checkedSeconds(try r.double()) else { throw BinaryReader.Malformed() }
                             return FlowDuration(seconds: s, text: try r.string())
                         },
                         notificationTitle: try r.optional(string), notificationBody: try r.optional(string),
                         onTimeout: try r.raw(TimeoutPolicy.self), allowSkip: try r.bool(), choices: try r.array(string),
                         defaultChoice: try r.optional(string), ui: try r.optional(string), location: try r.optional(readLocation))
    }

    private static func writeNode(_ w: inout BinaryWriter, _ n: NodeSpec) {
        w.string(n.id)
        w.string(n.kind)
        w.optional(n.title) { $0.string($1) }
        w.array(n.params, writeEntry)
        w.optional(n.inputs) { $0.array($1, writePort) }
        w.optional(n.outputs) { $0.array($1, writePort) }
        w.optional(n.awaitSpec, writeAwait)
        w.optional(n.resourceClass) { $0.string($1.rawValue) }
        w.optional(n.location, writeLocation)
        w.optional(n.kindLocation, writeLocation)
        w.optional(n.paramsLocation, writeLocation)
    }

    private static func readNode(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> NodeSpec {
        let ports = { (r: inout BinaryReader) throws(BinaryReader.Malformed) in try r.array(readPort) }
        return NodeSpec(id: try r.string(), kind: try r.string(),
                        title: try r.optional { r throws(BinaryReader.Malformed) in try r.string() },
                        params: try r.array(readEntry), inputs: try r.optional(ports), outputs: try r.optional(ports),
                        awaitSpec: try r.optional(readAwait),
                        resourceClass: try r.optional { r throws(BinaryReader.Malformed) in try r.raw(ResourceClass.self) },
                        location: try r.optional(readLocation), kindLocation: try r.optional(readLocation),
                        paramsLocation: try r.optional(readLocation))
    }

    private static func writeTool(_ w: inout BinaryWriter, _ t: ToolDefinition) {
        w.string(t.kind)
        w.optional(t.summary) { $0.string($1) }
        w.string(t.resourceClass.rawValue)
        w.array(t.inputs, writePort)
        w.array(t.outputs, writePort)
        w.array(t.params) { w, p in
            w.string(p.name)
            w.string(p.type.rawValue)
            w.optional(p.defaultValue, writeValue)
            w.optional(p.min) { $0.double($1) }
            w.optional(p.max) { $0.double($1) }
            w.optional(p.allowed) { $0.array($1, writeValue) }
            w.bool(p.summary)
            w.bool(p.required)
            w.optional(p.description) { $0.string($1) }
        }
        switch t.run {
        case .builtin: w.uint(0)
        case .command(let c):
            w.uint(1)
            w.array(c.arguments) { w, pieces in
                w.array(pieces) { w, piece in
                    switch piece {
                    case .literal(let s): w.uint(0); w.string(s)
                    case .input(let s): w.uint(1); w.string(s)
                    case .output(let s): w.uint(2); w.string(s)
                    case .param(let s): w.uint(3); w.string(s)
                    case .runDir: w.uint(4)
                    case .toolDir: w.uint(5)
                    }
                }
            }
        // A backend's entry as written, under its key: no tag per backend.
        case .backend(let key, let entries): w.uint(2); w.string(key); w.array(entries, writeEntry)
        }
        w.optional(t.interaction) { $0.string($1.rawValue) }
        w.bool(t.flexiblePorts)
        w.bool(t.acceptsAnyParams)
        w.optional(t.file) { $0.path($1) }
        w.array(t.presets) { w, p in
            w.string(p.name)
            w.array(p.params, writeEntry)
        }
    }

    private static func readTool(_ r: inout BinaryReader) throws(BinaryReader.Malformed) -> ToolDefinition {
        let string = { (r: inout BinaryReader) throws(BinaryReader.Malformed) in try r.string() }
        let double = { (r: inout BinaryReader) throws(BinaryReader.Malformed) in try r.double() }
        let kind = try r.string(), summary = try r.optional(string), resourceClass = try r.raw(ResourceClass.self)
        let inputs = try r.array(readPort), outputs = try r.array(readPort)
        let params = try r.array { r throws(BinaryReader.Malformed) in
            ParamSchema(name: try r.string(), type: try r.raw(ParamType.self), defaultValue: try r.optional(readValue),
                        min: try r.optional(double), max: try r.optional(double),
                        allowed: try r.optional { r throws(BinaryReader.Malformed) in try r.array(readValue) },
                        summary: try r.bool(), required: try r.bool(), description: try r.optional(string))
        }
        let run: RunSpec
        switch try r.uint() {
        case 0: run = .builtin
        case 1:
            run = .command(CommandTemplate(arguments: try r.array { r throws(BinaryReader.Malformed) in
                try r.array { r throws(BinaryReader.Malformed) -> CommandTemplate.Piece in
                    switch try r.uint() {
                    case 0: .literal(try r.string())
                    case 1: .input(try r.string())
                    case 2: .output(try r.string())
                    case 3: .param(try r.string())
                    case 4: .runDir
                    case 5: .toolDir
                    default: throw BinaryReader.Malformed()
                    }
                }
            }))
        case 2: run = .backend(key: try r.string(), entries: try r.array(readEntry))
        default: throw BinaryReader.Malformed()
        }
        var tool = ToolDefinition(kind: kind, summary: summary, resourceClass: resourceClass, inputs: inputs, outputs: outputs,
                                  params: params, run: run,
                                  interaction: try r.optional { r throws(BinaryReader.Malformed) in try r.raw(AwaitType.self) },
                                  flexiblePorts: try r.bool(), acceptsAnyParams: try r.bool(),
                                  file: try r.optional { r throws(BinaryReader.Malformed) in try r.path() })
        tool.presets = try r.array { r throws(BinaryReader.Malformed) in
            ParamPreset(name: try r.string(), params: try r.array(readEntry))
        }
        return tool
    }
}
