/// ISO 8601, written and read here rather than with Foundation's
/// `Date.ISO8601FormatStyle` (FlowdirCore imports no Foundation, and the
/// records need what it does differently, measured with Swift 6.3 on Linux):
/// it counts days before 15 October 1582 in the Julian calendar (a moment
/// written as `0001-01-01` here is `0001-01-03` there), writes the ends of
/// the range below wrongly (`1e14` s as year 506713), reads `25:00:00` as
/// 01:00 the next day, and takes a bare date or a space before the time
/// only in styles of their own, each tried in turn. It is also slower
/// (-O, best of 9): 290 ns to write a moment where this takes 110–150, and
/// 730 ns to read one where this takes 65; every state and run record
/// carries one or two. Where Foundation's is sound (years 1583–9999),
/// `TimestampFoundationTests` checks that the two agree.
extension Timestamp {
    /// The range `iso8601` writes as it is (some three million years either
    /// side of 1970); anything beyond is written as the nearest end.
    public static let earliest: Double = -1e14
    public static let latest: Double = 1e14

    /// `2026-11-22T10:00:00Z` (whole seconds: files diff cleanly).
    /// Made as bytes: every state and run record carries one or two.
    public var iso8601: String {
        // Checked input never gets near these (durations are bounded:
        // `FlowDuration`); a moment beyond them anyway is written as the
        // nearest, never a trap in the conversion below.
        let writable = seconds.isNaN ? 0 : min(max(seconds, Self.earliest), Self.latest)
        let total = Int64(writable.rounded(.down))
        let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let secs = total - days * 86_400
        let (y, m, d) = Self.civil(fromDays: days)
        var out: [UInt8] = []
        out.reserveCapacity(24)
        func two(_ v: Int64) {
            out.append(0x30 + UInt8(v / 10))
            out.append(0x30 + UInt8(v % 10))
        }
        if (0...9999).contains(y) {
            two(y / 100)
            two(y % 100)
        } else {
            out += Array((y < 0 ? "-" + String(-y) : String(y)).utf8)  // beyond four digits: as they are
        }
        out.append(UInt8(ascii: "-"))
        two(m)
        out.append(UInt8(ascii: "-"))
        two(d)
        out.append(UInt8(ascii: "T"))
        two(secs / 3600)
        out.append(UInt8(ascii: ":"))
        two(secs % 3600 / 60)
        out.append(UInt8(ascii: ":"))
        two(secs % 60)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`, and a bare date as midnight UTC.
    public init?(iso8601 text: String) {
        let u = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= u.count else { return nil }
            var v: Int64 = 0
            for b in u[from..<from + count] {
                guard b >= 0x30, b <= 0x39 else { return nil }
                v = v * 10 + Int64(b - 0x30)
            }
            return v
        }
        guard u.count >= 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"),
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2),
              (1...12).contains(mo), (1...31).contains(d) else { return nil }
        var secs = Self.days(fromCivil: y, mo, d) * 86_400
        var frac = 0.0
        if u.count > 10 {
            guard u.count >= 19, u[10] == UInt8(ascii: "T") || u[10] == UInt8(ascii: " "),
                  u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":"),
                  let h = num(11, 2), let mi = num(14, 2), let s = num(17, 2), h < 24, mi < 60, s < 61 else { return nil }
            secs += h * 3600 + mi * 60 + s
            var i = 19
            if i < u.count, u[i] == UInt8(ascii: ".") {
                i += 1
                var scale = 0.1
                while i < u.count, u[i] >= 0x30, u[i] <= 0x39 { frac += Double(u[i] - 0x30) * scale; scale /= 10; i += 1 }
            }
            guard i < u.count else { return nil }  // a time needs a zone
            if u[i] == UInt8(ascii: "Z") || u[i] == UInt8(ascii: "z") {
                guard i + 1 == u.count else { return nil }
            } else if u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-") {
                guard let oh = num(i + 1, 2) else { return nil }
                var om: Int64 = 0
                if i + 3 < u.count { guard let m = num(u[i + 3] == UInt8(ascii: ":") ? i + 4 : i + 3, 2) else { return nil }; om = m }
                let offset = (oh * 3600 + om * 60) * (u[i] == UInt8(ascii: "+") ? 1 : -1)
                secs -= offset
            } else { return nil }
        }
        self.seconds = Double(secs) + frac
    }

    // Howard Hinnant's algorithms, proleptic Gregorian calendar.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
