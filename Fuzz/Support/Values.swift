import FlowdirCore

/// Equal as values, where a NaN equals a NaN: YAML's `.nan` reads back as one.
func same(_ a: ParamValue, _ b: ParamValue) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): x == y || (x.isNaN && y.isNaN)
    case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
    case (.object(let x), .object(let y)): same(x, y)
    default: a == b
    }
}

func same(_ a: [ParamEntry], _ b: [ParamEntry]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && same($0.value, $1.value) }
}

/// The value as JSON can hold it: `JSONWriter` writes NaN and infinities
/// as null, and a whole number as an integer (`4.0` as `4`: JSON does not
/// tell them apart).
func jsonNormal(_ v: ParamValue) -> ParamValue {
    switch v {
    case .double(let d) where !d.isFinite: .null
    case .double(let d) where d == d.rounded() && abs(d) < 1e15: .int(Int(d))
    case .array(let items): .array(items.map(jsonNormal))
    case .object(let entries): .object(entries.map { ParamEntry(key: $0.key, value: jsonNormal($0.value)) })
    default: v
    }
}
