#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTemplates
import ArgumentParser
import Logging

/// What every command needs: the user's paths and config, a reader of
/// instances, the terminal, and how to find an instance by name.
struct Context {
    var paths: UserPaths
    var config: FlowdirConfig
    var reader: InstanceReader
    var terminal: Terminal
    var clock: FlowdirClock

    static func load() throws -> Context {
        let paths = UserPaths.current
        let env = Environment()
        let named = env["FLOWDIR_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let file = configFile(paths)
        var config = FlowdirConfig()
        let fs = LocalFileSystem()
        if fs.isRegularFile(file) {
            let bytes = try fs.readFile(file, limit: 1 << 20)
            switch ConfigDecoder.decode(bytes, file: file, home: paths.home) {
            case .success(let c): config = c
            case .failure(let d): throw CommandError(DiagnosticRenderer().render(d), hint: "fix \(file), or point FLOWDIR_CONFIG elsewhere")
            }
        } else if let named, named != "/dev/null" {
            // `/dev/null`, as for git's GIT_CONFIG_GLOBAL: no config, every default.
            throw CommandError("FLOWDIR_CONFIG names \(file), " + (Files.exists(file) ? "which is not a regular file" : "which does not exist"),
                               hint: "point it at a config.yaml, or unset it to use \(paths.flowdirConfig)/config.yaml")
        }
        let reader = InstanceReader(fileSystem: fs, userToolDirectories: [paths.toolDirectory] + config.toolPaths)
        // FLOWDIR_NOW fixes the time (tests of expiry, snooze and claims).
        var clock = FlowdirClock.system
        if let now = env["FLOWDIR_NOW"], !now.isEmpty {
            guard let t = Timestamp(iso8601: now) else {
                throw CommandError("FLOWDIR_NOW is not an ISO 8601 time: '\(now)'", hint: "write it like 2026-11-22T10:00:00Z")
            }
            clock = clock.pinned(at: t)
        }
        return Context(paths: paths, config: config, reader: reader, terminal: .current, clock: clock)
    }

    /// `$FLOWDIR_CONFIG`, else `config.yaml` in the user's flowdir folder.
    static func configFile(_ paths: UserPaths) -> String {
        Environment()["FLOWDIR_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? paths.flowdirConfig + "/config.yaml"
    }

    /// Desktop notifications and the config's hooks; a failing hook is said on stderr.
    var notifier: HookNotifier {
        let state = stateHome
        return HookNotifier(hooks: config.hooks, timeout: config.hookTimeout, desktop: config.desktopNotifications,
                            logDirectory: state + "/flowdir/hooks", log: { Output.error("flowdir: warning: \($0)") })
    }

    func engineOptions(only: Set<String>? = nil, notifier: any Notifier = SilentNotifier(),
                       report: @escaping @Sendable (String) -> Void = { _ in },
                       warn: @escaping @Sendable (String) -> Void = { Output.error("flowdir: warning: \($0)") }) -> EngineOptions {
        var options = EngineOptions(onlyNodes: only, notifier: notifier, answerSizeLimit: config.answerSizeLimit, report: report)
        options.syncRemote = config.syncRemote
        options.bigFile = config.bigFile
        options.warn = warn
        options.machineCaps = machineCaps
        options.leaseDuration = config.leaseDuration
        return options
    }

    /// Jobs at once on this machine, over every instance: the config's, else 2 local and 8 remote.
    var machineCaps: QueueCaps { QueueCaps(local: config.localConcurrency ?? 2, remote: config.remoteConcurrency ?? 8) }

    /// `$FLOWDIR_SECRETS`, else `secrets.yaml` beside the config.
    var secretsFile: String {
        Environment()["FLOWDIR_SECRETS"].flatMap { $0.isEmpty ? nil : $0 } ?? paths.flowdirConfig + "/secrets.yaml"
    }

    /// Tokens and webhook secrets of the configured endpoints.
    func secrets() throws -> Secrets {
        let names = config.endpoints.keys.sorted()
        var env: [String: String] = [:]
        for name in names {
            let variable = EndpointConfig(name: name, url: "").tokenVariable
            for v in [variable, "FLOWDIR_WEBHOOK_SECRET_" + variable.dropFirst("FLOWDIR_TOKEN_".count)] { env[v] = Environment()[v] }
        }
        do {
            return try Secrets.load(path: secretsFile, environment: env, endpoints: names)
        } catch {
            throw CommandError(error.description, hint: error.hint)
        }
    }

    /// Who runs jobs: local processes, and each backend this machine has
    /// set up (`Backends.all`: a job API only with endpoints configured).
    /// - Parameter endpoints: the config's, unless given (the watcher asks
    ///   for webhooks only where it receives them).
    func executors(logger: Logger = Logger(label: "flowdir"), endpoints: [String: EndpointConfig]? = nil) throws -> ExecutorSet {
        var set = ExecutorSet([JobWork.commandKey: LocalExecutor()])
        let setup = BackendSetup(config: config, endpoints: endpoints, logger: logger, clock: clock, secrets: { try self.secrets() })
        for backend in Backends.all {
            if let executor = try backend.executor(setup) { set.set(backend.key, executor) }
        }
        return set
    }

    /// A template loader that finds tools as every command does.
    var loader: TemplateLoader {
        TemplateLoader(fileSystem: reader.fileSystem, userToolDirectories: reader.userToolDirectories)
    }

    /// `--root`, else the config's roots, else the current folder.
    func roots(_ explicit: String?) -> [String] {
        if let explicit { return [explicit] }
        return config.roots.isEmpty ? ["."] : config.roots
    }

    /// Every instance under the roots; a root inside an instance (its
    /// `inbox/`, a node's folder) stands for that instance.
    func instances(root: String?) -> [String] {
        var seen = Set<String>()
        return roots(root).flatMap { r -> [String] in
            let found = reader.instances(under: r)
            if found.isEmpty, let enclosing = reader.enclosingInstance(of: r) { return [enclosing] }
            return found
        }.filter { seen.insert(Files.realPath($0) ?? $0).inserted }
    }

    /// The instances this user's flowdir created, cloned or watched (see `InstanceRegistry`).
    var registry: InstanceRegistry { InstanceRegistry(stateHome: stateHome) }

    /// `$XDG_STATE_HOME`, else `~/.local/state`: where flowdir keeps what is
    /// this user's and not the instances' (the registry, hook logs, serve's files).
    var stateHome: String {
        Environment()["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? paths.home + "/.local/state"
    }

    /// The folder of the instance with this id: remembered (see `InstanceRegistry`), else found under the roots.
    func instance(id: String, root: String?) -> String? {
        if let known = registry.paths(for: id, reader: reader).first { return known }
        for path in instances(root: root) {
            if let r = try? reader.read(instanceRecordOnly: path), r.id == id {
                registry.remember(id: id, path: path)
                return path
            }
        }
        return nil
    }

    /// An instance named by path (its own folder or one inside it), id (or
    /// a unique prefix of it), title or folder name.
    func resolve(_ name: String, root: String?) throws -> String {
        if reader.isInstance(name) { return name }
        if Files.exists(name) {
            if let enclosing = reader.enclosingInstance(of: name) { return enclosing }
            if name.contains("/") || name == "." { throw InstanceError.notAnInstance(name) }
        }
        if let known = registry.paths(for: name, reader: reader).first { return known }
        let all = instances(root: root)
        var snapshots: [(String, InstanceRecord)] = []
        for path in all {
            if let s = try? reader.read(path) { snapshots.append((path, s.record)) }
        }
        let lowered = name.lowercased()
        let matchers: [((String, InstanceRecord)) -> Bool] = [
            { $0.1.id == name },
            { $0.1.title.lowercased() == lowered },
            { Path.basename($0.0) == name },
            { name.count >= 4 && $0.1.id.hasPrefix(lowered) },
        ]
        for match in matchers {
            let hits = snapshots.filter(match)
            if hits.count == 1 { return hits[0].0 }
            if hits.count > 1 { throw InstanceError.ambiguous(name, matches: hits.map(\.0)) }
        }
        let names = snapshots.map(\.1.title) + snapshots.map { Path.basename($0.0) }
        throw InstanceError.notFound(name, candidates: Suggest.closest(to: name, in: names).map { [$0] } ?? [])
    }
}

/// A failure the command layer reports: what went wrong and what to do.
struct CommandError: Error, CustomStringConvertible {
    var message: String
    var hint: String?
    var exitCode: Int32

    init(_ message: String, hint: String? = nil, exitCode: Int32 = 1) {
        self.message = message
        self.hint = hint
        self.exitCode = exitCode
    }

    var description: String { hint.map { "\(message)\nhint: \($0)" } ?? message }
}

/// A number of seconds given on the command line (`--grace`, `--wait`):
/// finite, not negative, at most 100 years — never a timer out of range.
enum SecondsOption {
    static func check(_ value: Double, _ option: String) throws {
        guard FlowDuration.checkedSeconds(value) != nil else {
            throw ValidationError("\(option) must be a number of seconds from 0 to \(Int(FlowDuration.maximumSeconds)) (100 years), not \(value)")
        }
    }
}
