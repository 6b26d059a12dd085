import CYaml
import FlowdirCore

/// YAML text → `MarkedValue`, composed straight from libyaml's events (the
/// libyaml that Yams ships). Yams's own composer builds `Node`s whose tags it
/// resolves with regular expressions, which cost more than everything else in
/// a load; flowdir resolves scalars itself (YAML 1.2 core schema), so it only
/// needs the events.
///
/// Iterative, so no input can exhaust the stack; nesting and alias expansion
/// ("billion laughs") are capped as the document is read.
enum YAMLReader {
    /// JSON's, so that a JSON template converted to workflow.yaml (`new`) reads back.
    static let maxDepth = JSONParser.maxDepth

    static func parse(_ bytes: [UInt8], file: String) throws(DocumentError) -> MarkedValue? {
        var composer = Composer(file: file, budget: 50_000 + 4 * bytes.count)
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { throw DocumentError("out of memory", line: 1, column: 1) }
        defer { yaml_parser_delete(&parser) }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(DocumentError) -> MarkedValue? in
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) == 1 else { throw DocumentError(parser: parser, bytes: buffer) }
                defer { yaml_event_delete(&event) }
                if event.type == YAML_STREAM_END_EVENT { return composer.root }
                try composer.handle(event)
            }
        }
    }

    /// The state of composition: one frame per open sequence or mapping.
    struct Composer {
        let file: String
        var budget: Int
        var root: MarkedValue?
        var documents = 0
        var stack: [Frame] = []
        var anchors: [String: (value: MarkedValue, size: Int)] = [:]

        struct Frame {
            var location: SourceLocation
            var anchor: String?
            var items: [MarkedValue] = []
            var entries: [MarkedValue.Entry]?  // non-nil for a mapping
            var pendingKey: (key: String, location: SourceLocation, isMerge: Bool)?
            var merges: [MarkedValue] = []
            var keyIndex: [String: SourceLocation] = [:]  // duplicate check, large mappings only
            var size = 1
        }

        init(file: String, budget: Int) {
            self.file = file
            self.budget = budget
        }

        func location(_ mark: yaml_mark_t) -> SourceLocation {
            SourceLocation(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
        }

        mutating func handle(_ event: yaml_event_t) throws(DocumentError) {
            let at = location(event.start_mark)
            switch event.type {
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw DocumentError("a template is one YAML document, but this file has more (a second `---`)",
                                        line: at.line, column: at.column)
                }
            case YAML_SCALAR_EVENT:
                let s = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: s.value, count: s.length), as: UTF8.self)
                let plain = s.style == YAML_PLAIN_SCALAR_STYLE && s.plain_implicit == 1
                let value = MarkedValue(plain ? Self.resolve(text) : .string(text), at: at)
                try add(value, size: 1, isPlain: plain, anchor: Self.string(s.anchor))
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard let (value, size) = anchors[name] else {
                    throw DocumentError("the alias *\(name) refers to no anchor &\(name) above it", line: at.line, column: at.column)
                }
                try add(MarkedValue(value.kind, at: value.location), size: size, isPlain: false, anchor: nil, isAlias: true)
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                if let top = stack.last, top.entries != nil, top.pendingKey == nil {
                    throw DocumentError("a mapping key must be a plain name, not a \(event.type == YAML_SEQUENCE_START_EVENT ? "list" : "mapping")",
                                        line: at.line, column: at.column)
                }
                guard stack.count < YAMLReader.maxDepth else {
                    throw DocumentError("nesting is deeper than \(YAMLReader.maxDepth) levels", line: at.line, column: at.column)
                }
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                let anchor = isMapping ? Self.string(event.data.mapping_start.anchor) : Self.string(event.data.sequence_start.anchor)
                stack.append(Frame(location: at, anchor: anchor, entries: isMapping ? [] : nil))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                let frame = stack.removeLast()
                var value: MarkedValue
                if var entries = frame.entries {
                    // `<<: *defaults` — merged keys never override the mapping's own.
                    for merge in frame.merges {
                        for source in merge.items ?? [merge] {
                            guard let more = source.entries else {
                                throw DocumentError("`<<` merges a mapping, not \(source.kindName)",
                                                    line: source.location.line, column: source.location.column)
                            }
                            for e in more where !entries.contains(where: { $0.key == e.key }) { entries.append(e) }
                        }
                    }
                    value = MarkedValue(.mapping(entries), at: frame.location)
                } else {
                    value = MarkedValue(.sequence(frame.items), at: frame.location)
                }
                try add(value, size: frame.size, isPlain: false, anchor: frame.anchor, alreadyCounted: true)
            default:
                break  // stream and document boundaries carry nothing
            }
        }

        /// Puts a finished value into its parent (as a key or a value), or makes it the root.
        mutating func add(_ value: MarkedValue, size: Int, isPlain: Bool, anchor: String?,
                          isAlias: Bool = false, alreadyCounted: Bool = false) throws(DocumentError) {
            if !alreadyCounted { budget -= size }
            guard budget >= 0 else {
                throw DocumentError("the document expands to too many values (aliases that refer to aliases?)",
                                    line: value.location.line, column: value.location.column,
                                    hint: "flowdir limits how far YAML aliases (*name) may multiply a document")
            }
            if let anchor { anchors[anchor] = (value, size) }
            guard !stack.isEmpty else { root = value; return }
            let top = stack.count - 1
            stack[top].size += size
            guard stack[top].entries != nil else {
                stack[top].items.append(value)
                return
            }
            guard let key = stack[top].pendingKey else {
                guard let name = value.scalarText ?? (value.kind.isNull ? "" : nil) else {
                    throw DocumentError("a mapping key must be a plain name", line: value.location.line, column: value.location.column)
                }
                if let first = firstLocation(of: name, in: stack[top]) {
                    throw DocumentError("duplicate key '\(name)' in one mapping (first at line \(first.line), column \(first.column))",
                                        line: value.location.line, column: value.location.column,
                                        hint: "each key may appear once in a mapping; remove or rename the repeat")
                }
                stack[top].pendingKey = (name, value.location, isPlain && name == "<<")
                return
            }
            stack[top].pendingKey = nil
            if key.isMerge {
                stack[top].merges.append(value)
                return
            }
            stack[top].entries!.append(.init(key: key.key, keyLocation: key.location, value: value))
            // Small mappings are checked by a scan; large ones get an index.
            let count = stack[top].entries!.count
            if count == 16 {
                for e in stack[top].entries! { stack[top].keyIndex[e.key] = e.keyLocation }
            } else if count > 16 {
                stack[top].keyIndex[key.key] = key.location
            }
        }

        private func firstLocation(of key: String, in frame: Frame) -> SourceLocation? {
            if frame.entries!.count >= 16 { return frame.keyIndex[key] }
            return frame.entries!.first { $0.key == key }?.keyLocation
        }

        static func string(_ p: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            p.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
        }

        /// YAML 1.2 core schema for plain scalars, so `no` and `on` stay strings.
        static func resolve(_ s: String) -> MarkedValue.Kind {
            // Most scalars are names: told apart by their first byte before
            // any comparison (a template has thousands).
            guard let first = s.utf8.first else { return .null }
            switch first {
            case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"):
                return s == "~" || s == "null" || s == "Null" || s == "NULL" ? .null : .string(s)
            case UInt8(ascii: "t"), UInt8(ascii: "T"):
                return s == "true" || s == "True" || s == "TRUE" ? .bool(true) : .string(s)
            case UInt8(ascii: "f"), UInt8(ascii: "F"):
                return s == "false" || s == "False" || s == "FALSE" ? .bool(false) : .string(s)
            case UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), 0x30...0x39:
                break
            default:
                return .string(s)
            }
            switch s {
            case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .double(.infinity)
            case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
            case ".nan", ".NaN", ".NAN": return .double(.nan)
            default: break
            }
            if s.hasPrefix("0x"), let i = Int(s.dropFirst(2), radix: 16) { return .int(i) }
            if s.hasPrefix("0o"), let i = Int(s.dropFirst(2), radix: 8) { return .int(i) }
            if isDecimalInteger(s), let i = Int(s) { return .int(i) }
            if isFloat(s), let d = Double(s) { return .double(d) }
            return .string(s)
        }

        static func isDecimalInteger(_ s: String) -> Bool {
            var u = Substring(s).utf8[...]
            if u.first == UInt8(ascii: "-") || u.first == UInt8(ascii: "+") { u = u.dropFirst() }
            return !u.isEmpty && u.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }

        static func isFloat(_ s: String) -> Bool {
            s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }
                && s.utf8.contains { $0 >= 0x30 && $0 <= 0x39 }
        }
    }
}

extension MarkedValue.Kind {
    var isNull: Bool { if case .null = self { true } else { false } }
}
