import FlowdirCore

/// `nodes/<id>/runs/<n>/run.yaml`, the provenance record of one attempt.
public enum RunRecordCodec {
    /// The record as `entries` says, written straight out: a record is
    /// written for every run, and building the entries and walking them
    /// was most of what writing one cost. The parts seldom there (params,
    /// an error, an answer) go through `YAMLWriter` as they are.
    public static func encode(_ r: RunRecord) -> String { String(decoding: encodeBytes(r), as: UTF8.self) }

    /// `encode`'s text as the bytes written to the file, made as bytes: the
    /// store's thread makes one or two a step. Made through string
    /// interpolation (and before YAMLWriter's number check), a record took
    /// 6.5 µs; now 4.0 (`flowdir-bench codec-timing`, alternated).
    public static func encodeBytes(_ r: RunRecord) -> [UInt8] {
        var w = ByteText(capacity: 640 + 160 * (r.inputs.count + r.outputs.count) + 48 * r.command.count)
        w.put("# Run "); w.put(r.run); w.put(" of node '"); w.put(PlainText.oneLine(r.node)); w.put("': what it used and what it made. Written by flowdir.\n")
        w.put("run: "); w.put(r.run); w.newline()
        w.line("node: ", r.node)
        w.line("kind: ", r.kind)
        w.line("trigger: ", r.trigger.rawValue)
        if r.params.isEmpty {
            w.put("params: {}\n")
        } else {
            var text = ""
            YAMLWriter.mapping([ParamEntry(key: "params", value: .object(r.params.map { ParamEntry(key: $0.key, value: $0.value) }))],
                               indent: 0, into: &text)
            w.put(text)
        }
        w.put(r.inputs.isEmpty ? "inputs: {}\n" : "inputs:\n")
        for i in r.inputs {
            w.put("  "); w.put(YAMLWriter.keyed(i.port, pad: "  ")); w.newline()
            w.line("    node: ", i.node)
            w.line("    port: ", i.sourcePort)
            w.put("    run: "); w.put(i.run); w.newline()
            w.line("    blob: ", i.blob)
            if let sha = i.sha256 { w.line("    sha256: ", sha) }
        }
        w.put(r.outputs.isEmpty ? "outputs: {}\n" : "outputs:\n")
        for o in r.outputs {
            w.put("  "); w.put(YAMLWriter.keyed(o.port, pad: "  ")); w.newline()
            w.line("    blob: ", o.blob)
            w.put("    size: "); w.put(o.size); w.newline()
            w.line("    type: ", o.type.rawValue)
            w.line("    file: ", o.file)
            if let sha = o.sha256 { w.line("    sha256: ", sha) }
        }
        if !r.command.isEmpty {
            w.put("command: [")
            for (n, arg) in r.command.enumerated() {
                if n > 0 { w.put(", ") }
                w.put(YAMLWriter.flowItem(.string(arg)))
            }
            w.put("]\n")
        }
        w.line("startedAt: ", r.startedAt.iso8601)
        if let f = r.finishedAt { w.line("finishedAt: ", f.iso8601) }
        if let c = r.exitCode { w.put("exitCode: "); w.put(Int(c)); w.newline() }
        if let j = r.job { w.line("job: ", j) }
        if let f = r.folder { w.line("folder: ", f) }
        if r.error != nil || r.answer != nil {
            var text = ""
            YAMLWriter.mapping(entries(r).filter { $0.key == "error" || $0.key == "answer" }, indent: 0, into: &text)
            w.put(text)
        }
        w.line("host: ", r.host)
        w.line("user: ", r.user)
        return w.bytes
    }

    /// The record as YAML entries, in the order `encode` writes them.
    static func entries(_ r: RunRecord) -> [ParamEntry] {
        var e: [ParamEntry] = [
            ParamEntry(key: "run", value: .int(r.run)),
            ParamEntry(key: "node", value: .string(r.node)),
            ParamEntry(key: "kind", value: .string(r.kind)),
            ParamEntry(key: "trigger", value: .string(r.trigger.rawValue)),
            ParamEntry(key: "params", value: .object(r.params.map { ParamEntry(key: $0.key, value: $0.value) })),
            ParamEntry(key: "inputs", value: .object(r.inputs.map { i in
                ParamEntry(key: i.port, value: .object([
                    ParamEntry(key: "node", value: .string(i.node)), ParamEntry(key: "port", value: .string(i.sourcePort)),
                    ParamEntry(key: "run", value: .int(i.run)), ParamEntry(key: "blob", value: .string(i.blob)),
                ] + (i.sha256.map { [ParamEntry(key: "sha256", value: .string($0))] } ?? [])))
            })),
            ParamEntry(key: "outputs", value: .object(r.outputs.map { o in
                ParamEntry(key: o.port, value: .object([
                    ParamEntry(key: "blob", value: .string(o.blob)), ParamEntry(key: "size", value: .int(o.size)),
                    ParamEntry(key: "type", value: .string(o.type.rawValue)), ParamEntry(key: "file", value: .string(o.file)),
                ] + (o.sha256.map { [ParamEntry(key: "sha256", value: .string($0))] } ?? [])))
            })),
        ]
        if !r.command.isEmpty { e.append(ParamEntry(key: "command", value: .array(r.command.map(ParamValue.string)))) }
        e.append(ParamEntry(key: "startedAt", value: .string(r.startedAt.iso8601)))
        if let f = r.finishedAt { e.append(ParamEntry(key: "finishedAt", value: .string(f.iso8601))) }
        if let c = r.exitCode { e.append(ParamEntry(key: "exitCode", value: .int(Int(c)))) }
        if let j = r.job { e.append(ParamEntry(key: "job", value: .string(j))) }
        if let f = r.folder { e.append(ParamEntry(key: "folder", value: .string(f))) }
        if let err = r.error {
            var x = [ParamEntry(key: "summary", value: .string(err.summary)), ParamEntry(key: "code", value: .string(err.code))]
            if let h = err.hint { x.append(ParamEntry(key: "hint", value: .string(h))) }
            e.append(ParamEntry(key: "error", value: .object(x)))
        }
        if let a = r.answer {
            var x = [ParamEntry(key: "await", value: .string(a.awaitID))]
            if !a.files.isEmpty { x.append(ParamEntry(key: "files", value: .array(a.files.map(ParamValue.string)))) }
            if let v = a.value { x.append(ParamEntry(key: "value", value: v)) }
            e.append(ParamEntry(key: "answer", value: .object(x)))
        }
        e.append(ParamEntry(key: "host", value: .string(r.host)))
        e.append(ParamEntry(key: "user", value: .string(r.user)))
        return e
    }

