import FlowdirCore
import FlowdirTemplates

/// `--faults FILE`: answers to give instead of the normal ones, per route,
/// consumed in order, then normal service. YAML:
///
/// ```yaml
/// faults:
///   - route: POST /v1/models/*/predictions    # method and path; * stands for one or more path pieces
///     responses:
///       - { status: 503 }
///       - { status: 429, retryAfter: 45 }     # Retry-After: 45
///       - { delay: 5 }                        # do it, but answer 5 s late (a client's timeout)
///       - { reset: true }                     # drop the connection, no answer
///       - { status: 200, body: "<html>gateway</html>" }   # a body that is not JSON
/// ```
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
            for a in answers {
                var r = Response()
                switch a {
                case .int(let status): r.status = status
                case .object(let f):
                    if case .int(let s)? = f[key: "status"]?.value { r.status = s }
                    if let v = f[key: "retryAfter"]?.value { r.retryAfter = v.stringValue ?? v.numberValue.map { ParamValue.plainNumber($0) } }
                    r.delay = f[key: "delay"]?.value.numberValue
                    if case .bool(let b)? = f[key: "reset"]?.value { r.reset = b }
                    r.body = f[key: "body"]?.value.stringValue
                default:
                    throw .badFaults("\(file): a response is a status (503) or { status, retryAfter, delay, reset, body }")
                }
                responses.append(r)
            }
            faults.rules.append(Rule(method: parts[0].uppercased(), pattern: parts[1].split(separator: "/"), responses: responses))
        }
        return faults
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

public enum JobServerError: Error, CustomStringConvertible {
    case badFaults(String)
    case badModel(String)
    case cannotStart(String)

    public var description: String {
        switch self {
        case .badFaults(let s): "--faults: \(s)"
        case .badModel(let s): "--model: \(s)"
        case .cannotStart(let s): s
        }
    }
}
