/// A length of time as templates and config write it: ISO 8601 (`PT24H`,
/// `P1DT2H`, `PT0.5S`) or the short forms `90s`, `10m`, `1h`, `2d`.
public struct FlowDuration: Hashable, Sendable, CustomStringConvertible {
    public var seconds: Double
    /// The text as written, so it round-trips into files unchanged.
    public var text: String

    public init(seconds: Double, text: String? = nil) {
        self.seconds = seconds
        self.text = text ?? "\(seconds)s"
    }

    public var description: String { text }

    public init?(parsing raw: String) {
        let text = raw.trimmed()
        guard !text.isEmpty else { return nil }
        if let seconds = Self.parseISO(text) ?? Self.parseShort(text) {
            self.init(seconds: seconds, text: text)
        } else {
            return nil
        }
    }

    private static func parseShort(_ text: String) -> Double? {
        guard let unit = text.last, let number = Double(text.dropLast()), number >= 0 else { return nil }
        switch unit {
        case "s": return number
        case "m": return number * 60
        case "h": return number * 3600
        case "d": return number * 86400
        default: return nil
        }
    }

    private static func parseISO(_ text: String) -> Double? {
        var chars = Substring(text.uppercased())
        guard chars.first == "P" else { return nil }
        chars = chars.dropFirst()
        var total = 0.0
        var inTime = false
        var number = ""
        var sawComponent = false
        for c in chars {
            if c == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                continue
            }
            if c.isNumber || c == "." || c == "," {
                number.append(c == "," ? "." : c)
                continue
            }
            guard let value = Double(number), value >= 0 else { return nil }
            number = ""
            sawComponent = true
            switch (c, inTime) {
            case ("W", false): total += value * 604_800
            case ("D", false): total += value * 86_400
            case ("H", true): total += value * 3_600
            case ("M", true): total += value * 60
            case ("S", true): total += value
            default: return nil  // years and months have no fixed length
            }
        }
        guard number.isEmpty, sawComponent else { return nil }
        return total
    }
}

extension StringProtocol {
    /// Without the given characters at either end (default: blanks and line
    /// breaks). By Unicode scalar: as Characters, "\r\n" is one, and a set
    /// written " \t\r\n" would not contain a lone "\n".
    public func trimmed(_ characters: String = " \t\r\n") -> String {
        // ASCII characters (all callers'): trimmed by byte, as an ASCII
        // byte is never part of a longer UTF-8 sequence. Four times faster
        // on the template loader's path, where a Set was built per call.
        let ascii = characters.utf8
        if ascii.allSatisfy({ $0 < 0x80 }) {
            let whole = String(self)  // free for a String
            let u = whole.utf8
            var lo = u.startIndex, hi = u.endIndex
            while lo != hi, ascii.contains(u[lo]) { lo = u.index(after: lo) }
            while lo != hi {
                let before = u.index(before: hi)
                guard ascii.contains(u[before]) else { break }
                hi = before
            }
            return String(whole[lo..<hi])
        }
        let set = Set(characters.unicodeScalars)
        var s = String(self).unicodeScalars[...]
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(String.UnicodeScalarView(s))
    }
}
