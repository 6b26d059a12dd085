import FlowdirCore

/// The YAML of an instance's own files: `instance.yaml`, `state.yaml`,
/// `params.yaml`. Writing is exact; reading says what is wrong and where.
public enum InstanceCodec {
    // MARK: Documents

    /// A mapping document as ordered entries, or why it isn't one.
    public static func document(_ bytes: [UInt8], file: String) -> Result<[ParamEntry], Diagnostic> {
        if let flat = FlatYAML.parse(bytes, file: file) { return .success(flat) }
        return fullDocument(bytes, file: file)
    }

    /// `document` through the YAML reader, whatever the text.
    static func fullDocument(_ bytes: [UInt8], file: String) -> Result<[ParamEntry], Diagnostic> {
        let dir = Path.directory(of: file), name = Path.basename(file)
        let restore = "`git -C \(dir.isEmpty ? "." : dir) checkout -- \(name)` puts back the version last committed"
        if let line = conflictMarkerLine(bytes) {
            return .failure(.error(.malformedFile, "the file holds git's conflict markers: a merge or pull stopped half-way",
                                   at: SourceLocation(file: file, line: line, column: 1),
                                   hint: "finish it (keep one side, then `git add` and `git commit`) or `git merge --abort`; or " + restore))
        }
        switch DocumentReader.read(bytes, file: file, format: .yaml) {
        case .failure(var d):
            // The reader's hints are for templates; this is one of an instance's own files.
            d.hint = restore
            return .failure(d)
        case .success(let parsed):
            guard case .object(let entries) = parsed.value.paramValue else {
                return .failure(.error(.malformedFile, "\(file) must be a mapping, found \(parsed.value.kindName)",
                                       at: parsed.value.location))
            }
            return .success(entries)
        }
    }

    /// The line of the first `<<<<<<< ` a merge left at a line's start, if any.
    static func conflictMarkerLine(_ bytes: [UInt8]) -> Int? {
        let marker = Array("<<<<<<< ".utf8)
        var line = 1
        var atStart = true
        var i = 0
        while i < bytes.count {
            if atStart, bytes[i] == 0x3C, i + marker.count <= bytes.count, Array(bytes[i..<(i + marker.count)]) == marker { return line }
            atStart = bytes[i] == 0x0A
            if atStart { line += 1 }
            i += 1
        }
        return nil
    }

    // MARK: instance.yaml

    public static func encode(_ r: InstanceRecord) -> String {
        YAMLWriter.document(encodeEntries(r), comments: ["A flowdir instance. `title` may be edited; flowdir manages the rest."])
    }

    public static func encodeEntries(_ r: InstanceRecord) -> [ParamEntry] {
        [
            ParamEntry(key: "id", value: .string(r.id)),
            ParamEntry(key: "title", value: .string(r.title)),
            ParamEntry(key: "template", value: .string(r.template)),
            ParamEntry(key: "createdAt", value: .string(r.createdAt.iso8601)),
            ParamEntry(key: "schemaVersion", value: .int(r.schemaVersion)),
            ParamEntry(key: "archived", value: .bool(r.archived)),
            ParamEntry(key: "polling", value: .string(r.polling.rawValue)),
        ] + (r.lease.map { [ParamEntry(key: "lease", value: .object([
            ParamEntry(key: "host", value: .string($0.host)), ParamEntry(key: "until", value: .string($0.until.iso8601)),
        ]))] } ?? [])
    }

