import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import Foundation
import Logging

/// The job server's state: predictions, files, models, faults, the rate
/// limit. Routes (`Routes.swift`) call it; backends report to it.
actor JobServerCore {
    let config: JobServerConfig
    let logger: Logger
    nonisolated let accessLog: AccessLog
    var store: PredictionStore
    let files: FileStore
    var faults: Faults
    var limit: RateLimit
    /// Wrong tokens per client address (FlowdirCore's `FailureThrottle`, as serve's).
    var failedTokens: FailureThrottle
    var backends: [String: any ModelBackend] = [:]
    let webhooks: WebhookDelivery
    /// `http://host:port` as this machine reaches the server (cog's callbacks).
    var base: String
    /// Predictions `starting` or `processing`.
    var active: Set<String> = []
    var sweeper: Task<Void, Never>?
    /// In cog's callback URLs (`/_cog/<key>/<id>`): only the cog servers this one
    /// called can say how its predictions end, not whoever can reach the port.
    nonisolated let callbackKey = RandomID.uuid().replacingOccurrences(of: "-", with: "")
    /// Creates held by `Prefer: wait`, woken when their prediction ends.
    nonisolated let waiters: Waiters
    var stopping = false

    init(config: JobServerConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        faults = config.faults
        limit = RateLimit(perMinute: config.rateLimit)
        failedTokens = FailureThrottle(limit: config.failedTokenLimit)
        waiters = Waiters(limit: config.maxWaiters, clock: config.clock)
        do {
            try Files.makeDirectories(config.dir)
            store = try PredictionStore(dir: config.dir)
            files = try FileStore(dir: config.dir + "/files", lifetime: config.fileLifetime)
            // Work folders of tool runs a stopped server left behind.
            try? Files.removeTree(config.dir + "/work")
            try Files.makeDirectories(config.dir + "/work")
        } catch {
            throw JobServerError.cannotStart("cannot use \(config.dir) for the job server's data: \(error)")
        }
        accessLog = try AccessLog(path: config.dir + "/access.log", limit: config.accessLogLimit)
        base = "http://\(Self.reachable(config.host)):\(config.port)"
        webhooks = WebhookDelivery(secret: config.webhookSecret, delays: config.webhookRetryDelays, logger: logger,
                                   allowLoopback: config.listensOnLoopbackOnly, clock: config.clock)
        backends = try Self.backends(config, logger: logger)
        // What was under way when the server stopped cannot be followed again (a
        // cog server has no GET of a prediction to re-attach to): it failed, and says why.
        for id in store.order {
            guard let status = store.predictions[id]?["status"]?.stringValue, status == "starting" || status == "processing" else { continue }
            store.update(id) {
                $0["status"] = .string("failed")
                $0["error"] = .string("the job server restarted while this prediction ran; run it again")
                $0["completed_at"] = .string(Self.time(config.clock.now()))
            }
        }
    }

    static func backends(_ config: JobServerConfig, logger: Logger) throws(JobServerError) -> [String: any ModelBackend] {
        var backends: [String: any ModelBackend] = [:]
        if let tools = config.toolsDirectory {
            let catalog = ToolCatalog(searchPath: [tools], fileSystem: LocalFileSystem())
            let names: [String]
            do { names = try LocalFileSystem().listDirectory(tools) } catch {
                throw .cannotStart("cannot read the --tools folder \(tools): \(error)")
            }
            for file in names.sorted() where file.hasSuffix(".yaml") || file.hasSuffix(".yml") || file.hasSuffix(".json") {
                let kind = String(file.prefix { $0 != "." })
                guard let tool = catalog.lookup(kind).tool else {
                    logger.warning("tool file skipped: it has errors (`flowdir check` says which)", metadata: ["file": .string(tools + "/" + file)])
                    continue
                }
                // Tools without a command (http, slurm) are not run here.
                if let backend = try? ToolBackend(tool: tool, workRoot: config.dir + "/work") { backends["tools/\(kind)"] = backend }
            }
        }
        for (name, target) in config.models.sorted(by: { $0.key < $1.key }) {
            if target.hasPrefix("tools/") {
                // `--model acme/stylize=tools/Stylize`: a tool under a model's name.
                guard let backend = backends[target] else {
                    throw .badModel("\(name)=\(target): no tool \(target.dropFirst(6)) with a run.command in --tools")
                }
                backends[name] = backend
            } else if target.hasPrefix("cog:") {
                // `--model acme/stylize=cog:DIR`: a cog server started here for the predictor in DIR, and kept running.
                let server = CogServer(name: name, predictor: String(target.dropFirst(4)), venv: config.cogPython,
                                       logDir: config.dir + "/cog", startTimeout: config.cogStartTimeout, logger: logger, clock: config.clock)
                backends[name] = CogBackend(server: server, logger: logger, watchEvery: config.cogWatchInterval, cancelTimeout: config.cogCancelTimeout,
                                            clock: config.clock)
            } else {
                backends[name] = CogBackend(url: target, name: name, logger: logger, watchEvery: config.cogWatchInterval,
                                            cancelTimeout: config.cogCancelTimeout, clock: config.clock)
            }
        }
        return backends
    }

    /// The server listens on `port`: URLs and cog's callbacks use it; the
    /// cog servers to supervise are started, and expired files and
    /// predictions are removed from now on.
    func started(port: Int) async {
        base = "http://\(Self.reachable(config.host)):\(port)"
        for backend in backends.values { await backend.setCallbackBase(base + "/_cog/" + callbackKey) }
        for backend in uniqueBackends { await backend.begin() }
        guard sweeper == nil else { return }
        // What passed its time while the server was stopped goes now.
        sweep()
        let every = config.sweepInterval, clock = config.clock
        sweeper = Task { [weak self] in
            while !Task.isCancelled {
                try? await clock.sleep(for: every)
                guard !Task.isCancelled, let self else { return }
                await self.sweep()
            }
        }
    }

    /// Each backend once (a tool served under two names is one).
    var uniqueBackends: [any ModelBackend] {
        var seen: Set<ObjectIdentifier> = []
        return backends.keys.sorted().compactMap { name in
            let b = backends[name]!
            return seen.insert(ObjectIdentifier(b)).inserted ? b : nil
        }
    }

    /// Where clients reach this server: `--public-url`, else the bound
    /// address. Never a request's `Host`, which its sender chooses.
    var publicBase: String {
        guard var url = config.publicURL else { return base }
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// A wildcard address is not one to call: this machine's loopback is.
    static func reachable(_ host: String) -> String {
        switch host {
        case "0.0.0.0", "", "*": "127.0.0.1"
        case "::", "[::]": "[::1]"
        default: host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        }
    }

    /// Stopping: what runs here is stopped and marked failed now, as a
    /// restart would find it.
    func shutdown() async {
        guard !stopping else { return }
        stopping = true
        waiters.stop()
        sweeper?.cancel()
        for id in active {
            store.update(id) {
                $0["status"] = .string("failed")
                $0["error"] = .string("the job server stopped while this prediction ran; run it again")
                $0["completed_at"] = .string(now())
            }
        }
        active.removeAll()
        for backend in uniqueBackends { await backend.shutdown() }
    }

    /// ISO 8601 with microseconds, as Replicate gives its times.
    nonisolated func now() -> String { Self.time(config.clock.now()) }

    static func time(_ t: Timestamp) -> String {
        let micros = Int((t.seconds - t.seconds.rounded(.down)) * 1_000_000)
        return String(t.iso8601.dropLast()) + String(format: ".%06dZ", micros)
    }

    nonisolated func seconds() -> Double { config.clock.now().seconds }

    // MARK: Admission

    /// The fault to give this request instead of its answer, consumed.
    func nextFault(method: String, path: String) -> Faults.Response? { faults.next(method: method, path: path) }

    /// Seconds `who` must wait past the rate limit, else nil (and counted).
    func overLimit(_ who: String) -> Int? { limit.take(who, now: seconds()) }

    /// Seconds a client address must wait after too many failed tokens, else nil.
    func addressBlocked(_ address: String) -> Int? { failedTokens.wait(address, now: seconds()) }

    func tokenFailed(_ address: String, presented: String) { failedTokens.failed(address, presented: presented, now: seconds()) }

    // MARK: Models

    /// A model's version id: the SHA-256 of its name, in hex (it has one version).
    static func versionID(of model: String) -> String {
        Digest.sha256Hex(Array(model.utf8))
    }

    /// `version` as Replicate takes it: a version id, `owner/name`, or `owner/name:id`.
    func model(forVersion version: String) -> String? {
        if let colon = version.firstIndex(of: ":") {
            let name = String(version[..<colon])
            return backends[name] != nil && Self.versionID(of: name) == version[version.index(after: colon)...] ? name : nil
        }
        return backends.keys.first { $0 == version || Self.versionID(of: $0) == version }
    }

    var modelNames: [String] { backends.keys.sorted() }

    func hasModel(_ name: String) -> Bool { backends[name] != nil }

    // MARK: Predictions

    struct Refusal: Error {
        var status: Int
        var detail: String
    }

    /// A new prediction, answered as made; with `hold`, also a place to
    /// wait for its end (`Prefer: wait`), taken before it starts so its end
    /// cannot come unseen (nil past `maxWaiters`).
    func create(model: String, body: JSONValue, hold: Bool = false) async throws(Refusal) -> (made: JSONValue, held: Waiters.Held?) {
        guard !stopping else { throw Refusal(status: 503, detail: "the job server is stopping; try again when it is back") }
        guard let backend = backends[model] else {
            let served = backends.isEmpty ? "it serves no models (start it with --model or --tools)" : "it serves " + modelNames.joined(separator: ", ")
            throw Refusal(status: 404, detail: "The requested model '\(model)' was not found on this job server; \(served)")
        }
        guard case .object(let input)? = body["input"] else {
            throw Refusal(status: 422, detail: "`input` is required: an object of the model's inputs")
        }
        let webhook = body["webhook"] ?? .null
        if webhook != .null {
            guard let url = webhook.stringValue else { throw Refusal(status: 422, detail: "`webhook` must be an http(s) URL") }
            do { _ = try WebhookTarget.parse(url, allowLoopback: config.listensOnLoopbackOnly) } catch {
                throw Refusal(status: 422, detail: error.description)
            }
        }
        if let filter = body["webhook_events_filter"], filter != .null {
            let known: Set<String> = ["start", "output", "logs", "completed"]
            guard case .array(let events) = filter, events.count <= 4, events.allSatisfy({ $0.stringValue.map(known.contains) ?? false }) else {
                throw Refusal(status: 422, detail: "`webhook_events_filter` is a list of start, output, logs, completed")
            }
        }
        let resolved = input.mapValues { ownFileAsDataURI($0) }
        // What the model cannot take is refused now, saying why, before anything runs.
        if let why = backend.validate(input: resolved) { throw Refusal(status: 422, detail: why) }
        let id = Self.predictionID()
        let at = publicBase
        var p: [String: JSONValue] = [
            "id": .string(id), "model": .string(model), "version": .string(Self.versionID(of: model)),
            "input": .object(input), "output": .null, "logs": .string(""), "error": .null, "status": .string("starting"),
            "created_at": .string(now()), "started_at": .null, "completed_at": .null, "source": .string("api"),
            "data_removed": .bool(false),
            "urls": .object(["get": .string("\(at)/v1/predictions/\(id)"), "cancel": .string("\(at)/v1/predictions/\(id)/cancel")]),
            "metrics": .object([:]), "webhook": webhook,
        ]
        if let filter = body["webhook_events_filter"], filter != .null { p["webhook_events_filter"] = filter }
        do { try store.add(p) } catch {
            throw Refusal(status: 507, detail: "the job server cannot keep the prediction: \(error)")
        }
        active.insert(id)
        // Answered as made (`starting`), whatever the backend says meanwhile:
        // Replicate's Python client takes any other status in the answer to
        // a create (it asks `Prefer: wait`) as the end, and stops there
        // (`heldAnswer` keeps to that too).
        let made = JSONValue.object(p)
        let held = hold ? waiters.hold(id) : nil
        // Taken in the order the backend said them, each after the one before.
        let chain = Locked<Task<Void, Never>?>(nil)
        await backend.start(id: id, input: resolved) { [weak self] event in
            guard let self else { return }
            chain.locked { last in
                let before = last
                last = Task {
                    await before?.value
                    await self.take(event, for: id)
                }
            }
        }
        return (made, held)
    }

    /// The answer to a create held by `Prefer: wait`: the prediction as GET
    /// gives it, but `starting` while it has not ended, as Replicate answers
    /// when the wait passes first: its Python client takes any other status
    /// there for the end, and would return no output.
    func heldAnswer(_ id: String) -> JSONValue? {
        guard case .object(var p)? = prediction(id) else { return nil }
        if let status = p["status"]?.stringValue, !["succeeded", "failed", "canceled"].contains(status) { p["status"] = .string("starting") }
        return .object(p)
    }

    /// Replicate's ids: 26 characters of lowercase base32.
    static func predictionID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        return String((0..<26).map { _ in alphabet.randomElement()! })
    }

    /// A file of this server given as an input (by the URL it gave, at
    /// its public or its bound address): its bytes as a `data:` URI, which
    /// is what both cog and the tool runner take.
    func ownFileAsDataURI(_ v: JSONValue) -> JSONValue {
        switch v {
        case .string(let s):
            for prefix in Set([publicBase, base]).map({ $0 + "/v1/files/" }) where s.hasPrefix(prefix) {
                let id = String(s.dropFirst(prefix.count).prefix { $0 != "/" && $0 != "?" })
                guard let f = files.find(id, now: seconds()), let bytes = files.bytes(f, limit: config.maxUpload) else { return v }
                return .string(JobAPIClient.dataURI(bytes, contentType: f.contentType))
            }
            return v
        case .array(let a): return .array(a.map { ownFileAsDataURI($0) })
        case .object(let o): return .object(o.mapValues { ownFileAsDataURI($0) })
        default: return v
        }
    }

    func take(_ event: BackendEvent, for id: String) async {
        guard active.contains(id) else { return }
        switch event {
        case .started:
            guard store.predictions[id]?["status"]?.stringValue == "starting" else { return }
            store.update(id) {
                $0["status"] = .string("processing")
                $0["started_at"] = .string(now())
            }
            webhook(id, event: "start")
        case .logs(let text):
            store.update(id, persist: false) { $0["logs"] = .string(text) }
        case .succeeded(let output):
            let served = serve(output, for: id)
            finish(id, "succeeded") { $0["output"] = served }
        case .failed(let why):
            finish(id, "failed") { $0["error"] = .string(why) }
        case .canceled(let why):
            finish(id, "canceled") { p in
                guard let why else { return }
                p["error"] = .string(why)
                let logs = p["logs"]?.stringValue ?? ""
                p["logs"] = .string(logs + (logs.isEmpty || logs.hasSuffix("\n") ? "" : "\n") + "[flowdir jobserver] " + why + "\n")
            }
        }
    }

    func finish(_ id: String, _ status: String, _ change: (inout [String: JSONValue]) -> Void) {
        active.remove(id)
        store.update(id) {
            change(&$0)
            $0["status"] = .string(status)
            let now = now()
            $0["completed_at"] = .string(now)
            if $0["started_at"] == .null { $0["started_at"] = .string(now) }
            if let s = $0["started_at"]?.stringValue.flatMap(Self.parseTime) {
                $0["metrics"] = .object(["predict_time": .number(max(0, seconds() - s))])
            }
        }
        waiters.ended(id)
        webhook(id, event: "completed")
    }

    /// A time `time(_:)` wrote (or any ISO 8601 `Timestamp` reads, fraction and all).
    static func parseTime(_ iso: String) -> Double? { Timestamp(iso8601: iso)?.seconds }

    /// Calls the prediction's webhook for `event`, when it asked for it
    /// (without a filter: start and completed).
    func webhook(_ id: String, event: String) {
        guard let p = prediction(id), let url = p["webhook"]?.stringValue else { return }
        if case .array(let filter)? = p["webhook_events_filter"] {
            guard filter.contains(.string(event)) else { return }
        } else if event != "start" && event != "completed" {
            return
        }
        webhooks.send(p.bytes, to: url, prediction: id, last: event == "completed")
    }

    /// Output files (and `data:` URIs in a model's output) as URLs served
    /// here, each noted as the prediction's (removed with it).
    func serve(_ output: BackendOutput, for id: String) -> JSONValue {
        switch output {
        case .json(let json):
            return servedURIs(json, for: id)
        case .files(let list, let single):
            var urls: [String: JSONValue] = [:]
            for f in list {
                urls[f.port] = (try? addFile(f.bytes, name: f.name, type: ContentTypes.of(f.name), for: id)).map { .string(url(of: $0)) } ?? .null
            }
            if let single { return urls[single] ?? .null }
            return .object(urls)
        }
    }

    func servedURIs(_ v: JSONValue, for id: String) -> JSONValue {
        switch v {
        case .string(let s) where s.hasPrefix("data:"):
            guard let bytes = JobAPIClient.decodeDataURI(s) else { return v }
            let type = String(s.dropFirst(5).prefix { $0 != ";" && $0 != "," })
            guard let f = try? addFile(bytes, name: "output." + ContentTypes.fileExtension(of: type), type: type, for: id) else { return v }
            return .string(url(of: f))
        case .array(let a): return .array(a.map { servedURIs($0, for: id) })
        case .object(let o): return .object(o.mapValues { servedURIs($0, for: id) })
        default: return v
        }
    }

    func prediction(_ id: String) -> JSONValue? {
        guard var p = store.predictions[id] else { return nil }
        if active.contains(id), let model = p["model"]?.stringValue, let logs = backends[model]?.currentLogs(id: id) {
            p["logs"] = .string(logs)
        }
        return .object(p)
    }

    /// Newest first, `pageSize` a page. Cursors are `b<seq>` (older than)
    /// and `a<seq>` (newer than), so that predictions made while a client
    /// pages neither repeat nor hide any.
    func list(cursor: String?) throws(Refusal) -> JSONValue {
        var older: Int?
        var newer: Int?
        if let cursor {
            guard cursor.count <= 20, let n = Int(cursor.dropFirst()), n >= 0, cursor.first == "b" || cursor.first == "a" else {
                throw Refusal(status: 400, detail: "cursor '\(cursor.prefix(40))' is not one this server gave; use the list's next or previous URL")
            }
            if cursor.first == "b" { older = n } else { newer = n }
        }
        let page = store.page(olderThan: older, newerThan: newer, size: config.pageSize)
        let at = publicBase
        func link(_ c: String?) -> JSONValue { c.map { .string("\(at)/v1/predictions?cursor=\($0)") } ?? .null }
        return .object(["results": .array(page.ids.compactMap { prediction($0) }), "next": link(page.next), "previous": link(page.previous)])
    }

    func cancel(_ id: String) async -> JSONValue? {
        guard let p = store.predictions[id] else { return nil }
        if active.contains(id), let model = p["model"]?.stringValue, let backend = backends[model],
           await backend.cancel(id: id) {
            finish(id, "canceled") { _ in }
        }
        return prediction(id)
    }

    func cogWebhook(_ id: String, _ body: JSONValue) async {
        guard active.contains(id), let model = store.predictions[id]?["model"]?.stringValue else { return }
        await backends[model]?.received(id: id, body)
    }

}
enum ContentTypes {
    static func of(_ name: String) -> String {
        switch Path.fileExtension(name).lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "webp": "image/webp"
        case "gif": "image/gif"
        case "txt": "text/plain"
        case "json": "application/json"
        case "wav": "audio/wav"
        case "mp4": "video/mp4"
        default: "application/octet-stream"
        }
    }

    static func fileExtension(of type: String) -> String {
        switch type {
        case "image/png": "png"
        case "image/jpeg": "jpg"
        case "image/webp": "webp"
        case "image/gif": "gif"
        case "text/plain": "txt"
        case "application/json": "json"
        case "audio/wav", "audio/x-wav": "wav"
        case "video/mp4": "mp4"
        default: "bin"
        }
    }
}
