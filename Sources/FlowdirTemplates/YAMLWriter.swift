import FlowdirCore

/// Writes the YAML files flowdir owns. Block style, keys in the order given,
/// and every string that would read back as something else (`no`, `1.0`,
/// `null`, `a: b`) double-quoted, so a round trip never changes a type.
public enum YAMLWriter {
    /// A mapping document, with `#` comment lines before it.
    /// - Parameter inline: the key paths (`["snooze"]`, `["expects", "mask"]`)
    ///   whose mapping is written on one line, `{ until: null, count: 0 }`.
    public static func document(_ entries: [ParamEntry], comments: [String] = [], inline: (([String]) -> Bool)? = nil) -> String {
        var out = ""
        // A line break in a title or a description never ends a comment
        // early (what followed would be read as YAML): escaped, as `^J`.
        for c in comments { out += c.isEmpty ? "#\n" : "# \(PlainText.oneLine(c))\n" }
        if entries.isEmpty { return out + "{}\n" }
        mapping(entries, indent: 0, into: &out, path: [], inline: inline)
        return out
    }

    static func mapping(_ entries: [ParamEntry], indent: Int, into out: inout String,
                        path: [String] = [], inline: (([String]) -> Bool)? = nil) {
        let pad = String(repeating: " ", count: indent)
        for e in entries {
            out += pad
            out += keyed(e.key, pad: pad)
            if let inline, case .object(let o) = e.value, !o.isEmpty, inline(path + [e.key]) {
                out += " { " + o.map { flowKey($0.key) + ": " + flowItem($0.value) }.joined(separator: ", ") + " }\n"
                continue
            }
            if let inline, case .object(let o) = e.value, !o.isEmpty {
                out += "\n"
                mapping(o, indent: indent + 2, into: &out, path: path + [e.key], inline: inline)
                continue
            }
            value(e.value, indent: indent, into: &out)
        }
    }

    /// Writes what follows `key:` (or `-`), ending the line(s).
    static func value(_ v: ParamValue, indent: Int, into out: inout String) {
        switch v {
        case .object(let entries) where !entries.isEmpty:
            out += "\n"
            mapping(entries, indent: indent + 2, into: &out)
        case .array(let items) where !items.isEmpty && items.contains(where: \.isCollection):
            out += "\n"
            let pad = String(repeating: " ", count: indent + 2)
            for item in items {
                if case .object(let entries) = item, !entries.isEmpty {
                    // `- id: a` with the rest of the mapping under it.
                    var block = ""
                    mapping(entries, indent: indent + 4, into: &block)
                    // By scalars: a key opening with a combining mark makes one Character with the space before it.
                    out += pad + "- " + String(block.unicodeScalars.dropFirst(indent + 4))
                } else {
                    out += pad + "-"
                    value(item, indent: indent + 2, into: &out)
                }
            }
        default:
            out += " "
            out += inline(v)
            out += "\n"
        }
    }