    public static func decodeInstance(_ doc: [ParamEntry], file: String) throws(Diagnostic) -> InstanceRecord {
        func fail(_ message: String, hint: String? = nil) -> Diagnostic {
            .error(.malformedFile, message, file: file, hint: hint)
        }
        guard let id = doc[key: "id"]?.value.stringValue, !id.isEmpty else { throw fail("it has no `id`") }
        let title = doc[key: "title"]?.value.plainTextIfScalar ?? id
        let template = doc[key: "template"]?.value.stringValue ?? ""
        guard let createdText = doc[key: "createdAt"]?.value.stringValue, let created = Timestamp(iso8601: createdText) else {
            throw fail("`createdAt` must be an ISO 8601 date such as 2026-11-22T10:00:00Z")
        }
        guard case .int(let version)? = doc[key: "schemaVersion"]?.value else { throw fail("it has no `schemaVersion`") }
        var archived = false
        if let a = doc[key: "archived"]?.value {
            guard case .bool(let b) = a else { throw fail("`archived` must be true or false") }
            archived = b
        }
        var polling = PollingMode.active
        if let p = doc[key: "polling"]?.value {
            guard let s = p.stringValue, let mode = PollingMode(rawValue: s) else { throw fail("`polling` must be active or paused") }
            polling = mode
        }
        var lease: Lease?
        if let l = doc[key: "lease"]?.value, l != .null {
            guard case .object(let fields) = l, let host = fields[key: "host"]?.value.stringValue, !host.isEmpty,
                  let until = fields[key: "until"]?.value.stringValue.flatMap(Timestamp.init(iso8601:)) else {
                throw fail("`lease` must be { host: NAME, until: ISO 8601 date }", hint: "`flowdir lease release` or `take` writes it")
            }
            lease = Lease(host: host, until: until)
        }
        return InstanceRecord(id: id, title: title, template: template, createdAt: created,
                              schemaVersion: version, archived: archived, polling: polling, lease: lease)
    }

    // MARK: state.yaml

    /// `encodeEntries` written straight out (one a node per commit); a
    /// failure's error goes through `YAMLWriter` as it is.
    public static func encode(_ r: NodeStateRecord) -> String {
        var out = "# Written by flowdir. Change a node with flowdir commands or inbox/ files, not here.\nstate: "
        out += YAMLWriter.scalar(r.state.name)
        out += "\n"
        if let reason = r.state.reason { out += "reason: \(YAMLWriter.scalar(reason))\n" }
        if case .failed = r.state { YAMLWriter.mapping(encodeEntries(r).filter { $0.key == "error" }, indent: 0, into: &out) }
        out += "run: \(r.run)\n"
        if let p = r.progress { out += "progress: \(YAMLWriter.inline(.double(p)))\n" }
        if let job = r.job { out += "job: \(YAMLWriter.scalar(job))\n" }
        if let key = r.submission { out += "submission: \(YAMLWriter.scalar(key))\n" }
        if let note = r.note { out += "note: \(YAMLWriter.scalar(note))\n" }
        out += "updatedAt: \(YAMLWriter.scalar(r.updatedAt.iso8601))\n"
        return out
    }

    public static func encodeEntries(_ r: NodeStateRecord) -> [ParamEntry] {
        var e = [ParamEntry(key: "state", value: .string(r.state.name))]
        if let reason = r.state.reason { e.append(ParamEntry(key: "reason", value: .string(reason))) }
        if case .failed(let err) = r.state {
            var error = [ParamEntry(key: "summary", value: .string(err.summary)), ParamEntry(key: "code", value: .string(err.code))]
            if let hint = err.hint { error.append(ParamEntry(key: "hint", value: .string(hint))) }
            e.append(ParamEntry(key: "error", value: .object(error)))
        }
        e.append(ParamEntry(key: "run", value: .int(r.run)))
        if let p = r.progress { e.append(ParamEntry(key: "progress", value: .double(p))) }
        if let job = r.job { e.append(ParamEntry(key: "job", value: .string(job))) }
        if let key = r.submission { e.append(ParamEntry(key: "submission", value: .string(key))) }
        if let note = r.note { e.append(ParamEntry(key: "note", value: .string(note))) }
        e.append(ParamEntry(key: "updatedAt", value: .string(r.updatedAt.iso8601)))
        return e
    }

