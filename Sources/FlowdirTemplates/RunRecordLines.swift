import FlowdirCore

/// A run.yaml as `RunRecordCodec.encode` writes it, read line by line
/// without the YAML reader: opening a finished instance reads every node's
/// last run.yaml, and libyaml's tokens and events for each were ~40 µs,
/// the most of re-evaluating a 1,000-node instance. Only the plainest form
/// is taken: the lines in `encode`'s order, every value a plain scalar of
/// a few safe characters that YAML reads as the same string (or a decimal
/// integer where a number goes), no params, error or answer. Anything else
/// (a person's edit, quoting, a comment after a value) returns nil and is
/// read the full way; whatever this returns, that way returns too
/// (checked against it by `RunRecordLinesTests`).
enum RunRecordLines {
    static func decode(_ bytes: [UInt8]) -> RunRecord? {
        var lines = Lines(bytes)
        while lines.peek?.first == UInt8(ascii: "#") { lines.next() }
        guard let run = lines.int("run"), RunRecord.runNumbers.contains(run), let node = lines.string("node"), let kind = lines.string("kind"),
              let triggerText = lines.string("trigger"), lines.exactly("params: {}") else { return nil }
        guard let inputs = ports(&lines, empty: "inputs: {}", header: "inputs:", port: \InputUse.port, { lines, port in
            guard let n = lines.string("node", indent: 4), let p = lines.string("port", indent: 4),
                  let r = lines.int("run", indent: 4), RunRecord.runNumbers.contains(r), let b = lines.string("blob", indent: 4) else { return nil }
            var sha: String?
            if lines.peekKey("sha256", indent: 4) {
                guard let s = lines.string("sha256", indent: 4), LFSPointer.isOID(s) else { return nil }
                sha = s
            }
            return InputUse(port: port, node: n, sourcePort: p, run: r, blob: b, sha256: sha)
        }), let outputs = ports(&lines, empty: "outputs: {}", header: "outputs:", port: \OutputRecord.port, { lines, port in
            guard let b = lines.string("blob", indent: 4), let size = lines.int("size", indent: 4), size >= 0,
                  let type = lines.string("type", indent: 4), let file = lines.string("file", indent: 4) else { return nil }
            var sha: String?
            if lines.peekKey("sha256", indent: 4) {
                guard let s = lines.string("sha256", indent: 4), LFSPointer.isOID(s) else { return nil }
                sha = s
            }
            return OutputRecord(port: port, blob: b, size: size, type: PortType(rawValue: type) ?? .file, file: file, sha256: sha)
        }) else { return nil }
        var command: [String] = []
        if lines.peekKey("command") {
            guard let items = lines.flowSequence("command") else { return nil }
            command = items
        }
        guard let started = lines.string("startedAt").flatMap(Timestamp.init(iso8601:)) else { return nil }
        var finished: Timestamp?
        if lines.peekKey("finishedAt") {
            guard let f = lines.string("finishedAt").flatMap(Timestamp.init(iso8601:)) else { return nil }
            finished = f
        }
        var exitCode: Int32?
        if lines.peekKey("exitCode") {
            guard let c = lines.int("exitCode").flatMap({ Int32(exactly: $0) }) else { return nil }
            exitCode = c
        }
        var job: String?
        if lines.peekKey("job") {
            guard let j = lines.string("job") else { return nil }
            job = j
        }
        guard let host = lines.string("host"), let user = lines.string("user"), lines.atEnd else { return nil }
        var record = RunRecord(run: run, node: node, kind: kind, trigger: RunTrigger(rawValue: triggerText) ?? .auto,
                               params: [], inputs: inputs, startedAt: started, host: host, user: user)
        record.outputs = outputs
        record.command = command
        record.finishedAt = finished
        record.exitCode = exitCode
        record.job = job
        return record
    }

    /// `inputs:` or `outputs:` as flowdir writes them: `<name>: {}`, or the
    /// header then each port's fields (read by `item`), no port twice.
    private static func ports<T>(_ lines: inout Lines, empty: StaticString, header: StaticString, port: KeyPath<T, String>,
                                 _ item: (inout Lines, String) -> T?) -> [T]? {
        if lines.exactly(empty) { return [] }
        guard lines.exactly(header) else { return nil }
        var found: [T] = []
        while let key = lines.portKey() {
            guard let value = item(&lines, key), !found.contains(where: { $0[keyPath: port] == key }) else { return nil }
            found.append(value)
        }
        return found.isEmpty ? nil : found
    }

