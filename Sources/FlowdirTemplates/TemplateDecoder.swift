import FlowdirCore

/// `MarkedValue` → `WorkflowTemplate`. Keeps going past every problem so a
/// person sees all of them at once; what cannot be read is left out.
enum TemplateDecoder {
    static func decode(_ root: MarkedValue, file: String, sink: DiagnosticSink) -> WorkflowTemplate? {
        guard var r = MappingReader(root, context: "the template", sink: sink) else { return nil }
        var template = WorkflowTemplate(name: Path.removingExtension(Path.basename(file)), file: file)

        if let entry = r.entry("schema") {
            let schema = entry.value.scalarText ?? ""
            template.schema = schema
            if !TemplateSchema.supported.contains(schema) {
                sink.error(.unsupportedSchema, "unsupported schema '\(schema)'", at: entry.value.location,
                           hint: "flowdir reads " + TemplateSchema.supported.joined(separator: " and ")
                               + "; a newer flowdir may read this one")
            }
        } else {
            sink.error(.unsupportedSchema, "the template does not say which schema it uses", at: root.location,
                       hint: "add `schema: \(TemplateSchema.supported[0])` at the top")
        }
        if let name = r.string("name") { template.name = name }
        _ = r.string("description")

        if let nodes = r.value("nodes") {
            if let items = nodes.items {
                template.nodes = items.compactMap { decodeNode($0, sink: sink) }
            } else {
                sink.malformed("`nodes` must be a list, found \(nodes.kindName)", at: nodes.location,
                               hint: "write each node as a list item: `- id: load1`")
            }
        } else {
            sink.malformed("the template has no `nodes`", at: root.location, hint: "add `nodes:` with at least one node")
        }

        if let edges = r.value("edges") {
            if let items = edges.items {
                template.edges = items.compactMap { decodeEdge($0, sink: sink) }
            } else if case .null = edges.kind {
            } else {
                sink.malformed("`edges` must be a list, found \(edges.kindName)", at: edges.location)
            }
        }

        if let options = r.value("options") { template.options = decodeOptions(options, sink: sink) }
        r.finish()
        return template
    }

    static func decodeNode(_ value: MarkedValue, sink: DiagnosticSink) -> NodeSpec? {
        let provisional = value.entries?.first { $0.key == "id" }?.value.scalarText
        guard var r = MappingReader(value, context: provisional.map { "node '\($0)'" } ?? "a node", sink: sink) else { return nil }
        guard let id = r.string("id", required: true) else { return nil }
        let idAt = r.entry("id")?.value.location ?? value.location
        guard Names.isIdentifier(id) else {
            sink.malformed("node id '\(id)' must be a plain name: letters, digits, _ and -, starting with a letter", at: idAt,
                           hint: "ids name folders and inbox files (nodes/<id>/, inbox/<id>.<port>.png)")
            return nil
        }
        var node = NodeSpec(id: id, kind: "", location: idAt)
        if let kind = r.string("kind", required: true) {
            let at = r.entry("kind")?.value.location ?? idAt
            if Names.isKind(kind) {
                node.kind = kind
                node.kindLocation = at
            } else {
                sink.malformed("tool kind '\(kind)' of node '\(id)' must be a plain name (letters, digits, _ - .)", at: at)
                return nil
            }
        } else { return nil }
        node.title = r.string("title")
        _ = r.string("description")
        if let params = r.entry("params") {
            node.paramsLocation = params.keyLocation
            switch params.value.kind {
            case .mapping: if case .object(let entries) = params.value.paramValue { node.params = entries }
            case .null: break
            default: sink.malformed("`params` of node '\(id)' must be a mapping, found \(params.value.kindName)", at: params.value.location)
            }
        }
        if let v = r.value("inputs") { node.inputs = PortReader.read(v, context: "the inputs of node '\(id)'", sink: sink) }
        if let v = r.value("outputs") { node.outputs = PortReader.read(v, context: "the outputs of node '\(id)'", sink: sink) }
        if let v = r.value("await") { node.awaitSpec = decodeAwait(v, node: id, sink: sink) }
        if let v = r.value("resources") { node.resourceClass = decodeResourceClass(v, context: "node '\(id)'", sink: sink) }
        r.finish()
        return node
    }

