import FlowdirCore

/// Param values as JSON text: the outputs of choices and confirmations.
/// Written here, not with `JSONEncoder`: an output's bytes are its identity
/// (its blob, what changes downstream), and people read it in the params'
/// declared order. On Linux (Swift 6.3), `JSONEncoder` writes an object's
/// keys in hash order, different from one process to the next, or sorted
/// with `.sortedKeys`; never as declared. `JSONWriterTests` checks that
/// Foundation reads every text this writes as the value written.
public enum JSONWriter {
    public static func text(_ v: ParamValue) -> String {
        switch v {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? ParamValue.plainNumber(d) : "null"
        case .string(let s): quoted(s)
        case .array(let items): "[" + items.map(text).joined(separator: ", ") + "]"
        case .object(let entries): "{" + entries.map { quoted($0.key) + ": " + text($0.value) }.joined(separator: ", ") + "}"
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}
