import Dispatch
import FlowdirCore
import FlowdirIO
import Synchronization

/// A Swift `Clock` that moves only when a test moves it, with wall time that
/// moves with it. Code under test sleeps on it (through `flowdirClock`);
/// the test waits until the sleepers it expects are parked
/// (`waitForSleepers`), then `advance(by:)`s past their deadlines: timers,
/// polls and backoff run in order, at once, without sleeping.
public final class ManualClock: Clock, Sendable {
    public typealias Instant = Moment
    public typealias Duration = Swift.Duration

    /// Raised by `waitForSleepers` when the sleepers never come: the hang guard.
    public struct Stalled: Error, CustomStringConvertible {
        public let wanted: Int
        public let parked: [Moment]
        public var description: String {
            "waited for \(wanted) sleeper(s) on the manual clock, but \(parked.count) parked (deadlines \(parked))"
        }
    }

    private enum Wake: Sendable {
        case task(CheckedContinuation<Void, any Error>)
        case thread(DispatchSemaphore)
    }

    private struct Sleeper: Sendable {
        let id: UInt64
        let deadline: Moment
        let wake: Wake
    }

    private struct Watcher: Sendable {
        let id: UInt64
        let count: Int
        let resume: CheckedContinuation<Void, any Error>
    }

    private struct State: Sendable {
        var now = Moment(sinceOrigin: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var cancelledEarly: Set<UInt64> = []
        var watchers: [Watcher] = []

        mutating func id() -> UInt64 { nextID += 1; return nextID }

        /// Watchers whose count is now reached, taken out to be resumed outside the lock.
        mutating func satisfied() -> [Watcher] {
            let ready = watchers.filter { $0.count <= sleepers.count }
            watchers.removeAll { $0.count <= sleepers.count }
            return ready
        }
    }

    private let state = Mutex(State())
    /// Wall time at the clock's start; `wallNow` is this plus the time moved since.
    public let wallStart: Timestamp

    public init(wall: Timestamp = Timestamp(seconds: 1_800_000_000)) { self.wallStart = wall }

    public var now: Moment { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Wall time on this clock.
    public var wallNow: Timestamp { wallStart + now.sinceOrigin.seconds }

    /// How many sleepers are parked now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The parked sleepers' deadlines, soonest first.
    public var deadlines: [Moment] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }

    /// This clock as the engine's, the lanes' and the servers' clock.
    public var flowdirClock: FlowdirClock {
        FlowdirClock(self, wall: Wall(clock: self), block: { [self] in blockingSleep(for: $0) })
    }

    struct Wall: WallClock {
        let clock: ManualClock
        func now() -> Timestamp { clock.wallNow }
    }

    public func sleep(until deadline: Moment, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { $0.id() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                enum Outcome { case due, cancelled, parked([Watcher]) }
                let outcome: Outcome = state.withLock { s in
                    if s.cancelledEarly.remove(id) != nil { return .cancelled }
                    if deadline <= s.now { return .due }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, wake: .task(c)))
                    return .parked(s.satisfied())
                }
                switch outcome {
                case .due: c.resume()
                case .cancelled: c.resume(throwing: CancellationError())
                case .parked(let ready): ready.forEach { $0.resume.resume() }
                }
            }
        } onCancel: {
            let parked: Sleeper? = state.withLock { s in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelledEarly.insert(id)
                    return nil
                }
                return s.sleepers.remove(at: i)
            }
            if case .task(let c) = parked?.wake { c.resume(throwing: CancellationError()) }
        }
        // Woken by a move, or cancelled before it parked and after it was due.
        state.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    /// Parks the calling thread until the clock is moved past `duration` from
    /// now. Call it off Swift's cooperative pool (`offPool`): a pool thread
    /// parked here could be the one the test needs to move the clock.
    public func blockingSleep(for duration: Duration) {
        let semaphore = DispatchSemaphore(value: 0)
        let ready: [Watcher]? = state.withLock { s in
            let deadline = s.now + duration
            guard s.now < deadline else { return nil }
            s.sleepers.append(Sleeper(id: s.id(), deadline: deadline, wake: .thread(semaphore)))
            return s.satisfied()
        }
        guard let ready else { return }
        ready.forEach { $0.resume.resume() }
        semaphore.wait()
    }

    /// Moves time forward by `duration`, waking every sleeper whose deadline
    /// has come, soonest first.
    public func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    /// Moves time forward to `target` (never back), waking every sleeper due by then, soonest first.
    public func advance(to target: Moment) {
        let due: [Sleeper] = state.withLock { s in
            s.now = max(s.now, target)
            let due = s.sleepers.filter { $0.deadline <= s.now }
                .sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due {
            switch sleeper.wake {
            case .task(let c): c.resume()
            case .thread(let semaphore): semaphore.signal()
            }
        }
    }

    /// Moves time to the soonest parked deadline (waking those due), if any is parked.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        guard let next = deadlines.first else { return false }
        advance(to: next)
        return true
    }

    /// Returns once at least `count` sleepers are parked. Real time passes only
    /// in the hang guard: after `timeout` it throws `Stalled`, naming what was parked.
    /// The guard counts only time it could run (as `Eventually` does): a full
    /// run's blocking tests can hold every thread of the pool for minutes,
    /// and the code under test is held with it; that is not a hang.
    public func waitForSleepers(_ count: Int, timeout: Duration = .seconds(120)) async throws {
        let id = state.withLock { $0.id() }
        let guardTask = Task { [self] in
            let real = ContinuousClock()
            var counted: Duration = .zero
            var last = real.now
            while counted < timeout {
                try await real.sleep(for: .seconds(1))
                let now = real.now
                counted += Eventually.counted(now - last, every: .seconds(1))
                last = now
            }
            let late: (Watcher, [Moment])? = state.withLock { s in
                guard let i = s.watchers.firstIndex(where: { $0.id == id }) else { return nil }
                return (s.watchers.remove(at: i), s.sleepers.map(\.deadline).sorted())
            }
            if let (w, parked) = late { w.resume.resume(throwing: Stalled(wanted: count, parked: parked)) }
        }
        defer { guardTask.cancel() }
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            let ready = state.withLock { s in
                if s.sleepers.count >= count { return true }
                s.watchers.append(Watcher(id: id, count: count, resume: c))
                return false
            }
            if ready { c.resume() }
        }
    }

    /// Waits for `count` sleepers, then moves time by `duration`: one step of a timer under test.
    public func advance(by duration: Duration, afterSleepers count: Int, timeout: Duration = .seconds(120)) async throws {
        try await waitForSleepers(count, timeout: timeout)
        advance(by: duration)
    }

    /// Runs what sleeps on this clock until `condition` holds: each step waits
    /// until `sleepers` are parked (what was woken has run to its next sleep),
    /// then moves time to the soonest deadline. Timers fire in order, as
    /// they would in real time, without the wait. Real time passes only
    /// while what was woken runs; `timeout` guards against a hang, counting
    /// only time this waiter could run (`Eventually`'s bound: a full run
    /// beside a benchmark once held a test here 80 s before its first try).
    public func advance(until condition: () async throws -> Bool, sleepers: Int = 1,
                        timeout: Duration = .seconds(120)) async throws {
        let done = try await Eventually.until(timeout: timeout, every: .milliseconds(1)) {
            while true {
                if try await condition() { return true }
                guard sleeperCount >= sleepers else { return false }
                advanceToNextDeadline()
            }
        }
        if !done { throw Stalled(wanted: sleepers, parked: deadlines) }
    }
}
