/// How flowdir waits on a job API (docs/templates-and-tools.md, `run.http`):
/// pure rules, time and randomness given, so they are tested with a manual
/// clock.

/// A submit that met a transient fault (429, 503, 504, a reset, a timeout)
/// is tried again at ~30 s, then ~2 min, at most 3 times, each delay ±25%;
/// a `Retry-After` from the server wins.
public enum SubmitRetry {
    public static let jitterFraction = 0.25

    /// The wait before the next try after `failures` failed tries (1 after
    /// the first), or nil: give up. `jitter` is a random value in -1...1.
    public static func delay(afterFailures failures: Int, retryAfter: Double?, endpoint: EndpointConfig, jitter: Double) -> Double? {
        let delays = endpoint.retryDelays
        guard failures >= 1, failures <= delays.count else { return nil }
        if let retryAfter, retryAfter.isFinite { return min(max(0, retryAfter), longestRetryAfter) * endpoint.delayScale }
        return delays[failures - 1] * (1 + jitterFraction * min(1, max(-1, jitter)))
    }

    /// The longest wait a server's `Retry-After` is believed for: one day.
    /// Longer (or not a number of seconds) is not taken; the usual delays apply.
    public static let longestRetryAfter: Double = 86_400

    /// `Retry-After` given as seconds: digits only (never `inf`, `nan`, a
    /// sign or an exponent), at most `longestRetryAfter`; `nil` otherwise.
    public static func retryAfterSeconds(_ text: String) -> Double? {
        let digits = text.trimmed(" \t")
        guard !digits.isEmpty, digits.utf8.count <= 9, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let n = Double(digits), n <= longestRetryAfter else { return nil }
        return n
    }

    /// The reason a node fails with when its submit gave up, after `retries`
    /// retries (one try more than that).
    public static func cooldownReason(retries: Int, last: String) -> String {
        "gave up after \(retries) retries: \(last)"
    }
}

/// Polls and downloads that fail wait 1 s, 2 s, 4 s … up to 5 min (±25%),
/// and start again from the first after a success; they never fail a job
/// by themselves.
public struct Backoff: Sendable, Equatable {
    public var first: Double
    public var maximum: Double
    public private(set) var failures = 0

    public init(first: Double = 1, maximum: Double = 300) {
        self.first = first
        self.maximum = maximum
    }

    public init(_ endpoint: EndpointConfig) {
        self.init(first: endpoint.firstBackoff, maximum: endpoint.maxBackoff)
    }

    /// One more failure: how long to wait before trying again.
    public mutating func failed(jitter: Double) -> Double {
        let exponent = min(failures, 40)
        failures += 1
        let base = min(maximum, first * Double(1 << UInt64(min(exponent, 62))))
        return min(maximum * (1 + SubmitRetry.jitterFraction), base * (1 + SubmitRetry.jitterFraction * min(1, max(-1, jitter))))
    }

    public mutating func succeeded() { failures = 0 }

    public var isFailing: Bool { failures > 0 }
}

/// At most `maxRequestsPerMinute` requests to an endpoint in any minute,
/// whatever sends them (submits, polls, cancels, downloads).
public struct RequestBudget: Sendable {
    public let perMinute: Int
    /// When each request of the last minute was sent, oldest first.
    private var sent: [Double] = []
    private var head = 0

    public init(perMinute: Int) { self.perMinute = max(1, perMinute) }

    /// Seconds to wait before a request may be sent at `now` (0: now).
    public func wait(now: Double) -> Double {
        let inWindow = sent.count - head - sent[head...].prefix { $0 <= now - 60 }.count
        guard inWindow >= perMinute else { return 0 }
        // The oldest request still in the window leaves it in this long.
        let live = sent[head...].drop { $0 <= now - 60 }
        return max(0, live[live.startIndex + (inWindow - perMinute)] + 60.001 - now)
    }

    /// Counts a request sent at `now`.
    public mutating func spend(now: Double) {
        while head < sent.count, sent[head] <= now - 60 { head += 1 }
        if head > 1024 {
            sent.removeFirst(head)
            head = 0
        }
        sent.append(now)
    }

    /// Requests counted in the minute before `now`.
    public func spentInLastMinute(now: Double) -> Int {
        sent[head...].filter { $0 > now - 60 }.count
    }
}

/// Which jobs of an endpoint to ask about, and when: each job every
/// `pollInterval`, and many with one list call where the API lists.
public enum PollPlan {
    public enum Request: Equatable, Sendable {
        /// One job's own status (`GET /predictions/{id}`).
        case get(String)
        /// The list of predictions, newest first, page after page until every
        /// one of `ids` is seen or the pages run out.
        case list(Set<String>)
    }

    /// The requests for the jobs due now. With two or more due, one list
    /// call (paged) is cheaper than a get each as long as the jobs fit in
    /// the pages a list walks; `listPageSize` and `pagesPerJob` say when.
    public static func requests(due: [String], tracked: Int, listPageSize: Int = 100) -> [Request] {
        guard due.count >= 2 else { return due.map(Request.get) }
        // A list walks pages from the newest: when far more jobs are tracked
        // than due, the due ones may be deep in it; then gets are cheaper.
        let pages = (tracked + listPageSize - 1) / listPageSize
        return pages <= due.count ? [.list(Set(due))] : due.map(Request.get)
    }
}
