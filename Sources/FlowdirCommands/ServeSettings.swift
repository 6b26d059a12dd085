import FlowdirCore
import FlowdirIO
import FlowdirPages
import Logging

/// The Settings page's views (docs/serve.md, "Settings"): the config as
/// flowdir read it, with no token or secret in it; each endpoint asked
/// whether it answers; storage, by `flowdir storage`'s own code; pins.
extension ServeBackend {
    /// This server, once it listens: what Settings shows of it (never the token).
    struct ServerInfo: Encodable, Sendable {
        var url: String
        var host: String
        var port: Int
        /// Where the token is kept (`--token-file`); nil: made up for this start, printed once.
        var tokenFile: String?
        var watching: Bool
    }

    struct SettingsView: Encodable {
        struct Endpoint: Encodable {
            var name: String
            var url: String
            var pollInterval: Double
            var maxRequestsPerMinute: Int
            var webhook: String?
            /// Whether a token is set (in secrets.yaml or the environment), never the token.
            var token: Bool
            var tokenVariable: String
        }
        struct Hook: Encodable {
            var event: String
            var command: [String]
        }
        struct Polling: Encodable {
            var id: String
            var title: String
        }
        var configFile: String
        var configExists: Bool
        var secretsFile: String
        var roots: [String]
        var toolPaths: [String]
        var concurrency: [String: Int]
        var endpoints: [Endpoint]
        var backends: [String: [String: String]]
        var sync: [String: String]
        var hooks: [Hook]
        var hookTimeout: Double
        var desktopNotifications: Bool
        var answerSizeLimit: Int
        var bigFile: Int
        var thumbnails: Int
        /// Instances whose polling is paused (resumed here or on their page).
        var pollingPaused: [Polling]
        var server: ServerInfo?
    }

    func settings() async throws(UIError) -> [UInt8] {
        let config = ctx.config
        let secrets = try? ctx.secrets()
        // A hook's words as written, but a secret flowdir knows is never shown, nor a URL's password.
        let hidden = Set(secrets?.values ?? [])
        func shown(_ word: String) -> String { hidden.contains(word) ? "(secret)" : Self.withoutCredentials(word) }
        var paused: [SettingsView.Polling] = []
        for folder in instanceFolders() {
            if let record = (try? ctx.reader.read(instanceRecordOnly: folder)) ?? nil, record.polling == .paused {
                paused.append(.init(id: record.id, title: record.title))
            }
        }
        let view = SettingsView(
            configFile: Context.configFile(ctx.paths), configExists: LocalFileSystem().isRegularFile(Context.configFile(ctx.paths)),
            secretsFile: ctx.secretsFile, roots: rootFolders, toolPaths: config.toolPaths,
            concurrency: ["local": ctx.machineCaps.local, "remote": ctx.machineCaps.remote],
            endpoints: config.endpoints.values.sorted { $0.name < $1.name }.map { e in
                .init(name: e.name, url: Self.withoutCredentials(e.url), pollInterval: e.pollInterval, maxRequestsPerMinute: e.maxRequestsPerMinute,
                      webhook: e.webhook.map(Self.withoutCredentials), token: secrets?.token(for: e.name) != nil, tokenVariable: e.tokenVariable)
            },
            backends: config.backendSettings.mapValues { entries in
                Dictionary(entries.map { ($0.key, shown($0.value.plainText)) }, uniquingKeysWith: { a, _ in a })
            },
            sync: ["enabled": config.syncEnabled ? "yes" : "no", "remote": config.syncRemote,
                   "every": config.syncEvery.map(Self.duration) ?? "only when asked",
                   "lease": Self.duration(config.leaseDuration)],
            hooks: config.hooks.sorted { $0.key.rawValue < $1.key.rawValue }.flatMap { kind, commands in
                commands.map { SettingsView.Hook(event: kind.rawValue, command: $0.map(shown)) }
            },
            hookTimeout: config.hookTimeout, desktopNotifications: config.desktopNotifications,
            answerSizeLimit: config.answerSizeLimit, bigFile: config.bigFile, thumbnails: config.thumbnails,
            pollingPaused: paused.sorted { $0.title < $1.title }, server: server.locked { $0 })
        return try Self.encode(view)
    }

    struct EndpointCheck: Encodable {
        var name: String
        var reachable: Bool
        /// What it answered, in words: "answered (HTTP 200)", "refused the token (HTTP 401)", "offline: …".
        var answer: String
        var ms: Int
    }

