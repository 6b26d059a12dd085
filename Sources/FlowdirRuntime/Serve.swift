import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import Logging

/// The engine as a long-running service (DESIGN.md §8): the watcher says
/// which instances to look at; each is opened (its lock taken) while it
/// has something to do or a job running, and closed again when idle, so
/// commands and other watchers can take it. With nothing to wait for,
/// nothing wakes it: no periodic timer, only one for the next expiry.
extension Engine {
    /// Runs until `stop()`: then starts nothing more, lets running jobs
    /// finish for `grace` seconds, stops the rest (they run again on the
    /// next start), commits, and returns.
    public func serve(_ watcher: Watcher, reader: InstanceReader, grace: Double, logger: Logger) async throws {
        let initial = try watcher.scan()
        logger.info("watching", metadata: ["roots": .string(watcher.roots.joined(separator: ",")), "instances": .stringConvertible(initial.count)])
        let stream = watcher.events()
        let pump = Task { [weak self] in
            for await batch in stream {
                do {
                    let (touched, rescan) = try watcher.interpret(batch)
                    if rescan { logger.warning("inotify queue overflowed: looking at every instance again") }
                    if !touched.isEmpty { await self?.deliver(.touched(touched)) }
                } catch {
                    logger.error("\(error)")
                }
            }
        }
        defer {
            pump.cancel()
            watcher.stop()
        }
        var dirty = initial
        var busy: Set<String> = []
        var expiries: [String: Timestamp] = [:]
        var timer: Task<Void, Never>?
        var stopping = false
        defer { timer?.cancel() }
        while true {
            if !stopping, !dirty.isEmpty {
                for path in dirty.sorted() {
                    do {
                        if try !activate(path, reader: reader) { busy.insert(path) } else { busy.remove(path) }
                    } catch {
                        // One broken instance never stops the watcher.
                        logger.error("\(path): \(error)")
                    }
                }
                dirty = []
                do { try handleRequests(); try step() } catch { logger.error("\(error)") }
            }
            for (path, expiry) in closeIdle(logger) { expiries[path] = expiry }
            for path in instances.keys { expiries[path] = nil }
            if stopping, running.isEmpty { break }
            // One timer: the next question to expire, or a retry of an instance another flowdir held.
            timer?.cancel()
            let next = expiries.min { $0.value < $1.value }
            let wait: (Double, Set<String>)? = !busy.isEmpty ? (1, busy)
                : next.map { (max(0, $0.value - clock.now()), [$0.key]) }
            if let (seconds, paths) = wait, !stopping {
                timer = Task { [weak self] in
                    try? await Task.sleep(for: .milliseconds(Int(seconds * 1000) + 1))
                    guard !Task.isCancelled else { return }
                    await self?.deliver(.touched(paths))
                }
            }
            for event in await nextEvents() {
                do {
                    switch event {
                    case .finished(let key, let termination):
                        try finish(key, termination)
                        dirty.insert(key.instance)
                    case .progress(let key, let p):
                        try recordProgress(key, p)
                    case .touched(let paths):
                        dirty.formUnion(paths)
                        for p in paths where expiries[p].map({ $0 <= clock.now() }) ?? false { expiries[p] = nil }
                    case .tick:
                        break
                    case .stop:
                        guard !stopping else { break }
                        stopping = true
                        starting = false
                        logger.info("stopping", metadata: ["running": .stringConvertible(running.count)])
                        if !running.isEmpty {
                            Task { [weak self] in
                                try? await Task.sleep(for: .milliseconds(Int(grace * 1000)))
                                await self?.stopRunningJobs()
                            }
                        }
                    }
                } catch {
                    logger.error("\(error)")
                }
            }
            do { try flush() } catch { logger.error("\(error)") }
        }
        for rt in instances.values {
            try? rt.store.flushIndex()
            try? rt.open.close()
        }
        instances = [:]
        logger.info("stopped")
    }

    /// Asks `serve` to stop (SIGTERM, SIGINT).
    public func stop() {
        deliver(.stop)
    }

    /// Grace is over: what still runs is stopped, and runs again next time.
    func stopRunningJobs() {
        for (key, job) in running {
            running[key]?.cancelReason = Engine.shutdownReason
            job.cancel.cancel()
        }
    }

    static let shutdownReason = "flowdir stopped while it ran"

    /// Opens an instance (or, if open, commits a person's edits and takes
    /// them in). Returns `false` when another flowdir holds it.
    func activate(_ path: String, reader: InstanceReader) throws -> Bool {
        if let rt = instances[path] {
            try refresh(rt)
            return true
        }
        guard reader.isInstance(path) else { return true }  // deleted meanwhile
        let open: OpenInstance
        do {
            open = try OpenInstance.open(path, purpose: "flowdir watch", reader: reader, clock: clock, lockTimeout: 0)
        } catch is InstanceLock.Busy {
            return false
        }
        do {
            let rt = try InstanceRuntime(open: open, now: clock.now())
            instances[rt.path] = rt
            try recoverInterrupted(rt)
            try pruneDone(rt)
        } catch {
            try? open.close()
            throw error
        }
        return true
    }

    /// A person's edit to params while the instance is open (jobs running):
    /// committed as theirs, and gating sees the new params. An edit of the
    /// workflow or the title is taken when the instance is next opened.
    func refresh(_ rt: InstanceRuntime) throws {
        let edited = try OpenInstance.commitPersonEdits(rt.store)
        for rel in edited where rel.hasPrefix(InstancePaths.nodes + "/") && rel.hasSuffix("/params.yaml") {
            let id = String(rel.dropFirst(InstancePaths.nodes.count + 1).dropLast("/params.yaml".count))
            guard var f = rt.facts[id], let bytes = rt.store.read(rel),
                  case .success(let doc) = InstanceCodec.document(bytes, file: rel) else { continue }
            f.params = doc
            rt.facts[id] = f
            rt.touched?.insert(id)
        }
        if edited.contains(InstancePaths.workflowFile) || edited.contains(InstancePaths.instanceFile) { rt.reopen = true }
    }

    /// Closes every instance with nothing under way; returns when each
    /// next has a question expiring (for the timer).
    func closeIdle(_ logger: Logger) -> [String: Timestamp] {
        var next: [String: Timestamp] = [:]
        let busyPaths = Set(running.keys.map(\.instance)).union(launchQueue.map(\.0))
        for (path, rt) in instances where !busyPaths.contains(path) && rt.batch.isEmpty {
            if let e = rt.awaits.values.filter({ rt.state($0.node) == .awaitingUser }).compactMap(\.expiresAt).min() { next[path] = e }
            do {
                try rt.store.flushIndex()
                try rt.open.close()
            } catch {
                logger.error("\(path): \(error)")
            }
            instances[path] = nil
            if rt.reopen { deliver(.touched([path])) }
        }
        return next
    }
}
