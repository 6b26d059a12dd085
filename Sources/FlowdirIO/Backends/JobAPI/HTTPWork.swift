import FlowdirCore

/// A prediction, as a tool's `run.http` describes it, with this run's
/// inputs and params filled in (files by path: the executor turns them into
/// `data:` URIs or uploads). The job API's payload in `JobWork.backend`.
public struct HTTPWork: Sendable {
    public var endpoint: String
    public var model: String?
    public var version: String?
    /// The prediction's `input`, placeholders expanded (`HTTPInput`).
    public var input: [(key: String, value: HTTPInputValue)]
    /// Port → where its file is in the prediction's `output` (`output`, `output[0]`, `output.image`).
    public var outputs: [String: String]

    public init(endpoint: String, model: String?, version: String?, input: [(key: String, value: HTTPInputValue)], outputs: [String: String]) {
        self.endpoint = endpoint
        self.model = model
        self.version = version
        self.input = input
        self.outputs = outputs
    }
}

/// One value of a prediction's input.
public indirect enum HTTPInputValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case integer(Int)
    case bool(Bool)
    case null
    /// An input file, sent as a `data:` URI or through the files API.
    case file(path: String)
    case array([HTTPInputValue])
    case object([String: HTTPInputValue])
}
