import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Who may ask what of `flowdir serve` (docs/security.md), before any route:
///
/// - From a browser, only the server's own pages: a request another page
///   makes (`Sec-Fetch-Site: same-site` or `cross-site` — pages on other
///   `127.0.0.1` ports are "same-site", so they carry the cookie) is
///   refused, except a top-level navigation to the pages themselves.
/// - A state-changing request (any method but GET and HEAD) only as
///   `application/json`, and only with `Origin` equal to the server's own
///   origin, or without `Origin` but with `Sec-Fetch-Site: same-origin` or
///   `none`; one with neither (a script, curl) only with `Authorization:
///   Bearer`, never the cookie.
/// - The token (`?token=` on a GET, `Authorization: Bearer`, or the cookie
///   the first page load sets); different wrong tokens from one address are
///   throttled (429 with `Retry-After`).
struct RequestGate: RouterMiddleware {
    typealias Context = UIContext
    let token: String
    /// Where the server listens (the port once it is bound: `--port 0`).
    let host: String
    let port: Locked<Int>
    let throttle: Locked<FailureThrottle>
    let started: Moment
    let clock: FlowdirClock
    let logger: Logger

    static let cookieName = "flowdir_token"

    func handle(_ request: Request, context: UIContext, next: (Request, UIContext) async throws -> Response) async throws -> Response {
        let method = request.method
        let changes = method != .get && method != .head
        let site = request.headers[Self.secFetchSite]?.lowercased()
        let own = Self.ownOrigin(authority: request.head.authority, boundHost: host, boundPort: port.locked { $0 })
        guard let own else {
            return try refuse(421, "this server is not \(request.head.authority ?? "(no Host)")",
                          hint: "open the URL `flowdir serve` printed", request, context)
        }
        // Fetch metadata: what another page's script, <img>, <form> or frame sends.
        if let site, site != "same-origin", site != "none" {
            let navigates = request.headers[Self.secFetchMode]?.lowercased() == "navigate"
                && request.headers[Self.secFetchDest]?.lowercased() == "document"
            guard !changes, navigates, request.uri.path == "/" || request.uri.path == "/open" else {
                return try refuse(403, "refused: flowdir serve answers only its own pages (this request came from another site's page)",
                              hint: "open the URL `flowdir serve` printed", request, context)
            }
        }
        var bearerOnly = false
        if changes {
            guard Self.isJSON(request.headers[.contentType]) else {
                return try refuse(415, "a request that changes something must be sent as JSON (Content-Type: application/json)",
                              hint: "docs/serve.md lists the API", request, context)
            }
            if let origin = request.headers[.origin] {
                guard origin.lowercased() == own else {
                    return try refuse(403, "refused: this request came from the page of another origin (\(origin.prefix(200)))",
                                  hint: "only the pages of \(own) may change things", request, context)
                }
            } else if site == nil {
                // Neither Origin nor Sec-Fetch-Site: not a browser's page; the cookie is not enough.
                bearerOnly = true
            }
        }
        return try await checkToken(request, context, changes: changes, bearerOnly: bearerOnly, next: next)
    }

    func checkToken(_ request: Request, _ context: UIContext, changes: Bool, bearerOnly: Bool,
                    next: (Request, UIContext) async throws -> Response) async throws -> Response {
        let query = changes || bearerOnly ? nil : request.uri.queryParameters.get("token")
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let cookie = bearerOnly ? nil : request.headers[.cookie].flatMap(Self.cookie)
        let given = [query, bearer, cookie].compactMap { $0 }
        guard !given.isEmpty else {
            if bearerOnly, request.headers[.cookie].flatMap(Self.cookie) != nil {
                return unauthorized("401: a request that changes something without Origin (not from a page) needs "
                                    + "`Authorization: Bearer <token>`; the cookie is not enough.\n")
            }
            return unauthorized("401: this page needs the token that `flowdir serve` printed: open the URL it printed (…/?token=…).\n")
        }
        let address = context.remoteAddress
        let now = started.duration(to: clock.instant).seconds
        if let wait = throttle.locked({ $0.wait(address, now: now) }) {
            logger.notice("throttled", metadata: ["client": "\(address)", "retryAfter": "\(wait)"])
            var r = try UIError(429, "too many wrong tokens from \(address); wait \(wait) s",
                                hint: "open the URL `flowdir serve` printed, with its token").response(from: request, context: context)
            r.headers[.retryAfter] = String(wait)
            return r
        }
        guard given.contains(where: { Self.same($0, token) }) else {
            throttle.locked { t in for g in Set(given) { t.failed(address, presented: g, now: now) } }
            logger.notice("wrong token", metadata: ["client": "\(address)", "path": "\(request.uri.path.prefix(200))"])
            return unauthorized("401: this page needs the token that `flowdir serve` printed: open the URL it printed (…/?token=…).\n")
        }
        var response = try await next(request, context)
        if let query, Self.same(query, token) {
            response.headers[.setCookie] = "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict"
        }
        return response
    }

