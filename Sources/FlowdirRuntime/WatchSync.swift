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
                // What a held group has is committed first: the merge builds on HEAD.
                if !rt.batch.isEmpty { try commitBatch(rt) }
                let merged = try merge(rt.open)
                if merged.incoming > 0 { rt.reopen = true }
                return merged
            }
            // Not open here: only if no other flowdir has it (else next time).
            let open = try OpenInstance.open(path, purpose: "sync", reader: reader, clock: clock, lockTimeout: 0.5)
            defer { try? open.close() }
            return try merge(open)
        }
        // Pushed: the lease is what HEAD says now (read only when taking it).
        if syncer.takeLease, let rt = instances[path] { rt.lease = report.lease }
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
    var clock: FlowdirClock { syncer.clock }

    public init(engine: Engine, syncer: Syncer, every: Double, reader: InstanceReader, logger: Logger,
                instances: @escaping @Sendable () -> [String]) {
        self.engine = engine
        self.syncer = syncer
        self.every = every
        self.instances = instances
        self.reader = reader
        self.logger = logger
    }

    /// After a commit here, how long an instance must be quiet before it is synced.
    static let quiet: Double = 5

    public func run() async throws {
        var synced: [String: ObjectID] = [:]
        var timerDue = clock.instant
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let onTimer = clock.instant >= timerDue
            if onTimer { timerDue = clock.instant + .milliseconds(Int(every * 1000)) }
            for path in instances() where !Task.isShuttingDownGracefully {
                guard let repo = try? GitRepository.open(path), repo.hasRemote(syncer.remote) else { continue }
                // On the timer, or once what was committed here has been quiet a while.
                let head = try? repo.head()
                let quietNow = head.map { Double(clock.now().seconds) - Double($0.committer.time) >= Self.quiet } ?? false
                guard onTimer || (head?.id != synced[path] && quietNow) else { continue }
                // The lease is taken for an instance with work to do (or renewed while it has jobs here).
                var syncer = self.syncer
                syncer.takeLease = (try? reader.read(path)).map { $0.summary.status.isActive } ?? false
                do {
                    let r = try await engine.sync(path, with: syncer, reader: reader)
                    synced[path] = (try? GitRepository.open(path))?.headID()
                    if r.incoming > 0 || r.outgoing > 0 {
                        logger.info("synced", metadata: ["instance": .string(path), "in": .stringConvertible(r.incoming),
                                                         "out": .stringConvertible(r.outgoing), "merged": .stringConvertible(r.merged)])
                    }
                    for note in r.notes { logger.notice("\(note)", metadata: ["instance": .string(path)]) }
                } catch {
                    // One instance that cannot sync never stops the others, nor the watcher.
                    synced[path] = head?.id  // tried: again on the timer, or after the next commit
                    logger.warning("sync failed", metadata: ["instance": .string(path), "error": .string("\(error)")])
                }
            }
            try? await gracefulShutdownOrSleep(min(every, Self.quiet))
        }
    }

    func gracefulShutdownOrSleep(_ seconds: Double) async throws {
        try await cancelWhenGracefulShutdown { try await clock.sleep(for: .milliseconds(Int(seconds * 1000))) }
    }
}
