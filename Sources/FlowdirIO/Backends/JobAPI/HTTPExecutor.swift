import FlowdirCore
import Logging

/// The executor for `run.http`: predictions on Replicate-compatible job
/// APIs (docs/templates-and-tools.md, `run.http`; docs/jobserver.md), one `EndpointLane` per endpoint, which sends,
/// polls (one list call for many jobs, within the endpoint's budget), takes
/// webhooks, backs off and fetches outputs. The engine only hears updates.
public final class HTTPExecutor: Executor {
    let lanes: [String: EndpointLane]

    /// - Parameters:
    ///   - tokens: endpoint name → its token (never written anywhere).
    ///   - random: a value in -1...1, for jitter.
    public init(endpoints: [String: EndpointConfig], tokens: [String: String], logger: Logger = Logger(label: "flowdir.http"),
                random: @escaping @Sendable () -> Double = { Double.random(in: -1...1) }, clock: FlowdirClock = .system) {
        var lanes: [String: EndpointLane] = [:]
        for (name, endpoint) in endpoints {
            lanes[name] = EndpointLane(endpoint: endpoint, client: JobAPIClient(endpoint: endpoint, token: tokens[name], clock: clock),
                                       logger: logger, random: random, clock: clock)
        }
        self.lanes = lanes
    }

    public func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        guard let work = job.work.payload(as: HTTPWork.self) else {
            updates(.ended(.failed(NodeError(summary: "not a run.http job", code: "noExecutor")), log: nil))
            return LaneHandle(lane: nil, key: job.submissionKey)
        }
        guard let lane = lanes[work.endpoint] else {
            updates(.ended(.failed(Self.unknownEndpoint(work.endpoint, known: lanes.keys.sorted())), log: nil))
            return LaneHandle(lane: nil, key: job.submissionKey)
        }
        Task { await lane.submit(job, work, updates: updates) }
        return LaneHandle(lane: lane, key: job.submissionKey)
    }

    public func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        guard let work = job.work.payload(as: HTTPWork.self), let lane = lanes[work.endpoint] else { return submit(job, updates: updates) }
        Task { await lane.reattach(job, work, jobID: jobID, updates: updates) }
        return LaneHandle(lane: lane, key: job.submissionKey)
    }

    public func fetchOutputs(_ job: JobSpec, jobID: String?) async throws(NodeError) {
        guard let work = job.work.payload(as: HTTPWork.self), let lane = lanes[work.endpoint] else {
            throw NodeError(summary: "no endpoint to fetch outputs from", code: "noExecutor")
        }
        try await lane.fetchOutputs(job, work, jobID: jobID)
    }

    public func setPolling(paused: Bool, instance: String) {
        for lane in lanes.values { Task { await lane.setPaused(paused, instance: instance) } }
    }

    /// A prediction the backend sent to the webhook receiver (signature checked there).
    public func received(_ prediction: Prediction, endpoint: String) async {
        await lanes[endpoint]?.take(prediction, from: .webhook)
    }

    /// Requests each endpoint was sent in the last minute (for `status` and benchmarks).
    public func requestsInLastMinute() async -> [String: Int] {
        var out: [String: Int] = [:]
        for (name, lane) in lanes { out[name] = await lane.requestsInLastMinute() }
        return out
    }

    static func unknownEndpoint(_ name: String, known: [String]) -> NodeError {
        NodeError(summary: "endpoint '\(name)' is not configured",
                  code: "unknownEndpoint",
                  hint: "add `endpoints: { \(name): { url: ... } }` to the config (`flowdir --help` says where)"
                      + (known.isEmpty ? "" : "; configured: " + known.joined(separator: ", ")))
    }
}

struct LaneHandle: JobHandle {
    let lane: EndpointLane?
    let key: String

    func cancel() {
        guard let lane else { return }
        Task { await lane.cancel(key) }
    }
}