    /// `resources: {class: remote}`, or just `resources: remote`.
    static func decodeResourceClass(_ value: MarkedValue, context: String, sink: DiagnosticSink) -> ResourceClass? {
        let names = ResourceClass.allCases.map(\.rawValue)
        func parse(_ v: MarkedValue) -> ResourceClass? {
            guard let s = v.scalarText, let c = ResourceClass(rawValue: s) else {
                sink.error(.invalidResourceClass, "resource class of \(context) must be one of \(names.joined(separator: ", ")), found \(v.scalarText.map { "'\($0)'" } ?? v.kindName)",
                           at: v.location, hint: v.scalarText.flatMap { Suggest.hint(for: $0, in: names) } ?? "local runs on this machine; remote goes to a job API or Slurm")
                return nil
            }
            return c
        }
        if value.string != nil { return parse(value) }
        guard var r = MappingReader(value, context: "the resources of \(context)", sink: sink) else { return nil }
        let c = r.value("class").flatMap(parse)
        r.finish()
        return c
    }

    static func decodeAwait(_ value: MarkedValue, node: String, sink: DiagnosticSink) -> AwaitSpec? {
        let context = "the await of node '\(node)'"
        guard var r = MappingReader(value, context: context, sink: sink) else { return nil }
        let typeNames = AwaitType.allCases.map(\.rawValue).joined(separator: ", ")
        // Without a usable type the rest is still read, so it is checked too.
        let type = r.value("type") == nil ? nil : r.oneOf("type", AwaitType.self, code: .invalidAwait)
        if r.value("type") == nil {
            sink.error(.invalidAwait, "\(context) has no `type`", at: value.location, hint: "add `type:` — one of \(typeNames)")
        }
        var spec = AwaitSpec(type: type ?? .drawMask, location: value.location)
        spec.blocking = r.bool("blocking") ?? true
        spec.urgency = r.oneOf("urgency", Urgency.self, code: .invalidAwait) ?? .normal
        if let e = r.value("expiresIn") {
            switch e.scalarText.map(FlowDuration.parse) {
            case .success(let d)? where d.seconds > 0:
                spec.expiresIn = d
            case .failure(.tooLong)?:
                sink.error(.invalidAwait, "`expiresIn` of \(context) is longer than the 100 years flowdir allows: '\(e.scalarText ?? "")'",
                           at: e.location, hint: "write a shorter duration, like PT24H or 7d; without `expiresIn` it never expires")
            default:
                sink.error(.invalidAwait, "`expiresIn` of \(context) is not a duration: '\(e.scalarText ?? e.kindName)'", at: e.location,
                           hint: "write an ISO 8601 duration like PT24H, or 90s, 10m, 1h, 2d")
            }
        }
        if let n = r.value("notification") {
            if var nr = MappingReader(n, context: "the notification of node '\(node)'", sink: sink) {
                spec.notificationTitle = nr.string("title")
                spec.notificationBody = nr.string("body")
                nr.finish()
            }
        }
        if let p = r.value("resumePolicy") {
            if var pr = MappingReader(p, context: "the resumePolicy of node '\(node)'", sink: sink) {
                spec.onTimeout = pr.oneOf("onTimeout", TimeoutPolicy.self, code: .invalidAwait) ?? .cancel
                pr.finish()
            }
        }
        if let t = r.oneOf("onTimeout", TimeoutPolicy.self, code: .invalidAwait) { spec.onTimeout = t }
        spec.allowSkip = r.bool("allowSkip") ?? (spec.onTimeout == .skip)
        if let c = r.value("choices") {
            if let items = c.items, items.allSatisfy({ $0.scalarText != nil }) {
                spec.choices = items.compactMap(\.scalarText)
            } else {
                sink.error(.invalidAwait, "`choices` of \(context) must be a list of names", at: c.location)
            }
        }
        spec.defaultChoice = r.string("default")
        spec.ui = r.string("ui")
        _ = r.string("title")
        _ = r.string("detail")
        r.finish()
        return type == nil ? nil : spec
    }

