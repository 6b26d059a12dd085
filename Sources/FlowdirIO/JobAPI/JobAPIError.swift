import FlowdirCore

/// What went wrong talking to a job API, classified as DESIGN.md §5 says
/// what to do about it. Never holds the token.
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

    /// Tried again automatically: 429, 502 (a proxy before a busy server),
    /// 503, 504, a reset connection, a timeout.
    public var isTransient: Bool {
        switch self {
        case .http(let status, _, _): [429, 502, 503, 504].contains(status)
        case .reset, .timeout: true
        case .notAPI, .unreachable: false
        }
    }

    /// Fails the job at once: 401, 403, 404, 422, any other 4xx or 5xx, a body that is not the API's.
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
        }
    }

    public var description: String {
        switch self {
        case .http(let status, let message, _): message.isEmpty ? "HTTP \(status)" : "\(status) \(message)"
        case .notAPI(let status, let snippet): "HTTP \(status) with a body that is not the API's JSON: \(snippet)"
        case .reset(let why): "connection reset (\(why))"
        case .timeout(let s): "no answer within \(Self.seconds(s))"
        case .unreachable(let why): "unreachable (\(why))"
        }
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
        case .notAPI:
            return "is endpoint '\(endpoint)' a Replicate-compatible API? Check its url in the config (it usually ends in /v1)"
        case .unreachable:
            return "is the server of endpoint '\(endpoint)' up? flowdir tries again by itself"
        default:
            return nil
        }
    }
}
