import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import Logging

// The engine as a long-running service (docs/engine.md, "run and watch"),
// the watcher's policy of the one loop (Loop.swift): the watcher says
// which instances to look at; each is opened (its lock taken) while it
// has something to do or a job running, and closed again when idle, so
// commands and other watchers can take it. With nothing to wait for,
// nothing wakes it: no periodic timer, only one for the next expiry.

/// What `flowdir watch` gives the loop: the watcher, and how long an idle
/// instance stays open.
struct WatchSource {
    let watcher: Watcher
    let reader: InstanceReader
    /// An idle instance stays open (its lock held) this long after its last
    /// event, so a burst of events does not reopen it each time; less than
    /// the 2 s a command waits for a lock.
    let linger: Double
    let logger: Logger
}

/// The watcher's part of the loop: its news, and when to look again.
final class WatchLoop {
    let source: WatchSource
    private let pump: Task<Void, Never>
    let found: Int
    let started: Timestamp
    /// Instances to look at, and what the watcher saw in them.
    var news: WatchNews
    /// Instances another flowdir held when last looked at: tried again in 1 s.
    var busy: Set<String> = []
    /// Closed instances' next question to expire.
    var expiries: [String: Timestamp] = [:]
    /// When to look at an instance again: its inbox holds a file not yet
    /// quiet (see `InboxLook.recheck`), open or not, or it could not be taken up (`openFailures`).
    var rechecks: [String: Moment] = [:]
    var gitHolds = GitHolds()
    /// After a commit failed: when to try it again, backing off (see `CommitRetry`).
    var commitRetry = CommitRetry()
    /// Instances that could not be taken up (opened, or a person's edit
    /// committed): how often in a row, and what was said.
    var openFailures: [String: (tries: Int, said: String)] = [:]
    /// The one timer: the soonest of all the above.
    var timer: Task<Void, Never>?
    var ready = false

    init(_ source: WatchSource, found: Set<String>, started: Timestamp, pump: Task<Void, Never>) {
        self.source = source
        self.found = found.count
        self.started = started
        self.news = WatchNews(touched: found, edited: found)
        self.pump = pump
    }

    func saw(_ more: WatchNews, now: Moment, nowStamp: Timestamp) {
        gitHolds.saw(more.gitActive, now: now)
        news.merge(more)
        for p in more.touched where expiries[p].map({ $0 <= nowStamp }) ?? false { expiries[p] = nil }
    }

    func stop() {
        pump.cancel()
        timer?.cancel()
        source.watcher.stop()
    }
}

extension Engine {
    /// Runs until `stop()`: then starts nothing more, lets running jobs
    /// finish for `grace` seconds, stops the rest (they run again on the
    /// next start), commits, and returns (see Loop.swift).
    ///
    /// - Parameter linger: see `WatchSource.linger`.
    public func serve(_ watcher: Watcher, reader: InstanceReader, grace: Double, linger: Double = 1.5, logger: Logger) async throws {
        let source = WatchSource(watcher: watcher, reader: reader, linger: linger, logger: logger)
        try await loop(.watch(source, grace: grace))
        logger.info("stopped")
    }

    /// Scans the roots and starts taking the watcher's events.
    func startWatching(_ source: WatchSource) throws -> WatchLoop {
        let watcher = source.watcher, logger = source.logger
        let found = try watcher.scan()
        logger.info("watching", metadata: ["roots": .string(watcher.roots.joined(separator: ",")), "instances": .stringConvertible(found.count)])
        let stream = watcher.events()
        let pump = Task { [weak self] in
            for await batch in stream {
                do {
                    let news = try watcher.interpret(batch)
                    if news.rescan { logger.warning("inotify queue overflowed: looking at every instance again") }
                    if !news.touched.isEmpty { self?.deliver(.touched(news)) }
                } catch {
                    logger.error("\(error)")
                }
            }
        }
        return WatchLoop(source, found: found, started: clock.now(), pump: pump)
    }

    /// Opens (or takes in what changed in) every instance the watcher named,
    /// unless a person's git command is at work in it or another flowdir holds it.
    func lookAtNews(_ w: WatchLoop) {
        var news = w.news
        w.news = WatchNews()
        for path in news.touched.sorted() {
            w.rechecks[path] = nil  // set again below if it is open and still has a file to wait for
            let rt = instances[path]
            if w.gitHolds.hold(path, &news, now: clock.instant, logger: w.source.logger) {
                rt?.heldForGit = true
                continue
            }
            if let rt, rt.heldForGit {
                rt.heldForGit = false
                if rt.store.headMovedByOthers { rt.reopen = true }  // what git brought is read once idle
            }
            do {
                if try !activate(path, reader: w.source.reader, edited: news.edited.contains(path), completed: news.completed[path] ?? []) {
                    w.busy.insert(path)
                } else {
                    w.busy.remove(path)
                }
                if w.openFailures.removeValue(forKey: path) != nil { w.source.logger.notice("\(path): taken up again") }
            } catch {
                // One broken instance never stops the watcher. What failed (a
                // full disk, a lock, a file in the way) may pass with no event
                // to say so: it is looked at again, backing off, and said once.
                let message = "\(error)"
                let (tries, said) = w.openFailures[path] ?? (0, "")
                if message != said { w.source.logger.error("\(path): \(message)") }
                w.openFailures[path] = (tries + 1, message)
                w.rechecks[path] = clock.instant + CommitRetry.delay(afterFailures: tries + 1)
            }
        }
    }

