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

    /// The longest duration flowdir takes from outside (templates, config,
    /// commands, request files, API bodies): 100 years. Anything longer is
    /// an error that names it, never a date or a timer out of range.
    public static let maximumSeconds: Double = 100 * 365 * 86_400

    /// Why a text is not a duration, in words for a person.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        case notADuration(String)
        case tooLong(String)

        public var description: String {
            switch self {
            case .notADuration(let t): "'\(Self.shown(t))' is not a duration (write PT24H, 90s, 10m, 1h or 2d)"
            case .tooLong(let t): "'\(Self.shown(t))' is longer than the 100 years flowdir allows"
            }
        }

        /// Long or odd text cut for a message, control characters escaped.
        static func shown(_ t: String) -> String {
            let cut = t.count > 40 ? String(t.prefix(40)) + "…" : t
            return String(cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        }
    }

    public init?(parsing raw: String) {
        guard case .success(let d) = Self.parse(raw) else { return nil }
        self = d
    }

    /// `raw` as a duration: digits with an optional fraction and a unit
    /// (never `nan`, `inf` or an exponent), at most `maximumSeconds`.
    public static func parse(_ raw: String) -> Result<FlowDuration, Problem> {
        let text = raw.trimmed()
        guard !text.isEmpty, text.utf8.count <= 64, let seconds = parseISO(text) ?? parseShort(text) else {
            return .failure(.notADuration(raw))
        }
        guard let bounded = checkedSeconds(seconds) else { return .failure(.tooLong(raw)) }
        return .success(FlowDuration(seconds: bounded, text: text))
    }

    /// A number of seconds given as a plain number (a config's `pollInterval:
    /// 10`, a request's `duration`): `nil` unless finite, not negative and at
    /// most `maximumSeconds`.
    public static func checkedSeconds(_ n: Double) -> Double? {
        n.isFinite && n >= 0 && n <= maximumSeconds ? n : nil
    }

    /// Digits, optionally `.` or `,` and more digits: what a component's number may be.
    /// (`Double.init` alone also reads `nan`, `inf`, `1e20` and hex.)
    public static func decimal<S: StringProtocol>(_ s: S) -> Double? {
        var sawDigit = false, sawPoint = false
        for u in s.utf8 {
            if u >= 0x30 && u <= 0x39 { sawDigit = true; continue }
            guard (u == UInt8(ascii: ".") || u == UInt8(ascii: ",")), !sawPoint else { return nil }
            sawPoint = true
        }
        guard sawDigit else { return nil }
        return Double(String(s.map { $0 == "," ? "." : $0 }))
    }

    private static func parseShort(_ text: String) -> Double? {
        guard let unit = text.last, let number = decimal(text.dropLast()) else { return nil }
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
            if c.isASCII && (c.isNumber || c == "." || c == ",") {
                number.append(c)
                continue
            }
            guard let value = decimal(number) else { return nil }
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
