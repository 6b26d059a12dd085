import Foundation

/// Webhooks signed as Replicate signs them (the Standard Webhooks scheme):
/// `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
/// keyed with the secret's bytes (base64 after `whsec_`). Believed only
/// when a signature matches and the timestamp — whole seconds, digits
/// only — is within 5 minutes. Everything here but the HMAC is plain
/// arithmetic on bounded integers, so any header a caller sends is an
/// answer (a `Rejection`), never a trap (see docs/security.md).
public enum WebhookSignature {
    public static let tolerance: Double = 300
    static let toleranceSeconds: Int64 = 300

    /// The longest `webhook-id` and `webhook-signature` taken, and the most
    /// signatures tried (several are sent while a secret is rotated).
    static let longestID = 256
    static let longestSignatureHeader = 4096
    static let mostSignatures = 16

    /// `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    public struct Headers: Sendable, Equatable {
        public var id: String
        public var timestamp: String
        public var signature: String

        public init(id: String, timestamp: String, signature: String) {
            self.id = id
            self.timestamp = timestamp
            self.signature = signature
        }
    }

    /// The headers for sending `body` (seconds since the epoch `now`).
    public static func sign(body: [UInt8], id: String, now: Double, secret: String) -> Headers {
        let timestamp = String(seconds(now))
        return Headers(id: id, timestamp: timestamp, signature: "v1," + mac(id: id, timestamp: timestamp, body: body, secret: secret))
    }

    public enum Rejection: Error, Equatable, CustomStringConvertible {
        case missingHeaders
        /// `webhook-timestamp` is not whole seconds (digits only, at most 12).
        case malformedTimestamp
        /// A header longer than is ever sent, or an id with control characters.
        case malformedHeaders
        case stale(seconds: Int)
        case noMatch
        /// A delivery with this `webhook-id` was believed already.
        case replayed
        /// More deliveries within 5 minutes than are remembered: not
        /// believed, so none can be replayed (polling finds the job's end).
        case tooMany

        public var description: String {
            switch self {
            case .missingHeaders: "no webhook-id, webhook-timestamp or webhook-signature header"
            case .malformedTimestamp: "its webhook-timestamp is not whole seconds since 1970"
            case .malformedHeaders: "its webhook-id or webhook-signature header is not one a job API sends"
            case .stale(let s): "its timestamp is \(s)s from now (at most \(WebhookSignature.toleranceSeconds)s is believed)"
            case .noMatch: "no signature matches the endpoint's webhook secret"
            case .replayed: "its webhook-id was received already (a replay)"
            case .tooMany: "more webhooks within 5 minutes than flowdir remembers; the job's state is read by polling"
            }
        }
    }

    /// `webhook-timestamp` as whole seconds: 1 to 12 ASCII digits (no
    /// sign, point, exponent, `nan` or `inf`), so it is an Int64 with room
    /// to spare for any difference taken with it.
    public static func timestamp(_ text: String) -> Int64? {
        let u = text.utf8
        guard !u.isEmpty, u.count <= 12, u.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return u.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
    }

    /// A clock reading as whole seconds, within what `timestamp` reads.
    static func seconds(_ now: Double) -> Int64 {
        guard now.isFinite else { return 0 }
        return Int64(min(max(now, 0), 999_999_999_999).rounded(.down))
    }

    /// Whether `body` with these headers was signed with `secret`, within
    /// the tolerance of `now` (seconds since 1970). Replays are not looked
    /// at here: `WebhookCheck` does that with the ids it remembers.
    public static func verify(body: [UInt8], id: String?, timestamp: String?, signature: String?, secret: String,
                              now: Double) -> Result<Void, Rejection> {
        guard let id, let timestamp, let signature else { return .failure(.missingHeaders) }
        guard let t = Self.timestamp(timestamp) else { return .failure(.malformedTimestamp) }
        guard !id.isEmpty, id.utf8.count <= longestID, id.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }),
              signature.utf8.count <= longestSignatureHeader else {
            return .failure(.malformedHeaders)
        }
        let skew = seconds(now) - t  // both within 0...10^12: no overflow
        guard abs(skew) <= toleranceSeconds else { return .failure(.stale(seconds: Int(skew))) }
        let expected = Array(mac(id: id, timestamp: timestamp, body: body, secret: secret).utf8)
        // Several may be given, space-separated (a secret being rotated).
        // By bytes: as Characters, a space followed by a combining mark is not a space.
        for candidate in signature.utf8.split(separator: 0x20).prefix(mostSignatures) {
            guard candidate.starts(with: "v1,".utf8) else { continue }
            if constantTimeEqual(Array(candidate.dropFirst(3)), expected) { return .success(()) }
        }
        return .failure(.noMatch)
    }

    static func mac(id: String, timestamp: String, body: [UInt8], secret: String) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return Data(HMACSHA256.authenticationCode(for: message, key: keyBytes(secret))).base64EncodedString()
    }

    /// `whsec_<base64>` → its bytes; any other secret is used as it is.
    static func keyBytes(_ secret: String) -> [UInt8] {
        if secret.hasPrefix("whsec_"), let d = Data(base64Encoded: String(secret.dropFirst(6))) { return Array(d) }
        return Array(secret.utf8)
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}

/// The webhook ids believed within the tolerance, so each is believed once
/// (docs/security.md, "The webhook receiver"). An id is kept until its
/// timestamp is past the tolerance — after that the timestamp alone
/// refuses it — and at most `capacity` are kept: when that many are live,
/// a new delivery is refused (polling finds the job's end), never one
/// forgotten to make room, which would let its replay in.
public struct WebhookReplaySet: Sendable {
    public let capacity: Int
    /// `endpoint` NUL `id` → the second after which it is stale anyway.
    private var until: [String: Int64] = [:]

    public init(capacity: Int = 10_000) { self.capacity = max(1, capacity) }

    public var count: Int { until.count }

    /// Records a believed delivery: `.replayed` if its id was seen, `.tooMany`
    /// when full of live ids. `now` and `timestamp` are whole seconds.
    public mutating func admit(endpoint: String, id: String, timestamp: Int64, now: Int64) -> Result<Void, WebhookSignature.Rejection> {
        let key = endpoint + "\u{0}" + id
        if let t = until[key], t >= now { return .failure(.replayed) }
        if until.count >= capacity { until = until.filter { $0.value >= now } }
        guard until.count < capacity else { return .failure(.tooMany) }
        until[key] = timestamp + WebhookSignature.toleranceSeconds
        return .success(())
    }
}

/// One delivery to the receiver, checked as a pure function of its
/// bytes, the secret, the time and the ids seen: headers, timestamp,
/// signature, then replay. What `WebhookReceiver` runs on every POST, and
/// what a fuzzer can run on any bytes.
public enum WebhookCheck {
    public static func check(body: [UInt8], id: String?, timestamp: String?, signature: String?, endpoint: String, secret: String,
                             now: Double, seen: inout WebhookReplaySet) -> Result<Void, WebhookSignature.Rejection> {
        if case .failure(let why) = WebhookSignature.verify(body: body, id: id, timestamp: timestamp, signature: signature,
                                                           secret: secret, now: now) {
            return .failure(why)
        }
        // Signed with the secret: only now may it take a place among the remembered.
        return seen.admit(endpoint: endpoint, id: id!, timestamp: WebhookSignature.timestamp(timestamp!)!,
                          now: WebhookSignature.seconds(now))
    }
}
