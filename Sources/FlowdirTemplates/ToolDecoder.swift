import FlowdirCore

/// `<Kind>.yaml` → `ToolDefinition` (docs/templates-and-tools.md, "Tools").
enum ToolDecoder {
    static func decode(_ root: MarkedValue, file: String, expectedKind: String?, backends: [any BackendSyntax],
                       sink: DiagnosticSink) -> ToolDefinition? {
        guard var r = MappingReader(root, context: "the tool file", sink: sink) else { return nil }
        guard let kind = r.string("kind", required: true) else { r.finish(); return nil }
        let kindAt = r.entry("kind")?.value.location ?? root.location
        if let expectedKind, kind != expectedKind {
            sink.malformed("this file is found as tool \(expectedKind), but it declares kind '\(kind)'", at: kindAt,
                           hint: "name the file \(kind).yaml, or set `kind: \(expectedKind)`")
        }
        let errorsBefore = sink.diagnostics.errors.count
        var tool = ToolDefinition(kind: expectedKind ?? kind, file: file)
        tool.summary = r.string("summary")
        _ = r.string("description")
        let resources = r.value("resources")
        if let v = resources {
            tool.resourceClass = TemplateDecoder.decodeResourceClass(v, context: "tool \(kind)", sink: sink) ?? .local
        }
        if let v = r.value("inputs") { tool.inputs = PortReader.read(v, context: "the inputs of tool \(kind)", sink: sink) ?? [] }
        if let v = r.value("outputs") { tool.outputs = PortReader.read(v, context: "the outputs of tool \(kind)", sink: sink) ?? [] }
        if let v = r.value("params") { tool.params = decodeParams(v, tool: kind, sink: sink) }
        if let v = r.value("presets") { tool.presets = decodePresets(v, tool: tool, sink: sink) }
        if let v = r.value("run") {
            tool.run = decodeRun(v, tool: tool, backends: backends, sink: sink) ?? .builtin
            // A backend's queue, unless the tool names one.
            if resources == nil, let key = tool.run.backendKey, let backend = backends.first(where: { $0.key == key }) {
                tool.resourceClass = backend.traits.queue
            }
        } else {
            sink.malformed("tool \(kind) has no `run`", at: root.location,
                           hint: "add `run: { command: [program, \"{inputs.PORT}\", \"{outputs.PORT}\"] }`")
        }
        r.finish()
        return sink.diagnostics.errors.count == errorsBefore ? tool : nil
    }

    static func decodeParams(_ value: MarkedValue, tool: String, sink: DiagnosticSink) -> [ParamSchema] {
        guard let entries = value.entries else {
            sink.malformed("`params` of tool \(tool) must be a mapping of names to schemas, found \(value.kindName)", at: value.location)
            return []
        }
        var out: [ParamSchema] = []
        let typeNames = ParamType.allCases.map(\.rawValue)
        for e in entries {
            let context = "param '\(e.key)' of tool \(tool)"
            // Short form: `steps: integer`.
            if let s = e.value.string {
                guard let t = ParamType(rawValue: s) else {
                    sink.malformed("unknown type '\(s)' for \(context)", at: e.value.location,
                                   hint: Suggest.hint(for: s, in: typeNames) ?? "the types are: " + typeNames.joined(separator: ", "))
                    continue
                }
                out.append(ParamSchema(name: e.key, type: t))
                continue
            }
            guard var r = MappingReader(e.value, context: context, sink: sink) else { continue }
            let type = r.oneOf("type", ParamType.self) ?? .any
            var schema = ParamSchema(name: e.key, type: type)
            schema.min = number(&r, "min", context: context, sink: sink)
            schema.max = number(&r, "max", context: context, sink: sink)
            if let enumValue = r.value("enum") {
                if let items = enumValue.items, !items.isEmpty {
                    schema.allowed = items.map(\.paramValue)
                } else {
                    sink.malformed("`enum` of \(context) must be a non-empty list", at: enumValue.location)
                }
            }
            schema.summary = r.bool("summary") ?? false
            schema.required = r.bool("required") ?? false
            schema.description = r.string("description")
            if let d = r.entry("default") {
                schema.defaultValue = d.value.paramValue
                if let problem = ParamValidator.problem(with: d.value.paramValue, schema: schema) {
                    sink.malformed("the default of \(context) \(problem.message)", at: d.value.location)
                }
            }
            if let lo = schema.min, let hi = schema.max, lo > hi {
                sink.malformed("\(context) has min \(ParamValue.plainNumber(lo)) above max \(ParamValue.plainNumber(hi))",
                               at: e.value.location)
            }
            r.finish()
            out.append(schema)
        }
        return out
    }

