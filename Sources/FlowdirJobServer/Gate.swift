#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// Before every route, in this order (docs/security.md): a request a
/// browser sent is refused (a web page must not drive the API); a client
/// address that failed the token too often is held off; the token, which
/// every route needs but those listed in `isPublic`; the rate limit;
/// injected faults. All before any body is read. After the route: the
/// access log line, and errors as Replicate's JSON problems (one failing
/// request is that request's answer, never the server's end).
struct Gate: RouterMiddleware {
    let core: JobServerCore
    let token: String?

    /// The routes served without the token; every other one needs it,
    /// unknown paths included. The health check says only that it runs;
    /// cog's callbacks carry their own key (random per start), checked by
    /// their route.
    static func isPublic(method: HTTPRequest.Method, path: String) -> Bool {
        if method == .get, path == "/health-check" { return true }
        if method == .post, path.hasPrefix("/_cog/"), path.split(separator: "/", omittingEmptySubsequences: false).count == 4 { return true }
        return false
    }

    func handle(_ request: Request, context: JobContext, next: (Request, JobContext) async throws -> Response) async throws -> Response {
        let method = request.method.rawValue
        let arrived = core.config.clock.now()
        let result: (response: Response, refused: Bool)
        do {
            result = try await answer(request, context: context, next: next)
        } catch let reset as ConnectionReset {
            core.accessLog.write(method: method, path: Self.logged(request, short: false, token: token), status: "reset", arrived: arrived)
            throw reset
        }
        // A refused request is one short line: a flood of them cannot fill the disk with what they sent.
        core.accessLog.write(method: method, path: Self.logged(request, short: result.refused, token: token), status: String(result.response.status.code),
                             arrived: arrived)
        return result.response
    }

    /// The path (and query) as the log shows it. The token only ever travels
    /// in a header, but a client may wrongly put it in the URL (`?token=…`
    /// on a public route, say): never written, so the log holds no token
    /// (docs/security.md). A query could carry anything, so it is cut short.
    static func logged(_ request: Request, short: Bool, token: String? = nil) -> String {
        var text = short ? String(request.uri.path.prefix(100)) : request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        if !short, text.count > 2000 { text = String(text.prefix(2000)) + "…" }
        if let token, !token.isEmpty { text = text.replacing(token, with: "(token)") }
        return text
    }

    func answer(_ request: Request, context: JobContext,
                next: (Request, JobContext) async throws -> Response) async throws -> (Response, Bool) {
        let path = request.uri.path
        if let why = Self.fromBrowser(request) { return (refuse(request, context, Routes.problem(403, why)), true) }
        let address = Self.clientAddress(context)
        if let wait = await core.addressBlocked(address) {
            return (refuse(request, context, Routes.problem(429, "Too many failed tokens from \(address). Expected available in \(wait) second\(wait == 1 ? "" : "s").",
                                                            headers: [.retryAfter: String(wait)])), true)
        }
        let presented = request.headers[.authorization] ?? ""
        if let token, !Self.isPublic(method: request.method, path: path) {
            guard WebhookSignature.constantTimeEqual(Array(presented.utf8), Array("Bearer \(token)".utf8)) else {
                // A wrong token is a guess; none at all is a client not set up yet.
                if !presented.isEmpty { await core.tokenFailed(address, presented: presented) }
                return (refuse(request, context, Routes.problem(401, presented.isEmpty ? "You did not pass an authentication token (Authorization: Bearer …)"
                                                                                        : "You did not pass a valid authentication token")), true)
            }
        }
        // cog's callbacks and the health check are not the API.
        let isAPI = path.hasPrefix("/v1/") || path == "/v1"
        if isAPI, let wait = await core.overLimit(presented) {
            return (refuse(request, context, Routes.problem(429, "Request was throttled. Expected available in \(wait) second\(wait == 1 ? "" : "s").",
                                                            headers: [.retryAfter: String(wait)])), true)
        }
        var late: Double?
        if isAPI, let fault = await core.nextFault(method: request.method.rawValue, path: path) {
            if fault.status != nil || fault.reset {
                if let delay = fault.delay { try await core.config.clock.sleep(for: .milliseconds(Int(delay * 1000))) }
            } else {
                // Served, but answered late: as when a slow network loses an answer.
                late = fault.delay
            }
            if fault.reset { try await reset(context.channel) }
            if let status = fault.status {
                if let body = fault.body {
                    return (Response(status: .init(code: status), headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(string: body))), false)
                }
                var headers: HTTPFields = [:]
                if let r = fault.retryAfter { headers[.retryAfter] = r }
                return (Routes.problem(status, "injected fault (\(status)) from the job server's --faults file", headers: headers), false)
            }
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = Routes.problem(Int(error.status.code), error.body ?? error.status.reasonPhrase)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            response = Routes.problem(500, "the job server failed to answer: \(error)")
        }
        if let late { try await core.config.clock.sleep(for: .milliseconds(Int(late * 1000))) }
        // A body too large, or not JSON, was not read (or not all of it).
        if response.status.code == 413 || response.status.code == 415 { return (refuse(request, context, response), true) }
        return (response, false)
    }

    /// Why a browser sent this, if one did. Browsers put `Origin` on
    /// cross-site requests and every POST, and `Sec-Fetch-Site` on all;
    /// API clients (flowdir's, Replicate's, curl) send neither.
    static func fromBrowser(_ request: Request) -> String? {
        if request.headers[.origin] != nil {
            return "requests from web pages (with an Origin header) are refused: this is an API for programs, which send no Origin"
        }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site.lowercased() != "none" {
            return "requests from web pages (Sec-Fetch-Site: \(site.prefix(20))) are refused: this is an API for programs"
        }
        return nil
    }

    static func clientAddress(_ context: JobContext) -> String {
        context.channel.remoteAddress?.ipAddress ?? "?"
    }

    /// A refused request may be sending a body it was never going to have
    /// read: the connection is closed once the answer is out (and the
    /// answer says so), rather than read to its end.
    func refuse(_ request: Request, _ context: JobContext, _ response: Response) -> Response {
        let sendsBody = request.headers[.transferEncoding] != nil || (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0
        guard sendsBody else { return response }
        var r = response
        r.headers[.connection] = "close"
        let channel = context.channel
        channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
        return r
    }

    struct ConnectionReset: Error {}

    /// Drops the connection with a TCP RST (SO_LINGER 0, then close): the
    /// client gets "connection reset by peer" and no answer at all.
    func reset(_ channel: any Channel) async throws -> Never {
        try? await (channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        try? await channel.close().get()
        throw ConnectionReset()
    }
}
