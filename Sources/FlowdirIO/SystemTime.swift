#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

extension FlowdirClock {
    /// The real clock: the system's wall time, and Swift's `ContinuousClock`
    /// for waiting and measuring. The one place flowdir sleeps for real.
    public static let system = FlowdirClock(ContinuousClock(), wall: SystemClock(), block: { duration in
        let (s, atto) = duration.components
        guard s > 0 || atto > 0 else { return }
        var request = timespec(tv_sec: Int(s), tv_nsec: Int(atto / 1_000_000_000))
        var left = timespec()
        while nanosleep(&request, &left) != 0, errno == EINTR { request = left }
    })
}
