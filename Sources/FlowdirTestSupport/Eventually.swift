import FlowdirCore
import FlowdirIO

/// Waiting on something real — a process, a server, a file another process
/// writes — that no manual clock drives: poll a condition on the real clock,
/// with a bound that only guards against a hang. The one place tests wait in
/// real time; timers of flowdir's own are tested on `ManualClock` instead.
///
/// The bound counts only time the waiter was able to run: a gap between two
/// tries much longer than asked (the machine, or Swift's cooperative threads,
/// taken by other tests) counts as one try's worth. What is waited on was
/// held up too, so a starved minute is no hang; a real hang still goes on
/// counting at full speed once the waiter runs. (Seen: a full run's blocking
/// tests held both cooperative threads for 139 s; waits of 120 s ran out
/// before the work they waited on had had a moment.)
public enum Eventually {
    /// How much of a gap between tries counts against the bound.
    static func counted(_ gap: Duration, every: Duration) -> Duration {
        min(gap, every + .milliseconds(500))
    }

    /// True once `condition` holds; false if it still does not after
    /// `timeout`. Blocks the calling thread: for synchronous tests and
    /// code run off Swift's cooperative pool (`offPool`); an async test
    /// uses `until`, which suspends instead.
    @discardableResult
    public static func blockingUntil(timeout: Duration = .seconds(60), every: Duration = .milliseconds(20),
                             _ condition: () throws -> Bool) rethrows -> Bool {
        let clock = FlowdirClock.system
        var waited = Duration.zero, last = clock.instant
        while true {
            if try condition() { return true }
            let now = clock.instant
            waited += counted(now - last, every: every)
            last = now
            guard waited < timeout else { return false }
            clock.pause(for: every)
        }
    }

    /// True once `condition` holds; false if it still does not after
    /// `timeout`. Suspends between tries.
    @discardableResult
    public static func until(timeout: Duration = .seconds(60), every: Duration = .milliseconds(20),
                             _ condition: () async throws -> Bool) async rethrows -> Bool {
        let clock = FlowdirClock.system
        var waited = Duration.zero, last = clock.instant
        while true {
            if try await condition() { return true }
            let now = clock.instant
            waited += counted(now - last, every: every)
            last = now
            guard waited < timeout else { return false }
            try? await clock.sleep(for: every)
            if Task.isCancelled { return try await condition() }
        }
    }

    /// Real time passing, for what is defined by it and run by another
    /// process (a lease lapsing for a second `flowdir`, a record's time to the
    /// second). Say why at each use.
    public static func elapse(_ duration: Duration, because reason: StaticString) {
        FlowdirClock.system.pause(for: duration)
    }
}
