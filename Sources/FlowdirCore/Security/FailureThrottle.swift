/// Failed tokens, per client address (docs/security.md): after `limit`
/// different wrong tokens from one address within `window` seconds, that
/// address is refused (HTTP 429) until the oldest of them is `window` old.
///
/// Only different wrong values count: a page that keeps sending a stale
/// cookie is one failure, while each guess of someone guessing is one.
/// What is kept is bounded: per address at most `limit` hashes of wrong
/// values (never the values), each for `window` seconds, and at most
/// `maxAddresses` addresses (those whose last failure is oldest go first);
/// expired ones are swept at least once a window.
public struct FailureThrottle: Sendable {
    public let limit: Int
    public let window: Double
    public let maxAddresses: Int
    private var failures: [String: [(hash: UInt64, at: Double)]] = [:]
    private var lastSweep = -Double.infinity

    public init(limit: Int = 10, window: Double = 60, maxAddresses: Int = 4096) {
        self.limit = max(1, limit)
        self.window = window > 0 && window.isFinite ? window : 60
        self.maxAddresses = max(1, maxAddresses)
    }

    /// Whole seconds `address` must wait before a token of its is looked
    /// at again, or nil when it may try.
    public mutating func wait(_ address: String, now: Double) -> Int? {
        guard var kept = failures[address] else { return nil }
        kept.removeAll { now - $0.at >= window }
        failures[address] = kept.isEmpty ? nil : kept
        guard kept.count >= limit, let oldest = kept.map(\.at).min() else { return nil }
        let seconds = (oldest + window - now).rounded(.up)
        return seconds >= 1 ? (seconds < 86_400 ? Int(seconds) : 86_400) : 1
    }

    /// Counts `presented`, a wrong token from `address`, unless the same
    /// value already counts.
    public mutating func failed(_ address: String, presented: String, now: Double) {
        let hash = Self.fnv1a(presented.utf8.prefix(4096))
        var kept = (failures[address] ?? []).filter { now - $0.at < window }
        if let i = kept.firstIndex(where: { $0.hash == hash }) {
            kept[i].at = now
        } else {
            kept.append((hash, now))
            if kept.count > limit { kept.removeFirst(kept.count - limit) }
        }
        failures[address] = kept
        if failures.count > maxAddresses || now - lastSweep >= window { forget(now: now) }
    }

    /// How many addresses are remembered (for tests of the bound).
    public var addresses: Int { failures.count }

    private mutating func forget(now: Double) {
        lastSweep = now
        failures = failures.compactMapValues { kept in
            let live = kept.filter { now - $0.at < window }
            return live.isEmpty ? nil : live
        }
        guard failures.count > maxAddresses else { return }
        let byLast = failures.map { ($0.key, $0.value.map(\.at).max() ?? 0) }.sorted { $0.1 < $1.1 }
        for (address, _) in byLast.prefix(failures.count - maxAddresses) { failures[address] = nil }
    }

    private static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}