    /// Closes what is idle (at once when stopping), and notes when each next has a question expiring.
    func closeIdle(_ w: WatchLoop) {
        for rt in instances.values where !rt.heldForGit { w.rechecks[rt.path] = rt.inboxLook.recheck }
        for (path, expiry) in closeIdle(w.source.logger, lingering: stopping ? 0 : w.source.linger) { w.expiries[path] = expiry }
        for path in instances.keys { w.expiries[path] = nil }
        if !w.ready {
            w.ready = true
            w.source.logger.info("ready", metadata: ["instances": .stringConvertible(w.found),
                                                     "ms": .stringConvertible(Int((clock.now() - w.started) * 1000))])
        }
    }

    /// Sets the one timer: the next question to expire, a retry of an
    /// instance another flowdir held, an inbox file to look at again, a git
    /// hold ending, an input fetch or a failed commit to try again, a
    /// lingering instance to close. With nothing to wait for, nothing wakes it.
    func armTimer(_ w: WatchLoop) {
        w.timer?.cancel()
        let next = w.expiries.min { $0.value < $1.value }
        var wait: (Double, Set<String>)? = !w.busy.isEmpty ? (1, w.busy)
            : next.map { (max(0, $0.value - clock.now()), [$0.key]) }
        let looks = w.rechecks.merging(w.gitHolds.until, uniquingKeysWith: min)
        if let soonest = looks.values.min() {
            let seconds = Self.secondsUntil(soonest, now: clock.instant)
            if seconds < (wait?.0 ?? .infinity) {
                wait = (seconds, Set(looks.filter { $0.value <= soonest + .milliseconds(50) }.keys))
            }
        }
        // A node blocked until its input's content can be fetched: its next try.
        if let retry = nextFetchRetry() {
            let seconds = max(0, retry.at - clock.now())
            if seconds < (wait?.0 ?? .infinity) { wait = (seconds, retry.paths) }
        }
        retryFailedWrites(&w.commitRetry, w.source.logger)
        if let seconds = w.commitRetry.secondsUntilDue(now: clock.instant), seconds < (wait?.0 ?? .infinity) { wait = (seconds, []) }
        // Instances kept open for a moment after their last event are closed when it passes.
        if let close = lingerDeadline(w.source.linger), close < (wait?.0 ?? .infinity) { wait = (close, []) }
        if let (seconds, paths) = wait, !stopping {
            let clock = self.clock
            w.timer = Task { [weak self] in
                try? await clock.sleep(for: .milliseconds(Int(seconds * 1000) + 1))
                guard !Task.isCancelled else { return }
                self?.deliver(.touched(WatchNews(touched: paths)))
            }
        }
    }

    /// The loop has ended: every instance closed.
    func closeAll() {
        for rt in instances.values {
            try? rt.store.flushIndex()
            try? rt.open.close()
        }
        instances = [:]
    }

    /// Opens an instance (or, if open, commits a person's edits and takes
    /// them in). Returns `false` when another flowdir holds it.
    func activate(_ path: String, reader: InstanceReader, edited: Bool, completed: Set<String>) throws -> Bool {
        if let rt = instances[path] {
            rt.lastActive = clock.instant
            rt.inboxLook.completed.formUnion(completed)
            if edited { try refresh(rt) }
            return true
        }
        guard reader.isInstance(path) else { parked[path] = nil; return true }  // deleted meanwhile
        if let rt = parked.removeValue(forKey: path) {
            do {
                if try rt.store.reopen(purpose: "flowdir watch", lockTimeout: 0) {
                    instances[path] = rt
                    try pruneDone(rt)
                    return try activate(path, reader: reader, edited: edited, completed: completed)  // as an open one
                }
                try rt.open.close()  // it changed meanwhile: read afresh
            } catch is InstanceLock.Busy {
                return false
            }
        }
        let open: OpenInstance
        do {
            open = try OpenInstance.open(path, purpose: "flowdir watch", reader: reader.withLastRuns, clock: clock, lockTimeout: 0)
        } catch is InstanceLock.Busy {
            return false
        }
        try adopt(open).lastActive = clock.instant
        return true
    }

