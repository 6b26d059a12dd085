/// A parameter value as written in a template or `params.yaml`. Objects keep
/// their key order so what flowdir writes back reads like what a person wrote.
public enum ParamValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([ParamValue])
    case object([ParamEntry])

    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    public var numberValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// How the value reads in a digest or a command argument: plain, without
    /// quotes, the way a person would type it.
    public var plainText: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): Self.format(d)
        case .string(let s): s
        case .array(let items): "[" + items.map(\.plainText).joined(separator: ", ") + "]"
        case .object(let entries):
            "{" + entries.map { "\($0.key): \($0.value.plainText)" }.joined(separator: ", ") + "}"
        }
    }

    /// A limit as a person writes it: `100`, `0.1`.
    public static func plainNumber(_ d: Double) -> String {
        d.isFinite && d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : "\(d)"
    }

    static func format(_ d: Double) -> String {
        if d.isFinite, d == d.rounded(), abs(d) < 1e15 { return String(format1: d) }
        return "\(d)"
    }
}

private extension String {
    /// `4.0` rather than `4`, so a float param still reads as a float.
    init(format1 d: Double) { self = "\(Int(d)).0" }
}

public struct ParamEntry: Hashable, Sendable {
    public var key: String
    public var value: ParamValue
    public var location: SourceLocation?

    public init(key: String, value: ParamValue, location: SourceLocation? = nil) {
        self.key = key
        self.value = value
        self.location = location
    }

    // Where a value was written is not part of what it is.
    public static func == (l: ParamEntry, r: ParamEntry) -> Bool { l.key == r.key && l.value == r.value }
    public func hash(into h: inout Hasher) { h.combine(key); h.combine(value) }
}

extension Array where Element == ParamEntry {
    public subscript(key key: String) -> ParamEntry? { first { $0.key == key } }
}
