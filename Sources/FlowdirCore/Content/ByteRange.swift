/// What an HTTP `Range` header asks of a file of `size` bytes (RFC 9110
/// §14): one range of bytes, and only that; anything else is the whole
/// file, which RFC 9110 lets a server send for a range it does not serve.
public enum ByteRange: Equatable, Sendable {
    /// The whole file (no header, another unit, several ranges, a header
    /// that does not parse).
    case whole
    /// The bytes `first...last`, both within the file.
    case part(first: Int64, last: Int64)
    /// A range that starts past the end, or a suffix of no bytes: `416`.
    case unsatisfiable

    /// `header`: the `Range` field's value, if the request had one.
    public static func of(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        var text = Substring(header).trimmingSpaces
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        text = text.dropFirst(6).trimmingSpaces
        // Several ranges would need multipart/byteranges; a browser asks for one.
        guard !text.contains(","), let dash = text.firstIndex(of: "-") else { return .whole }
        let from = text[..<dash].trimmingSpaces, to = text[text.index(after: dash)...].trimmingSpaces
        if from.isEmpty {
            // `bytes=-n`: the last n bytes.
            guard let n = number(to) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .part(first: max(0, size - n), last: size - 1)
        }
        guard let first = number(from) else { return .whole }
        var last = size - 1
        if !to.isEmpty {
            guard let l = number(to) else { return .whole }
            guard l >= first else { return .whole }  // `bytes=5-2` is not a range: ignored, as RFC 9110 says
            last = min(l, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first: first, last: last)
    }

    /// Decimal digits only; past `Int64.max` is `Int64.max` (a range that
    /// large starts past any file's end, or ends at it).
    static func number(_ s: Substring) -> Int64? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var n: Int64 = 0
        for d in s.utf8 {
            let (times, o1) = n.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(Int64(d - 0x30))
            if o1 || o2 { return .max }
            n = plus
        }
        return n
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