    private struct Lines {
        let bytes: [UInt8]
        var start = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// The next line, without its newline.
        var peek: ArraySlice<UInt8>? {
            guard start < bytes.count else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            return bytes[start..<end]
        }

        mutating func next() {
            guard let line = peek else { return }
            start = line.endIndex + 1
        }

        /// Only blank lines are left (what follows a last newline counts as one).
        var atEnd: Bool {
            bytes[min(start, bytes.count)...].allSatisfy { $0 == 0x0A }
        }

        mutating func exactly(_ text: StaticString) -> Bool {
            guard let line = peek, line.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) else { return false }
            next()
            return true
        }

        func peekKey(_ key: String, indent: Int = 0) -> Bool { peek?.starts(with: Array((String(repeating: " ", count: indent) + key + ": ").utf8)) ?? false }

        /// The value of `key: value` at `indent`, if the next line is that.
        private mutating func value(_ key: String, indent: Int) -> ArraySlice<UInt8>? {
            guard let line = peek else { return nil }
            let head = Array(repeating: UInt8(ascii: " "), count: indent) + Array((key + ": ").utf8)
            guard line.starts(with: head) else { return nil }
            next()
            return line.dropFirst(head.count)
        }

        mutating func string(_ key: String, indent: Int = 0) -> String? {
            value(key, indent: indent).flatMap { RunRecordLines.plainString($0) }
        }

        mutating func int(_ key: String, indent: Int = 0) -> Int? {
            value(key, indent: indent).flatMap(RunRecordLines.decimal)
        }

        /// `  <port>:` opening an input's or an output's lines.
        mutating func portKey() -> String? {
            guard let line = peek, line.count > 3, line.starts(with: [0x20, 0x20]), line.last == UInt8(ascii: ":"),
                  let key = RunRecordLines.plainString(line.dropFirst(2).dropLast()) else { return nil }
            next()
            return key
        }

        /// `key: [a, b, c]` of plain strings.
        mutating func flowSequence(_ key: String) -> [String]? {
            guard let v = value(key, indent: 0), v.first == UInt8(ascii: "["), v.last == UInt8(ascii: "]") else { return nil }
            let inner = v.dropFirst().dropLast()
            guard !inner.isEmpty else { return [] }
            var items: [String] = []
            for part in inner.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                // `a, b`: each item after the first follows one space.
                let item = items.isEmpty ? part : (part.first == 0x20 ? part.dropFirst() : [][...])
                guard let s = RunRecordLines.plainString(item, inFlow: true) else { return nil }
                items.append(s)
            }
            return items
        }
    }

    /// A plain scalar YAML reads as this very string: letters, digits and
    /// `_ . / - + @ = ~`, and in a block `:` too (not last, so never `: `),
    /// starting with a letter, a digit, `_`, `.` or `/`, and not a number,
    /// bool or null.
    static func plainString(_ bytes: ArraySlice<UInt8>, inFlow: Bool = false) -> String? {
        guard let first = bytes.first, isStart(first), bytes.last != UInt8(ascii: ":") else { return nil }
        for b in bytes where !isInner(b) || (inFlow && b == UInt8(ascii: ":")) { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard case .string = YAMLReader.Composer.resolve(text) else { return nil }
        return text
    }

    /// `0`, or digits not starting with 0, maybe after `-`; what YAML reads as that integer.
    static func decimal(_ bytes: ArraySlice<UInt8>) -> Int? {
        let digits = bytes.first == UInt8(ascii: "-") ? bytes.dropFirst() : bytes
        guard let first = digits.first, digits.allSatisfy({ (0x30...0x39).contains($0) }),
              first != 0x30 || digits.count == 1 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }

    private static func isStart(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
            || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "/")
    }

    private static func isInner(_ b: UInt8) -> Bool {
        isStart(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || b == UInt8(ascii: "@") || b == UInt8(ascii: "=")
            || b == UInt8(ascii: "~") || b == UInt8(ascii: ":")
    }
}