    public static func decode(_ bytes: [UInt8], file: String) -> Result<RunRecord, Diagnostic> {
        if let record = RunRecordLines.decode(bytes) { return .success(record) }
        return decodeDocument(bytes, file: file)
    }

    /// `decode` through the YAML reader, whatever the text.
    static func decodeDocument(_ bytes: [UInt8], file: String) -> Result<RunRecord, Diagnostic> {
        let doc: [ParamEntry]
        switch InstanceCodec.document(bytes, file: file) {
        case .failure(let d): return .failure(d)
        case .success(let d): doc = d
        }
        func str(_ k: String, in d: [ParamEntry] = doc) -> String? { d[key: k]?.value.stringValue }
        func int(_ k: String, in d: [ParamEntry] = doc) -> Int? { if case .int(let i)? = d[key: k]?.value { i } else { nil } }
        func obj(_ k: String, in d: [ParamEntry] = doc) -> [ParamEntry] { if case .object(let o)? = d[key: k]?.value { o } else { [] } }
        guard let run = int("run"), let node = str("node"), let started = str("startedAt").flatMap(Timestamp.init(iso8601:)) else {
            return .failure(.error(.malformedFile, "\(file) needs `run`, `node` and `startedAt`", file: file))
        }
        guard RunRecord.runNumbers.contains(run) else {
            return .failure(.error(.malformedFile, "\(file): `run: \(run)` is not a run number (0 to \(RunRecord.runNumbers.upperBound))", file: file))
        }
        var record = RunRecord(run: run, node: node, kind: str("kind") ?? "", trigger: RunTrigger(rawValue: str("trigger") ?? "") ?? .auto,
                               params: obj("params"), inputs: [], startedAt: started, host: str("host") ?? "", user: str("user") ?? "")
        record.inputs = obj("inputs").compactMap { e in
            guard case .object(let o) = e.value, let n = str("node", in: o), let b = str("blob", in: o) else { return nil }
            return InputUse(port: e.key, node: n, sourcePort: str("port", in: o) ?? e.key, run: int("run", in: o).flatMap { RunRecord.runNumbers.contains($0) ? $0 : nil } ?? 0, blob: b,
                            sha256: str("sha256", in: o).flatMap { LFSPointer.isOID($0) ? $0 : nil })
        }
        record.outputs = obj("outputs").compactMap { e in
            guard case .object(let o) = e.value, let b = str("blob", in: o), let f = str("file", in: o) else { return nil }
            return OutputRecord(port: e.key, blob: b, size: max(0, int("size", in: o) ?? 0),
                                type: PortType(rawValue: str("type", in: o) ?? "") ?? .file, file: f,
                                sha256: str("sha256", in: o).flatMap { LFSPointer.isOID($0) ? $0 : nil })
        }
        if case .array(let items)? = doc[key: "command"]?.value { record.command = items.compactMap(\.stringValue) }
        record.finishedAt = str("finishedAt").flatMap(Timestamp.init(iso8601:))
        record.exitCode = int("exitCode").flatMap { Int32(exactly: $0) }
        record.job = str("job")
        record.folder = str("folder")
        let err = obj("error")
        if let s = str("summary", in: err) {
            record.error = NodeError(summary: s, code: str("code", in: err) ?? "unknown", hint: str("hint", in: err))
        }
        let answer = obj("answer")
        if let id = str("await", in: answer) {
            var files: [String] = []
            if case .array(let items)? = answer[key: "files"]?.value { files = items.compactMap(\.stringValue) }
            record.answer = AnswerNote(awaitID: id, files: files, value: answer[key: "value"]?.value)
        }
        return .success(record)
    }
}

/// UTF-8 text built as bytes.
struct ByteText {
    var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func put(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func put(_ s: String) { bytes.append(contentsOf: s.utf8) }

    mutating func put(_ v: Int) {
        if v >= 0, v < 10 { bytes.append(0x30 + UInt8(v)) } else { put(String(v)) }
    }

    mutating func newline() { bytes.append(0x0A) }

    /// `key` then `value` as a YAML scalar, one line.
    mutating func line(_ key: StaticString, _ value: String) {
        put(key)
        put(YAMLWriter.scalar(value))
        newline()
    }
}