    /// A person's edit to params while the instance is open (jobs running):
    /// committed as theirs, and gating sees the new params. An edit of the
    /// workflow or the title is taken when the instance is next opened.
    func refresh(_ rt: InstanceRuntime) throws {
        let edited = try OpenInstance.commitPersonEdits(rt.store)
        // A node's folder or files removed by hand (`rm -rf nodes/x`) while it is open: they come back.
        if rt.graph.order.contains(where: { id in
            !Files.exists(Path.join(rt.path, InstancePaths.state(id)))
                || rt.facts[id]?.state.state == .succeeded && !Files.exists(Path.join(rt.path, InstancePaths.outputs(id)))
        }), let head = try OpenInstance.HeadFiles(rt.store) {
            let files = try OpenInstance.putBack(rt.store, head: head, read: nil)
            if !files.isEmpty { warnPutBack(rt.path, files) }
        }
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
    func closeIdle(_ logger: Logger, lingering: Double) -> [String: Timestamp] {
        var next: [String: Timestamp] = [:]
        let busyPaths = Set(running.keys.map(\.instance)).union(launchQueue.map(\.0)).union(fetching.keys.map(\.instance))
        let now = clock.instant
        for (path, rt) in instances where Self.mayClose(rt, busy: busyPaths) {
            if let last = rt.lastActive, now - last < .milliseconds(Int(lingering * 1000)), !rt.reopen { continue }
            if let e = rt.awaits.values.filter({ rt.state($0.node) == .awaitingUser }).compactMap(\.expiresAt).min() { next[path] = e }
            do {
                try rt.store.flushIndex()
                try rt.open.close()
            } catch {
                // Kept open, its lock held, until the write can be made (see `CommitRetry`).
                logger.error("\(error)")
                continue
            }
            instances[path] = nil
            if rt.reopen { deliver(.touched(WatchNews(touched: [path], edited: [path]))) } else { park(rt) }
        }
        return next
    }

    /// Keeps a closed instance in memory, its lock released: when the next
    /// event comes and HEAD has not moved, it is taken up again without
    /// reading every node's files (~18 ms for 100 nodes; the answer that
    /// woke it waited for that). The most recent `parkLimit` are kept.
    func park(_ rt: InstanceRuntime) {
        parked[rt.path] = rt
        parkOrder.removeAll { $0 == rt.path }
        parkOrder.append(rt.path)
        while parkOrder.count > Self.parkLimit { parked[parkOrder.removeFirst()] = nil }
    }

    static let parkLimit = 64

    /// Whether an open instance is closed once its linger passes: not one
    /// with work under way (`busy`: jobs running or launching), commits
    /// held, a person's git command at work, a commit that failed (it stays
    /// open until that is made, see `CommitRetry`), or nodes ready for a
    /// slot (closed, it would be looked at again only on its next event).
    static func mayClose(_ rt: InstanceRuntime, busy: Set<String>) -> Bool {
        !busy.contains(rt.path) && rt.batch.isEmpty && !rt.heldForGit && !rt.store.hasFailedWrites && rt.ready.isEmpty
    }

    /// Seconds until the first lingering instance is due to close.
    func lingerDeadline(_ linger: Double) -> Double? {
        let busyPaths = Set(running.keys.map(\.instance))
        let now = clock.instant
        let due = instances.values.filter { Self.mayClose($0, busy: busyPaths) }.compactMap(\.lastActive).map { last -> Double in
            Self.secondsUntil(last + .milliseconds(Int(linger * 1000)), now: now)
        }
        return due.min()
    }

    /// Seconds from `now` until `instant`, 0 if it has passed.
    static func secondsUntil(_ instant: Moment, now: Moment) -> Double {
        max(0, (instant - now).seconds)
    }
}

/// When the watcher tries a failed commit again (a full disk, a lock a
/// git command held): 1 s after it failed, then twice as long each time it
/// fails again, up to a minute. Only then: each try writes files, whose
/// events would otherwise wake the watcher to try again at once.
struct CommitRetry {
    private var failures = 0
    private(set) var due: Moment?

    mutating func reset() {
        failures = 0
        due = nil
    }

    mutating func failed(now: Moment) {
        failures += 1
        due = now + Self.delay(afterFailures: failures)
    }

    /// 1 s, then twice as long each time, up to a minute (also for an
    /// instance that could not be taken up, see `WatchLoop.openFailures`).
    static func delay(afterFailures n: Int) -> Duration {
        .seconds(min(60, 1 << min(max(n, 1) - 1, 6)))
    }

    func isDue(now: Moment) -> Bool { due.map { $0 <= now } ?? false }

    func secondsUntilDue(now: Moment) -> Double? { due.map { Engine.secondsUntil($0, now: now) } }
}

extension Engine {
    /// Makes the failed commits of open instances when their time has come (see `CommitRetry`).
    func retryFailedWrites(_ retry: inout CommitRetry, _ logger: Logger) {
        let failing = instances.values.filter { $0.store.hasFailedWrites }
        guard !failing.isEmpty else { return retry.reset() }
        guard retry.due != nil else { return retry.failed(now: clock.instant) }
        guard retry.isDue(now: clock.instant) else { return }
        var stillFailing = false
        var written: Set<String> = []
        for rt in failing {
            do {
                try rt.store.retryFailedWrites()
                written.insert(rt.path)
                logger.notice("\(rt.path): wrote what had failed to be written before")
            } catch {
                stillFailing = true
                logger.error("\(error)")
            }
        }
        if stillFailing { retry.failed(now: clock.instant) } else { retry.reset() }
        // What waited behind the failed commit (a node made ready by it) is looked at again now.
        if !written.isEmpty { deliver(.touched(WatchNews(touched: written))) }
    }
}
