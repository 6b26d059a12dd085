import AsyncHTTPClient
import FlowdirIO
import Logging
import NIOCore
import NIOHTTP1

/// A cog server (`python -m cog.server.http`) as a model, spoken to in
/// cog's own API: `PUT /predictions/{id}` with `Prefer: respond-async` and
/// a webhook back to the job server (`/_cog/{key}/{id}`), from which status,
/// logs and output are taken; cog has no GET of a prediction. It runs one
/// prediction at a time and answers 409 when busy, so the rest wait here,
/// `starting`, in the order they came.
actor CogBackend: ModelBackend {
    struct Queued {
        var id: String
        var input: [String: JSONValue]
        var report: @Sendable (BackendEvent) -> Void
    }

    let url: String
    let http: HTTPClient
    let logger: Logger
    /// How often a running prediction's server is looked at (`/health-check`).
    let watchEvery: Duration
    var callbackBase = ""
    var queue: [Queued] = []
    /// The prediction cog runs, or is being sent; one at a time.
    var current: (id: String, report: @Sendable (BackendEvent) -> Void)?
    /// Cancels asked while its PUT was on the way: sent once cog has it.
    var cancelAsked: Set<String> = []
    var sender: Task<Void, Never>?
    var watchdog: Task<Void, Never>?

    init(url: String, http: HTTPClient = .shared, logger: Logger, watchEvery: Duration = .seconds(5)) {
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        self.url = u
        self.http = http
        self.logger = logger
        self.watchEvery = watchEvery
    }

    func setCallbackBase(_ base: String) { callbackBase = base }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) {
        queue.append(Queued(id: id, input: input, report: report))
        pump()
    }

    /// Sends the next queued prediction when cog is free, off the request
    /// that queued it (a slow or absent cog must not hold a client).
    func pump() {
        guard sender == nil, current == nil, !queue.isEmpty else { return }
        sender = Task { await self.sendNext() }
    }

    private func sendNext() async {
        while current == nil, !queue.isEmpty {
            let next = queue.removeFirst()
            current = (next.id, next.report)
            switch await put(next) {
            case .accepted:
                if cancelAsked.remove(next.id) != nil { await postCancel(next.id) }
                // Unless it already ended (a quick one's webhook can beat cog's answer).
                if current?.id == next.id { startWatchdog() }
            case .busy:
                // cog runs one that is not ours (from before a restart): ask again shortly.
                current = nil
                if cancelAsked.remove(next.id) != nil {
                    next.report(.canceled)
                    continue
                }
                queue.insert(next, at: 0)
                try? await Task.sleep(for: .seconds(1))
            case .refused(let why):
                current = nil
                cancelAsked.remove(next.id)
                next.report(.failed(why))
            }
        }
        sender = nil
    }

    enum PutResult { case accepted, busy, refused(String) }

    private func put(_ p: Queued) async -> PutResult {
        var request = HTTPClientRequest(url: "\(url)/predictions/\(p.id)")
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Prefer", value: "respond-async")
        let body = JSONValue.object([
            "id": .string(p.id), "input": .object(p.input),
            "webhook": .string("\(callbackBase)/\(p.id)"),
            "webhook_events_filter": .array(["start", "output", "logs", "completed"].map(JSONValue.string)),
        ])
        request.body = .bytes(ByteBuffer(bytes: body.bytes))
        do {
            // cog answers an async PUT at once; a refused connection is tried again until this passes.
            let response = try await http.execute(request, timeout: .seconds(10))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            let status = Int(response.status.code)
            if status == 409 { return .busy }
            guard (200..<300).contains(status) else {
                let detail = JSONValue.parse(Array(text.utf8)).flatMap { Self.detail($0) } ?? String(text.prefix(300))
                return .refused("the model server refused the prediction (\(status)): \(detail)")
            }
            return .accepted
        } catch {
            return .refused("the model server at \(url) cannot be reached (\(error)); is it running?")
        }
    }

    /// cog's 422 says which input was wrong, as pydantic does.
    static func detail(_ json: JSONValue) -> String? {
        if let s = json["detail"]?.stringValue { return s }
        guard case .array(let items)? = json["detail"] else { return nil }
        return items.compactMap { item -> String? in
            guard let msg = item["msg"]?.stringValue else { return nil }
            if case .array(let loc)? = item["loc"] { return loc.compactMap(\.stringValue).joined(separator: ".") + ": " + msg }
            return msg
        }.joined(separator: "; ")
    }

    func received(id: String, _ body: JSONValue) {
        guard let running = current, running.id == id else { return }
        if let logs = body["logs"]?.stringValue, !logs.isEmpty { running.report(.logs(logs)) }
        switch body["status"]?.stringValue {
        case "processing"?: running.report(.started)
        case "succeeded"?: end(.succeeded(.json(body["output"] ?? .null)))
        case "failed"?: end(.failed(body["error"]?.stringValue ?? "the model failed and did not say why"))
        case "canceled"?: end(.canceled)
        default: break
        }
    }

    /// The current prediction ended: say so, and send the next.
    private func end(_ event: BackendEvent) {
        current?.report(event)
        current = nil
        watchdog?.cancel()
        watchdog = nil
        pump()
    }

    func cancel(id: String) async -> Bool {
        if let i = queue.firstIndex(where: { $0.id == id }) {
            // Never sent: nothing to ask cog.
            queue.remove(at: i)
            return true
        }
        if current?.id == id {
            // On its way to cog: cancelled once cog has it.
            if sender != nil { cancelAsked.insert(id) } else { await postCancel(id) }
        }
        return false
    }

    private func postCancel(_ id: String, timeout: Int64 = 10) async {
        var request = HTTPClientRequest(url: "\(url)/predictions/\(id)/cancel")
        request.method = .POST
        do {
            _ = try await http.execute(request, timeout: .seconds(timeout))
        } catch {
            logger.warning("cancel at the model server failed", metadata: ["id": .string(id), "model": .string(url), "error": .string("\(error)")])
        }
    }

    /// While cog runs one of ours, looks at it now and then: a cog server
    /// that restarted or died never sends the end, and the prediction
    /// would stay `processing` forever, holding the queue.
    private func startWatchdog() {
        guard watchdog == nil else { return }
        watchdog = Task {
            var idle = 0
            var unreachable = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: watchEvery)
                guard !Task.isCancelled else { return }
                switch await health() {
                case "READY"?: idle += 1; unreachable = 0
                case nil: unreachable += 1; idle = 0
                default: idle = 0; unreachable = 0
                }
                // Twice in a row: cog's last webhook may be on its way the first time.
                if idle >= 2 { return lost("the model server at \(url) is no longer running this prediction (did it restart?)") }
                if unreachable >= 3 { return lost("the model server at \(url) stopped answering while it ran this prediction") }
            }
        }
    }

    private func lost(_ why: String) {
        watchdog = nil
        guard current != nil else { return }
        logger.warning("prediction lost by its model server", metadata: ["id": .string(current!.id), "model": .string(url)])
        current?.report(.failed(why))
        current = nil
        pump()
    }

    private func health() async -> String? {
        let request = HTTPClientRequest(url: "\(url)/health-check")
        guard let response = try? await http.execute(request, timeout: .seconds(1)),
              let body = try? await response.body.collect(upTo: 1 << 16) else { return nil }
        return JSONValue.parse(Array(buffer: body))?["status"]?.stringValue ?? "?"
    }

    func shutdown() async {
        queue.removeAll()
        sender?.cancel()
        watchdog?.cancel()
        // Frees cog for whoever starts next; a server that is gone is not waited for.
        if let id = current?.id { await postCancel(id, timeout: 2) }
    }
}
