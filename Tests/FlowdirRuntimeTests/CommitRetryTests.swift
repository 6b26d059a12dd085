import FlowdirCore
@testable import FlowdirRuntime
import FlowdirTestSupport
import Testing

/// When the watcher tries a failed commit again: 1 s after the failure,
/// then twice as long each time, up to a minute; back to 1 s once it is made.
@Suite(.tags(.small)) struct CommitRetryTests {
    @Test func retriesBackOffFromASecondToAMinuteAndStartAgainOnceMade() {
        var retry = CommitRetry()
        var now = Moment(sinceOrigin: .seconds(100))
        #expect(retry.secondsUntilDue(now: now) == nil, "nothing failed: no retry")
        var delays: [Double] = []
        for _ in 0..<9 {
            retry.failed(now: now)
            let wait = retry.secondsUntilDue(now: now)!
            delays.append(wait)
            #expect(!retry.isDue(now: now + .milliseconds(Int(wait * 1000) - 1)))
            now = now + .milliseconds(Int(wait * 1000))
            #expect(retry.isDue(now: now))
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 60, 60, 60])
        // The same steps for an instance that could not be opened.
        #expect((1...9).map { CommitRetry.delay(afterFailures: $0) } == delays.map { .seconds($0) })
        retry.reset()
        #expect(retry.secondsUntilDue(now: now) == nil)
        retry.failed(now: now)
        #expect(retry.secondsUntilDue(now: now) == 1)
    }
}
