import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// `flowdir serve`'s HTTP side (docs/serve.md): the pages,
/// the API they use, live events, behind a token.
public struct UIServer: Sendable {
    public struct Config: Sendable {
        public var host: String
        public var port: Int
        public var token: String
        /// Largest answer a page may upload (the config's `answerSizeLimit`).
        public var uploadLimit: Int
        /// A connection with no request in flight is closed after this many seconds.
        public var idleTimeout: Int

        public init(host: String = "127.0.0.1", port: Int = 8701, token: String, uploadLimit: Int = 256 << 20, idleTimeout: Int = 60) {
            self.host = host
            self.port = port
            self.token = token
            self.uploadLimit = uploadLimit
            self.idleTimeout = idleTimeout
        }
    }

    public let config: Config
    let backend: any UIBackend
    /// The port listened on, once bound (`--port 0` picks one).
    let boundPort: Locked<Int>
    let throttle = Locked(FailureThrottle(limit: 10, window: 60))
    public let feed: ChangeFeed
    let thumbnails: ThumbnailCache
    let logger: Logger
    /// Times the change feed's keep-alives and the wrong-token throttle.
    let clock: FlowdirClock

    public init(config: Config, backend: any UIBackend, thumbnails: ThumbnailCache = ThumbnailCache(),
                logger: Logger, clock: FlowdirClock = .system) throws(WatchError) {
        self.clock = clock
        self.config = config
        self.backend = backend
        self.thumbnails = thumbnails
        self.logger = logger
        boundPort = Locked(config.port)
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

    /// Loopback addresses, which need no chosen token: `localhost`, `::1`,
    /// and IPv4 addresses in 127.0.0.0/8 (not a name that merely starts "127.").
    public static func isLoopback(_ host: String) -> Bool {
        host == "::1" || RequestGate.isLoopbackName(host.lowercased())
    }

    /// Limits on what a client may send before a route sees it
    /// (docs/security.md): headers (a page's cookies for every
    /// `127.0.0.1` port included) within 64 KiB, a connection with nothing
    /// in flight closed after `idleTimeout` (a minute). Bodies are limited
    /// by each route.
    var http1: HTTP1Channel.Configuration {
        HTTP1Channel.Configuration(
            idleTimeout: .seconds(Int64(max(1, config.idleTimeout))),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 64 << 10, maxHeaderFieldCount: 100))
    }

    /// The HTTP service; run it beside `feed` (both are services).
    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: UIContext.self)
        router.add(middleware: SecurityHeaders(logger: logger))
        router.add(middleware: RequestGate(token: config.token, host: config.host, port: boundPort, throttle: throttle,
                                           started: clock.instant, clock: clock, logger: logger))
        // The routes of docs/serve.md, by what they serve.
        PagesController().addRoutes(to: router)
        InstancesController(backend: backend, logger: logger).addRoutes(to: router)
        NodesController(backend: backend, uploadLimit: config.uploadLimit, logger: logger).addRoutes(to: router)
        FilesController(backend: backend, thumbnails: thumbnails).addRoutes(to: router)
        ChangeFeedController(feed: feed, clock: clock).addRoutes(to: router)
        SettingsController(backend: backend, logger: logger).addRoutes(to: router)
        let bound = boundPort
        return Application(router: router, server: .http1(configuration: http1),
                           configuration: .init(address: .hostname(config.host, port: config.port), serverName: nil),
                           onServerRunning: { channel in
                               let port = channel.localAddress?.port ?? 0
                               bound.locked { $0 = port }
                               await onStart(port)
                           }, logger: logger)
    }
}

public struct UIContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's address, for throttling failed tokens.
    public let remoteAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let address = source.channel.remoteAddress
        remoteAddress = address?.ipAddress ?? address?.pathname ?? "unknown"
    }
}
