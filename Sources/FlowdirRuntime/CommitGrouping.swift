import FlowdirCore

/// Group commit, as databases do it: while jobs end in quick succession
/// (a run of many short steps), what follows from each is gathered and
/// committed together, at most one commit per `window`. Every transition
/// is still in a commit's trailers, within the window; a person's action
/// is never held (the loop releases the group before it takes one). Jobs
/// may start before their start is committed: what a crash then leaves (a
/// work folder, a log, an output moved in) is undone on the next open
/// (`recoverInterrupted`, `InstanceStore.intend`).
///
/// The engine's loop owns one; this owns the window, the jobs' lengths
/// and the timer that ends a held group, and decides nothing else.
struct CommitGrouping {
    let window: Duration
    /// Commits are being held: events came within `window` of the last commit.
    private(set) var holding = false
    private(set) var lastCommit: Moment
    /// How long jobs take, launch to end, on average lately (0: none has ended).
    private(set) var jobSeconds = 0.0
    /// Ends a held group when its window closes, should no event come first.
    private var timer: Task<Void, Never>?

    init(window: Duration, now: Moment) {
        self.window = window
        self.lastCommit = now
    }

    /// Events have arrived: they are held if they came within the window of the last commit.
    mutating func eventsArrived(at now: Moment) {
        holding = now - lastCommit < window
    }

    /// What is held goes with the next flush (a person's action, a due group, the loop's end).
    mutating func release() { holding = false }

    mutating func committed(at now: Moment) { lastCommit = now }

    mutating func jobEnded(after length: Duration) {
        let seconds = length.seconds
        jobSeconds = jobSeconds == 0 ? seconds : 0.9 * jobSeconds + 0.1 * seconds
    }

    /// Whether the held group should go before its window closes: what the
    /// run has left is no more than writing it takes (see `GroupCommit.isDue`).
    func isDue(nodesLeft: Int, running: Int, heldChanges: Int, secondsPerChange: Double) -> Bool {
        GroupCommit.isDue(nodesLeft: nodesLeft, running: running, jobSeconds: jobSeconds,
                          heldChanges: heldChanges, secondsPerChange: secondsPerChange)
    }

    /// Calls `due` once the window since the last commit has passed (at
    /// least 1 ms from now), unless a timer is set already.
    mutating func scheduleFlush(clock: FlowdirClock, _ due: @escaping @Sendable () -> Void) {
        guard timer == nil else { return }
        let wait = max(window - (clock.instant - lastCommit), .milliseconds(1))
        timer = Task {
            try? await clock.sleep(for: wait)
            guard !Task.isCancelled else { return }
            due()
        }
    }

    /// The timer has fired: the next held group may set another.
    mutating func timerFired() { timer = nil }

    mutating func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}
