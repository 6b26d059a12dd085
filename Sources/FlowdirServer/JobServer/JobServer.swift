import FlowdirCore
import Foundation
import FlowdirIO
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// `flowdir jobserver` (DESIGN.md §12): the part of Replicate's HTTP API
/// flowdir uses, in front of cog servers and flowdir tools.
public struct JobServer: Sendable {
    let core: JobServerCore
    let config: JobServerConfig
    let logger: Logger

    public init(config: JobServerConfig, logger: Logger = Logger(label: "flowdir.jobserver")) throws {
        self.config = config
        self.logger = logger
        core = try JobServerCore(config: config, logger: logger)
    }

    /// Serves until cancelled or told to stop (SIGTERM, SIGINT when run as a
    /// service); `onStart` gets the bound port (`--port 0` picks one).
    public func run(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let core = self.core
        let app = Application(router: router(), configuration: .init(address: .hostname(config.host, port: config.port)),
                              onServerRunning: { channel in
                                  let port = channel.localAddress?.port ?? 0
                                  await core.started(port: port)
                                  await onStart(port)
                              }, logger: logger)
        try await app.runService()
    }

    /// The same, as a service in a caller's ServiceGroup (tests run several).
    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let core = self.core
        return Application(router: router(), configuration: .init(address: .hostname(config.host, port: config.port)),
                           onServerRunning: { channel in
                               let port = channel.localAddress?.port ?? 0
                               await core.started(port: port)
                               await onStart(port)
                           }, logger: logger)
    }

    func router() -> Router<JobContext> {
        let router = Router(context: JobContext.self)
        router.add(middleware: Gate(core: core, token: config.token))
        let core = self.core

        router.post("/v1/predictions") { request, context in
            let body = try await Self.json(request, context)
            guard let version = body["version"]?.stringValue else {
                return Self.problem(422, "`version` is required (or POST /v1/models/{owner}/{name}/predictions)")
            }
            guard let model = await core.model(forVersion: version) else {
                return Self.problem(404, "no model has version '\(version)' on this job server")
            }
            return try await Self.created(core, model: model, version: version, body: body)
        }
        router.post("/v1/models/:owner/:name/predictions") { request, context in
            let model = "\(context.parameters.get("owner") ?? "")/\(context.parameters.get("name") ?? "")"
            return try await Self.created(core, model: model, version: nil, body: try await Self.json(request, context))
        }
        router.get("/v1/models/:owner/:name") { _, context in
            let model = "\(context.parameters.get("owner") ?? "")/\(context.parameters.get("name") ?? "")"
            guard await core.backends[model] != nil else { return Self.problem(404, "no model '\(model)' on this job server") }
            let version = await core.versionID(of: model)
            return Self.ok(.object(["owner": .string(String(model.split(separator: "/")[0])), "name": .string(String(model.split(separator: "/")[1])),
                                    "latest_version": .object(["id": .string(version)])]))
        }
        router.get("/v1/predictions/:id") { _, context in
            guard let p = await core.prediction(context.parameters.get("id") ?? "") else { return Self.problem(404, "Not found.") }
            return Self.ok(p)
        }
        router.get("/v1/predictions") { request, _ in
            let cursor = request.uri.queryParameters.get("cursor").flatMap { Int($0) } ?? 0
            return Self.ok(await core.list(cursor: max(0, cursor)))
        }
        router.post("/v1/predictions/:id/cancel") { _, context in
            guard let p = await core.cancel(context.parameters.get("id") ?? "") else { return Self.problem(404, "Not found.") }
            return Self.ok(p)
        }
        router.post("/v1/files") { request, context in
            let bytes = try await Self.body(request, context, limit: 1 << 30)
            let type = request.headers[.contentType] ?? "application/octet-stream"
            let file = Multipart.file(bytes, contentType: type) ?? (bytes, "upload", type)
            return Self.ok(try await core.upload(file.bytes, name: file.name, type: file.type), status: 201)
        }
        router.get("/v1/files/:id") { _, context in
            guard let f = await core.file(context.parameters.get("id") ?? "") else { return Self.problem(404, "Not found, or expired.") }
            return Response(status: .ok, headers: [.contentType: f.type], body: .init(byteBuffer: ByteBuffer(bytes: f.bytes)))
        }
        router.get("/v1/_stats") { _, _ in
            Self.ok(.object(["created": .number(Double(await core.created))]))
        }
        // cog's webhooks about the predictions this server handed it.
        router.post("/_cog/:id") { request, context in
            let body = try await Self.json(request, context)
            await core.cogWebhook(context.parameters.get("id") ?? "", body)
            return Response(status: .ok)
        }
        router.get("/health-check") { _, _ in Self.ok(.object(["status": .string("READY")])) }
        return router
    }

    static func created(_ core: JobServerCore, model: String, version: String?, body: JSONValue) async throws -> Response {
        do {
            return ok(try await core.create(model: model, version: version, body: body), status: 201)
        } catch {
            return problem(error.status, error.detail)
        }
    }

    static func body(_ request: Request, _ context: JobContext, limit: Int = 256 << 20) async throws -> [UInt8] {
        var buffer = try await request.body.collect(upTo: limit)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    static func json(_ request: Request, _ context: JobContext) async throws -> JSONValue {
        let bytes = try await body(request, context)
        guard let json = JSONValue.parse(bytes) else { throw HTTPError(.badRequest, message: "the body is not JSON") }
        return json
    }

    static func ok(_ json: JSONValue, status: Int = 200) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// Replicate's error shape: `{"title", "detail", "status"}`.
    static func problem(_ status: Int, _ detail: String, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/problem+json"
        let title = status == 401 ? "Unauthenticated" : status == 404 ? "Not found" : status == 429 ? "Too many requests" : "Error"
        let body = JSONValue.object(["title": .string(title), "detail": .string(detail), "status": .number(Double(status))])
        return Response(status: .init(code: status), headers: h, body: .init(byteBuffer: ByteBuffer(bytes: body.bytes)))
    }
}

