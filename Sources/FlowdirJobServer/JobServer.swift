import FlowdirCore
import FlowdirIO
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// How a job server is set up (`flowdir jobserver`'s options).
public struct JobServerConfig: Sendable {
    public var host = "127.0.0.1"
    /// 0: any free port (the bound one is handed to `onStart`, and returned by `start`).
    public var port = 8700
    /// Where predictions, files and the access log are kept.
    public var dir: String
    /// The token clients must send (`Authorization: Bearer …`). nil (none
    /// needed) only for tests in this process about something else: the
    /// command never serves without one (docs/security.md).
    public var token: String?
    /// Webhooks are signed with it (`whsec_…`); nil: sent unsigned.
    public var webhookSecret: String?
    /// Model name (`owner/name`) → a cog server's URL, `tools/<Kind>` (a tool
    /// under that name), or `cog:DIR` (a cog server this one starts for the
    /// predictor folder DIR and supervises).
    public var models: [String: String] = [:]
    /// Tool files, each served as model `tools/<Kind>`.
    public var toolsDirectory: String?
    public var faults = Faults()
    /// Requests per minute per token, past which it answers 429.
    public var rateLimit = 6000
    /// Failed tokens a minute from one client address, past which all of
    /// its requests are answered 429 until the minute has passed.
    public var failedTokenLimit = 10
    /// Seconds files (uploads, outputs) are served; removed after.
    public var fileLifetime: Double = 3600
    /// Seconds an ended prediction is kept (with its files), and how many at most.
    public var keepPredictions: Double = 7 * 86400
    public var maxPredictions = 10_000
    /// Time for lifetimes, rate limits, throttles, held creates, retries and sweeps (a test moves its own).
    public var clock: FlowdirClock = .system
    /// How often expired files and predictions are removed.
    public var sweepInterval: Duration = .seconds(60)
    /// Largest upload (`POST /v1/files`), streamed to disk as it comes.
    public var maxUpload = 1 << 30
    /// Largest JSON body (a prediction with its files inline as `data:` URIs).
    public var maxJSONBody = 16 << 20
    /// The access log is rotated (one old file kept) past this size.
    public var accessLogLimit = 16 << 20
    /// A connection that sends nothing for this long is closed (and one
    /// whose headers do not arrive in time). Longer than clients keep an
    /// idle connection (async-http-client: 60 s), so none sends on one
    /// just as it is closed.
    public var idleTimeout: Duration = .seconds(75)
    /// Largest request head (all header fields together).
    public var maxHeaderSize = 32 << 10
    /// `http://host:port` as clients reach this server: output and file URLs
    /// are made with it (never with a request's `Host`). nil: the bound address.
    public var publicURL: String?
    /// Predictions a page of `GET /v1/predictions`.
    public var pageSize = 100
    /// The longest a create with `Prefer: wait` is held for its prediction
    /// to end (seconds; Replicate's 60).
    public var maxWait = PreferWait.longest
    /// Creates held by `Prefer: wait` at once; one past it is answered at once.
    public var maxWaiters = 100
    /// Waits before each further try of a webhook that did not get through.
    public var webhookRetryDelays: [Duration] = [.seconds(1), .seconds(5), .seconds(30)]
    /// How often a running cog prediction's server is looked at (a cog server that died never says so).
    public var cogWatchInterval: Duration = .seconds(5)
    /// How long cog has to end a prediction after its cancel; then it is
    /// canceled here, and a cog server this one supervises is restarted.
    public var cogCancelTimeout: Duration = .seconds(30)
    /// The venv whose python runs the cog servers of `cog:DIR` models.
    public var cogPython = "/opt/flowdir-cog"
    /// How long a started cog server has to answer READY (its setup may load weights).
    public var cogStartTimeout: Duration = .seconds(300)

    public init(dir: String) { self.dir = dir }

    /// Listening on this machine only: loopback webhooks are then allowed.
    public var listensOnLoopbackOnly: Bool { Self.isLoopback(host) }

    public static func isLoopback(_ host: String) -> Bool {
        let h = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if h == "localhost" || h == "::1" { return true }
        if let v4 = NetAddress(h), case .v4(let a) = v4 { return a >> 24 == 127 }
        return false
    }
}

public enum JobServerError: Error, CustomStringConvertible {
    case badFaults(String)
    case badModel(String)
    case cannotStart(String)

    public var description: String {
        switch self {
        case .badFaults(let s): "--faults: \(s)"
        case .badModel(let s): "--model: \(s)"
        case .cannotStart(let s): s
        }
    }
}

/// `flowdir jobserver` (docs/jobserver.md): the part of Replicate's HTTP API
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

    /// Serves until SIGTERM or SIGINT (or the task is cancelled); `onStart`
    /// gets the bound port. Running predictions are stopped on the way out.
    public func run(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        do {
            try await application(onStart: onStart).runService()
        } catch {
            await core.shutdown()
            throw error
        }
        await core.shutdown()
    }

    /// The server as a service for a caller's ServiceGroup.
    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let core = self.core
        let c = config
        // Limits on what a connection may send before any route sees it
        // (docs/security.md): a head too large is refused by the parser, a
        // connection that goes quiet (a head or body trickled byte by byte,
        // or never sent) is closed.
        let http1 = HTTP1Channel.Configuration(
            idleTimeout: .nanoseconds(Int64(c.idleTimeout.components.seconds) * 1_000_000_000 + c.idleTimeout.components.attoseconds / 1_000_000_000),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: c.maxHeaderSize, maxHeaderListSize: c.maxHeaderSize, maxHeaderFieldCount: 100))
        return Application(router: Routes.router(core: core, token: config.token), server: .http1(configuration: http1),
                           configuration: .init(address: .hostname(config.host, port: config.port), serverName: nil),
                           onServerRunning: { channel in
                               let port = channel.localAddress?.port ?? 0
                               await core.started(port: port)
                               await onStart(port)
                           }, logger: logger)
    }

    /// Starts a server in this process and returns once it listens (tests;
    /// `config.port` 0 picks a free port). Stop it with `stop()`.
    public static func start(_ config: JobServerConfig, logger: Logger = Logger(label: "flowdir.jobserver")) async throws -> RunningJobServer {
        let server = try JobServer(config: config, logger: logger)
        let (ports, bound) = AsyncStream<Int>.makeStream()
        let group = ServiceGroup(configuration: .init(services: [server.application(onStart: { bound.yield($0) })],
                                                      gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { bound.finish() }
            do {
                try await group.run()
            } catch {
                await server.core.shutdown()
                throw error
            }
            await server.core.shutdown()
        }
        for await port in ports { return RunningJobServer(port: port, host: JobServerCore.reachable(config.host), group: group, task: task) }
        // It never listened: its error says why (a port in use).
        try await task.value
        throw JobServerError.cannotStart("the job server stopped before it listened")
    }
}

/// A job server running in this process (`JobServer.start`); it stops
/// when this goes away, if not before.
public final class RunningJobServer: Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT/v1`, the API's base as flowdir's endpoints name it.
    public let url: String
    let group: ServiceGroup
    let task: Task<Void, any Error>

    init(port: Int, host: String, group: ServiceGroup, task: Task<Void, any Error>) {
        self.port = port
        url = "http://\(host):\(port)/v1"
        self.group = group
        self.task = task
    }

    /// Stops it as SIGTERM stops `flowdir jobserver`: no new connections,
    /// the answers under way given, the predictions running here stopped.
    /// Returns when it is done.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    deinit { Task { [group] in await group.triggerGracefulShutdown() } }
}
