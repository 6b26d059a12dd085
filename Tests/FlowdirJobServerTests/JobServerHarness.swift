import AsyncHTTPClient
import FlowdirCore
@testable import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// A job server in this process on a free loopback port, its folder, and
/// a real HTTP client (async-http-client) to talk to it.
final class Harness: @unchecked Sendable {
    static let token = "tok-3b9d0c7e1f2a"
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// A tool: its log, a progress line, a sleep, its text written.
    static let work = """
        kind: Work
        outputs: { out: TextRef }
        params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }
        run:
          command: [sh, -c, 'echo "working on $1"; echo "progress: 0.5"; sleep "$2"; printf "%s" "$1" > "$0"', "{outputs.out}", "{params.text}", "{params.sleep}"]
        """
    /// A tool with a file input and two outputs.
    static let pair = """
        kind: Pair
        inputs: { src: TextRef }
        outputs: { upper: TextRef, size: TextRef }
        run:
          command: [sh, -c, 'tr a-z A-Z < "$0" > "$1"; wc -c < "$0" | tr -d " \\n" > "$2"; echo "pair done"', "{inputs.src}", "{outputs.upper}", "{outputs.size}"]
        """
    /// A tool that fails, saying why.
    static let fail = """
        kind: Fail
        outputs: { out: TextRef }
        run:
          command: [sh, -c, 'echo "cannot do it: no GPU" >&2; exit 3']
        """

    let dir: TemporaryDirectory
    var server: RunningJobServer!
    var config: JobServerConfig

    var port: Int { server.port }
    var base: String { "http://127.0.0.1:\(server.port)" }
    var data: String { dir.path + "/data" }

    /// - Parameter configure: changes to the config before it starts (faults, models, limits).
    init(token: String? = Harness.token, tools: [String: String] = ["Work": Harness.work, "Pair": Harness.pair, "Fail": Harness.fail],
         configure: (inout JobServerConfig) throws -> Void = { _ in }) async throws {
        dir = try TemporaryDirectory()
        for (kind, text) in tools { try dir.write("tools/\(kind).yaml", text) }
        config = JobServerConfig(dir: dir.path + "/data")
        config.port = 0
        config.token = token
        config.webhookSecret = Self.secret
        config.toolsDirectory = dir.path + "/tools"
        config.webhookRetryDelays = [.milliseconds(200), .milliseconds(400)]
        try configure(&config)
        server = try await JobServer.start(config)
    }

    func stop() async { await server.stop() }

