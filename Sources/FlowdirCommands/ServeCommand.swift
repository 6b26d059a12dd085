#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirPages
import Logging
import ServiceLifecycle

/// `flowdir serve [ROOT…]`: the browser UI (docs/serve.md).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the workflows list, tool cards, Action Center and editors as web pages.",
        discussion: """
            Prints the URL to open, with its token. Runs the watcher on the same roots too, \
            unless --no-watch (when `flowdir watch` already runs). Binds 127.0.0.1 unless --host \
            says otherwise; any other address needs --token-file. SIGTERM or SIGINT stop it.
            """
    )

    @Argument(help: "Folders whose instances to show (default: the config's roots, or the current folder).", completion: .directory)
    var roots: [String] = []

    @Option(help: "The port (0: any free one).")
    var port: Int = 8701

    @Option(help: "The address to bind: 127.0.0.1, or 0.0.0.0 for the LAN (with --token-file).")
    var host: String = "127.0.0.1"

    @Option(help: "A file holding the token (made, mode 600, if missing; refused if others can read it); else a new token each start.",
            completion: .file())
    var tokenFile: String?

    @Flag(help: "Serve the pages only, beside a watcher that already runs.")
    var noWatch = false

    @Option(help: "SIGTERM → seconds running jobs may take before they are stopped.")
    var grace: Double = 30

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    /// Checked with --no-watch too, where --grace is not used: an absurd
    /// option is an error, never taken silently (a port past 65535 was
    /// bound modulo 65536, elsewhere than asked).
    func validate() throws {
        try SecondsOption.check(grace, "--grace")
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is not a port: give 1-65535, or 0 for any free one") }
    }

    func run() async throws {
        let ctx = try Context.load()
        try WatchCommand.bootstrapLogging(level: logLevel, json: false)
        guard UIServer.isLoopback(host) || tokenFile != nil else {
            throw CommandError("refusing to serve \(host) (not a loopback address) with a token made up for this start",
                               hint: "give --token-file FILE, whose token you keep (it is made if missing), or serve 127.0.0.1", exitCode: 64)
        }
        let logger = Logger(label: "flowdir.serve")
        let absolute = try WatchCommand.absoluteRoots(roots.isEmpty ? ctx.roots(nil) : roots)
        let token: String
        do {
            token = try tokenFile.map(TokenFile.readOrCreate) ?? RandomID.token()
        } catch {
            throw CommandError(error.description, hint: error.hint, exitCode: 64)
        }
        let backend = ServeBackend(ctx: ctx, roots: absolute, watched: !noWatch)
        let server: UIServer
        do {
            server = try UIServer(config: .init(host: host, port: port, token: token, uploadLimit: Self.uploadLimit(ctx.config.answerSizeLimit)),
                                  backend: backend, thumbnails: ThumbnailCache(limit: ctx.config.thumbnails), logger: logger)
        } catch {
            throw CommandError("\(error)")
        }
        let shown = host == "0.0.0.0" || host == "::" ? Host.name : host
        // Known once the server listens (--port 0): then notifications carry its pages.
        let serving = Locked<ServeRegistration?>(nil)
        let snapshot = ctx
        let (bound, tokenPath, watching) = (host, tokenFile.map { Files.realPath($0) ?? $0 }, !noWatch)
        // Stopped last first: the watcher, then the feed (which ends the
        // pages' event streams), then the HTTP server, which waits for them.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: server.application { port in
                let r = ServeRegistration(url: "http://\(shown):\(port)", token: token)
                serving.locked { $0 = r }
                backend.server.locked { $0 = .init(url: r.url, host: bound, port: port, tokenFile: tokenPath, watching: watching) }
                r.write(snapshot)
                Output.line("flowdir serve: \(r.url)/?token=\(token)")
            }),
            .init(service: server.feed),
        ]
        var registration: WatchRegistration?
        if !noWatch {
            let notifier = PageLinkNotifier(wrapped: ctx.notifier, server: { serving.locked { $0 } }, reader: ctx.reader)
            let (watch, r) = try WatchCommand.services(ctx, roots: absolute, grace: grace, notifier: notifier,
                                                      logger: Logger(label: "flowdir.watch"))
            services += watch
            registration = r
        }
        defer {
            registration?.remove()
            ServeRegistration.remove(ctx)
        }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as WatchError {
            throw CommandError(error.description)
        } catch {
            throw CommandError("flowdir serve stopped: \(error)",
                               hint: "\(error)".contains("Address already in use") ? "port \(port) is taken: give another with --port" : nil)
        }
    }

    /// The largest answer body: a file of `answerSizeLimit` bytes as the
    /// pages send it (base64 in JSON, 4 bytes for 3) and a MiB for the rest.
    static func uploadLimit(_ answerSizeLimit: Int) -> Int {
        let (quarter, o1) = (max(0, answerSizeLimit) / 3 + 1).multipliedReportingOverflow(by: 4)
        let (limit, o2) = quarter.addingReportingOverflow(1 << 20)
        return o1 || o2 ? Int.max : limit
    }
}
