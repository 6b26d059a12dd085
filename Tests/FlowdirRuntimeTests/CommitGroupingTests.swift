import FlowdirCore
@testable import FlowdirRuntime
import FlowdirTestSupport
import Synchronization
import Testing

/// The loop's commit grouping on its own, on a manual clock: when it holds,
/// what it learns of jobs' lengths, and the timer that ends a held group.
/// (`GroupCommitTests` runs it in the engine, with real jobs.)
@Suite(.tags(.small)) struct CommitGroupingTests {
    @Test func eventsWithinTheWindowOfTheLastCommitAreHeldAndLaterOnesAreNot() {
        let clock = ManualClock()
        var g = CommitGrouping(window: .milliseconds(100), now: clock.now)
        clock.advance(by: .milliseconds(40))
        g.eventsArrived(at: clock.now)
        #expect(g.holding)
        g.release()
        #expect(!g.holding)
        clock.advance(by: .milliseconds(60))  // the window has passed since the commit
        g.eventsArrived(at: clock.now)
        #expect(!g.holding)
        g.committed(at: clock.now)
        clock.advance(by: .milliseconds(99))
        g.eventsArrived(at: clock.now)
        #expect(g.holding, "a new commit opens a new window")
    }

    @Test func jobLengthsAreAveragedWithTheLatestWeightedATenth() {
        var g = CommitGrouping(window: .milliseconds(100), now: ManualClock().now)
        #expect(g.jobSeconds == 0)
        g.jobEnded(after: .seconds(2))
        #expect(g.jobSeconds == 2, "the first job's length is taken as it is")
        g.jobEnded(after: .seconds(12))
        #expect(abs(g.jobSeconds - 3) < 1e-9)
    }

    @Test func aHeldGroupIsDueOnceWritingItTakesAsLongAsWhatIsLeft() {
        var g = CommitGrouping(window: .milliseconds(100), now: ManualClock().now)
        // No job has ended: its cost is unknown, so the group is held to the end of its window.
        #expect(!g.isDue(nodesLeft: 1, running: 1, heldChanges: 500, secondsPerChange: 0.001))
        g.jobEnded(after: .milliseconds(10))
        // 100 nodes of 10 ms on 2 slots (0.5 s) against 500 changes at 1 ms (0.75 s with the margin): due.
        #expect(g.isDue(nodesLeft: 100, running: 2, heldChanges: 500, secondsPerChange: 0.001))
        // 1,000 nodes left (5 s): held.
        #expect(!g.isDue(nodesLeft: 1000, running: 2, heldChanges: 500, secondsPerChange: 0.001))
        #expect(!g.isDue(nodesLeft: 0, running: 0, heldChanges: 0, secondsPerChange: 0.001), "nothing held is never due")
    }

    @Test func theTimerEndsAHeldGroupWhenItsWindowClosesAndIsSetOnce() async throws {
        let manual = ManualClock()
        let clock = manual.flowdirClock  // its instants count from here
        var g = CommitGrouping(window: .milliseconds(100), now: clock.instant)
        manual.advance(by: .milliseconds(30))
        let fired = Mutex(0)
        g.scheduleFlush(clock: clock) { fired.withLock { $0 += 1 } }
        g.scheduleFlush(clock: clock) { fired.withLock { $0 += 100 } }  // one is set already
        try await manual.waitForSleepers(1)
        #expect(manual.deadlines == [manual.now + .milliseconds(70)], "the rest of the window, not a whole one")
        manual.advance(by: .milliseconds(69))
        #expect(fired.withLock { $0 } == 0)
        manual.advance(by: .milliseconds(1))
        await Eventually.until { fired.withLock { $0 } == 1 }
        #expect(fired.withLock { $0 } == 1)
        g.timerFired()
        // Past the window: the next is set at the least delay, and a cancelled one never fires.
        g.scheduleFlush(clock: clock) { fired.withLock { $0 += 10 } }
        try await manual.waitForSleepers(1)
        #expect(manual.deadlines == [manual.now + .milliseconds(1)])
        g.cancelTimer()
        manual.advance(by: .seconds(1))
        await Eventually.until { manual.sleeperCount == 0 }
        #expect(fired.withLock { $0 } == 1)
    }
}
