import FlowdirCore

/// `inbox/<node>.await.yaml` (docs/instance-folder.md): written by flowdir with a
/// comment saying exactly how to answer; read back with whatever a person
/// added (`choice:`, `answer:`, `approve:`, edited `params:`).
public enum AwaitCodec {
    public static func encode(_ a: AwaitRecord, instanceName: String) -> String {
        var e: [ParamEntry] = [
            ParamEntry(key: "id", value: .string(a.id)),
            ParamEntry(key: "node", value: .string(a.node)),
            ParamEntry(key: "type", value: .string(a.type.rawValue)),
            ParamEntry(key: "title", value: .string(a.title)),
        ]
        if let d = a.detail { e.append(ParamEntry(key: "detail", value: .string(d))) }
        e += [
            ParamEntry(key: "urgency", value: .string(a.urgency.rawValue)),
            ParamEntry(key: "createdAt", value: .string(a.createdAt.iso8601)),
            ParamEntry(key: "expiresAt", value: a.expiresAt.map { .string($0.iso8601) } ?? .null),
            ParamEntry(key: "onTimeout", value: .string(a.onTimeout.rawValue)),
            ParamEntry(key: "skippable", value: .bool(a.skippable)),
        ]
        if !a.expects.isEmpty {
            e.append(ParamEntry(key: "expects", value: .object(a.expects.map {
                ParamEntry(key: $0.port, value: .object([ParamEntry(key: "type", value: .string($0.type.rawValue)),
                                                          ParamEntry(key: "file", value: .string($0.file))]))
            })))
        }
        if !a.choices.isEmpty { e.append(ParamEntry(key: "choices", value: .array(a.choices.map(ParamValue.string)))) }
        if let d = a.defaultChoice { e.append(ParamEntry(key: "default", value: .string(d))) }
        if a.type == .confirmParams { e.append(ParamEntry(key: "params", value: .object(a.params))) }
        e.append(ParamEntry(key: "context", value: .object(a.context.map { ParamEntry(key: $0.name, value: .string($0.path)) })))
        e.append(ParamEntry(key: "snooze", value: .object([
            ParamEntry(key: "until", value: a.snoozeUntil.map { .string($0.iso8601) } ?? .null),
            ParamEntry(key: "count", value: .int(a.snoozeCount)),
        ])))
        e.append(ParamEntry(key: "claim", value: a.claim.map {
            .object([ParamEntry(key: "by", value: .string($0.by)), ParamEntry(key: "until", value: .string($0.until.iso8601))])
        } ?? .null))
        e.append(ParamEntry(key: "link", value: .string(a.link)))
        if let v = a.answer { e.append(ParamEntry(key: a.type == .choice ? "choice" : "answer", value: v)) }
        if let v = a.approve { e.append(ParamEntry(key: "approve", value: .bool(v))) }
        if let o = a.outcome { e.append(ParamEntry(key: "outcome", value: .string(o.rawValue))) }
        if let t = a.doneAt { e.append(ParamEntry(key: "doneAt", value: .string(t.iso8601))) }
        if let b = a.doneBy { e.append(ParamEntry(key: "doneBy", value: .string(b))) }
        if let n = a.note { e.append(ParamEntry(key: "note", value: .string(n))) }
        let comments = a.outcome == nil ? AwaitPolicy.instructions(a, instanceName: instanceName)
            : ["\(a.title) — \(a.outcome!.rawValue)" + (a.doneAt.map { " at \($0.iso8601)" } ?? "")]
        // As docs/instance-folder.md shows it: `mask: { type: MaskRef, file: mask1.mask.png }`.
        return YAMLWriter.document(e, comments: comments) { path in
            path == ["snooze"] || path == ["claim"] || (path.count == 2 && path[0] == "expects")
        }
    }