    func refuse(_ status: Int, _ message: String, hint: String, _ request: Request, _ context: UIContext) throws -> Response {
        logger.notice("refused", metadata: ["client": "\(context.remoteAddress)", "method": "\(request.method.rawValue)",
                                            "path": "\(request.uri.path.prefix(200))", "status": "\(status)",
                                            "origin": "\(request.headers[.origin]?.prefix(200) ?? "-")",
                                            "site": "\(request.headers[Self.secFetchSite] ?? "-")"])
        return try UIError(status, message, hint: hint).response(from: request, context: context)
    }

    func unauthorized(_ text: String) -> Response {
        Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let secFetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    static let secFetchDest = HTTPField.Name("Sec-Fetch-Dest")!

    /// `application/json`, with parameters (`; charset=utf-8`) or without.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";", maxSplits: 1).first.map { String($0).trimmed(" \t") } ?? ""
        return media.lowercased() == "application/json"
    }

    /// The server's origin as the browser sees it, `http://` and the
    /// request's own `Host`, when that Host is this server: the bound port,
    /// and for a loopback address a loopback name (so a name an attacker
    /// points at 127.0.0.1 is refused). Nil when it is not.
    static func ownOrigin(authority: String?, boundHost: String, boundPort: Int) -> String? {
        guard let authority = authority?.lowercased(), !authority.isEmpty, authority.count <= 300 else { return nil }
        var name = authority, port = 80
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            name = String(authority[...close])
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let p = Int(authority[authority.index(after: colon)...]) else { return nil }
            name = String(authority[..<colon])
            port = p
        }
        guard port == boundPort, name.allSatisfy({ $0.isLetter || $0.isNumber || "-.[]:_".contains($0) }) else { return nil }
        if UIServer.isLoopback(boundHost), !isLoopbackName(name) { return nil }
        return "http://" + authority
    }

    /// `localhost`, `[::1]`, or an IPv4 address in 127.0.0.0/8.
    static func isLoopbackName(_ name: String) -> Bool {
        if name == "localhost" || name == "[::1]" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { p in p.count <= 3 && UInt8(p) != nil }
    }

    static func cookie(_ header: String) -> String? {
        for part in header.split(separator: ";") {
            let kv = part.drop { $0 == " " || $0 == "\t" }
            if kv.hasPrefix(cookieName + "=") { return String(kv.dropFirst(cookieName.count + 1)) }
        }
        return nil
    }

    /// In constant time: how much of a guess was right is not told by when the answer comes.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}

/// Headers on every answer (docs/security.md): never framed, never sniffed,
/// no Referer; the pages' own Content-Security-Policy unless a route set
/// one (files from instances set a sandboxing one).
struct SecurityHeaders: RouterMiddleware {
    typealias Context = UIContext
    let logger: Logger

    /// The pages: their own scripts, styles and API only; nothing inline.
    static let pagesPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        + "media-src 'self' blob:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

    /// A file from an instance opened on its own: no script, an origin of
    /// its own (sandbox), only itself shown.
    static let filePolicy = "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; "
        + "frame-ancestors 'none'"

    func handle(_ request: Request, context: UIContext, next: (Request, UIContext) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // Every error a route throws is answered here, as JSON with its status.
            response = try refusal(error, request).response(from: request, context: context)
            // HEAD: the headers a GET would have, without its bytes.
            if request.method == .head { response = response.createHeadResponse() }
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[Self.xFrameOptions] = "DENY"
        response.headers[Self.referrerPolicy] = "no-referrer"
        response.headers[Self.crossOriginResourcePolicy] = "same-origin"
        response.headers[Self.crossOriginOpenerPolicy] = "same-origin"
        if response.headers[.contentSecurityPolicy] == nil { response.headers[.contentSecurityPolicy] = Self.pagesPolicy }
        return response
    }

    /// What a route threw, as the page is told it: its own words, a
    /// Hummingbird error's status (no such route, and the like), or a 500
    /// whose cause goes to the log, never to the page.
    func refusal(_ error: any Error, _ request: Request) -> UIError {
        switch error {
        case let e as UIError: return e
        case let e as HTTPError: return UIError(Int(e.status.code), e.body ?? e.status.reasonPhrase)
        case let e as any HTTPResponseError: return UIError(Int(e.status.code), e.status.reasonPhrase)
        default:
            logger.error("failed", metadata: ["path": "\(request.uri.path.prefix(200))", "error": "\(error)"])
            return UIError(500, "flowdir serve failed to answer", hint: "its log says why")
        }
    }

    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let crossOriginResourcePolicy = HTTPField.Name("Cross-Origin-Resource-Policy")!
    static let crossOriginOpenerPolicy = HTTPField.Name("Cross-Origin-Opener-Policy")!
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
