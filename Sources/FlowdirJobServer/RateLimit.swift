import FlowdirCore

/// `--rate-limit N`: N requests a minute per token, as a token bucket that
/// holds a minute's worth and refills evenly, so a burst up to N is
/// served and then one request every 60/N s. Past it: 429 with
/// `Retry-After`, the whole seconds until the next request would be served.
struct RateLimit: Sendable {
    let perMinute: Int
    private var buckets: [String: (tokens: Double, at: Double)] = [:]

    init(perMinute: Int) { self.perMinute = max(1, perMinute) }

    /// Counts a request by `who` at `now` (seconds); nil when it may be
    /// served, else the seconds to wait (not counted).
    mutating func take(_ who: String, now: Double) -> Int? {
        let rate = Double(perMinute) / 60
        var b = buckets[who] ?? (Double(perMinute), now)
        b.tokens = min(Double(perMinute), b.tokens + max(0, now - b.at) * rate)
        b.at = now
        defer {
            buckets[who] = b
            if buckets.count > 10_000 { forgetFull(now: now) }
        }
        guard b.tokens >= 1 else { return max(1, Int(((1 - b.tokens) / rate).rounded(.up))) }
        b.tokens -= 1
        return nil
    }

    /// Full buckets are the same as none: dropped, so many tokens tried once
    /// (a scan for a valid one) cost no memory.
    private mutating func forgetFull(now: Double) {
        let rate = Double(perMinute) / 60
        buckets = buckets.filter { $0.value.tokens + (now - $0.value.at) * rate < Double(perMinute) }
    }
}
