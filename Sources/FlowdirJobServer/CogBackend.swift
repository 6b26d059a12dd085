import AsyncHTTPClient
import FlowdirCore
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
///
/// A prediction cog stops reporting on still ends here, in bounded time
/// (docs/jobserver.md): one cog no longer runs, or that its server died
/// in, fails; one not ended within `cancelTimeout` of its cancel is
/// canceled here. A cog server this job server runs (`CogServer`,
/// `--model NAME=cog:DIR`) is then restarted, as it is when it dies or its
/// health check keeps failing, and what waited goes on once it is READY.
/// One it only fronts (a URL) cannot be: while it still runs a prediction
/// given up on, the next ones fail at once, saying so, instead of waiting
/// behind it for good.
actor CogBackend: ModelBackend {
    struct Queued {
        var id: String
        var input: [String: JSONValue]
        var report: @Sendable (BackendEvent) -> Void
    }

    let name: String
    /// The cog server run here, if it is (else `url` is one run elsewhere).
    let server: CogServer?
    private(set) var url: String
    let http: HTTPClient
    let logger: Logger
    /// How often cog's `/health-check` is looked at (a cog server that died or restarted never says so).
    let watchEvery: Duration
    let cancelTimeout: Duration
    var callbackBase = ""
    var queue: [Queued] = []
    /// The prediction cog runs, or is being sent; one at a time.
    var current: (id: String, report: @Sendable (BackendEvent) -> Void)?
    /// Cancels asked while its PUT was on the way: sent once cog has it.
    var cancelAsked: Set<String> = []
    /// When cog was asked to cancel `current`.
    var canceledAt: Moment?
    let clock: FlowdirClock
    /// A prediction a fronted cog server did not end after its cancel, which it may still run.
    var stuck: String?
    /// The cog server answers (always, for a fronted one; a run one once READY).
    var up: Bool
    var sender: Task<Void, Never>?
    var watcher: Task<Void, Never>?
    var restarting: Task<Void, Never>?
    var restarts = 0
    var lastTrouble: String?
    var stopped = false

    init(url: String, name: String = "", http: HTTPClient = .shared, logger: Logger, watchEvery: Duration = .seconds(5),
         cancelTimeout: Duration = .seconds(30), clock: FlowdirClock = .system) {
        self.clock = clock
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        self.url = u
        self.name = name
        server = nil
        up = true
        self.http = http
        self.logger = logger
        self.watchEvery = watchEvery
        self.cancelTimeout = cancelTimeout
    }

    init(server: CogServer, http: HTTPClient = .shared, logger: Logger, watchEvery: Duration = .seconds(5), cancelTimeout: Duration = .seconds(30),
         clock: FlowdirClock = .system) {
        self.clock = clock
        self.server = server
        name = server.name
        url = ""
        up = false
        self.http = http
        self.logger = logger
        self.watchEvery = watchEvery
        self.cancelTimeout = cancelTimeout
    }

    func setCallbackBase(_ base: String) { callbackBase = base }

    /// A cog server run here is started now; predictions wait until it is READY.
    func begin() async {
        guard let server else { return }
        await server.setOnExit { [weak self] how in await self?.serverDied(how) }
        restart(why: nil)
    }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) {
        queue.append(Queued(id: id, input: input, report: report))
        pump()
    }

    /// Sends the next queued prediction when cog is free, off the request
    /// that queued it (a slow or absent cog must not hold a client).
    func pump() {
        guard up, !stopped, sender == nil, current == nil, !queue.isEmpty else { return }
        sender = Task { await self.sendNext() }
    }

    private func sendNext() async {
        while up, !stopped, current == nil, !queue.isEmpty {
            let next = queue.removeFirst()
            current = (next.id, next.report)
            canceledAt = nil
            switch await put(next) {
            case .accepted:
                if cancelAsked.remove(next.id) != nil { await postCancel(next.id) }
                // Unless it already ended (a quick one's webhook can beat cog's answer).
                if current?.id == next.id { watch() }
            case .busy:
                current = nil
                if cancelAsked.remove(next.id) != nil {
                    next.report(.canceled(nil))
                    continue
                }
                if let stuck {
                    next.report(.failed("the model server at \(url) still runs prediction \(stuck), which it did not end after its cancel; "
                        + "restart that cog server (or let the job server run and restart it: --model \(name.isEmpty ? "NAME" : name)=cog:DIR)"))
                    continue
                }
                // cog runs one that is not ours (from before a restart): ask again shortly.
                queue.insert(next, at: 0)
                try? await clock.sleep(for: .seconds(1))
            case .refused(let why):
                current = nil
                cancelAsked.remove(next.id)
                next.report(.failed(why))
            case .unreachable(let why):
                current = nil
                if server != nil, cancelAsked.remove(next.id) == nil {
                    // Its own server is restarted; this one waits for it.
                    queue.insert(next, at: 0)
                    restart(why: "it did not take a prediction: \(why)")
                } else {
                    cancelAsked.remove(next.id)
                    next.report(.failed("the model server at \(url) cannot be reached (\(why)); is it running?"))
                }
            }
        }
        sender = nil
    }

    enum PutResult { case accepted, busy, refused(String), unreachable(String) }

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
            // cog answers an async PUT at once.
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
            return .unreachable("\(error)")
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
        let ends: Set<String> = ["succeeded", "failed", "canceled"]
        if stuck == id, let s = body["status"]?.stringValue, ends.contains(s) {
            // What it would not end has ended after all.
            stuck = nil
            pump()
        }
        guard let running = current, running.id == id else { return }
        if let logs = body["logs"]?.stringValue, !logs.isEmpty { running.report(.logs(logs)) }
        switch body["status"]?.stringValue {
        case "processing"?: running.report(.started)
        case "succeeded"?: end(.succeeded(.json(body["output"] ?? .null)))
        case "failed"?: end(.failed(body["error"]?.stringValue ?? "the model failed and did not say why"))
        case "canceled"?: end(.canceled(nil))
        default: break
        }
    }

    /// The current prediction ended: say so, and send the next.
    private func end(_ event: BackendEvent) {
        current?.report(event)
        current = nil
        canceledAt = nil
        pump()
    }

    func cancel(id: String) async -> Bool {
        if let i = queue.firstIndex(where: { $0.id == id }) {
            // Never sent: nothing to ask cog.
            queue.remove(at: i)
            return true
        }
        if current?.id == id, canceledAt == nil {
            // Bounded from now: cog has `cancelTimeout` to end it.
            canceledAt = clock.instant
            watch()
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

    // MARK: Watching

    /// Looks at cog now and then while it runs one of ours, while it still
    /// runs one given up on, and always for a cog server run here.
    private func watch() {
        guard watcher == nil, !stopped else { return }
        watcher = Task { await self.watchLoop() }
    }

    private func watchLoop() async {
        var idle = 0
        var unreachable = 0
        var watched: String?
        while !Task.isCancelled, !stopped {
            var wait = watchEvery
            if let at = canceledAt { wait = min(wait, max(.milliseconds(50), at + cancelTimeout - clock.instant)) }
            try? await clock.sleep(for: wait)
            guard !Task.isCancelled, !stopped else { break }
            guard current != nil || stuck != nil || server != nil else { break }
            if current?.id != watched {
                watched = current?.id
                idle = 0
                unreachable = 0
            }
            if let at = canceledAt, current != nil, clock.instant - at >= cancelTimeout {
                wedged()
                continue
            }
            // Being restarted: nothing to look at yet.
            if server != nil, !up { continue }
            let status = await health()
            guard !stopped else { break }
            // A look that began before the prediction changed says nothing of the new one.
            if current?.id != watched { continue }
            switch status {
            case "READY"?: idle += 1; unreachable = 0
            case nil: unreachable += 1; idle = 0
            default: idle = 0; unreachable = 0
            }
            if stuck != nil, status == "READY" {
                logger.info("the model server is free again", metadata: ["model": .string(url)])
                stuck = nil
                pump()
            }
            if current != nil {
                // Twice in a row: cog's last webhook may be on its way the first time.
                if idle >= 2 { lost("the model server at \(url) is no longer running this prediction (did it restart?)") }
                if unreachable >= 3 {
                    if server != nil { up = false }
                    lost("the model server at \(url) stopped answering while it ran this prediction")
                    if server != nil { restart(why: "it stopped answering its health check") }
                }
            } else if server != nil, unreachable >= 3 {
                unreachable = 0
                restart(why: "it stopped answering its health check")
            }
        }
        watcher = nil
    }

    /// cog did not end the prediction within `cancelTimeout` of its cancel:
    /// it is canceled here, and cog is restarted (run here) or known stuck.
    private func wedged() {
        guard let c = current else { return }
        let restartable = server != nil
        let note = "the model server did not end this prediction within \(cancelTimeout) of its cancel; it was canceled here"
            + (restartable ? " and the model server restarted" : " (the model server may still be running it)")
        logger.warning("prediction not ended after its cancel", metadata: ["id": .string(c.id), "model": .string(name.isEmpty ? url : name)])
        if restartable { up = false } else { stuck = c.id }
        end(.canceled(note))
        if restartable { restart(why: "a prediction was not ended within \(cancelTimeout) of its cancel") }
    }

    /// cog stopped reporting on the current prediction: it ends here.
    private func lost(_ why: String) {
        guard let c = current else { return }
        logger.warning("prediction lost by its model server", metadata: ["id": .string(c.id), "model": .string(url)])
        end(canceledAt != nil ? .canceled(nil) : .failed(why))
    }

    private func health() async -> String? {
        if let server { return await server.health(timeout: 2) }
        let request = HTTPClientRequest(url: "\(url)/health-check")
        guard let response = try? await http.execute(request, timeout: .seconds(2)),
              let body = try? await response.body.collect(upTo: 1 << 16) else { return nil }
        return JSONValue.parse(Array(buffer: body))?["status"]?.stringValue ?? "?"
    }

    // MARK: A cog server run here

    /// Its cog server ended by itself.
    func serverDied(_ how: String) {
        guard server != nil, !stopped else { return }
        up = false
        if let c = current {
            logger.warning("the model server died while it ran a prediction", metadata: ["id": .string(c.id), "model": .string(name)])
            end(canceledAt != nil ? .canceled(nil) : .failed("the model server for \(name) died while it ran this prediction (\(how)); it is being restarted"))
        }
        restart(why: "it died: \(how)")
    }

    /// Stops its cog server (if it runs) and starts it again, tried with
    /// growing pauses until it is READY; what is queued waits meanwhile,
    /// and fails (saying why) each time a start fails.
    private func restart(why: String?) {
        guard let server, restarting == nil, !stopped else { return }
        up = false
        if let why {
            restarts += 1
            lastTrouble = why
            logger.warning("restarting the cog server", metadata: ["model": .string(name), "why": .string(why)])
        }
        restarting = Task {
            await server.stop()
            var pause = 1.0
            while !stopped, !Task.isCancelled {
                do {
                    try await server.start()
                    url = await server.url
                    up = true
                    break
                } catch {
                    let why = "\(error)"
                    lastTrouble = why
                    let waiting = queue
                    queue.removeAll()
                    for q in waiting { q.report(.failed("the model server for \(name) could not start: \(why)")) }
                    try? await clock.sleep(for: .seconds(pause))
                    pause = min(60, pause * 2)
                }
            }
            restarting = nil
            pump()
            watch()
        }
    }

    func status() async -> JSONValue? {
        var s: [String: JSONValue] = ["url": .string(url)]
        if let server {
            let pid = await server.pid
            s["pid"] = .number(Double(pid))
            s["state"] = .string(up ? "ready" : restarting != nil ? "starting" : "down")
            s["restarts"] = .number(Double(restarts))
            if let lastTrouble { s["lastTrouble"] = .string(lastTrouble) }
        }
        if let stuck { s["stuck"] = .string(stuck) }
        return .object(s)
    }

    func shutdown() async {
        stopped = true
        queue.removeAll()
        sender?.cancel()
        watcher?.cancel()
        restarting?.cancel()
        if let server {
            await server.close()
            _ = await restarting?.value
        } else if let id = current?.id {
            // Frees cog for whoever starts next; a server that is gone is not waited for.
            await postCancel(id, timeout: 2)
        }
    }
}
