/// A point on a monotonic clock, as how long after the clock's origin. Only
/// compared and subtracted (deadlines, ages), never written down: records
/// take wall time (`Timestamp`).
public struct Moment: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    public var sinceOrigin: Duration

    public init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    public func advanced(by duration: Duration) -> Moment { Moment(sinceOrigin: sinceOrigin + duration) }
    public func duration(to other: Moment) -> Duration { other.sinceOrigin - sinceOrigin }
    public static func < (l: Moment, r: Moment) -> Bool { l.sinceOrigin < r.sinceOrigin }
    public static func + (l: Moment, r: Duration) -> Moment { l.advanced(by: r) }
    public static func - (l: Moment, r: Duration) -> Moment { l.advanced(by: .zero - r) }
    public static func - (l: Moment, r: Moment) -> Duration { r.duration(to: l) }
    public var description: String { "+\(sinceOrigin)" }
}

/// Time, injected everywhere it is read or waited on: wall time for what is
/// written down (records, leases, expiry), and a Swift `Clock` for waiting
/// and measuring (polls, backoff, timeouts, commit windows). The real one is
/// `FlowdirClock.system` (FlowdirIO); tests drive a manual clock instead, so
/// a timer is tested by moving time, not by sleeping.
public struct FlowdirClock: WallClock {
    private let wall: any WallClock
    private let read: @Sendable () -> Moment
    private let sleeper: @Sendable (Moment) async throws -> Void
    private let blocker: @Sendable (Duration) -> Void

    /// `block` waits without suspending, for the few waits on synchronous
    /// paths (a lock file taken while a commit is written); it must follow
    /// `clock` (a manual clock parks the thread until moved past it).
    public init<C: Clock>(_ clock: C, wall: any WallClock, block: @escaping @Sendable (Duration) -> Void)
    where C.Duration == Duration {
        let origin = clock.now
        self.wall = wall
        self.read = { Moment(sinceOrigin: origin.duration(to: clock.now)) }
        self.sleeper = { try await clock.sleep(until: origin.advanced(by: $0.sinceOrigin), tolerance: nil) }
        self.blocker = block
    }

    private init(wall: any WallClock, from other: FlowdirClock) {
        self.wall = wall
        self.read = other.read
        self.sleeper = other.sleeper
        self.blocker = other.blocker
    }

    /// Wall time.
    public func now() -> Timestamp { wall.now() }

    /// Monotonic time: for deadlines and ages, never for records.
    public var instant: Moment { read() }

    /// Suspends until `deadline`; throws `CancellationError` if the task is cancelled.
    public func sleep(until deadline: Moment) async throws { try await sleeper(deadline) }

    /// Suspends for `duration`; throws `CancellationError` if the task is cancelled.
    public func sleep(for duration: Duration) async throws { try await sleeper(instant + duration) }

    /// Seconds, as the config writes them (`pollInterval: 2.5s`).
    public func sleep(seconds: Double) async throws { try await sleep(for: .seconds(seconds.isFinite ? min(max(0, seconds), 1e9) : 0)) }

    /// Waits on the calling thread, for synchronous paths only.
    public func pause(for duration: Duration) { blocker(duration) }

    /// The same ticking, with the wall standing still at `time` (`FLOWDIR_NOW`).
    public func pinned(at time: Timestamp) -> FlowdirClock { FlowdirClock(wall: FixedClock(time), from: self) }

    /// The same ticking with another wall.
    public func withWall(_ wall: any WallClock) -> FlowdirClock { FlowdirClock(wall: wall, from: self) }
}
