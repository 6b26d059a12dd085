#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Synchronization

/// Tells people about events (docs/commands.md, "Config": hooks): a desktop notification
/// through `notify-send` when one can be shown, and the config's hook
/// commands with the event in their environment. Everything runs detached:
/// `notify` returns at once, and each command runs under `timeout(1)`, so
/// its time limit holds even if this flowdir exits first. A failing or
/// hanging hook is reported through `log`, never thrown.
public final class HookNotifier: Notifier, Sendable {
    public let hooks: [FlowEvent.Kind: [[String]]]
    public let timeout: Double
    public let desktop: Bool
    let log: @Sendable (String) -> Void
    let runner = LocalRunner()
    let logDirectory: String
    let clock: FlowdirClock
    /// The hooks still running, by a number counted up from 0.
    private let tasks = Mutex<(running: [Int: Task<Void, Never>], counter: Int)>(([:], 0))

    /// - Parameter logDirectory: where each hook's output goes; kept only when it fails.
    public init(hooks: [FlowEvent.Kind: [[String]]], timeout: Double, desktop: Bool, logDirectory: String,
                log: @escaping @Sendable (String) -> Void, clock: FlowdirClock = .system) {
        self.clock = clock
        self.hooks = hooks
        self.timeout = timeout
        self.desktop = desktop && Self.canShowDesktop()
        self.logDirectory = logDirectory
        self.log = log
    }

    public func notify(_ event: FlowEvent) {
        var commands = hooks[event.kind] ?? []
        if desktop {
            let urgency = event.kind == .failed ? "critical" : "normal"
            commands.insert(["notify-send", "--app-name=flowdir", "--urgency=\(urgency)",
                             "\(event.instanceTitle): \(event.title)",
                             (event.body ?? event.link ?? event.instance) + (event.url.map { "\n" + $0 } ?? "")], at: 0)
        }
        for argv in commands { start(argv, event) }
    }

    /// Waits for the hooks still running, at most `seconds` (at the end of
    /// `flowdir run`, so a quick hook is not cut off; a slow one goes on alone).
    public func drain(upTo seconds: Double) async {
        let deadline = clock.instant + .seconds(seconds)
        while clock.instant < deadline {
            let running = tasks.withLock { !$0.running.isEmpty }
            if !running { return }
            try? await clock.sleep(for: .milliseconds(20))
        }
    }

    func start(_ argv: [String], _ event: FlowEvent) {
        let id: Int = tasks.withLock { $0.counter += 1; return $0.counter }
        let limit = max(1, Int(timeout.rounded(.up)))
        let job = LocalJob(argv: ["timeout", "--kill-after=2", "\(limit)"] + argv, workingDirectory: event.instance,
                           environment: event.environment, logPath: "\(logDirectory)/hook-\(getpid())-\(id).log", grace: 2)
        let runner = self.runner, log = self.log, name = argv.first ?? "?"
        let task = Task.detached { [weak self] in
            try? Files.makeDirectories(Path.directory(of: job.logPath))
            let end = await runner.run(job, cancel: CancelToken())
            switch end {
            case .exited(0):
                try? Files.remove(job.logPath)
            case .exited(124), .exited(137):
                log("hook \(name) (\(event.kind.rawValue)) did not finish within \(limit)s and was stopped; its output: \(job.logPath)")
            case .exited(let code):
                log("hook \(name) (\(event.kind.rawValue)) exited with code \(code); its output: \(job.logPath)")
            case .signaled(let s):
                log("hook \(name) (\(event.kind.rawValue)) was killed by signal \(s); its output: \(job.logPath)")
            case .spawnFailed(let why):
                log("hook \(name) (\(event.kind.rawValue)) could not start: \(why)")
            }
            _ = self?.tasks.withLock { $0.running.removeValue(forKey: id) }
        }
        tasks.withLock { $0.running[id] = task }
    }

    /// A desktop session to show it in, and notify-send to show it with.
    static func canShowDesktop() -> Bool {
        let env = ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"]
        guard env.contains(where: { getenv($0).map { String(cString: $0).isEmpty == false } ?? false }) else { return false }
        return ExecutablePath.find("notify-send", from: "/") != nil
    }
}
