#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import Crypto
import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import Foundation
import Logging
import NIOCore

/// How a job server is set up (`flowdir jobserver`'s options).
public struct JobServerConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 8700
    public var dir: String
    public var token: String?
    public var webhookSecret: String?
    /// Model name (`owner/name`) → a cog server's URL.
    public var cogModels: [String: String] = [:]
    /// Tool files, run as models `tools/<Kind>`.
    public var toolsDirectory: String?
    public var faults = Faults()
    /// Requests per minute per token, past which it answers 429.
    public var rateLimit = 6000
    /// How long output files are served.
    public var fileLifetime: Double = 3600

    public init(dir: String) { self.dir = dir }
}

/// The job server's state: predictions, models, faults, the rate limit.
actor JobServerCore {
    let config: JobServerConfig
    var store: PredictionStore
    var faults: Faults
    var budgets: [String: RequestBudget] = [:]
    var backends: [String: any ModelBackend] = [:]
    let logger: Logger
    let accessLog: Int32
    /// `http://host:port` as clients reach it.
    var base: String

    init(config: JobServerConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        self.faults = config.faults
        store = try PredictionStore(dir: config.dir)
        accessLog = open(config.dir + "/access.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        base = "http://\(config.host):\(config.port)"
        for (name, url) in config.cogModels where !url.hasPrefix("tools/") { backends[name] = CogBackend(url: url, logger: logger) }
        if let tools = config.toolsDirectory {
            for file in (try? LocalFileSystem().listDirectory(tools)) ?? [] where file.hasSuffix(".yaml") {
                let kind = String(file.dropLast(5))
                guard let tool = ToolCatalog(searchPath: [tools], fileSystem: LocalFileSystem()).lookup(kind).tool else {
                    logger.warning("tool file skipped: it has errors (`flowdir check` says which)", metadata: ["file": .string(tools + "/" + file)])
                    continue
                }
                if let backend = try? ToolBackend(tool: tool, workRoot: config.dir + "/work") { backends["tools/\(kind)"] = backend }
            }
        }
        // `--model acme/stylize=tools/Stylize`: a tool under a model's name.
        for (name, target) in config.cogModels where target.hasPrefix("tools/") {
            if let backend = backends[target] { backends[name] = backend } else {
                logger.warning("no tool for model", metadata: ["model": .string(name), "tool": .string(target)])
            }
        }
        // What was under way when it stopped cannot be followed again: it failed, and says why.
        for id in store.order {
            guard let status = store.predictions[id]?["status"]?.stringValue, status == "starting" || status == "processing" else { continue }
            store.update(id) {
                $0["status"] = .string("failed")
                $0["error"] = .string("the job server restarted while this prediction ran")
                $0["completed_at"] = .string(Self.now())
            }
        }
    }

    func started(port: Int) async {
        base = "http://\(config.host):\(port)"
        for backend in backends.values { await (backend as? CogBackend)?.setWebhookBase(base) }
    }

    /// ISO 8601 with milliseconds, as Replicate gives its times.
    static func now() -> String {
        let t = SystemClock().now()
        let whole = t.iso8601
        return String(whole.dropLast()) + String(format: ".%03dZ", Int((t.seconds - t.seconds.rounded(.down)) * 1000))
    }

    // MARK: Requests

    func log(_ method: String, _ path: String, _ status: Int) {
        guard accessLog >= 0 else { return }
        let now = SystemClock().now()
        let line = Array("\(now.iso8601) \(String(format: "%.3f", now.seconds)) \(method) \(path) \(status)\n".utf8)
        _ = line.withUnsafeBytes { write(accessLog, $0.baseAddress, $0.count) }
    }

    func nextFault(method: String, path: String) -> Faults.Response? { faults.next(method: method, path: path) }

    /// Seconds to wait when `who` is past the rate limit, else nil (and the request counted).
    func overLimit(_ who: String) -> Double? {
        let now = SystemClock().now().seconds
        var budget = budgets[who] ?? RequestBudget(perMinute: config.rateLimit)
        let wait = budget.wait(now: now)
        if wait > 0 { return wait }
        budget.spend(now: now)
        budgets[who] = budget
        return nil
    }

    func versionID(of model: String) -> String {
        SHA256.hash(data: Array(model.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    func model(forVersion version: String) -> String? {
        backends.keys.first { $0 == version || versionID(of: $0) == version }
    }

    struct Refusal: Error {
        var status: Int
        var detail: String
    }

    func create(model: String, version: String?, body: JSONValue) async throws(Refusal) -> JSONValue {
        guard let backend = backends[model] else {
            throw Refusal(status: 404, detail: "The requested model '\(model)' was not found on this job server; it serves " + backends.keys.sorted().joined(separator: ", "))
        }
        guard case .object(let input)? = body["input"] else {
            throw Refusal(status: 422, detail: "`input` is required: an object of the model's inputs")
        }
        var resolved: [String: JSONValue] = [:]
        for (k, v) in input { resolved[k] = ownFileAsDataURI(v) }
        let id = String(RandomID.uuid().replacingOccurrences(of: "-", with: "").prefix(26))
        var p: [String: JSONValue] = [
            "id": .string(id), "model": .string(model), "version": .string(version ?? versionID(of: model)),
            "input": .object(input), "output": .null, "logs": .string(""), "error": .null, "status": .string("starting"),
            "created_at": .string(Self.now()), "started_at": .null, "completed_at": .null, "source": .string("api"),
            "urls": .object(["get": .string("\(base)/v1/predictions/\(id)"), "cancel": .string("\(base)/v1/predictions/\(id)/cancel")]),
            "metrics": .object([:]), "webhook": body["webhook"] ?? .null,
        ]
        if let filter = body["webhook_events_filter"] { p["webhook_events_filter"] = filter }
        store.add(p)
        // Taken in the order the backend said them (its log before its end).
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
        return .object(store.predictions[id]!)
    }

    /// A file of this server given as an input: its bytes as a `data:` URI.
    func ownFileAsDataURI(_ v: JSONValue) -> JSONValue {
        switch v {
        case .string(let s) where s.hasPrefix(base + "/v1/files/"):
            let id = String(s.dropFirst((base + "/v1/files/").count).prefix { $0 != "/" })
            guard let f = store.file(id, maxAge: .infinity, now: 0) else { return v }
            return .string(JobAPIClient.dataURI(f.bytes, contentType: f.type))
        case .array(let a): return .array(a.map(ownFileAsDataURI))
        case .object(let o): return .object(o.mapValues(ownFileAsDataURI))
        default: return v
        }
    }

    func take(_ event: BackendEvent, for id: String) async {
        guard let status = store.predictions[id]?["status"]?.stringValue, status == "starting" || status == "processing" else { return }
        switch event {
        case .started:
            store.update(id) {
                $0["status"] = .string("processing")
                $0["started_at"] = .string(Self.now())
            }
            if wants(id, "start") { sendWebhook(id) }
        case .logs(let text):
            store.update(id, save: false) { $0["logs"] = .string(text) }
        case .succeeded(let output):
            let served = serve(output, prediction: id)
            finish(id, "succeeded") { $0["output"] = served }
        case .failed(let why):
            finish(id, "failed") { $0["error"] = .string(why) }
        case .canceled:
            finish(id, "canceled") { _ in }
        }
    }

    func finish(_ id: String, _ status: String, _ change: (inout [String: JSONValue]) -> Void) {
        store.update(id) {
            change(&$0)
            $0["status"] = .string(status)
            let now = Self.now()
            $0["completed_at"] = .string(now)
            if $0["started_at"] == .null { $0["started_at"] = .string(now) }
            if let s = $0["started_at"]?.stringValue.flatMap(Timestamp.init(iso8601:)) {
                $0["metrics"] = .object(["predict_time": .number(max(0, SystemClock().now() - s))])
            }
        }
        if wants(id, "completed") { sendWebhook(id) }
    }

    func wants(_ id: String, _ event: String) -> Bool {
        guard let p = store.predictions[id], p["webhook"]?.stringValue != nil else { return false }
        guard case .array(let filter)? = p["webhook_events_filter"] else { return event == "completed" || event == "start" }
        return filter.contains(.string(event))
    }

    /// Output files (and `data:` URIs in a model's output) as URLs served here.
    func serve(_ output: BackendOutput, prediction id: String) -> JSONValue {
        switch output {
        case .json(let json):
            return servedURIs(json)
        case .files(let files, let single):
            var urls: [String: JSONValue] = [:]
            for f in files {
                let fileID = (try? store.addFile(f.bytes, name: f.name, contentType: RemoteContentType.of(f.name))) ?? ""
                urls[f.port] = .string("\(base)/v1/files/\(fileID)")
            }
            if let single { return urls[single] ?? .null }
            return .object(urls)
        }
    }

    func servedURIs(_ v: JSONValue) -> JSONValue {
        switch v {
        case .string(let s) where s.hasPrefix("data:"):
            guard let bytes = JobAPIClient.decodeDataURI(s) else { return v }
            let type = String(s.dropFirst(5).prefix { $0 != ";" && $0 != "," })
            let ext = RemoteContentType.extensionOf(type)
            guard let fileID = try? store.addFile(bytes, name: "output." + ext, contentType: type) else { return v }
            return .string("\(base)/v1/files/\(fileID)")
        case .array(let a): return .array(a.map(servedURIs))
        case .object(let o): return .object(o.mapValues(servedURIs))
        default: return v
        }
    }

    func prediction(_ id: String) -> JSONValue? {
        guard var p = store.predictions[id] else { return nil }
        if p["status"]?.stringValue == "processing", let model = p["model"]?.stringValue,
           let logs = backends[model]?.currentLogs(id: id) {
            p["logs"] = .string(logs)
        }
        return .object(p)
    }

    /// Newest first, 100 a page, `next` as a full URL.
    func list(cursor: Int) -> JSONValue {
        let all = Array(store.order.reversed())
        let page = all.dropFirst(cursor).prefix(100)
        let next: JSONValue = cursor + page.count < all.count ? .string("\(base)/v1/predictions?cursor=\(cursor + page.count)") : .null
        let previous: JSONValue = cursor > 0 ? .string("\(base)/v1/predictions?cursor=\(max(0, cursor - 100))") : .null
        return .object(["results": .array(page.compactMap { prediction($0) }), "next": next, "previous": previous])
    }

    func cancel(_ id: String) async -> JSONValue? {
        guard let p = store.predictions[id] else { return nil }
        if let status = p["status"]?.stringValue, status == "starting" || status == "processing",
           let model = p["model"]?.stringValue, let backend = backends[model] {
            await backend.cancel(id: id)
        }
        return prediction(id)
    }

    func cogWebhook(_ id: String, _ body: JSONValue) async {
        guard let model = store.predictions[id]?["model"]?.stringValue else { return }
        await backends[model]?.received(id: id, body)
    }

    func upload(_ bytes: [UInt8], name: String, type: String) throws -> JSONValue {
        let id = try store.addFile(bytes, name: name, contentType: type)
        return .object(["id": .string(id), "name": .string(name), "content_type": .string(type), "size": .number(Double(bytes.count)),
                        "created_at": .string(Self.now()), "urls": .object(["get": .string("\(base)/v1/files/\(id)")])])
    }

    func file(_ id: String) -> (bytes: [UInt8], name: String, type: String)? {
        store.file(id, maxAge: config.fileLifetime, now: SystemClock().now().seconds)
    }

    var created: Int { store.created }

    // MARK: Webhooks

    /// POSTs the prediction to its webhook, signed; tried a few times.
    func sendWebhook(_ id: String) {
        guard let p = prediction(id), let url = p["webhook"]?.stringValue else { return }
        let body = p.bytes
        let secret = config.webhookSecret
        let logger = self.logger
        Task {
            for attempt in 0..<4 {
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                if let secret {
                    let h = WebhookSignature.sign(body: body, id: "msg_" + RandomID.uuid(), now: SystemClock().now().seconds, secret: secret)
                    request.headers.add(name: "webhook-id", value: h.id)
                    request.headers.add(name: "webhook-timestamp", value: h.timestamp)
                    request.headers.add(name: "webhook-signature", value: h.signature)
                }
                request.body = .bytes(ByteBuffer(bytes: body))
                if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)), response.status.code < 300 { return }
                try? await Task.sleep(for: .milliseconds(500 << attempt))
            }
            logger.warning("webhook not delivered", metadata: ["id": .string(id), "url": .string(url)])
        }
    }
}

enum RemoteContentType {
    static func of(_ name: String) -> String {
        switch Path.fileExtension(name).lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "webp": "image/webp"
        case "txt": "text/plain"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }

    static func extensionOf(_ type: String) -> String {
        switch type {
        case "image/png": "png"
        case "image/jpeg": "jpg"
        case "image/webp": "webp"
        case "text/plain": "txt"
        case "application/json": "json"
        default: "bin"
        }
    }
}
