import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import NIOCore

/// The job server's routes: Replicate's, as far as flowdir uses them
/// (docs/jobserver.md lists them), and cog's callbacks.
enum Routes {
    static func router(core: JobServerCore, token: String?) -> Router<JobContext> {
        let router = Router(context: JobContext.self)
        router.add(middleware: Gate(core: core, token: token))

        router.post("/v1/predictions") { request, context in
            let body = try await json(request, context)
            guard let version = body["version"]?.stringValue else {
                return problem(422, "`version` is required (or POST /v1/models/{owner}/{name}/predictions)")
            }
            guard let model = await core.model(forVersion: version) else {
                return problem(404, "no model has version '\(version)' on this job server")
            }
            return await created(core, model: model, body: body, request: request)
        }
        router.post("/v1/models/:owner/:name/predictions") { request, context in
            let body = try await json(request, context)
            return await created(core, model: modelName(context), body: body, request: request)
        }
        router.get("/v1/models/:owner/:name") { _, context in
            let model = modelName(context)
            guard await core.hasModel(model) else { return problem(404, "no model '\(model)' on this job server") }
            let parts = model.split(separator: "/").map { JSONValue.string(String($0)) }
            let version = JSONValue.object(["id": .string(JobServerCore.versionID(of: model))])
            return ok(.object(["owner": parts[0], "name": parts[1], "visibility": .string("private"), "latest_version": version]))
        }
        router.get("/v1/predictions/:id") { _, context in
            guard let p = await core.prediction(context.parameters.get("id") ?? "") else { return problem(404, "Not found.") }
            return ok(p)
        }
        router.get("/v1/predictions") { request, _ in
            let base = await base(of: request, core)
            do throws(JobServerCore.Refusal) {
                return ok(try await core.list(cursor: request.uri.queryParameters.get("cursor"), base: base))
            } catch {
                return problem(error.status, error.detail)
            }
        }
        router.post("/v1/predictions/:id/cancel") { _, context in
            guard let p = await core.cancel(context.parameters.get("id") ?? "") else { return problem(404, "Not found.") }
            return ok(p)
        }

        router.post("/v1/files") { request, context in
            var buffer = try await request.body.collect(upTo: context.maxUploadSize)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            let type = request.headers[.contentType] ?? "application/octet-stream"
            let file: (bytes: [UInt8], name: String, type: String)
            if type.lowercased().hasPrefix("multipart/form-data") {
                guard let part = Multipart.file(bytes, contentType: type, field: "content") else {
                    return problem(422, "a multipart upload needs its file in the field `content`")
                }
                file = part
            } else {
                // A raw body: the file itself, named by Content-Disposition if given.
                file = (bytes, Multipart.filename(request.headers[.contentDisposition] ?? "") ?? "upload", type)
            }
            do {
                return ok(try await core.upload(file.bytes, name: file.name, type: file.type, base: base(of: request, core)), status: 201)
            } catch {
                return problem(507, "the job server cannot keep the file: \(error)")
            }
        }
        router.get("/v1/files") { request, _ in ok(await core.fileList(base: base(of: request, core))) }
        // The bytes, at `urls.get` too: flowdir's client compares an upload it
        // may have sent by fetching it there (Replicate answers its file object).
        router.get("/v1/files/:id") { _, context in try await download(core, context) }
        router.delete("/v1/files/:id") { _, context in
            guard await core.deleteFile(context.parameters.get("id") ?? "") else { return problem(404, "Not found, or expired.") }
            return Response(status: .noContent)
        }
        // The bytes: outputs' URLs, and `urls.download` of uploads.
        router.get("/v1/files/:id/:name") { _, context in try await download(core, context) }

        router.get("/v1/webhooks/default/secret") { _, _ in
            guard let secret = core.config.webhookSecret else { return problem(404, "this job server signs no webhooks (no --webhook-secret-file)") }
            return ok(.object(["key": .string(secret)]))
        }
        // How many predictions it has made (tests count what a client sent).
        router.get("/v1/_stats") { _, _ in ok(await core.stats) }

        // cog's webhooks about the predictions this server handed it.
        router.post("/_cog/:key/:id") { request, context in
            guard WebhookSignature.constantTimeEqual(Array((context.parameters.get("key") ?? "").utf8), Array(core.callbackKey.utf8)) else {
                return problem(404, "Not found.")
            }
            await core.cogWebhook(context.parameters.get("id") ?? "", try await json(request, context))
            return Response(status: .ok)
        }
        router.get("/health-check") { _, _ in ok(.object(["status": .string("READY")])) }
        return router
    }

    static func download(_ core: JobServerCore, _ context: JobContext) async throws -> Response {
        guard let (f, bytes) = await core.fileBytes(context.parameters.get("id") ?? "") else { return problem(404, "Not found, or expired.") }
        return Response(status: .ok, headers: [.contentType: f.contentType], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func modelName(_ context: JobContext) -> String {
        "\(context.parameters.get("owner") ?? "")/\(context.parameters.get("name") ?? "")"
    }

    static func created(_ core: JobServerCore, model: String, body: JSONValue, request: Request) async -> Response {
        let base = await base(of: request, core)
        do throws(JobServerCore.Refusal) {
            return ok(try await core.create(model: model, version: nil, body: body, base: base), status: 201)
        } catch {
            return problem(error.status, error.detail)
        }
    }

    /// `http://<Host>` as the client reached the server, so the URLs in
    /// its answers work from where it is; the server's own when the Host
    /// header is absent or odd.
    static func base(of request: Request, _ core: JobServerCore) async -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")
        // HTTP/1's Host header, as swift-http-types keeps it.
        if let host = request.head.authority, !host.isEmpty, host.count < 256, host.allSatisfy(allowed.contains) {
            return "http://" + host
        }
        return await core.base
    }

    static func json(_ request: Request, _ context: JobContext) async throws -> JSONValue {
        var buffer = try await request.body.collect(upTo: context.maxUploadSize)
        guard let json = JSONValue.parse(buffer.readBytes(length: buffer.readableBytes) ?? []) else {
            throw HTTPError(.badRequest, message: "the body is not JSON")
        }
        return json
    }

    static func ok(_ json: JSONValue, status: Int = 200) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// Replicate's error shape: `{"title", "detail", "status"}`.
    static func problem(_ status: Int, _ detail: String, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/problem+json"
        let title = switch status {
        case 400: "Bad request"
        case 401: "Unauthenticated"
        case 404: "Not found"
        case 422: "Invalid input"
        case 429: "Request was throttled"
        case 503: "Service unavailable"
        default: "Error"
        }
        let body = JSONValue.object(["title": .string(title), "detail": .string(detail), "status": .number(Double(status))])
        return Response(status: .init(code: status), headers: h, body: .init(byteBuffer: ByteBuffer(bytes: body.bytes)))
    }
}

/// The request context, with the connection (a fault resets it).
public struct JobContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Uploads go through the files API whole.
    public var maxUploadSize: Int { 1 << 30 }
}