    /// An edge as `{from: [node, port], to: [node, port]}`, with `"node.port"`
    /// ends, or the whole edge as `"load1.image -> mask1.image"`.
    static func decodeEdge(_ value: MarkedValue, sink: DiagnosticSink) -> EdgeSpec? {
        if let s = value.string {
            guard let (left, right) = splitArrow(s) else {
                sink.malformed("edge '\(s)' must read \"node.port -> node.port\"", at: value.location)
                return nil
            }
            guard let from = portRef(left, at: value.location, sink: sink),
                  let to = portRef(right, at: value.location, sink: sink) else { return nil }
            return EdgeSpec(from: from, to: to, location: value.location)
        }
        guard var r = MappingReader(value, context: "an edge", sink: sink) else { return nil }
        let from = r.value("from").flatMap { end($0, "from", sink: sink) }
        let to = r.value("to").flatMap { end($0, "to", sink: sink) }
        if r.value("from") == nil { sink.malformed("an edge has no `from`", at: value.location, hint: "write `from: [node, port]`") }
        if r.value("to") == nil { sink.malformed("an edge has no `to`", at: value.location, hint: "write `to: [node, port]`") }
        r.finish()
        guard let from, let to else { return nil }
        return EdgeSpec(from: from, to: to, location: value.location)
    }

    private static func end(_ v: MarkedValue, _ name: String, sink: DiagnosticSink) -> PortRef? {
        if let items = v.items {
            guard items.count == 2, let node = items[0].scalarText, let port = items[1].scalarText else {
                sink.malformed("`\(name)` of an edge must be [node, port], found a list of \(items.count)", at: v.location)
                return nil
            }
            return PortRef(node: node, port: port, location: items[0].location)
        }
        if let s = v.string { return portRef(s, at: v.location, sink: sink) }
        sink.malformed("`\(name)` of an edge must be [node, port] or \"node.port\", found \(v.kindName)", at: v.location)
        return nil
    }

    private static func portRef(_ s: Substring, at location: SourceLocation, sink: DiagnosticSink) -> PortRef? {
        let u = s.utf8
        guard let dot = u.firstIndex(of: UInt8(ascii: ".")), dot != u.startIndex,
              u.index(after: dot) != u.endIndex, !u[u.index(after: dot)...].contains(UInt8(ascii: "."))
        else {
            sink.malformed("'\(s)' must name a port as node.port", at: location)
            return nil
        }
        return PortRef(node: String(s[..<dot]), port: String(s[s.index(after: dot)...]), location: location)
    }

    private static func portRef(_ s: String, at location: SourceLocation, sink: DiagnosticSink) -> PortRef? {
        portRef(s[...], at: location, sink: sink)
    }

    /// `"a.x -> b.y"` (or `→`) into its two trimmed ends. By bytes: a
    /// template has an edge per line, and String indices cost more.
    static func splitArrow(_ s: String) -> (Substring, Substring)? {
        let u = Array(s.utf8)
        var arrow: (start: Int, end: Int)?
        var i = 0
        while i < u.count, arrow == nil {
            if u[i] == UInt8(ascii: "-"), i + 1 < u.count, u[i + 1] == UInt8(ascii: ">") { arrow = (i, i + 2) }
            // → is E2 86 92
            if u[i] == 0xE2, i + 2 < u.count, u[i + 1] == 0x86, u[i + 2] == 0x92 { arrow = (i, i + 3) }
            i += 1
        }
        guard let arrow else { return nil }
        func trimmed(_ from: Int, _ to: Int) -> Substring {
            var (a, b) = (from, to)
            while a < b, u[a] == UInt8(ascii: " ") { a += 1 }
            while b > a, u[b - 1] == UInt8(ascii: " ") { b -= 1 }
            return String(decoding: u[a..<b], as: UTF8.self)[...]
        }
        return (trimmed(0, arrow.start), trimmed(arrow.end, u.count))
    }


    static func decodeOptions(_ value: MarkedValue, sink: DiagnosticSink) -> WorkflowOptions {
        var options = WorkflowOptions()
        guard var r = MappingReader(value, context: "`options`", sink: sink) else { return options }
        if let c = r.value("concurrency"), var cr = MappingReader(c, context: "`options.concurrency`", sink: sink) {
            options.remoteConcurrency = cr.int("remote", minimum: 1) ?? options.remoteConcurrency
            options.localConcurrency = cr.int("local", minimum: 1) ?? options.localConcurrency
            cr.finish()
        }
        options.errorPolicy = r.oneOf("errorPolicy", ErrorPolicy.self) ?? options.errorPolicy
        options.onChange = r.oneOf("onChange", ChangePolicy.self) ?? options.onChange
        r.finish()
        return options
    }
}
