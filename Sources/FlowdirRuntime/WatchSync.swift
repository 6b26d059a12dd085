import FlowdirCore
import FlowdirIO
import Logging
import ServiceLifecycle

extension Engine {
    /// Syncs one instance for the watcher: fetch and push run while the
    /// engine goes on; the merge is made under the instance's lock — through
    /// the engine's own open instance when it has it open, which then reads
    /// what came in once it is idle.
    public func sync(_ path: String, with syncer: Syncer, reader: InstanceReader) async throws -> SyncReport {
        let clock = self.clock
        let report = try await syncer.sync(path) { merge in
            if let rt = instances[path] {
                let merged = try merge(rt.open)
                if merged.incoming > 0 { rt.reopen = true }
                return merged
            }
            // Not open here: only if no other flowdir has it (else next time).
            let open = try OpenInstance.open(path, purpose: "sync", reader: reader, clock: clock, lockTimeout: 0.5)
            defer { try? open.close() }
            return try merge(open)
        }
        // Pushed: the lease is what HEAD says now.
        if let rt = instances[path], report.lease != rt.lease, rt.store.repository.headID() != nil { rt.lease = report.lease }
        if report.incoming > 0 || report.leaseTaken { deliver(.touched(WatchNews(touched: [path], edited: [path]))) }
        return report
    }
}

/// The watcher's sync (`sync: { every: 5m }`): every instance under the
/// roots that has the remote, in turn, on that timer.
public struct SyncService: Service {
    let engine: Engine
    let syncer: Syncer
    let every: Double
    let instances: @Sendable () -> [String]
    let reader: InstanceReader
    let logger: Logger

    public init(engine: Engine, syncer: Syncer, every: Double, reader: InstanceReader, logger: Logger,
                instances: @escaping @Sendable () -> [String]) {
        self.engine = engine
        self.syncer = syncer
        self.every = every
        self.instances = instances
        self.reader = reader
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            for path in instances() where !Task.isShuttingDownGracefully {
                guard (try? GitRepository.open(path))?.configString("remote.\(syncer.remote).url") != nil else { continue }
                // The lease is taken for an instance with work to do (or renewed while it has jobs here).
                var syncer = self.syncer
                syncer.takeLease = (try? reader.read(path)).map { $0.summary.status.isActive } ?? false
                do {
                    let r = try await engine.sync(path, with: syncer, reader: reader)
                    if r.incoming > 0 || r.outgoing > 0 {
                        logger.info("synced", metadata: ["instance": .string(path), "in": .stringConvertible(r.incoming),
                                                         "out": .stringConvertible(r.outgoing), "merged": .stringConvertible(r.merged)])
                    }
                    for note in r.notes { logger.notice("\(note)", metadata: ["instance": .string(path)]) }
                } catch {
                    // One instance that cannot sync never stops the others, nor the watcher.
                    logger.warning("sync failed", metadata: ["instance": .string(path), "error": .string("\(error)")])
                }
            }
            try? await gracefulShutdownOrSleep(every)
        }
    }

    func gracefulShutdownOrSleep(_ seconds: Double) async throws {
        try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }
    }
}
