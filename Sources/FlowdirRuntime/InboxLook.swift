import FlowdirCore

/// What the engine keeps about one instance's `inbox/` between looks: which
/// files are complete, what each content check found, what was refused,
/// and when to look again. Owned by the instance; `InboxLookTests` checks
/// it on a manual clock.
struct InboxLook {
    /// How long a dropped file must go unchanged to count as complete when
    /// nothing said it was (a file mid-copy is not taken).
    static let quiet = 0.5

    /// The first look takes every file as it is; later looks wait until a
    /// file has been quiet a moment (it may be mid-copy).
    var first = true
    /// The folder's stamp when a look found nothing to do or wait for.
    var quietStamp: String?
    /// When to look again: a dropped file is not yet quiet, and nothing may
    /// come to say it is complete (a hard link, an event lost when the
    /// inotify queue overflowed).
    var recheck: Moment?
    /// Files the watcher saw complete (closed after writing, or moved in).
    var completed: Set<String> = []
    /// Each question's file as last read or written, to notice a person's edit.
    var awaitStamps: [String: String] = [:]
    /// Content checks of answer files, by name, while their stamp holds.
    var checks: [String: (stamp: String, result: Result<ContentFormat, ContentCheck.Failure>)] = [:]
    /// Why each file was refused (for `flowdir answer` to report).
    var refusals: [String: String] = [:]

    /// Whether a file is complete enough to take or refuse.
    func isSettled(_ name: String, quietFor: Double) -> Bool {
        first || quietFor >= Self.quiet || completed.contains(name)
    }

    /// Sets the next look for just after the first unsettled file turns quiet
    /// (that look sets the one after); with none, no look until an event.
    mutating func recheck(unsettledQuietFor ages: [Double], now: Moment) {
        recheck = ages.max().map { now + .milliseconds(Int((Self.quiet - $0) * 1000) + 10) }
    }

    /// The file is gone or was answered: what was known of it no longer holds.
    mutating func forget(_ name: String) {
        checks[name] = nil
        completed.remove(name)
    }
}
