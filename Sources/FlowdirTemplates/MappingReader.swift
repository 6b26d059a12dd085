import FlowdirCore

/// Collects diagnostics while decoding a document (a backend checking its
/// `run.<key>` entry writes to it too).
public final class DiagnosticSink {
    public internal(set) var diagnostics: [Diagnostic] = []

    public init() {}

    public func malformed(_ message: String, at location: SourceLocation, hint: String? = nil) {
        diagnostics.append(.error(.malformedFile, message, at: location, hint: hint))
    }

    public func error(_ code: DiagnosticCode, _ message: String, at location: SourceLocation, hint: String? = nil) {
        diagnostics.append(.error(code, message, at: location, hint: hint))
    }
}

/// Reads the keys of one mapping, remembering which were read so that the
/// rest can be reported as unknown (a warning naming the key).
public struct MappingReader {
    public let value: MarkedValue
    public let entries: [MarkedValue.Entry]
    /// How messages name this mapping: "node 'mask1'", "the template".
    public let context: String
    public let sink: DiagnosticSink
    /// Entries read, by index, and the keys asked for (for "did you mean").
    private var used: [Bool]
    private var asked: [String] = []

    /// `nil` (and an error) when `value` is not a mapping.
    public init?(_ value: MarkedValue, context: String, sink: DiagnosticSink) {
        guard let entries = value.entries else {
            sink.malformed("\(context) must be a mapping, found \(value.kindName)", at: value.location)
            return nil
        }
        self.value = value
        self.entries = entries
        self.context = context
        self.sink = sink
        self.used = Array(repeating: false, count: entries.count)
    }

    public var location: SourceLocation { value.location }

    public mutating func entry(_ key: String) -> MarkedValue.Entry? {
        asked.append(key)
        guard let i = entries.firstIndex(where: { $0.key == key }) else { return nil }
        used[i] = true
        return entries[i]
    }

    public mutating func value(_ key: String) -> MarkedValue? { entry(key)?.value }

    /// A string (or a scalar read as one, so `title: 2024` still works).
    public mutating func string(_ key: String, required: Bool = false) -> String? {
        guard let v = value(key) else {
            if required { sink.malformed("\(context) has no `\(key)`", at: location, hint: "add `\(key): …`") }
            return nil
        }
        if case .null = v.kind {
            if required { sink.malformed("`\(key)` of \(context) is empty", at: v.location) }
            return nil
        }
        guard let s = v.scalarText else {
            sink.malformed("`\(key)` of \(context) must be a string, found \(v.kindName)", at: v.location)
            return nil
        }
        return s
    }

    public mutating func bool(_ key: String) -> Bool? {
        guard let v = value(key) else { return nil }
        if case .bool(let b) = v.kind { return b }
        sink.malformed("`\(key)` of \(context) must be true or false, found \(v.kindName)", at: v.location)
        return nil
    }

    /// A whole number from `minimum` to `maximum` (a count: never one that
    /// overflows what it is added to).
    public mutating func int(_ key: String, minimum: Int, maximum: Int = 1_000_000) -> Int? {
        guard let v = value(key) else { return nil }
        guard case .int(let i) = v.kind else {
            sink.malformed("`\(key)` of \(context) must be a whole number, found \(v.kindName)", at: v.location)
            return nil
        }
        guard i >= minimum else {
            sink.malformed("`\(key)` of \(context) must be at least \(minimum), found \(i)", at: v.location)
            return nil
        }
        guard i <= maximum else {
            sink.malformed("`\(key)` of \(context) must be at most \(maximum), found \(i)", at: v.location)
            return nil
        }
        return i
    }

    /// A value from a fixed set; a wrong one is an error with `code`.
    public mutating func oneOf<E: RawRepresentable & CaseIterable>(
        _ key: String, _ type: E.Type, code: DiagnosticCode = .malformedFile
    ) -> E? where E.RawValue == String {
        guard let v = value(key) else { return nil }
        let names = E.allCases.map(\.rawValue)
        guard let s = v.scalarText, let e = E(rawValue: s) else {
            sink.error(code, "`\(key)` of \(context) must be one of \(names.joined(separator: ", ")), found \(v.scalarText.map { "'\($0)'" } ?? v.kindName)",
                       at: v.location, hint: v.scalarText.flatMap { Suggest.hint(for: $0, in: names) })
            return nil
        }
        return e
    }

    /// Warns about every key that was not read.
    public func finish() {
        for (i, e) in entries.enumerated() where !used[i] {
            sink.diagnostics.append(.warning(
                .unknownKey, "unknown key '\(e.key)' in \(context); it is ignored", at: e.keyLocation,
                hint: Suggest.hint(for: e.key, in: asked)))
        }
    }
}

enum Names {
    /// Node ids and port names become directory and file names
    /// (`nodes/<id>/`, `inbox/<node>.<port>.<ext>`): no dots, no slashes.
    static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, s.unicodeScalars.count <= 64 else { return false }
        func ok(_ c: Unicode.Scalar) -> Bool {
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "_" || c == "-"
        }
        return ((first >= "a" && first <= "z") || (first >= "A" && first <= "Z") || first == "_")
            && s.unicodeScalars.allSatisfy(ok)
    }

    /// Tool kinds name files (`<Kind>.yaml`); dots are allowed, slashes not.
    static func isKind(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, s.unicodeScalars.count <= 128,
              (first >= "a" && first <= "z") || (first >= "A" && first <= "Z") else { return false }
        return s.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-" || $0 == "."
        }
    }
}

/// Port declarations in both forms: `mask: MaskRef?` and
/// `mask: {type: MaskRef, optional: true, ext: png}`.
enum PortReader {
    static func read(_ value: MarkedValue, context: String, sink: DiagnosticSink) -> [PortSpec]? {
        guard let entries = value.entries else {
            sink.malformed("\(context) must be a mapping of port names to types, found \(value.kindName)", at: value.location,
                           hint: "for example `{ image: ImageRef, mask: MaskRef? }`")
            return nil
        }
        var ports: [PortSpec] = []
        for e in entries {
            guard Names.isIdentifier(e.key) else {
                sink.malformed("port name '\(e.key)' in \(context) must be a plain name (letters, digits, _ and -)",
                               at: e.keyLocation)
                continue
            }
            var typeText: String?
            var typeAt = e.value.location
            var optional = false
            var ext: String?
            if let s = e.value.string {
                typeText = s
            } else if var r = MappingReader(e.value, context: "port '\(e.key)' of \(context)", sink: sink) {
                typeText = r.string("type", required: true)
                typeAt = r.entry("type")?.value.location ?? typeAt
                optional = r.bool("optional") ?? false
                ext = r.string("ext")
                if let x = ext, x.contains("/") || x.contains(".") || x.isEmpty {
                    sink.malformed("`ext` of port '\(e.key)' must be an extension like `jpg`, found '\(x)'", at: e.value.location)
                    ext = nil
                }
                r.finish()
            } else { continue }
            guard var text = typeText?.trimmed(" ") else { continue }
            if text.hasSuffix("?") { optional = true; text.removeLast() }
            guard let type = PortType(rawValue: text) else {
                let names = PortType.allCases.map(\.rawValue)
                sink.malformed("unknown port type '\(text)' for port '\(e.key)' of \(context)", at: typeAt,
                               hint: Suggest.hint(for: text, in: names) ?? "the types are: " + names.joined(separator: ", "))
                continue
            }
            ports.append(PortSpec(name: e.key, type: type, optional: optional, ext: ext, location: e.keyLocation))
        }
        return ports
    }
}
