import FlowdirCore

/// What went wrong talking to a job API, classified by what flowdir does about
/// it (retry, back off, fail: docs/templates-and-tools.md, `run.http`). Never
/// holds the token.
public enum JobAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with an error status: its own words (`detail`, `title` or `error`).
    case http(status: Int, message: String, retryAfter: Double?)
    /// A body that is not the API's JSON (a proxy's HTML page, a truncated answer).
    case notAPI(status: Int, snippet: String)
    /// The connection was dropped before an answer.
    case reset(String)
    /// No answer within this long.
    case timeout(seconds: Double)
    /// Nothing answers there: refused, no route, no such host.
    case unreachable(String)
    /// An answer longer than the caller's limit (bytes): the same next time.
    case tooLarge(limit: Int)
    /// The TLS handshake failed (a certificate not trusted, http spoken to
    /// an https port): a person has to fix the url or the certificate.
    case tls(String)

    /// Tried again automatically: 429, 502 (the proxy in front of a server
    /// that is restarting says 502 where the server itself would say 503),
    /// 503, 504, a reset connection, a timeout.
    public var isTransient: Bool {
        switch self {
        case .http(let status, _, _): Self.transientStatuses.contains(status)
        case .reset, .timeout: true
        case .notAPI, .unreachable, .tooLarge, .tls: false
        }
    }

    public static let transientStatuses: Set<Int> = [429, 502, 503, 504]

    /// Fails the job at once: 401, 403, 404, 422, any other 4xx, a 3xx (no
    /// redirect is followed), 500 and the 5xx not above (the server's own
    /// bug, which asking again does not mend), a body that is not the
    /// API's, an answer above the limit, a TLS failure.
    public var isPermanent: Bool { !isTransient && !isOffline }

    /// The endpoint cannot be reached at all: nodes wait, blocked offline.
    public var isOffline: Bool {
        if case .unreachable = self { return true }
        return false
    }

    public var status: Int? {
        switch self {
        case .http(let s, _, _), .notAPI(let s, _): s
        default: nil
        }
    }

    public var retryAfter: Double? {
        if case .http(_, _, let r) = self { return r }
        return nil
    }

    /// For a node error's `code`.
    public var code: String {
        switch self {
        case .http(let s, _, _): "http(\(s))"
        case .notAPI: "notAPI"
        case .reset: "reset"
        case .timeout: "timeout"
        case .unreachable: "offline"
        case .tooLarge: "tooLarge"
        case .tls: "tls"
        }
    }

    public var description: String {
        switch self {
        case .http(let status, let message, _): message.isEmpty ? "HTTP \(status)" : "\(status) \(message)"
        // Status 0: no HTTP answer at all (a server speaking something else, a URL that is none).
        case .notAPI(let status, let snippet): status == 0 ? snippet : "HTTP \(status) with a body that is not the API's JSON: \(snippet)"
        case .reset(let why): "connection reset (\(why))"
        case .timeout(let s): "no answer within \(Self.seconds(s))"
        case .unreachable(let why): "unreachable (\(why))"
        case .tooLarge(let limit): "an answer larger than \(Self.bytes(limit)), the most flowdir takes here"
        case .tls(let why): "TLS handshake failed (\(why))"
        }
    }

    static func bytes(_ n: Int) -> String {
        n >= 1 << 30 && n % (1 << 30) == 0 ? "\(n >> 30) GiB" : n >= 1 << 20 && n % (1 << 20) == 0 ? "\(n >> 20) MiB" : "\(n) bytes"
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s))s" : "\(s)s"
    }

    /// What to do about it, for a person.
    public func hint(endpoint: String) -> String? {
        let variable = EndpointConfig(name: endpoint, url: "").tokenVariable
        switch self {
        case .http(401, _, _):
            return "check the token for endpoint '\(endpoint)' in secrets.yaml (or \(variable))"
        case .http(403, _, _):
            return "the token for endpoint '\(endpoint)' may not use this model; check it in secrets.yaml (or \(variable))"
        case .http(404, _, _):
            return "check `model:` or `version:` under run.http of the tool, and the url of endpoint '\(endpoint)'"
        case .http(422, _, _):
            return "the model refused the input: check `input:` under run.http of the tool against the model's inputs"
        case .http(let status, _, _) where (300..<400).contains(status):
            return "flowdir follows no redirect (the token would go along): set the url of endpoint '\(endpoint)' in the config to where it redirects"
        case .notAPI:
            return "is endpoint '\(endpoint)' a Replicate-compatible API? Check its url in the config (it usually ends in /v1)"
        case .unreachable:
            return "is the server of endpoint '\(endpoint)' up? flowdir tries again by itself"
        case .http(let status, _, _) where status >= 500:
            return "the server of endpoint '\(endpoint)' failed on its side (its log may say why); `flowdir retry` sends the job again"
        case .tls:
            return "check the url of endpoint '\(endpoint)' (http:// or https://, as the server speaks) and that its certificate is trusted here"
        case .tooLarge:
            return "the model's output is larger than flowdir downloads; check `outputs:` under run.http of the tool"
        default:
            return nil
        }
    }
}
