import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// `flowdir serve`'s HTTP side (DESIGN.md §13, docs/serve.md): the pages,
/// the API they use, live events, behind a token.
public struct UIServer: Sendable {
    public struct Config: Sendable {
        public var host: String
        public var port: Int
        public var token: String
        /// Largest answer a page may upload (the config's `answerSizeLimit`).
        public var uploadLimit: Int

        public init(host: String = "127.0.0.1", port: Int = 8701, token: String, uploadLimit: Int = 256 << 20) {
            self.host = host
            self.port = port
            self.token = token
            self.uploadLimit = uploadLimit
        }
    }

    public let config: Config
    let backend: any UIBackend
    public let feed: ChangeFeed
    let thumbnails: ThumbnailCache
    let logger: Logger

    public init(config: Config, backend: any UIBackend, thumbnails: ThumbnailCache = ThumbnailCache(),
                logger: Logger) throws(WatchError) {
        self.config = config
        self.backend = backend
        self.thumbnails = thumbnails
        self.logger = logger
        feed = try ChangeFeed(backend: backend, logger: logger)
    }

    /// A path segment or query value as a URL holds it: RFC 3986's
    /// unreserved characters as they are, every other byte as `%XX`.
    public static func percentEncoded(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E || b == 0x7E {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let hex = String(b, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// Loopback addresses, which need no chosen token.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// The HTTP service; run it beside `feed` (both are services).
    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: UIContext.self)
        router.add(middleware: TokenGate(token: config.token))
        UIRoutes(backend: backend, feed: feed, thumbnails: thumbnails, uploadLimit: config.uploadLimit, logger: logger).add(to: router)
        return Application(router: router, configuration: .init(address: .hostname(config.host, port: config.port), serverName: nil),
                           onServerRunning: { channel in await onStart(channel.localAddress?.port ?? 0) }, logger: logger)
    }
}

public struct UIContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// Nothing without the token (Jupyter's way): `?token=` in the URL (the
/// first page load, which sets the cookie), `Authorization: Bearer`, or
/// the `flowdir_token` cookie the pages then carry.
struct TokenGate: RouterMiddleware {
    typealias Context = UIContext
    let token: String

    func handle(_ request: Request, context: UIContext, next: (Request, UIContext) async throws -> Response) async throws -> Response {
        let query = request.uri.queryParameters.get("token")
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let cookie = request.headers[.cookie].flatMap(Self.cookie)
        let given = [query, bearer, cookie].compactMap { $0 }
        guard given.contains(where: { Self.same($0, token) }) else {
            let text = "401: this page needs the token that `flowdir serve` printed: open the URL it printed (…/?token=…).\n"
            return Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        var response = try await next(request, context)
        if let query, Self.same(query, token) {
            response.headers[.setCookie] = "flowdir_token=\(token); Path=/; HttpOnly; SameSite=Strict"
        }
        return response
    }

    static func cookie(_ header: String) -> String? {
        for part in header.split(separator: ";") {
            let kv = part.drop { $0 == " " || $0 == "\t" }
            if kv.hasPrefix("flowdir_token=") { return String(kv.dropFirst("flowdir_token=".count)) }
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