    /// The server again on the same folder and port (after `stop()`):
    /// the URLs it gave before work again.
    func restart() async throws {
        config.port = server.port
        // Another test's connection may hold the port a moment (the kernel
        // hands out ports as it likes): try again briefly, as a person would.
        for attempt in 1... {
            do {
                server = try await JobServer.start(config)
                return
            } catch where attempt < 50 && "\(error)".contains("Address already in use") {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]
        var json: JSONValue { JSONValue.parse(body) ?? .null }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// One request; `token` nil sends none. A URL or a path on this server.
    /// `againIfStale: false` for a test of resets themselves.
    /// The deadline counts the wait for one of the client's few connections
    /// to a host: a test that sends 200 at once while the whole suite starts
    /// on two cores must not see a timeout it is not about.
    func request(_ method: HTTPMethod, _ path: String, json: JSONValue? = nil, body: [UInt8]? = nil, contentType: String? = nil,
                 token: String? = Harness.token, headers: [(String, String)] = [], timeout: Double = 120,
                 againIfStale: Bool = true) async throws -> Answer {
        var r = HTTPClientRequest(url: path.hasPrefix("http") ? path : base + path)
        r.method = method
        if let token { r.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { r.headers.add(name: name, value: value) }
        if let json {
            r.headers.add(name: "Content-Type", value: "application/json")
            r.body = .bytes(ByteBuffer(bytes: json.bytes))
        } else if let body {
            r.headers.add(name: "Content-Type", value: contentType ?? "application/octet-stream")
            r.body = .bytes(ByteBuffer(bytes: body))
        }
        // A kept-alive connection from before a `restart()` (or another
        // test's server on the same port) may be reset when reused: an
        // idempotent request is sent again once, as RFC 9110 §9.2.2 allows
        // and browsers do. A POST is never repeated.
        let request = r
        func send() async throws -> Answer {
            let response = try await HTTPClient.shared.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            let bytes = try await response.body.collect(upTo: 64 << 20)
            return Answer(status: Int(response.status.code), headers: response.headers, body: Array(buffer: bytes))
        }
        do {
            return try await send()
        } catch where againIfStale && [.GET, .HEAD, .PUT, .DELETE].contains(method) && Self.wasDropped(error) {
            return try await send()
        }
    }

    /// The connection went away under the request, as flowdir's own job
    /// API client tells it (`JobAPIError.transport`).
    static func wasDropped(_ error: any Error) -> Bool {
        if case .reset = JobAPIError.transport(error, timeout: 0, limit: 0) { return true }
        return false
    }

    func create(_ model: String, _ input: JSONValue, webhook: String? = nil, extra: [String: JSONValue] = [:]) async throws -> JSONValue {
        var body: [String: JSONValue] = ["input": input]
        if let webhook { body["webhook"] = .string(webhook) }
        for (k, v) in extra { body[k] = v }
        let a = try await request(.POST, "/v1/models/\(model)/predictions", json: .object(body))
        #expect(a.status == 201, "\(a.text)")
        return a.json
    }

    func get(_ id: String) async throws -> JSONValue { try await request(.GET, "/v1/predictions/\(id)").json }

    /// Polls until the prediction's status is one of `statuses`.
    @discardableResult
    func wait(_ id: String, for statuses: Set<String> = ["succeeded", "failed", "canceled"], timeout: Double = 20) async throws -> JSONValue {
        var p = JSONValue.null
        let ended = try await Eventually.until(timeout: .seconds(timeout), every: .milliseconds(25)) {
            p = try await get(id)
            return p["status"]?.stringValue.map { statuses.contains($0) } ?? false
        }
        if !ended { Issue.record("prediction \(id) is still \(p["status"]?.stringValue ?? "?"), not \(statuses.sorted())") }
        return p
    }

    /// Lines of its access log: `time epoch METHOD PATH STATUS`.
    var accessLog: [String] {
        ((try? String(contentsOfFile: data + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

/// Somewhere for webhooks to go: an HTTP server in this process that keeps
/// what it was sent, and answers 500 to the first `failFirst` calls.
final class Receiver: Sendable {
    struct Call: Sendable {
        var headers: [String: String]
        var body: [UInt8]
    }

    let calls = Locked<[Call]>([])
    let port: Int
    let task: Task<Void, any Error>

    var url: String { "http://127.0.0.1:\(port)/hook" }

    /// - Parameter redirectTo: answer every call with a 307 to this URL (a receiver that points elsewhere).
    init(failFirst: Int = 0, redirectTo: String? = nil) async throws {
        let calls = self.calls
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            var buffer = try await request.body.collect(upTo: 64 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let n = calls.locked { c in
                c.append(Call(headers: headers, body: buffer.readBytes(length: buffer.readableBytes) ?? []))
                return c.count
            }
            if let redirectTo { return Response(status: .temporaryRedirect, headers: [.location: redirectTo]) }
            return Response(status: n <= failFirst ? .internalServerError : .ok)
        }
        let (ports, bound) = AsyncStream<Int>.makeStream()
        var quiet = Logger(label: "receiver")
        quiet.logLevel = .critical  // its cancellation at the end is no news
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { bound.yield($0.localAddress?.port ?? 0) }, logger: quiet)
        task = Task { try await app.run() }
        var found = 0
        for await p in ports {
            found = p
            break
        }
        port = found
    }

    func stop() async {
        task.cancel()
        _ = await task.result
    }

    /// Waits until `count` calls came. The bound only guards against a
    /// hang: retries back off for seconds, and a loaded CI once saw two of
    /// three calls within 10 s.
    func waitFor(_ count: Int, timeout: Double = 120) async throws -> [Call] {
        await Eventually.until(timeout: .seconds(timeout)) { calls.locked { $0.count } >= count }
        return calls.locked { $0 }
    }
}

extension JSONValue {
    var number: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    var array: [JSONValue] {
        if case .array(let a) = self { return a }
        return []
    }
}

// JSON written as literals in tests.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(nilLiteral: ()) { self = .null }
}
