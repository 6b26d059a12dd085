import FlowdirCore
import FlowdirIO
import Logging

/// Instances a person's git command is at work in, left alone until it is
/// done: nothing committed, no answer taken, the index not written. git
/// takes no lock from reading HEAD to moving it (a fast-forward writes the
/// files and the index, lets the index go, then moves the branch), so a
/// commit of the answer a `git pull` had just written would make the pull
/// fail with "cannot lock ref". Kept by `Engine.serve`.
struct GitHolds {
    /// How long after git last wrote one of its files the instance is left alone.
    static let quietSeconds = 0.3
    static let quiet: Duration = .seconds(quietSeconds)
    /// How often a merge or rebase stopped half-way is looked at again
    /// (its end is also an event in `.git`).
    static let stoppedRecheck: Duration = .seconds(60)

    /// Until when each held instance is left alone.
    private(set) var until: [String: Moment] = [:]
    /// The operation a person left half-way, by instance (for the log).
    private var stopped: [String: String] = [:]
    /// What came for held instances meanwhile, handed back when they are let go.
    private var waiting = WatchNews()

    /// git wrote one of its files in these instances just now.
    mutating func saw(_ paths: Set<String>, now: Moment) {
        for path in paths { until[path] = now + Self.quiet }
    }

    /// Whether `path` is held now. If so, what `news` has for it is kept
    /// for later; if not, what was kept is put back into `news`.
    mutating func hold(_ path: String, _ news: inout WatchNews, now: Moment, logger: Logger) -> Bool {
        if isHeld(path, now: now, logger: logger) {
            waiting.merge(news.take(path))
            return true
        }
        news.merge(waiting.take(path))
        return false
    }

    private mutating func isHeld(_ path: String, now: Moment, logger: Logger) -> Bool {
        if let end = until[path], end > now { return true }
        // Its first event may still be on its way to the watcher.
        if let since = GitOperations.secondsSinceAtWork(inWorkTree: path), since < Self.quietSeconds {
            until[path] = now + .seconds(Self.quietSeconds - since)
            return true
        }
        if let operation = GitOperations.stopped(inWorkTree: path) {
            if stopped[path] == nil {
                logger.notice("\(path): a git \(operation) is under way; nothing is done here until it is finished or aborted")
            }
            stopped[path] = operation
            until[path] = now + Self.stoppedRecheck
            return true
        }
        if let operation = stopped.removeValue(forKey: path) { logger.notice("\(path): the git \(operation) is over") }
        until[path] = nil
        return false
    }
}