    /// `presets: { fast: { steps: 20 }, quality: { steps: 60, cfg: 7.5 } }`:
    /// each value checked against the param's schema, as a node's would be.
    static func decodePresets(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> [ParamPreset] {
        guard let entries = value.entries else {
            sink.malformed("`presets` of tool \(tool.kind) must be a mapping of names to params, found \(value.kindName)", at: value.location,
                           hint: "write `presets: { fast: { steps: 20 } }`")
            return []
        }
        var out: [ParamPreset] = []
        for e in entries {
            guard let params = e.value.entries, !params.isEmpty else {
                sink.malformed("preset '\(e.key)' of tool \(tool.kind) must be a mapping of params to values, found \(e.value.kindName)",
                               at: e.value.location, hint: "write `\(e.key): { \(tool.params.first?.name ?? "steps"): … }`")
                continue
            }
            var values: [ParamEntry] = []
            for p in params {
                let context = "param '\(p.key)' of preset '\(e.key)' (tool \(tool.kind))"
                if let schema = tool.param(p.key) {
                    if let problem = ParamValidator.problem(with: p.value.paramValue, schema: schema) {
                        sink.malformed("\(context) \(problem.message)", at: p.value.location, hint: problem.hint)
                        continue
                    }
                } else if !tool.acceptsAnyParams {
                    sink.malformed("preset '\(e.key)' sets '\(p.key)', which tool \(tool.kind) has no param for", at: p.value.location,
                                   hint: Suggest.hint(for: p.key, in: tool.params.map(\.name))
                                       ?? "its params are: " + tool.params.map(\.name).joined(separator: ", "))
                    continue
                }
                values.append(ParamEntry(key: p.key, value: p.value.paramValue, location: p.value.location))
            }
            out.append(ParamPreset(name: e.key, params: values))
        }
        return out
    }

    private static func number(_ r: inout MappingReader, _ key: String, context: String, sink: DiagnosticSink) -> Double? {
        guard let v = r.value(key) else { return nil }
        guard let n = v.paramValue.numberValue else {
            sink.malformed("`\(key)` of \(context) must be a number, found \(v.kindName)", at: v.location)
            return nil
        }
        return n
    }

    static func decodeRun(_ value: MarkedValue, tool: ToolDefinition, backends: [any BackendSyntax], sink: DiagnosticSink) -> RunSpec? {
        guard var r = MappingReader(value, context: "`run` of tool \(tool.kind)", sink: sink) else { return nil }
        defer { r.finish() }
        if let c = r.value("command") {
            return ArgvReader.read(c, tool: tool, context: "run.command", sink: sink).map(RunSpec.command)
        }
        for backend in backends {
            if let v = r.value(backend.key) {
                guard case .object(let entries) = v.paramValue else {
                    sink.malformed("`run.\(backend.key)` of tool \(tool.kind) must be a mapping", at: v.location)
                    return nil
                }
                return backend.checkRun(v, tool: tool, sink: sink) ? .backend(key: backend.key, entries: entries) : nil
            }
        }
        let keys = ["command"] + backends.map(\.key)
        let named = keys.count == 1 ? "`command`"
            : keys.dropLast().map { "`\($0)`" }.joined(separator: ", ") + " or `\(keys.last!)`"
        sink.malformed("`run` of tool \(tool.kind) needs \(named)", at: value.location)
        return nil
    }
}
