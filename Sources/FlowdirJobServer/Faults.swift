import FlowdirCore
import FlowdirTemplates

/// `--faults FILE` (YAML, or JSON, which is YAML too): answers given
/// instead of the normal ones, per route, consumed in order; once a
/// route's list is used up it is served normally again. For tests and
/// demos of a client's retries, timeouts and error messages.
///
/// ```yaml
/// faults:
///   - route: POST /v1/models/*/predictions    # METHOD /path; * stands for one or more path parts
///     responses:
///       - 503                                 # a status alone, with a JSON error body
///       - { status: 429, retryAfter: 45 }     # with Retry-After: 45
///       - { delay: 5 }                        # served, but answered 5 s late (a client's timeout)
///       - { delay: 2, status: 504 }           # 2 s, then 504, not served
///       - { reset: true }                     # the connection reset (RST), no answer, not served
///       - { status: 200, body: "<html>gateway</html>" }   # a body that is not JSON, not served
///   - route: GET /v1/predictions/*
///     responses: [503, 503]
/// ```
///
/// A `route` is matched against every request's method and path (not its
/// query); the first route with answers left that matches gives one.
public struct Faults: Sendable {
    public struct Response: Sendable, Equatable {
        public var status: Int?
        public var retryAfter: String?
        public var delay: Double?
        public var reset = false
        public var body: String?
    }

    struct Rule: Sendable {
        var method: String
        var pattern: [Substring]
        var responses: [Response]
    }

    var rules: [Rule] = []

    public init() {}

    public static func load(_ bytes: [UInt8], file: String) throws(JobServerError) -> Faults {
        let doc: [ParamEntry]
        switch InstanceCodec.document(bytes, file: file) {
        case .success(let d): doc = d
        case .failure(let d): throw .badFaults("\(file): \(d.message)")
        }
        var faults = Faults()
        guard case .array(let items)? = doc[key: "faults"]?.value else { throw .badFaults("\(file): needs `faults:`, a list of { route, responses }") }
        for item in items {
            guard case .object(let fields) = item, let route = fields[key: "route"]?.value.stringValue,
                  case .array(let answers)? = fields[key: "responses"]?.value else {
                throw .badFaults("\(file): each fault needs `route: METHOD /path` and `responses: [...]`")
            }
            let parts = route.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { throw .badFaults("\(file): route '\(route)' must be METHOD /path") }
            var responses: [Response] = []
            for a in answers { responses.append(try response(a, route: route, file: file)) }
            faults.rules.append(Rule(method: parts[0].uppercased(), pattern: parts[1].split(separator: "/"), responses: responses))
        }
        return faults
    }

    static let keys: Set<String> = ["status", "retryAfter", "delay", "reset", "body"]

    static func response(_ a: ParamValue, route: String, file: String) throws(JobServerError) -> Response {
        let shape = "a response is a status (503) or { status, retryAfter, delay, reset, body }"
        var r = Response()
        switch a {
        case .int(let status): r.status = status
        case .object(let f):
            if let unknown = f.first(where: { !keys.contains($0.key) }) {
                throw .badFaults("\(file): route '\(route)': unknown key '\(unknown.key)'; \(shape)")
            }
            if let v = f[key: "status"]?.value {
                guard case .int(let s) = v else { throw .badFaults("\(file): route '\(route)': status must be a number like 503") }
                r.status = s
            }
            if let v = f[key: "retryAfter"]?.value { r.retryAfter = v.stringValue ?? v.numberValue.map { ParamValue.plainNumber($0) } }
            if let v = f[key: "delay"]?.value {
                guard let d = v.numberValue, d >= 0 else { throw .badFaults("\(file): route '\(route)': delay is seconds, like 5 or 0.5") }
                r.delay = d
            }
            if case .bool(let b)? = f[key: "reset"]?.value { r.reset = b }
            r.body = f[key: "body"]?.value.stringValue
        default:
            throw .badFaults("\(file): route '\(route)': \(shape)")
        }
        if let s = r.status, !(100...599).contains(s) { throw .badFaults("\(file): route '\(route)': \(s) is not an HTTP status") }
        if r.body != nil || r.retryAfter != nil, r.status == nil {
            throw .badFaults("\(file): route '\(route)': body and retryAfter go with a status")
        }
        if r.status == nil, r.delay == nil, !r.reset { throw .badFaults("\(file): route '\(route)': \(shape)") }
        return r
    }

    /// The next fault for this request, consumed; nil: answer normally.
    mutating func next(method: String, path: String) -> Response? {
        let pieces = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        for i in rules.indices where rules[i].method == method && Self.matches(rules[i].pattern[...], pieces[...]) && !rules[i].responses.isEmpty {
            return rules[i].responses.removeFirst()
        }
        return nil
    }

    static func matches(_ pattern: ArraySlice<Substring>, _ path: ArraySlice<Substring>) -> Bool {
        guard let p = pattern.first else { return path.isEmpty }
        if p == "*" {
            // One or more pieces.
            guard !path.isEmpty else { return false }
            return (1...path.count).contains { matches(pattern.dropFirst(), path.dropFirst($0)) }
        }
        guard let first = path.first, first == p else { return false }
        return matches(pattern.dropFirst(), path.dropFirst())
    }
}
