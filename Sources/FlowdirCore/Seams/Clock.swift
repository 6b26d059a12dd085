/// A moment, as seconds since the Unix epoch, written as ISO 8601 UTC.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var seconds: Double

    public init(seconds: Double) { self.seconds = seconds }

    public static func < (l: Timestamp, r: Timestamp) -> Bool { l.seconds < r.seconds }
    public static func + (l: Timestamp, r: Double) -> Timestamp { Timestamp(seconds: l.seconds + r) }
    public static func - (l: Timestamp, r: Timestamp) -> Double { l.seconds - r.seconds }

    public var description: String { iso8601 }
}

/// Wall time, injected: logic never reads the system clock itself. Named so
/// as not to hide Swift's `Clock`; waiting and measuring go through
/// `FlowdirClock`, which pairs one of these with a Swift `Clock`.
public protocol WallClock: Sendable {
    func now() -> Timestamp
}

/// "5m ago", "in 1h", "just now" — for lists meant for people.
public enum RelativeTime {
    public static func describe(_ t: Timestamp, now: Timestamp) -> String {
        let delta = now - t
        guard delta.isFinite else { return "at an unknown time" }
        let magnitude = min(abs(delta), 1e15)
        let text: String
        switch magnitude {
        case ..<10: return "just now"
        case ..<60: text = "\(Int(magnitude))s"
        case ..<3600: text = "\(Int(magnitude / 60))m"
        case ..<86_400: text = "\(Int(magnitude / 3600))h"
        default: text = "\(Int(magnitude / 86_400))d"
        }
        return delta >= 0 ? "\(text) ago" : "in \(text)"
    }
}

/// A clock that stands still: tests, and `FLOWDIR_NOW` for the command line.
public struct FixedClock: WallClock {
    public var time: Timestamp
    public init(_ time: Timestamp) { self.time = time }
    public func now() -> Timestamp { time }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
