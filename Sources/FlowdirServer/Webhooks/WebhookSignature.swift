import Crypto
import Foundation

/// Webhooks signed as Replicate signs them (the Standard Webhooks scheme):
/// `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
/// keyed with the secret's bytes (base64 after `whsec_`). Believed only
/// when a signature matches and the timestamp is within 5 minutes.
public enum WebhookSignature {
    public static let tolerance: Double = 300

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
        let timestamp = String(Int(now))
        return Headers(id: id, timestamp: timestamp, signature: "v1," + mac(id: id, timestamp: timestamp, body: body, secret: secret))
    }

    public enum Rejection: Error, Equatable, CustomStringConvertible {
        case missingHeaders, stale(seconds: Int), noMatch

        public var description: String {
            switch self {
            case .missingHeaders: "no webhook-id, webhook-timestamp or webhook-signature header"
            case .stale(let s): "its timestamp is \(s)s from now (at most \(Int(WebhookSignature.tolerance))s is believed)"
            case .noMatch: "no signature matches the endpoint's webhook secret"
            }
        }
    }

    /// Whether `body` with these headers was signed with `secret`.
    public static func verify(body: [UInt8], id: String?, timestamp: String?, signature: String?, secret: String,
                              now: Double) -> Result<Void, Rejection> {
        guard let id, let timestamp, let signature, let t = Double(timestamp) else { return .failure(.missingHeaders) }
        guard abs(now - t) <= tolerance else { return .failure(.stale(seconds: Int(now - t))) }
        let expected = Array(mac(id: id, timestamp: timestamp, body: body, secret: secret).utf8)
        // Several may be given, space-separated (a secret being rotated).
        for candidate in signature.split(separator: " ") {
            let parts = candidate.split(separator: ",", maxSplits: 1)
            guard parts.count == 2, parts[0] == "v1" else { continue }
            if constantTimeEqual(Array(parts[1].utf8), expected) { return .success(()) }
        }
        return .failure(.noMatch)
    }

    static func mac(id: String, timestamp: String, body: [UInt8], secret: String) -> String {
        let key = SymmetricKey(data: keyBytes(secret))
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        let code = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Data(code).base64EncodedString()
    }

    /// `whsec_<base64>` → its bytes; any other secret is used as it is.
    static func keyBytes(_ secret: String) -> [UInt8] {
        if secret.hasPrefix("whsec_"), let d = Data(base64Encoded: String(secret.dropFirst(6))) { return Array(d) }
        return Array(secret.utf8)
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