    /// A value on one line: scalars, and flow collections of scalars.
    public static func inline(_ v: ParamValue) -> String {
        switch v {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d):
            d.isNaN ? ".nan" : d.isInfinite ? (d > 0 ? ".inf" : "-.inf") : v.plainText
        case .string(let s): scalar(s)
        case .array(let items): "[" + items.map(flowItem).joined(separator: ", ") + "]"
        case .object(let entries): "{" + entries.map { flowKey($0.key) + ": " + flowItem($0.value) }.joined(separator: ", ") + "}"
        }
    }

    /// Inside `[…]` or `{…}`, a plain string also may not hold `,[]{}`.
    static func flowItem(_ v: ParamValue) -> String {
        if case .string(let s) = v, !isFlowSafe(s) { return quoted(s) }
        return inline(v)
    }

    static func flowKey(_ k: String) -> String {
        let written = isPlainSafe(k) && isFlowSafe(k) ? k : quoted(k)
        return isLong(written) ? "? " + written : written
    }

    static func isFlowSafe(_ s: String) -> Bool {
        // ASCII bytes never occur inside a multi-byte UTF-8 sequence.
        var previous: UInt8 = 0
        for b in s.utf8 {
            if b == UInt8(ascii: ",") || b == UInt8(ascii: "[") || b == UInt8(ascii: "]") || b == UInt8(ascii: "{") || b == UInt8(ascii: "}") {
                return false
            }
            // libyaml refuses `:?` inside a plain scalar in a flow collection ("found unexpected ':'").
            if previous == UInt8(ascii: ":") && b == UInt8(ascii: "?") { return false }
            previous = b
        }
        return true
    }

    /// A byte of some number YAMLScalar.resolve reads: digits, signs, `.`,
    /// an exponent, hex digits after `0x`, `0o`, and `.inf` / `.nan` in any case.
    static func mayBeInNumber(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
             UInt8(ascii: "x"), UInt8(ascii: "o"), UInt8(ascii: "i"), UInt8(ascii: "n"), UInt8(ascii: "I"), UInt8(ascii: "N"):
            true
        default:
            false
        }
    }

    static func key(_ k: String) -> String { isPlainSafe(k) ? k : quoted(k) }

    /// `key:`, the key as written before its value; a key too long for a
    /// YAML reader to take before its `:` (libyaml: 1024 characters) as an
    /// explicit one: `? key`, then `:` on a line of its own at `pad`.
    static func keyed(_ k: String, pad: String) -> String {
        let written = key(k)
        return isLong(written) ? "? " + written + "\n" + pad + ":" : written + ":"
    }

    static func isLong(_ written: String) -> Bool {
        written.utf8.count > 1000 && written.unicodeScalars.count > 1000
    }

    public static func scalar(_ s: String) -> String { isPlainSafe(s) ? s : quoted(s) }

    /// Plain only when it is unmistakably a string in any context.
    /// One pass over the bytes: every state and run record goes through here.
    static func isPlainSafe(_ s: String) -> Bool {
        let u = s.utf8
        guard let first = u.first, let last = u.last else { return false }
        if first == UInt8(ascii: " ") || last == UInt8(ascii: " ") || last == UInt8(ascii: ":") { return false }
        // `<<` plain is YAML's merge key (the reader merges it): a key or value `<<` is quoted.
        if u.elementsEqual("<<".utf8) { return false }
        switch first {
        case UInt8(ascii: "-"), UInt8(ascii: "?"), UInt8(ascii: ":"), UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "]"),
             UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "#"), UInt8(ascii: "&"), UInt8(ascii: "*"), UInt8(ascii: "!"),
             UInt8(ascii: "|"), UInt8(ascii: ">"), UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "%"), UInt8(ascii: "@"),
             UInt8(ascii: "`"):
            return false
        default: break
        }
        // `: ` and ` #` read as structure; control characters need escapes; a BOM (EF BB BF) is dropped by readers;
        // NEL, LS and PS (C2 85, E2 80 A8/A9) are line breaks to YAML, and C1 controls, U+FFFE and U+FFFF are refused.
        var previous: UInt8 = 0
        var before: UInt8 = 0
        // Whether every byte may be part of a number (`0x1F`, `-1.5e3`, `.NaN`).
        var numberBytes = true
        for b in u {
            if b < 0x20 || b == 0x7F { return false }
            if previous == UInt8(ascii: ":") && b == UInt8(ascii: " ") { return false }
            if previous == UInt8(ascii: " ") && b == UInt8(ascii: "#") { return false }
            if before == 0xEF && previous == 0xBB && b == 0xBF { return false }
            if previous == 0xC2 && b >= 0x80 && b <= 0x9F { return false }
            if before == 0xE2 && previous == 0x80 && (b == 0xA8 || b == 0xA9) { return false }
            if before == 0xEF && previous == 0xBF && (b == 0xBE || b == 0xBF) { return false }
            if numberBytes { numberBytes = Self.mayBeInNumber(b) }
            before = previous
            previous = b
        }
        // What a reader may take for null, a boolean or a number: only short
        // words (YAML 1.1 readers such as PyYAML take yes/no/on/off as
        // booleans) or what starts like a number.
        let numberLike = first == UInt8(ascii: "+") || first == UInt8(ascii: ".") || (first >= 0x30 && first <= 0x39)
        guard u.count <= 5 || numberLike else { return true }
        // Starts like a number but holds what none does (a timestamp's `T`
        // and `:`): a string, with no need to resolve it.
        if numberLike, !numberBytes { return true }
        // A short word of letters (most keys: `run`, `node`, `state`) is
        // plain unless some reader takes it for a null or a boolean: decided
        // here without lowercasing it into a new string and resolving it.
        if u.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }) {
            return !reservedWords.contains { w in w.count == u.count && zip(w, u).allSatisfy { $0 == $1 | 0x20 } }
        }
        if u.count <= 5, yaml11Booleans.contains(s.lowercased()) { return false }
        if case .string = YAMLScalar.resolve(s) { return true }
        return false
    }

    static let yaml11Booleans: Set<String> = ["y", "n", "yes", "no", "on", "off", "true", "false"]
    /// The words above and `null`, as bytes, compared without regard to case.
    static let reservedWords: [[UInt8]] = (yaml11Booleans.sorted() + ["null"]).map { Array($0.utf8) }

    /// JSON's escapes are valid in a YAML double-quoted string. What YAML
    /// would not keep as written is escaped too: line breaks (NEL, LS and PS
    /// are line breaks to YAML, folded inside quotes), the characters a YAML
    /// reader refuses (C1 controls, U+FFFE, U+FFFF) and a BOM.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if c.value < 0x20 || (0x7F...0x9F).contains(c.value) || c.value == 0x2028 || c.value == 0x2029
                    || c.value == 0xFEFF || c.value == 0xFFFE || c.value == 0xFFFF {
                    let hex = String(c.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out + "\""
    }
}

extension ParamValue {
    var isCollection: Bool {
        switch self {
        case .array(let a): !a.isEmpty
        case .object(let o): !o.isEmpty
        default: false
        }
    }
}

/// How a plain YAML scalar reads (YAML 1.2 core schema), shared by the
/// reader and the writer so the two always agree.
public enum YAMLScalar {
    public static func resolve(_ s: String) -> MarkedValue.Kind { YAMLReader.Composer.resolve(s) }
}
