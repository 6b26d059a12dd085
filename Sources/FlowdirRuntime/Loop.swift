import FlowdirCore
import FlowdirIO
import Logging

/// What the engine's one loop runs until, and what feeds it (ARCHITECTURE.md,
/// "One loop"). `flowdir run`, `flowdir watch` and the commands that settle
/// an answer differ only here: the loop, its events, commit grouping,
/// waiting, index upkeep and shutdown are the same code.
struct LoopPolicy {
    enum Until {
        /// `flowdir run`: until nothing more can happen here.
        case quiet
        /// `flowdir watch`: until asked to stop.
        case stopped
    }

    var until: Until
    /// Looks for requests from other terminals and answers dropped meanwhile
    /// this often: a source for a loop that has no watcher to tell it.
    var poll: Duration?
    /// The watcher says which instances to look at; they are opened while
    /// they have something to do and closed when idle (Serve.swift).
    var watch: WatchSource?
    /// On a stop, how long this machine's jobs get to end before they are stopped.
    var grace: Double
    /// Jobs' bookkeeping committed on the store's thread while the loop goes
    /// on: only where instances stay open until the loop ends (`run`); the
    /// watcher closes idle ones.
    var commitsInBackground: Bool
    /// Set: an error is logged and the loop goes on (one broken instance
    /// never stops the watcher). Nil: it ends the loop, and is thrown.
    var logger: Logger?

    static func run(poll: Duration) -> LoopPolicy {
        LoopPolicy(until: .quiet, poll: poll, watch: nil, grace: 0, commitsInBackground: true, logger: nil)
    }

    /// What `answer`, `snooze`, `skip` and `claim` do when no other flowdir
    /// holds the instance: one turn, starting nothing (`Engine.settle`).
    static let settle = LoopPolicy(until: .quiet, poll: nil, watch: nil, grace: 0, commitsInBackground: false, logger: nil)

    static func watch(_ source: WatchSource, grace: Double) -> LoopPolicy {
        LoopPolicy(until: .stopped, poll: nil, watch: source, grace: grace, commitsInBackground: false, logger: source.logger)
    }
}

extension Engine {
    /// The loop: look at what the last events asked for (start what may
    /// start, commit), end if the policy says so, then wait for the next
    /// events from every source (jobs, the watcher, timers, a stop).
    func loop(_ policy: LoopPolicy) async throws {
        func guarded(_ body: () throws -> Void) throws {
            guard let logger = policy.logger else { return try body() }
            do { try body() } catch { logger.error("\(error)") }
        }
        let clock = self.clock
        let ticker = policy.poll.map { interval in
            Task { [weak self] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: interval)
                    self?.deliver(.tick)
                }
            }
        }
        let watch = try policy.watch.map { try startWatching($0) }
        defer {
            ticker?.cancel()
            watch?.stop()
            grouping.cancelTimer()
            grouping.release()  // also when an error ends it
        }
        backgroundCommits = policy.commitsInBackground
        defer { backgroundCommits = false }
        // `run` steps once before it first waits; the watcher looks at every instance it found.
        var acted = watch == nil
        var lastIndexFlush = clock.instant
        while true {
            if let watch, !stopping, !watch.news.touched.isEmpty {
                // What jobs did is committed apart from what people do.
                grouping.release()
                try guarded { try flush() }
                lookAtNews(watch)
                try guarded { try handleRequests() }
                acted = true
            }
            if acted {
                try guarded { try step() }
            } else {
                try guarded { try flush() }
            }
            acted = false
            // Held only while jobs are under way: with none, no job's end is
            // coming to share the commit, and a person's next answer would wait for it.
            if holdCommits, running.isEmpty || heldGroupIsDue() {
                grouping.release()
                try guarded { try flush() }
            }
            grouping.release()
            scheduleHeldFlush()
            // A commit failed: nothing more starts whose record could not be
            // kept; what runs ends, and its commits wait behind the failed one.
            if starting, instances.values.contains(where: { $0.store.backgroundFailure != nil }) { starting = false }
            if let watch { closeIdle(watch) }
            if stoppedRunning { break }
            if policy.until == .quiet, isQuiet { break }
            try flushIndexBeforeWaiting(policy, since: &lastIndexFlush)
            // After the flush: an index write that failed there is tried again by the timer.
            if let watch { armTimer(watch) }
            let events = await nextEvents()
            ChildWatch.askShortSlice()
            // Jobs ending in quick succession: what follows is grouped (see CommitGrouping.swift).
            grouping.eventsArrived(at: clock.instant)
            for event in events {
                try guarded { acted = try handle(event, policy, watch) || acted }
            }
        }
        grouping.release()
        try guarded { try flush() }
        for rt in instances.values {
            // Once more, now that nothing else is being written.
            try guarded {
                if rt.store.hasFailedWrites { try rt.store.retryFailedWrites() }
                try rt.store.waitForBackgroundCommits()
            }
        }
        if watch != nil { closeAll() }
    }

    /// One event; returns whether what follows from it needs a step.
    func handle(_ event: EngineEvent, _ policy: LoopPolicy, _ watch: WatchLoop?) throws -> Bool {
        switch event {
        case .job(let key, let run, let update):
            guard try handle(update, of: key, run: run) else { return false }
            instances[key.instance]?.lastActive = clock.instant  // it lingers open after its last job
            return true
        case .tick:
            // Requests from other terminals, and answers dropped meanwhile.
            grouping.release()
            try flush()  // what jobs did is committed apart from what people do
            var acted = try handleRequests()
            acted = try inboxHasNews() || acted
            try renewLeases()
            return acted
        case .flushDue:
            grouping.timerFired()
            return false
        case .fetched(let key, let failure):
            return try fetched(key, failure: failure)
        case .touched(let news):
            watch?.saw(news, now: clock.instant, nowStamp: clock.now())
            return false
        case .stop:
            // `run` (a person at the terminal, as make does): jobs here are stopped at once.
            if beginStopping(grace: policy.grace) {
                policy.logger?.info("stopping", metadata: ["running": .stringConvertible(running.count)])
            }
            return false
        }
    }

    /// Nothing of this machine's runs, and no input is being fetched: `run`
    /// is done. A job waiting for an endpoint that cannot be reached leaves
    /// `run` waiting on it (exit 2; the next run or the watcher sends it when it answers).
    var isQuiet: Bool {
        !running.contains(where: { !waitsOffline($0.key) }) && fetching.isEmpty
    }

    /// About to wait: the index in step with every commit. Each commit writes
    /// its own entries (`InstanceStore.stageIndex`); this writes those a
    /// failed write left, so `git status` is clean while flowdir waits, and a
    /// person's `git commit`, which builds its tree from the index, never
    /// undoes flowdir's. With commits in the background, at most twice a
    /// second and behind the commits handed off so far.
    func flushIndexBeforeWaiting(_ policy: LoopPolicy, since last: inout Moment) throws {
        guard inbox.isEmpty else { return }
        if policy.commitsInBackground {
            guard clock.instant - last >= .milliseconds(500), instances.values.allSatisfy({ $0.batch.isEmpty }) else { return }
            for rt in instances.values { try rt.store.flushIndexInBackground() }
            last = clock.instant
        } else {
            // Not under a held group: the journal names what its launched jobs
            // moved in, and bringing the index in step clears the journal.
            for rt in instances.values where !rt.heldForGit && rt.batch.isEmpty {
                do { try rt.store.flushIndex() } catch { policy.logger?.error("\(error)") }
            }
        }
    }
}
