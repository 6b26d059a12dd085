import FlowdirCore

/// The node files flowdir writes itself (`state.yaml`, a new `params.yaml`)
/// are flat mappings of plain scalars under a comment: `key: value` lines,
/// or `{}`. Read by hand here they skip libyaml, whose set-up and events
/// were half of reading an instance's 2,000 small node files. Anything
/// else (quotes, nesting, flow collections, indentation, tabs, non-ASCII,
/// a comment after a value, a repeated key…) returns nil and is read the
/// full way: whatever this returns, the YAML reader returns too, key
/// locations included (checked against it by `FlatYAMLTests`).
enum FlatYAML {
    static func parse(_ bytes: [UInt8], file: String) -> [ParamEntry]? {
        var entries: [ParamEntry] = []
        var emptyMapping = false
        var line = 0
        var start = 0
        let count = bytes.count
        while start < count {
            var end = start
            while end < count, bytes[end] != 0x0A { end += 1 }
            defer { start = end + 1 }
            line += 1
            if end == start { continue }  // a blank line
            let first = bytes[start]
            // Printable ASCII only, so the text is valid UTF-8 and holds no NUL, tab or CR.
            for i in start..<end where bytes[i] < 0x20 || bytes[i] > 0x7E { return nil }
            if first == UInt8(ascii: "#") { continue }
            if end - start == 2, first == UInt8(ascii: "{"), bytes[start + 1] == UInt8(ascii: "}") {
                guard entries.isEmpty, !emptyMapping else { return nil }
                emptyMapping = true
                continue
            }
            guard !emptyMapping, isKeyStart(first) else { return nil }
            var colon = start + 1
            while colon < end, isKeyByte(bytes[colon]) { colon += 1 }
            guard colon < end, bytes[colon] == UInt8(ascii: ":") else { return nil }
            let key = String(decoding: bytes[start..<colon], as: UTF8.self)
            // A key YAML would read as other than its text (`true`, `null`) goes the full way.
            guard case .string = YAMLReader.Composer.resolve(key), !entries.contains(where: { $0.key == key }) else { return nil }
            let value: String
            if colon + 1 == end {
                value = ""
            } else {
                guard bytes[colon + 1] == UInt8(ascii: " "), colon + 2 < end,
                      let text = plainScalar(bytes[(colon + 2)..<end]) else { return nil }
                value = text
            }
            entries.append(ParamEntry(key: key, value: MarkedValue(YAMLReader.Composer.resolve(value),
                                                                   at: SourceLocation(file: file, line: line, column: 1)).paramValue,
                                      location: SourceLocation(file: file, line: line, column: 1)))
        }
        // An empty file (or only comments) is for the YAML reader to judge.
        return emptyMapping || !entries.isEmpty ? entries : nil
    }

    private static func isKeyStart(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || b == UInt8(ascii: "_")
    }

    private static func isKeyByte(_ b: UInt8) -> Bool {
        isKeyStart(b) || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-")
    }

    /// The text of a plain scalar that is certainly one: no indicator first,
    /// no `: ` or ` #` inside, no flow punctuation, no space at either end.
    private static func plainScalar(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let first = bytes.first, let last = bytes.last, last != UInt8(ascii: " "), last != UInt8(ascii: ":") else { return nil }
        if Array("-?:,[]{}#&*!|>'\"%@` ".utf8).contains(first) { return nil }
        var previous: UInt8 = 0
        for b in bytes {
            switch b {
            case UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"): return nil
            case UInt8(ascii: "#") where previous == UInt8(ascii: " "): return nil
            case UInt8(ascii: " ") where previous == UInt8(ascii: ":"): return nil
            default: break
            }
            previous = b
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
