import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// `Timestamp`'s ISO 8601 is its own (`Timestamp+ISO8601.swift` says why);
/// where Foundation's is sound, Gregorian years 1583–9999, the two agree.
@Suite(.tags(.small)) struct TimestampFoundationTests {
    static let first = -12_212_553_600.0  // 1583-01-01T00:00:00Z
    static let last = 253_402_300_799.0   // 9999-12-31T23:59:59Z

    /// A moment in that range, to the millisecond (Foundation's fractional style writes no finer).
    static func moment(_ rng: inout SplitMix) -> Double {
        let second = first + Double(rng.next() % UInt64(last - first + 1))
        return second + Double(rng.next() % 1000) / 1000
    }

    @Test func writesAsFoundationDoes() {
        var rng = SplitMix(seed: 42)
        let style = Date.ISO8601FormatStyle()
        for seconds in [Self.first, Self.last, 0, -1, 951_868_799, 1_795_341_600] + (0..<4_000).map({ _ in Self.moment(&rng) }) {
            // Whole seconds, as the records are written: the fraction is dropped, not rounded.
            let foundation = style.format(Date(timeIntervalSince1970: seconds.rounded(.down)))
            #expect(Timestamp(seconds: seconds).iso8601 == foundation, "\(seconds)")
        }
    }

    @Test func readsAsFoundationDoes() {
        var rng = SplitMix(seed: 7)
        let plain = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let zones = [TimeZone.gmt] + ["+02:00", "-05:30", "+14:00", "-12:00"].map { TimeZone(secondsFromGMT: Self.offset($0))! }
        for i in 0..<4_000 {
            let seconds = Self.moment(&rng)
            // Kept off the range's ends, where an offset could carry a written moment past them.
            guard seconds > Self.first + 86_400, seconds < Self.last - 86_400 else { continue }
            var style = i % 2 == 0 ? fractional : plain
            style.timeZone = zones[i % zones.count]
            let text = style.format(Date(timeIntervalSince1970: seconds))
            let ours = Timestamp(iso8601: text)?.seconds
            let theirs = (try? style.parse(text))?.timeIntervalSince1970
            #expect(ours != nil && theirs != nil, "\(text)")
            // To within the last bit or two of a Double this large (31 µs in year 9999).
            if let ours, let theirs { #expect(abs(ours - theirs) <= max(1e-6, 2 * theirs.ulp), "\(text)") }
        }
    }

    /// What `Timestamp` reads that no one Foundation style does (those that
    /// do read it ask for it alone): each form records and users write.
    @Test func readsTheFormsFoundationSplits() {
        let t = 1_795_341_600.0
        #expect(Timestamp(iso8601: "2026-11-22")?.seconds == 1_795_305_600)
        #expect(Timestamp(iso8601: "2026-11-22 10:00:00Z")?.seconds == t)
        #expect(Timestamp(iso8601: "2026-11-22T10:00:00z")?.seconds == t)
        #expect(Timestamp(iso8601: "2026-11-22T10:00:00.25Z")?.seconds == t + 0.25)
        #expect(Timestamp(iso8601: "2026-11-22T10:00:00.123456Z").map { abs($0.seconds - t - 0.123456) < 1e-6 } == true)
        #expect(Timestamp(iso8601: "2026-11-22T12:00:00+0200")?.seconds == t)
        #expect(Timestamp(iso8601: "2026-11-22T12:00:00+02")?.seconds == t)
        // And what Foundation reads but a record never means: a 25th hour.
        #expect(Timestamp(iso8601: "2026-11-22T25:00:00Z") == nil)
    }

    static func offset(_ text: String) -> Int {
        let sign = text.hasPrefix("-") ? -1 : 1
        let parts = text.dropFirst().split(separator: ":").compactMap { Int($0) }
        return sign * (parts[0] * 3600 + parts[1] * 60)
    }
}
