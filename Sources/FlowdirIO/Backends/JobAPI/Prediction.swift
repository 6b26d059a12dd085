import FlowdirCore

/// A prediction as a Replicate-compatible API returns it (docs/jobserver.md, "Routes").
public struct Prediction: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        case starting, processing, succeeded, failed, canceled
        case unknown(String)

        init(_ text: String) {
            switch text {
            case "starting": self = .starting
            case "processing": self = .processing
            case "succeeded": self = .succeeded
            case "failed": self = .failed
            case "canceled", "cancelled": self = .canceled
            default: self = .unknown(text)
            }
        }

        public var isTerminal: Bool { self == .succeeded || self == .failed || self == .canceled }
    }

    public var id: String
    public var status: Status
    public var model: String?
    public var version: String?
    public var input: JSONValue?
    public var output: JSONValue?
    public var logs: String?
    /// The server's error, as text even when it sent an object.
    public var error: String?
    public var createdAt: String?
    public var startedAt: String?
    public var completedAt: String?
    public var webhook: String?
    /// Where the server says this prediction is read and cancelled.
    public var urls: URLs?

    public struct URLs: Sendable, Equatable {
        public var get: String?
        public var cancel: String?
        public var stream: String?

        public init(get: String? = nil, cancel: String? = nil, stream: String? = nil) {
            self.get = get
            self.cancel = cancel
            self.stream = stream
        }
    }

    public init(id: String, status: Status, model: String? = nil, version: String? = nil, input: JSONValue? = nil,
                output: JSONValue? = nil, logs: String? = nil, error: String? = nil, createdAt: String? = nil,
                startedAt: String? = nil, completedAt: String? = nil, webhook: String? = nil, urls: URLs? = nil) {
        self.id = id
        self.status = status
        self.model = model
        self.version = version
        self.input = input
        self.output = output
        self.logs = logs
        self.error = error
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.webhook = webhook
        self.urls = urls
    }

    /// Reads a prediction object; nil when `json` is not one.
    public init?(json: JSONValue) {
        guard case .object(let o) = json, let id = o["id"]?.stringValue, !id.isEmpty,
              let status = o["status"]?.stringValue else { return nil }
        self.id = id
        self.status = Status(status)
        model = o["model"]?.stringValue
        version = o["version"]?.stringValue
        input = o["input"]
        output = o["output"].flatMap { $0 == .null ? nil : $0 }
        logs = o["logs"]?.stringValue
        switch o["error"] {
        case .string(let s)?: error = s
        case nil, .null?: error = nil
        case let other?: error = String(decoding: other.bytes, as: UTF8.self)
        }
        createdAt = o["created_at"]?.stringValue
        startedAt = o["started_at"]?.stringValue
        completedAt = o["completed_at"]?.stringValue
        webhook = o["webhook"]?.stringValue
        if case .object(let u)? = o["urls"] {
            urls = URLs(get: u["get"]?.stringValue, cancel: u["cancel"]?.stringValue, stream: u["stream"]?.stringValue)
        }
    }

    /// A tool's `run.http.outputs` path into `output`: `output`,
    /// `output[0]`, `output.image`, `output.images[1]`; the string there
    /// (a URL or a `data:` URI), or nil.
    public func outputReference(at path: String) -> String? {
        guard let steps = OutputPath.parse(path) else { return nil }
        var value: JSONValue? = output
        for step in steps {
            switch step {
            case .key(let k): value = value?[k]
            case .index(let i): value = value?[i]
            }
        }
        return value?.stringValue
    }
}
