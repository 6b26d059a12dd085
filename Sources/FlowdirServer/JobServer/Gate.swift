#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// Before every route: injected faults, the token, the rate limit; after
/// it, the access log line, and errors as Replicate's JSON problems (one
/// failing request is that request's answer, never the server's end).
struct Gate: RouterMiddleware {
    let core: JobServerCore
    let token: String?

    func handle(_ request: Request, context: JobContext, next: (Request, JobContext) async throws -> Response) async throws -> Response {
        let method = request.method.rawValue
        let path = request.uri.path
        var logged = path + (request.uri.query.map { "?" + $0 } ?? "")
        // The token only ever travels in a header; a query could carry anything.
        if logged.count > 2000 { logged = String(logged.prefix(2000)) + "…" }
        let response: Response
        do {
            response = try await answer(request, context: context, next: next)
        } catch let reset as ConnectionReset {
            core.accessLog.write(method: method, path: logged, status: "reset")
            throw reset
        }
        core.accessLog.write(method: method, path: logged, status: String(response.status.code))
        return response
    }

    func answer(_ request: Request, context: JobContext, next: (Request, JobContext) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        // cog's callbacks and the health check are not the API.
        let isAPI = path.hasPrefix("/v1/") || path == "/v1"
        var late: Double?
        if isAPI, let fault = await core.nextFault(method: request.method.rawValue, path: path) {
            if fault.status != nil || fault.reset {
                if let delay = fault.delay { try await Task.sleep(for: .milliseconds(Int(delay * 1000))) }
            } else {
                // Served, but answered late: as when a slow network loses an answer.
                late = fault.delay
            }
            if fault.reset { try await reset(context.channel) }
            if let status = fault.status {
                if let body = fault.body {
                    return Response(status: .init(code: status), headers: [.contentType: "text/html"], body: .init(byteBuffer: ByteBuffer(string: body)))
                }
                var headers: HTTPFields = [:]
                if let r = fault.retryAfter { headers[.retryAfter] = r }
                return Routes.problem(status, "injected fault (\(status)) from the job server's --faults file", headers: headers)
            }
        }
        // Files' bytes are fetched by URL (outputs, like Replicate's delivery
        // URLs): the unguessable id is the key.
        let isDownload = request.method == .get && path.hasPrefix("/v1/files/")
        let presented = request.headers[.authorization] ?? ""
        if isAPI, let token, path != "/v1/_stats", !isDownload {
            guard WebhookSignature.constantTimeEqual(Array(presented.utf8), Array("Bearer \(token)".utf8)) else {
                return Routes.problem(401, presented.isEmpty ? "You did not pass an authentication token (Authorization: Bearer …)"
                                                            : "You did not pass a valid authentication token")
            }
        }
        if isAPI, let wait = await core.overLimit(presented) {
            return Routes.problem(429, "Request was throttled. Expected available in \(wait) second\(wait == 1 ? "" : "s").",
                                  headers: [.retryAfter: String(wait)])
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
        if let late { try await Task.sleep(for: .milliseconds(Int(late * 1000))) }
        return response
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
