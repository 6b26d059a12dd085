#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A small Replicate-like API on a loopback port for `JobAPIClientTests`:
/// `/v1/…` answers as Replicate does; `/<fault>/v1/…` answers with that
/// fault whatever the route. Every request is recorded with its
/// `Authorization` header.
actor JobAPIClientTestServer {
    struct Seen: Sendable {
        var method: String
        var path: String
        var authorization: String?
        var body: [UInt8]
        var prefer: String? = nil
    }

    private(set) var seen: [Seen] = []
    /// Bytes `GET /v1/big` answers with.
    static let bigSize = 4096

    func record(_ s: Seen) { seen.append(s) }

    private var holds: [CheckedContinuation<Void, Never>] = []
    private var released = false

    /// Until the server stops: an answer that "would come later" (`slow`,
    /// `stall`). A graceful stop waits for answers under way, so they must end.
    func held() async {
        if released { return }
        await withCheckedContinuation { holds.append($0) }
    }

    func release() {
        released = true
        for h in holds { h.resume() }
        holds = []
    }

    /// Runs an app on 127.0.0.1, a free port, for the length of `body`.
    static func with<T: Sendable>(_ body: @Sendable (_ port: Int, _ server: JobAPIClientTestServer) async throws -> T) async throws -> T {
        let server = JobAPIClientTestServer()
        let router = Router(context: Context.self)
        router.get("**") { request, context in try await server.answer(request, context) }
        router.post("**") { request, context in try await server.answer(request, context) }
        let (ports, portsIn) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in portsIn.yield(channel.localAddress?.port ?? 0) },
                              logger: Logger(label: "test-api", factory: { _ in SwiftLogNoOpLogHandler() }))
        // Stopped gracefully, never by cancelling its task: a cancel while a
        // connection is accepted and not yet served traps in NIO
        // ("Deinited NIOAsyncWriter without calling finish()", swift-nio #3481).
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "test-api", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        func stop() async {
            await server.release()
            await group.triggerGracefulShutdown()
            _ = await running.result
        }
        var next = ports.makeAsyncIterator()
        guard let port = await next.next() else {
            await stop()
            throw CancellationError()
        }
        do {
            let result = try await body(port, server)
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }

    /// A request's context with its channel, so a fault can close it.
    struct Context: RequestContext {
        var coreContext: CoreRequestContextStorage
        let channel: any Channel

        init(source: ApplicationRequestContextSource) {
            coreContext = .init(source: source)
            channel = source.channel
        }
    }

    func answer(_ request: Request, _ context: Context) async throws -> Response {
        var buffer = try await request.body.collect(upTo: 1 << 20)
        let body = buffer.readBytes(length: buffer.readableBytes) ?? []
        let path = request.uri.path
        record(Seen(method: request.method.rawValue, path: path + (request.uri.query.map { "?" + $0 } ?? ""),
                    authorization: request.headers[.authorization], body: body, prefer: request.headers[HTTPField.Name("Prefer")!]))
        let host = "http://" + (request.head.authority ?? "127.0.0.1")
        var parts = path.split(separator: "/").map(String.init)
        if let first = parts.first, first != "v1" {
            parts.removeFirst()
            return try await fault(first, request: request, context: context)
        }
        parts.removeFirst()  // v1
        switch (request.method, parts.count, parts.first) {
        case (.post, 4, "models"):  // models/{owner}/{name}/predictions
            let input = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            return Self.json(201, Self.prediction("p-model", status: "starting", host: host, extra: ["model": "\(parts[1])/\(parts[2])", "input": input?["input"] ?? NSNull()]))
        case (.post, 1, "predictions"):
            let input = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            return Self.json(201, Self.prediction("p-version", status: "starting", host: host, extra: ["version": input?["version"] ?? NSNull(),
                                                                                                     "webhook": input?["webhook"] ?? NSNull()]))
        case (.get, 1, "predictions"):
            // Two pages, newest first; `next` a whole URL as Replicate gives it.
            if request.uri.query == "cursor=page2" {
                return Self.json(200, ["previous": NSNull(), "next": NSNull(), "results": [Self.prediction("p1", status: "succeeded", host: host)]])
            }
            return Self.json(200, ["previous": NSNull(), "next": "\(host)/v1/predictions?cursor=page2",
                                   "results": [Self.prediction("p3", status: "processing", host: host), Self.prediction("p2", status: "failed", host: host,
                                                                                                                 extra: ["error": ["message": "CUDA out of memory"]])]])
        case (.get, 2, "predictions"):
            return Self.json(200, Self.prediction(parts[1], status: "succeeded", host: host,
                                                  extra: ["output": ["images": ["\(host)/v1/files/out0", "\(host)/v1/files/out1"]], "logs": "step 1\nstep 2\n"]))
        case (.post, 3, "predictions") where parts[2] == "cancel":
            return Self.json(200, Self.prediction(parts[1], status: "canceled", host: host))
        case (.post, 1, "files"):
            let text = String(decoding: body, as: UTF8.self)
            guard request.headers[.contentType]?.hasPrefix("multipart/form-data; boundary=") == true,
                  text.contains("name=\"content\"; filename=\"in.png\""), text.contains("Content-Type: image/png") else {
                return Self.json(400, ["detail": "expected a multipart body with a `content` field"])
            }
            return Self.json(201, ["id": "f1", "size": body.count, "urls": ["get": "\(host)/v1/files/f1"]])
        case (.get, 2, "files"):
            return Response(status: .ok, headers: [.contentType: "image/png"], body: .init(byteBuffer: ByteBuffer(string: "file \(parts[1])")))
        case (.get, 1, "big"):
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: 7, count: Self.bigSize)))
        default:
            return Self.json(404, ["detail": "Not found."])
        }
    }

    func fault(_ name: String, request: Request, context: Context) async throws -> Response {
        switch name {
        case "401":
            // A server that echoes what it was given: the client must not pass it on.
            return Self.json(401, ["detail": "Invalid token: \(request.headers[.authorization] ?? "none")"])
        case "403": return Self.json(403, ["title": "Forbidden", "detail": "You do not have permission to use this model."])
        case "404": return Self.json(404, ["detail": "Not found."])
        case "422":
            return Self.json(422, ["title": "Input validation failed", "detail": "- input.steps: Must be less than or equal to 150\n", "status": 422])
        case "500": return Self.json(500, ["detail": "Internal server error"])
        case "429s":
            return Self.json(429, ["detail": "Request was throttled. Expected available in 45 seconds."], headers: [.retryAfter: "45"])
        case "429d":
            // 1_800_000_060 seconds since the epoch; the test's clock says 1_800_000_000.
            return Self.json(429, ["detail": "Request was throttled."], headers: [.retryAfter: "Fri, 15 Jan 2027 08:01:00 GMT"])
        case "502", "503", "504":
            return Response(status: .init(code: Int(name)!), headers: [.contentType: "text/html"],
                            body: .init(byteBuffer: ByteBuffer(string: "<html><body><h1>\(name) Gateway</h1></body></html>")))
        case "html":
            return Response(status: .ok, headers: [.contentType: "text/html"],
                            body: .init(byteBuffer: ByteBuffer(string: "<!DOCTYPE html><html><body>Please log in to the corporate proxy</body></html>")))
        case "html404":
            return Response(status: .notFound, headers: [.contentType: "text/html"],
                            body: .init(byteBuffer: ByteBuffer(string: "<html><body>nginx: not found</body></html>")))
        case "reset":
            // Closed under the request: no answer at all.
            try? await context.channel.close().get()
            throw HTTPError(.internalServerError)
        case "slow":
            await held()
            return Self.json(200, Self.prediction("late", status: "succeeded", host: ""))
        case "stall":
            // The head at once, then a body that stops coming.
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init { writer in
                try await writer.write(ByteBuffer(string: "{\"id\": \"p1\", "))
                await self.held()
                try await writer.write(ByteBuffer(string: "\"status\": \"succeeded\"}"))
                try await writer.finish(nil)
            })
        case "redirect":
            let to = request.uri.query.map { String($0.dropFirst("to=".count)) } ?? "http://127.0.0.1:9/elsewhere"
            return Response(status: .found, headers: [.location: to])
        default:
            return Self.json(418, ["detail": "unknown fault \(name)"])
        }
    }

    static func prediction(_ id: String, status: String, host: String, extra: [String: Any] = [:]) -> [String: Any] {
        var p: [String: Any] = ["id": id, "status": status, "input": [String: Any](), "output": NSNull(), "error": NSNull(), "logs": "",
                                "created_at": "2026-11-25T04:00:00.000Z", "started_at": NSNull(), "completed_at": NSNull(),
                                "urls": ["get": "\(host)/v1/predictions/\(id)", "cancel": "\(host)/v1/predictions/\(id)/cancel"]]
        for (k, v) in extra { p[k] = v }
        return p
    }

    static func json(_ status: Int, _ object: [String: Any], headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: Array(data))))
    }
}

/// Loopback TCP without HTTP, for what a client meets off the happy path.
enum RawSocket {
    /// A port on 127.0.0.1 nothing listens on (bound, then closed).
    static func freePort() -> Int {
        let (port, fd) = refusingPort()
        close(fd)
        return port
    }

    /// A port on 127.0.0.1 that refuses connections while the socket is
    /// open: bound and never listened on, so no other test's server can
    /// take it meanwhile (as one did a port from `freePort`).
    static func refusingPort() -> (port: Int, socket: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return (Int(UInt16(bigEndian: addr.sin_port)), fd)
    }

    /// Listens on a free port; every connection gets `reply` after the
    /// request's first bytes, then is closed. Returns the port.
    static func serve(reply: [UInt8]) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        listen(fd, 8)
        let thread = Thread {
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                var buf = [UInt8](repeating: 0, count: 4096)
                _ = read(c, &buf, buf.count)
                _ = reply.withUnsafeBytes { write(c, $0.baseAddress, $0.count) }
                close(c)
            }
        }
        thread.start()
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
