import FlowdirCore
import FlowdirTemplates

/// `run.http`: predictions on Replicate-compatible job APIs
/// (docs/templates-and-tools.md, `run.http`; docs/jobserver.md), through
/// the endpoints of the config.
public struct JobAPIBackend: Backend {
    public let key = "http"
    public let traits = BackendTraits(takesWebhooks: true)

    public init() {}

    public func checkRun(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> Bool {
        HTTPRunDecoder.check(value, tool: tool, sink: sink)
    }

    public func job(for run: BackendRun) throws -> BackendJob {
        let work = try HTTPRunSpec.work(run.entries, tool: run.tool.kind, inputs: run.inputs, params: run.params,
                                        typedParams: run.typedParams)
        return BackendJob(payload: work, command: ["http:" + work.endpoint, work.model ?? work.version ?? ""])
    }

    public func executor(_ setup: BackendSetup) throws -> (any Executor)? {
        guard !setup.endpoints.isEmpty else { return nil }
        let secrets = try setup.secrets()
        var tokens: [String: String] = [:]
        for name in setup.endpoints.keys { tokens[name] = secrets.token(for: name) }
        return HTTPExecutor(endpoints: setup.endpoints, tokens: tokens, logger: setup.logger, clock: setup.clock)
    }
}

/// An executor whose backend calls this machine when a job ends (a
/// signed webhook, checked by the receiver), besides being polled.
public protocol WebhookTaking: Executor {
    func received(_ prediction: Prediction, endpoint: String) async
}

extension HTTPExecutor: WebhookTaking {}
