#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirPages
import FoundationEssentials
import Logging
import ServiceLifecycle

/// `flowdir watch [ROOT…]`: the long-running process (docs/commands.md, "The watcher").
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Watch the roots and advance every instance under them as files appear (inotify).",
        discussion: """
            New instances (created, cloned, synced) are picked up; answers dropped into an inbox, \
            edited params and requests from other commands are taken as they land. SIGTERM or \
            SIGINT stop it cleanly: nothing new starts, running jobs get --grace seconds, the rest \
            is stopped and runs again on the next start. Logs go to stderr.
            """
    )

    @Argument(help: "Folders to watch (default: the config's roots, or the current folder).", completion: .directory)
    var roots: [String] = []

    @Option(help: "SIGTERM → seconds running jobs may take before they are stopped.")
    var grace: Double = 30

    func validate() throws { try SecondsOption.check(grace, "--grace") }

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Flag(help: "Log one JSON object per line.")
    var jsonLogs = false

    func run() async throws {
        let ctx = try Context.load()
        try Self.bootstrapLogging(level: logLevel, json: jsonLogs)
        let logger = Logger(label: "flowdir.watch")
        let absolute = try Self.absoluteRoots(roots.isEmpty ? ctx.roots(nil) : roots)
        // Notifications link to the pages of a `flowdir serve` running beside.
        let served = ServeRegistration.file(ctx)
        let notifier = PageLinkNotifier(wrapped: ctx.notifier, server: { ServeRegistration.current(file: served) }, reader: ctx.reader)
        let (services, registration) = try Self.services(ctx, roots: absolute, grace: grace, notifier: notifier, logger: logger)
        defer { registration.remove() }
        let group = ServiceGroup(configuration: .init(services: services,
                                                      gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as WatchError {
            throw CommandError(error.description)
        }
    }
}

extension WatchCommand {
    /// Logs to stderr at `--log-level` (`watch` and `serve`).
    static func bootstrapLogging(level name: String, json: Bool) throws {
        guard let level = Logger.Level(rawValue: name) else {
            throw CommandError("--log-level '\(name)' is not a level", hint: "use trace, debug, info, notice, warning, error or critical")
        }
        LoggingSystem.bootstrap { label in
            var h: any LogHandler = json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
    }

    /// The roots as real folders, or an error naming the one that is not.
    static func absoluteRoots(_ given: [String]) throws -> [String] {
        var absolute: [String] = []
        for root in given {
            guard let real = Files.realPath(root), LocalFileSystem().isDirectory(real) else {
                throw CommandError("\(root) is not a folder", hint: "create it, or give another root")
            }
            absolute.append(real)
        }
        return absolute
    }

    /// The watcher's services (the engine's, the webhook receiver, sync)
    /// on these roots, and its registration (`flowdir status`), which the
    /// caller removes when they stop.
    static func services(_ ctx: Context, roots absolute: [String], grace: Double, notifier: any Notifier, logger: Logger) throws
        -> ([ServiceGroupConfiguration.ServiceConfiguration], WatchRegistration)
    {
        // `serve --grace` comes this way too: never a timer out of range.
        guard FlowDuration.checkedSeconds(grace) != nil else {
            throw CommandError("--grace must be a number of seconds from 0 to \(Int(FlowDuration.maximumSeconds)) (100 years), not \(grace)")
        }
        let watcher: Watcher
        do { watcher = try Watcher(roots: absolute, reader: ctx.reader, registry: ctx.registry, clock: ctx.clock) } catch { throw CommandError("\(error)") }
        let report: @Sendable (String) -> Void = { logger.debug("commit", metadata: ["summary": .string($0)]) }
        // Webhooks are asked for only where a receiver listens for them.
        let (plan, notes) = try webhookPlan(ctx)
        for note in notes { logger.warning("\(note)") }
        var endpoints = ctx.config.endpoints
        for (name, e) in endpoints where e.webhook != nil && !(plan?.routes.values.contains(name) ?? false) { endpoints[name]?.webhook = nil }
        let executors = try ctx.executors(logger: Logger(label: "flowdir.http"), endpoints: endpoints)
        // Where a backend's calls (webhooks) go; polling stays the fallback.
        let taker = Backends.all.filter(\.traits.takesWebhooks).lazy.compactMap { executors.executor(forKey: $0.key) as? any WebhookTaking }.first
        let engine = Engine(clock: ctx.clock, options: ctx.engineOptions(notifier: notifier, report: report,
                                                                         warn: { logger.warning("\($0)") }),
                            executors: executors)
        let service = WatchService(engine: engine, watcher: watcher, reader: ctx.reader, grace: grace, logger: logger)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: service)]
        if let taker, let plan { services.append(.init(service: try webhookReceiver(ctx, plan, taker, logger: logger))) }
        if ctx.config.syncEnabled {
            let every = ctx.config.syncEvery ?? 86_400 * 365
            let reader = ctx.reader
            let watched = absolute
            let list: @Sendable () -> [String] = { watched.flatMap { reader.instances(under: $0) } }
            services.append(.init(service: SyncService(engine: engine, syncer: Syncer(remote: ctx.config.syncRemote, clock: ctx.clock),
                                                       every: every, reader: ctx.reader, logger: Logger(label: "flowdir.sync"), instances: list)))
        }
        return (services, WatchRegistration(roots: absolute, startedAt: ctx.clock.now()))
    }

    /// Where this machine receives which endpoints' webhooks (see `WebhookPlan`).
    static func webhookPlan(_ ctx: Context) throws -> (WebhookPlan?, [String]) {
        let hooked = ctx.config.endpoints.values.filter { $0.webhook != nil }
        guard !hooked.isEmpty else { return (nil, []) }
        let secrets = try ctx.secrets()
        return WebhookPlan.make(endpoints: Array(hooked), hasSecret: { secrets.webhookSecret(for: $0) != nil },
                                listen: ctx.config.webhookListen, local: LocalAddresses.matching)
    }

    /// The receiver for the planned endpoints: one address and port for
    /// all, each endpoint on its exact path.
    static func webhookReceiver(_ ctx: Context, _ plan: WebhookPlan, _ http: any WebhookTaking, logger: Logger) throws -> any Service {
        let secrets = try ctx.secrets()
        var routes: [String: (endpoint: String, secret: String)] = [:]
        for (path, name) in plan.routes {
            guard let secret = secrets.webhookSecret(for: name) else { continue }
            routes[path] = (name, secret)
        }
        let receiver = WebhookReceiver(host: plan.host, port: plan.port, routes: routes, logger: logger) { endpoint, p in
            await http.received(p, endpoint: endpoint)
        }
        logger.info("receiving webhooks", metadata: ["address": .string(plan.host), "port": .stringConvertible(plan.port),
                                                     "paths": .string(plan.routes.keys.sorted().joined(separator: " "))])
        return NonFatal(service: receiver.application(), logger: logger)
    }

    /// A service whose failure (its port taken, say) is logged, not fatal:
    /// without webhooks the watcher polls, as it does anyway.
    struct NonFatal<Wrapped: Service>: Service {
        let service: Wrapped
        let logger: Logger

        func run() async throws {
            do {
                try await service.run()
            } catch {
                logger.error("the webhook receiver stopped: \(error); webhooks are not received, jobs' ends are found by polling")
                try? await gracefulShutdown()
            }
        }
    }
}

/// One JSON object per line on stderr: time, level, label, message, metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let now = SystemClock().now()
        var object: [String: String] = ["time": now.iso8601, "t": String(now.seconds), "level": event.level.rawValue,
                                        "label": label, "message": "\(event.message)"]
        for (k, v) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) { object[k] = "\(v)" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(object) else { return }
        Output.write(Array(data) + Array("\n".utf8), to: 2)
    }
}