    public static func decode(_ bytes: [UInt8], file: String) -> Result<AwaitRecord, Diagnostic> {
        let doc: [ParamEntry]
        switch InstanceCodec.document(bytes, file: file) {
        case .failure(let d): return .failure(d)
        case .success(let d): doc = d
        }
        func fail(_ message: String, _ key: String? = nil) -> Result<AwaitRecord, Diagnostic> {
            let at = key.flatMap { doc[key: $0]?.location } ?? SourceLocation(file: file, line: 1, column: 1)
            return .failure(.error(.malformedFile, message, at: at, hint: "flowdir wrote this file; `\(Shell.command(["git", "checkout", "--", file]))` restores it"))
        }
        func str(_ k: String, in d: [ParamEntry] = doc) -> String? { d[key: k]?.value.stringValue }
        func time(_ k: String, in d: [ParamEntry] = doc) -> Timestamp? { str(k, in: d).flatMap(Timestamp.init(iso8601:)) }
        guard let id = str("id"), let node = str("node") else { return fail("an await file needs `id` and `node`") }
        guard let type = str("type").flatMap(AwaitType.init(rawValue:)) else { return fail("`type` is missing or unknown", "type") }
        guard let created = time("createdAt") else { return fail("`createdAt` is missing or not an ISO 8601 date", "createdAt") }
        var a = AwaitRecord(id: id, node: node, type: type, title: str("title") ?? node, detail: str("detail"),
                            urgency: str("urgency").flatMap(Urgency.init(rawValue:)) ?? .normal, createdAt: created,
                            expiresAt: time("expiresAt"), onTimeout: str("onTimeout").flatMap(TimeoutPolicy.init(rawValue:)) ?? .cancel,
                            link: str("link") ?? "")
        if case .bool(let b)? = doc[key: "skippable"]?.value { a.skippable = b }
        if case .object(let ports)? = doc[key: "expects"]?.value {
            a.expects = ports.compactMap { p in
                guard case .object(let o) = p.value, let t = str("type", in: o).flatMap(PortType.init(rawValue:)),
                      let f = str("file", in: o) else { return nil }
                return ExpectedFile(port: p.key, type: t, file: f)
            }
        }
        if case .array(let items)? = doc[key: "choices"]?.value { a.choices = items.compactMap { $0.stringValue ?? $0.numberValue.map(ParamValue.plainNumber) } }
        a.defaultChoice = str("default")
        if case .object(let p)? = doc[key: "params"]?.value { a.params = p }
        if case .object(let c)? = doc[key: "context"]?.value {
            a.context = c.compactMap { e in e.value.stringValue.map { ContextFile(name: e.key, path: $0) } }
        }
        if case .object(let s)? = doc[key: "snooze"]?.value {
            a.snoozeUntil = time("until", in: s)
            if case .int(let n)? = s[key: "count"]?.value { a.snoozeCount = min(max(n, 0), AwaitPolicy.maxSnoozes) }
        }
        if case .object(let c)? = doc[key: "claim"]?.value, let by = str("by", in: c), let until = time("until", in: c) {
            a.claim = AwaitClaim(by: by, until: until)
        }
        // A person's answer: `choice:` or `answer:`; `approve:`.
        if let v = doc[key: "choice"]?.value ?? doc[key: "answer"]?.value, v != .null { a.answer = v }
        switch doc[key: "approve"]?.value {
        case .bool(let b)?: a.approve = b
        case .string(let s)? where ["yes", "true", "approve", "approved", "ok"].contains(s.lowercased()): a.approve = true
        case .string(let s)? where ["no", "false", "reject", "rejected"].contains(s.lowercased()): a.approve = false
        case nil, .null?: break
        case let v?: return fail("`approve` must be true or false, not \(v.typeName)", "approve")
        }
        a.outcome = str("outcome").flatMap(AwaitOutcome.init(rawValue:))
        a.doneAt = time("doneAt")
        a.doneBy = str("doneBy")
        a.note = str("note")
        return .success(a)
    }
}