    public static func decodeState(_ doc: [ParamEntry], file: String) throws(Diagnostic) -> NodeStateRecord {
        guard let name = doc[key: "state"]?.value.stringValue, NodeState.names.contains(name) else {
            throw .error(.malformedFile, "`state` must be one of \(NodeState.names.joined(separator: ", "))", file: file,
                         hint: "flowdir writes this file; in the instance, `\(Shell.command(["git", "checkout", "--", file.split(separator: "/").suffix(3).joined(separator: "/")]))` puts it back")
        }
        let reason = doc[key: "reason"]?.value.stringValue
        let state: NodeState
        switch name {
        case "blocked": state = .blocked(BlockReason(text: reason ?? ""))
        case "ready": state = .ready
        case "awaitingUser": state = .awaitingUser
        case "runningLocal": state = .runningLocal
        case "queuedRemote": state = .queuedRemote
        case "runningRemote": state = .runningRemote
        case "downloading": state = .downloading
        case "succeeded": state = .succeeded
        case "failed":
            var err = NodeError(summary: reason ?? "failed", code: "unknown")
            if case .object(let e)? = doc[key: "error"]?.value {
                err.summary = e[key: "summary"]?.value.stringValue ?? err.summary
                err.code = e[key: "code"]?.value.stringValue ?? err.code
                err.hint = e[key: "hint"]?.value.stringValue
            }
            state = .failed(err)
        case "cancelled": state = .cancelled(reason: reason)
        default: state = .skipped
        }
        let run: Int
        if case .int(let r)? = doc[key: "run"]?.value { run = r } else { run = 0 }
        guard RunRecord.runNumbers.contains(run) else {
            throw .error(.malformedFile, "`run: \(run)` is not a run number (0 to \(RunRecord.runNumbers.upperBound))",
                         at: doc[key: "run"]?.location ?? SourceLocation(file: file, line: 1, column: 1),
                         hint: "flowdir writes this file; in the instance, `\(Shell.command(["git", "checkout", "--", file.split(separator: "/").suffix(3).joined(separator: "/")]))` puts it back")
        }
        let updated = doc[key: "updatedAt"]?.value.stringValue.flatMap(Timestamp.init(iso8601:)) ?? Timestamp(seconds: 0)
        // A fraction for a bar: anything else is no progress known.
        let progress = doc[key: "progress"]?.value.numberValue.flatMap { (0...1).contains($0) ? $0 : nil }
        return NodeStateRecord(state: state, run: run, progress: progress,
                               updatedAt: updated, job: doc[key: "job"]?.value.stringValue,
                               submission: doc[key: "submission"]?.value.stringValue, note: doc[key: "note"]?.value.stringValue)
    }

    // MARK: params.yaml

    /// A node's params: the tool's params in schema order (defaults filled
    /// in, so what a run will use is on the page), then any others.
    public static func encodeParams(_ params: [ParamEntry], node: NodeSpec, tool: ToolDefinition?) -> String {
        var comments = ["Params of node '\(node.id)' (\(node.kind)). Edit freely: flowdir notices the change."]
        if let tool, !tool.params.isEmpty {
            for p in tool.params {
                var line = "  \(p.name): \(p.type.rawValue)"
                if let d = p.defaultValue { line += ", default \(d.plainText)" }
                if let lo = p.min { line += ", min \(ParamValue.plainNumber(lo))" }
                if let hi = p.max { line += ", max \(ParamValue.plainNumber(hi))" }
                if let allowed = p.allowed { line += ", one of " + allowed.map(\.plainText).joined(separator: "|") }
                if let desc = p.description { line += " — \(desc)" }
                comments.append(line)
            }
        }
        return YAMLWriter.document(effectiveParams(params, tool: tool), comments: comments)
    }

    public static func effectiveParams(_ params: [ParamEntry], tool: ToolDefinition?) -> [ParamEntry] {
        guard let tool, !tool.acceptsAnyParams else { return params.map { ParamEntry(key: $0.key, value: $0.value) } }
        var out: [ParamEntry] = []
        for schema in tool.params {
            if let given = params[key: schema.name] { out.append(ParamEntry(key: given.key, value: given.value)) }
            else if let d = schema.defaultValue { out.append(ParamEntry(key: schema.name, value: d)) }
        }
        for p in params where tool.param(p.key) == nil { out.append(ParamEntry(key: p.key, value: p.value)) }
        return out
    }
}

extension ParamValue {
    /// Scalars as text, for fields like `title: 2024`.
    var plainTextIfScalar: String? {
        switch self {
        case .array, .object, .null: nil
        default: plainText
        }
    }
}
