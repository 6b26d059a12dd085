import FlowdirIO

/// What a model's backend says of a prediction. The server takes them in
/// the order they were said (a tool's log before its end).
enum BackendEvent: Sendable {
    case started
    /// The whole log so far.
    case logs(String)
    case succeeded(BackendOutput)
    case failed(String)
    /// With why, when the backend ended it itself (cog did not stop it in time).
    case canceled(String?)
}

enum BackendOutput: Sendable {
    /// As the model gave it; `data:` URIs in it become files the server serves.
    case json(JSONValue)
    /// Files by output port; `single` names the port when there is only one
    /// (then `output` is its URL, else an object of URLs by port).
    case files([(port: String, bytes: [UInt8], name: String)], single: String?)
}

/// A model the job server runs predictions of (docs/jobserver.md, "Models"): a cog
/// server it fronts or supervises (`CogBackend`) or a flowdir tool whose
/// command it runs (`ToolBackend`).
protocol ModelBackend: AnyObject, Sendable {
    /// Why it cannot take this input (a file whose content is not its
    /// port's type, a param outside its schema), or nil. Called before the
    /// prediction is made: a refusal is the create request's 422.
    func validate(input: [String: JSONValue]) -> String?
    /// Starts the prediction, or queues it while the model is busy; returns
    /// at once. File inputs come as `data:` URIs. `report` is called with
    /// what becomes of it, ending with exactly one of succeeded, failed or
    /// canceled.
    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async
    /// Asks the model to stop it. True: it never started and is forgotten
    /// now (it is canceled, and `report` will say nothing more); false: its
    /// end comes through `report`.
    func cancel(id: String) async -> Bool
    /// The log of a running prediction, when the backend keeps it itself.
    func currentLogs(id: String) -> String?
    /// A call from the model server about a prediction (cog's webhooks).
    func received(id: String, _ body: JSONValue) async
    /// Where the model server can call back about a prediction: `<base>/<id>`.
    func setCallbackBase(_ base: String) async
    /// The server listens: start what the backend runs itself (a cog server).
    func begin() async
    /// What the backend says of itself in `/v1/_stats` (a supervised cog server's state).
    func status() async -> JSONValue?
    /// The server is stopping: stop what runs here.
    func shutdown() async
}

extension ModelBackend {
    func validate(input: [String: JSONValue]) -> String? { nil }
    func currentLogs(id: String) -> String? { nil }
    func received(id: String, _ body: JSONValue) async {}
    func setCallbackBase(_ base: String) async {}
    func begin() async {}
    func status() async -> JSONValue? { nil }
    func shutdown() async {}
}
