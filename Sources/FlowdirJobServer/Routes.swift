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

        let jsonLimit = core.config.maxJSONBody
        let cogLimit = max(jsonLimit, core.config.maxUpload / 3 * 4 + (1 << 20))
        router.post("/v1/predictions") { request, context in
            let body = try await json(request, limit: jsonLimit)
            guard let version = body["version"]?.stringValue else {
                return problem(422, "`version` is required (or POST /v1/models/{owner}/{name}/predictions)")
            }
            guard let model = await core.model(forVersion: version) else {
                return problem(404, "no model has version '\(version.prefix(100))' on this job server")
            }
            return await created(core, model: model, body: body, request: request, context: context)
        }
        router.post("/v1/models/:owner/:name/predictions") { request, context in
            let body = try await json(request, limit: jsonLimit)
            return await created(core, model: modelName(context), body: body, request: request, context: context)
        }
        router.get("/v1/models/:owner/:name") { _, context in
            let model = modelName(context)
            guard await core.hasModel(model) else { return problem(404, "no model '\(model.prefix(200))' on this job server") }
            let parts = model.split(separator: "/").map { JSONValue.string(String($0)) }
            let version = JSONValue.object(["id": .string(JobServerCore.versionID(of: model))])
            return ok(.object(["owner": parts[0], "name": parts[1], "visibility": .string("private"), "latest_version": version]))
        }
        router.get("/v1/predictions/:id") { _, context in
            guard let p = await core.prediction(context.parameters.get("id") ?? "") else { return problem(404, "Not found.") }
            return ok(p)
        }
        router.get("/v1/predictions") { request, _ in
            do throws(JobServerCore.Refusal) {
                return ok(try await core.list(cursor: request.uri.queryParameters.get("cursor")))
            } catch {
                return problem(error.status, error.detail)
            }
        }
        router.post("/v1/predictions/:id/cancel") { request, context in
            // Clients send no body; one that is sent must be JSON, as for every other POST.
            if hasBody(request) { _ = try await json(request, limit: 1 << 16, allowEmpty: true) }
            guard let p = await core.cancel(context.parameters.get("id") ?? "") else { return problem(404, "Not found.") }
            return ok(p)
        }

        router.post("/v1/files") { request, context in try await Uploads.receive(request, core: core) }
        router.get("/v1/files") { _, _ in ok(await core.fileList()) }
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
        // How many predictions it has made (tests count what a client sent), and its cog servers.
        router.get("/v1/_stats") { _, _ in ok(await core.stats) }

        // cog's webhooks about the predictions this server handed it: public,
        // the key in the path (random per start) is what lets them in.
        router.post("/_cog/:key/:id") { request, context in
            guard WebhookSignature.constantTimeEqual(Array((context.parameters.get("key") ?? "").utf8), Array(core.callbackKey.utf8)) else {
                await core.tokenFailed(Gate.clientAddress(context), presented: "_cog/" + (context.parameters.get("key") ?? ""))
                return problem(404, "Not found.")
            }
            // Its output comes inline (data: URIs): as large as an upload may be, in base64.
            await core.cogWebhook(context.parameters.get("id") ?? "", try await json(request, limit: cogLimit))
            return Response(status: .ok)
        }
        router.get("/health-check") { _, _ in ok(.object(["status": .string("READY")])) }
        return router
    }

    /// A stored file's bytes, streamed from disk, served so that no
    /// browser runs or sniffs them (docs/security.md): inline only as a type
    /// its content was checked to be (`UploadedType`), else as an attachment;
    /// `nosniff`, and a CSP sandbox with nothing allowed.
    static func download(_ core: JobServerCore, _ context: JobContext) async throws -> Response {
        guard let (f, path) = await core.file(context.parameters.get("id") ?? "") else { return problem(404, "Not found, or expired.") }
        var headers: HTTPFields = [.xContentTypeOptions: "nosniff", .contentSecurityPolicy: "sandbox; default-src 'none'",
                                   .cacheControl: "private, no-store"]
        if let inline = f.inline {
            headers[.contentType] = inline
        } else {
            headers[.contentType] = "application/octet-stream"
            headers[.contentDisposition] = "attachment; filename=\"\(f.name)\""
        }
        let body = try await FileIO().loadFile(path: path, context: context)
        return Response(status: .ok, headers: headers, body: body)
    }

    static func modelName(_ context: JobContext) -> String {
        "\(context.parameters.get("owner") ?? "")/\(context.parameters.get("name") ?? "")"
    }

    static let prefer = HTTPField.Name("Prefer")!
    static let preferenceApplied = HTTPField.Name("Preference-Applied")!

    /// A create; with `Prefer: wait[=N]` (Replicate's sync mode) answered
    /// once the prediction ends or N seconds (at most `maxWait`) pass, or
    /// its client goes or the server stops; at once past `maxWaiters`
    /// (without `Preference-Applied`, so the client knows to poll).
    static func created(_ core: JobServerCore, model: String, body: JSONValue, request: Request, context: JobContext) async -> Response {
        let wait = PreferWait.seconds(request.headers[values: prefer], longest: core.config.maxWait)
        do throws(JobServerCore.Refusal) {
            let (made, held) = try await core.create(model: model, body: body, hold: wait != nil)
            guard let held, let wait else { return ok(made, status: 201) }
            _ = await core.waiters.wait(held, seconds: Self.held(wait), channel: context.channel)
            return ok(await core.heldAnswer(held.prediction) ?? made, status: 201, headers: [preferenceApplied: "wait=\(wait)"])
        } catch {
            return problem(error.status, error.detail)
        }
    }

    /// How long a create asking `wait=N` is held: two seconds less than N
    /// (half of it when N is 4 or less). Replicate's client gives up
    /// reading N + 0.5 s after it asked: an answer sent at N, N − 0.25 s
    /// and N − 1 s each came too late once on a machine loaded by three
    /// test suites at once (seen in CI).
    static func held(_ wait: Int) -> Double {
        max(Double(wait) / 2, Double(wait) - 2)
    }

    static func hasBody(_ request: Request) -> Bool {
        request.headers[.transferEncoding] != nil || (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0
    }

    /// `application/json`, with or without parameters (`; charset=utf-8`).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return type == "application/json"
    }

    /// The body as JSON, at most `limit` bytes, refused unless sent as
    /// `application/json` (a web page's form cannot send that) — before a
    /// byte of it is read.
    static func json(_ request: Request, limit: Int, allowEmpty: Bool = false) async throws -> JSONValue {
        guard isJSON(request.headers[.contentType]) else {
            throw HTTPError(.unsupportedMediaType, message: "the body must be JSON sent as Content-Type: application/json (got \(request.headers[.contentType].map { String($0.prefix(60)) } ?? "none"))")
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw HTTPError(.contentTooLarge, message: "the body is \(ByteCount(length)), more than the \(ByteCount(limit)) a JSON request may be; send large files through POST /v1/files")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError {
            throw HTTPError(.contentTooLarge, message: "the body is more than the \(ByteCount(limit)) a JSON request may be; send large files through POST /v1/files")
        }
        if allowEmpty, buffer.readableBytes == 0 { return .null }
        guard let json = JSONValue.parse(Array(buffer: buffer)) else {
            throw HTTPError(.badRequest, message: "the body is not JSON")
        }
        return json
    }

    static func ok(_ json: JSONValue, status: Int = 200, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: h, body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// Replicate's error shape: `{"title", "detail", "status"}`.
    static func problem(_ status: Int, _ detail: String, headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/problem+json"
        let title = switch status {
        case 400: "Bad request"
        case 401: "Unauthenticated"
        case 403: "Forbidden"
        case 404: "Not found"
        case 413: "Request too large"
        case 415: "Unsupported media type"
        case 422: "Invalid input"
        case 429: "Request was throttled"
        case 503: "Service unavailable"
        default: "Error"
        }
        let body = JSONValue.object(["title": .string(title), "detail": .string(detail), "status": .number(Double(status))])
        return Response(status: .init(code: status), headers: h, body: .init(byteBuffer: ByteBuffer(bytes: body.bytes)))
    }
}

/// The request context, with the connection (a fault resets it; the
/// client's address throttles failed tokens).
public struct JobContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// No route collects a body whole past its own limit (`Routes.json`,
    /// `Uploads`); this is only Hummingbird's default for any other.
    public var maxUploadSize: Int { 1 << 16 }
}