/// The request context, with the connection (to drop it, a fault).
public struct JobContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    public var maxUploadSize: Int { 1 << 30 }
}

/// Before every route: the access log, injected faults, the token, the rate limit.
struct Gate: RouterMiddleware {
    let core: JobServerCore
    let token: String?

    func handle(_ request: Request, context: JobContext, next: (Request, JobContext) async throws -> Response) async throws -> Response {
        let method = request.method.rawValue
        let path = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        var status = 500
        defer { let s = status; Task { await core.log(method, path, s) } }
        // cog's own callbacks and the health check are not the API.
        let isAPI = request.uri.path.hasPrefix("/v1/")
        var late: Double?
        if isAPI, let fault = await core.nextFault(method: method, path: request.uri.path) {
            // Done, but answered late: as a slow network loses an answer.
            late = fault.delay
            if fault.reset {
                status = 0
                // Closed under the request: the client gets no answer at all.
                try? await context.channel.close().get()
                throw HTTPError(.internalServerError, message: "connection dropped (a fault)")
            }
            if let s = fault.status {
                status = s
                if let body = fault.body {
                    return Response(status: .init(code: s), headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(string: body)))
                }
                var headers: HTTPFields = [:]
                if let r = fault.retryAfter { headers[.retryAfter] = r }
                if s >= 400 { return JobServer.problem(s, "injected fault (\(s))", headers: headers) }
            }
        }
        if isAPI, let token, request.uri.path != "/v1/_stats", !request.uri.path.hasPrefix("/v1/files/") || request.method != .get {
            guard request.headers[.authorization] == "Bearer \(token)" else {
                status = 401
                return JobServer.problem(401, "You did not pass a valid authentication token")
            }
        }
        if isAPI, let wait = await core.overLimit(token ?? "anonymous") {
            status = 429
            return JobServer.problem(429, "Request was throttled. Expected available in \(Int(wait.rounded(.up))) seconds.",
                                     headers: [.retryAfter: String(Int(wait.rounded(.up)))])
        }
        do {
            let response = try await next(request, context)
            status = Int(response.status.code)
            if let late { try? await Task.sleep(for: .milliseconds(Int(late * 1000))) }
            return response
        } catch let error as HTTPError {
            status = Int(error.status.code)
            throw error
        }
    }
}

/// The one file of a `multipart/form-data` body (field `content`).
enum Multipart {
    static func file(_ body: [UInt8], contentType: String) -> (bytes: [UInt8], name: String, type: String)? {
        guard contentType.hasPrefix("multipart/form-data"), let b = contentType.range(of: "boundary=") else { return nil }
        let boundary = Array(("--" + contentType[b.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: "\" "))).utf8)
        guard let start = find(boundary, in: body, from: 0) else { return nil }
        let headerStart = start + boundary.count + 2
        guard let headerEnd = find(Array("\r\n\r\n".utf8), in: body, from: headerStart) else { return nil }
        let headers = String(decoding: body[headerStart..<headerEnd], as: UTF8.self)
        let dataStart = headerEnd + 4
        guard let end = find(Array("\r\n".utf8) + boundary, in: body, from: dataStart) else { return nil }
        var name = "upload"
        if let r = headers.range(of: "filename=\"") { name = String(headers[r.upperBound...].prefix { $0 != "\"" }) }
        var type = "application/octet-stream"
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-type:") {
            type = line.dropFirst(13).trimmingCharacters(in: .whitespaces)
        }
        return (Array(body[dataStart..<end]), name, type)
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, hay.count >= needle.count, from <= hay.count - needle.count else { return nil }
        var i = from
        while i <= hay.count - needle.count {
            if hay[i] == needle[0], hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
