import FlowdirCore
import FlowdirIO
import Logging
import ServiceLifecycle

/// `flowdir watch` as a service of a ServiceGroup: SIGTERM or SIGINT
/// start a graceful shutdown (nothing new starts, running jobs get the
/// grace period, the rest is stopped and committed), then it returns.
public struct WatchService: Service {
    let engine: Engine
    let watcher: Watcher
    let reader: InstanceReader
    let grace: Double
    let logger: Logger

    public init(engine: Engine, watcher: Watcher, reader: InstanceReader, grace: Double, logger: Logger) {
        self.engine = engine
        self.watcher = watcher
        self.reader = reader
        self.grace = grace
        self.logger = logger
    }

    public func run() async throws {
        let engine = self.engine
        try await withGracefulShutdownHandler {
            try await engine.serve(watcher, reader: reader, grace: grace, logger: logger)
        } onGracefulShutdown: {
            Task { await engine.stop() }
        }
    }
}

/// Marks a root as watched, for `flowdir status`: a file per watcher in
/// `<root>/.flowdir-watchers/`, removed when it stops (a stale one, left by
/// a kill -9, is recognised by its process being gone).
public struct WatchRegistration {
    public let files: [String]

    public init(roots: [String], startedAt: Timestamp) {
        var files: [String] = []
        for root in roots {
            let file = Path.join(root, ".flowdir-watchers/\(Host.pid)@\(Host.name)")
            if (try? Files.writeAtomically(file, "pid: \(Host.pid)\nhost: \(Host.name)\nsince: \(startedAt.iso8601)\n")) != nil {
                files.append(file)
            }
        }
        self.files = files
    }

    public func remove() {
        for f in files { try? Files.remove(f) }
    }

    /// The live watchers of a root: "pid 123 since …".
    public static func watchers(of root: String) -> [String] {
        let dir = Path.join(root, ".flowdir-watchers")
        return ((try? LocalFileSystem().listDirectory(dir)) ?? []).sorted().compactMap { name in
            let parts = name.split(separator: "@", maxSplits: 1)
            guard parts.count == 2, let pid = Int32(parts[0]) else { return nil }
            let here = String(parts[1]) == Host.name
            if here, !ProcessTable.isAlive(pid) { return nil }
            let since = (try? LocalFileSystem().readFile(Path.join(dir, name), limit: 4096)).map { String(decoding: $0, as: UTF8.self) }?
                .split(separator: "\n").first { $0.hasPrefix("since: ") }.map { String($0.dropFirst(7)) }
            return "pid \(pid) on \(parts[1])" + (since.map { " since \($0)" } ?? "")
        }
    }
}
