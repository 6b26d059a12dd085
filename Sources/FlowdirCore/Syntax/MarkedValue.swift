/// A parsed YAML or JSON document that remembers where each value was
/// written, so every problem found later can point at its line and column.
public struct MarkedValue: Sendable {
    public enum Kind: Sendable {
        case null
        case bool(Bool)
        case int(Int)
        case double(Double)
        case string(String)
        case sequence([MarkedValue])
        case mapping([Entry])
    }

    public struct Entry: Sendable {
        public var key: String
        public var keyLocation: SourceLocation
        public var value: MarkedValue

        public init(key: String, keyLocation: SourceLocation, value: MarkedValue) {
            self.key = key
            self.keyLocation = keyLocation
            self.value = value
        }
    }

    public var kind: Kind
    public var location: SourceLocation

    public init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
    }

    /// "a mapping", "a string", … for messages.
    public var kindName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .int: "an integer"
        case .double: "a number"
        case .string: "a string"
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }

    public var string: String? { if case .string(let s) = kind { s } else { nil } }
    public var entries: [Entry]? { if case .mapping(let e) = kind { e } else { nil } }
    public var items: [MarkedValue]? { if case .sequence(let i) = kind { i } else { nil } }

    /// Scalars as a person reads them (`30`, `4.0`, `true`), for names and ids.
    public var scalarText: String? {
        switch kind {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): ParamValue.format(d)
        case .bool(let b): b ? "true" : "false"
        default: nil
        }
    }

    /// The value without marks, as a param.
    public var paramValue: ParamValue {
        switch kind {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .sequence(let items): .array(items.map(\.paramValue))
        case .mapping(let entries):
            .object(entries.map { ParamEntry(key: $0.key, value: $0.value.paramValue, location: $0.keyLocation) })
        }
    }
}