    /// Each endpoint asked for its first page of predictions, as the
    /// watcher does on a restart, at most 5 s each, all at once.
    func endpointChecks() async throws(UIError) -> [UInt8] {
        let secrets = try? ctx.secrets()
        let clock = ctx.clock
        let checks: [EndpointCheck] = await withTaskGroup(of: EndpointCheck.self) { group in
            for var e in ctx.config.endpoints.values {
                e.requestTimeout = min(e.requestTimeout, 5)
                let client = JobAPIClient(endpoint: e, token: secrets?.token(for: e.name), clock: clock)
                group.addTask {
                    let start = clock.instant
                    var check = EndpointCheck(name: e.name, reachable: true, answer: "answered", ms: 0)
                    do {
                        _ = try await client.list(cursor: nil)
                    } catch let error as JobAPIError {
                        switch error {
                        case .http(let status, _, _) where status == 401 || status == 403:
                            check.answer = "answered, but refused the token (HTTP \(status)): set it in secrets.yaml or \(e.tokenVariable)"
                        case .http(let status, _, _), .notAPI(let status, _):
                            check.answer = "answered HTTP \(status)"
                        default:
                            check.reachable = false
                            check.answer = "\(error)"
                        }
                    } catch {
                        check.reachable = false
                        check.answer = "\(error)"
                    }
                    check.ms = Int(((clock.instant - start).seconds * 1000).rounded())
                    return check
                }
            }
            var all: [EndpointCheck] = []
            for await c in group { all.append(c) }
            return all.sorted { $0.name < $1.name }
        }
        return try Self.encode(["endpoints": checks])
    }

    /// `flowdir storage usage`'s row, and what the page needs beside it, in one object.
    struct StorageRow: Encodable {
        var id: String
        var title: String
        var usage: StorageUsage.Row
        /// What is pinned: "" for the whole instance, else node ids.
        var pins: [String]
        var nodes: [String]
        var problem: String?

        enum Keys: String, CodingKey { case id, title, pins, nodes, problem }

        func encode(to encoder: any Encoder) throws {
            try usage.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(id, forKey: .id)
            try c.encode(title, forKey: .title)
            try c.encode(pins, forKey: .pins)
            try c.encode(nodes, forKey: .nodes)
            try c.encodeIfPresent(problem, forKey: .problem)
        }

        var onThisMachine: Int64 { usage.gitBytes + usage.contentHere }
    }

    func storage() async throws(UIError) -> [UInt8] {
        var rows: [StorageRow] = []
        for folder in instanceFolders() {
            guard let record = (try? ctx.reader.read(instanceRecordOnly: folder)) ?? nil else { continue }
            let nodes = (try? LocalFileSystem().listDirectory(Path.join(folder, InstancePaths.nodes)))?.filter { !$0.hasPrefix(".") }.sorted() ?? []
            var row = StorageRow(id: record.id, title: record.title, usage: .init(instance: folder), pins: InstanceContent.pins(folder).sorted(), nodes: nodes)
            do { row.usage = try StorageUsage.row(folder, ctx: ctx) } catch { row.problem = "\(error)" }
            rows.append(row)
        }
        rows.sort { $0.onThisMachine > $1.onThisMachine }
        return try Self.encode(StorageView(rows: rows, total: rows.reduce(0) { $0 + $1.onThisMachine }, remote: ctx.config.syncRemote))
    }

    struct StorageView: Encodable {
        var rows: [StorageRow]
        var total: Int64
        var remote: String
    }

    /// `flowdir storage free` with its defaults (each node's newest run
    /// kept, only what the remote holds, asked now) over every instance.
    func freeSpace(dryRun: Bool) async throws(UIError) -> [UInt8] {
        do {
            var report = try await StorageFree.free(instanceFolders(), remote: ctx.config.syncRemote, options: .init(), dryRun: dryRun,
                                                    verify: false, now: ctx.clock.now().seconds)
            report.problems = report.problems.map(Self.withoutCredentials)
            return try Self.encode(report)
        } catch let e as UIError {
            throw e
        } catch {
            throw ServeErrors.ui(error, status: 500, logger: logger)
        }
    }

    /// `flowdir storage pin`/`unpin`: a pin fetches what is not here, when the remote can be reached.
    func pin(_ pinned: Bool, path: String, node: String?) async throws -> UIDone {
        let what = node.map { "'\($0)'" } ?? "this workflow"
        try InstanceContent.setPinned(node, pinned, in: path)
        guard pinned else { return UIDone("Unpinned \(what): storage free may drop its files again once the remote holds them.") }
        do {
            let r = try await StorageGet.get(path, node: node, all: false, remote: ctx.config.syncRemote, now: ctx.clock.now().seconds)
            return UIDone("Pinned \(what): kept on this machine\(r.fetched > 0 ? " (\(r.fetched) fetched)" : "").")
        } catch {
            return UIDone("Pinned \(what); what is not here could not be fetched now (\(Self.withoutCredentials("\(error)"))): `flowdir storage get` fetches it later.")
        }
    }

    /// `90s`, `10m`, `2h`, `1d`: as the config writes it.
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60)] where s >= n && s % n == 0 { return "\(s / n)\(unit)" }
        return "\(ParamValue.plainNumber(seconds))s"
    }

    /// A URL without the `user:password@` part; any other text as it is.
    static func withoutCredentials(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        let rest = text[scheme.upperBound...]
        let hostEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<hostEnd].lastIndex(of: "@") else { return text }
        return String(text[..<scheme.upperBound]) + "…@" + String(rest[rest.index(after: at)...])
    }
}
