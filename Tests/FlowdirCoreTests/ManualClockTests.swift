import FlowdirCore
import FlowdirTestSupport
import Testing

/// The test clock (`ManualClock`): sleepers wake when time is moved past
/// their deadlines, soonest first, and never before; a test can wait until
/// the sleepers it expects are parked; a cancelled sleeper throws.
@Suite(.tags(.small)) struct ManualClockTests {
    actor Record {
        var values: [Int] = []
        func add(_ n: Int) { values.append(n) }
    }

    @Test func advanceWakesDueSleepersInDeadlineOrderAndNoOthers() async throws {
        let clock = ManualClock()
        let woke = Record()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, (n, seconds)) in [(3, 30), (1, 10), (2, 20)].enumerated() {
                group.addTask {
                    try await clock.sleep(until: Moment(sinceOrigin: .seconds(seconds)))
                    await woke.add(n)
                }
                try await clock.waitForSleepers(i + 1)
            }
            clock.advance(by: .seconds(9))
            #expect(clock.sleeperCount == 3)
            clock.advance(by: .seconds(11))  // 20 s: the first two are due
            try await clock.waitForSleepers(1)
            while await woke.values.count < 2 { await Task.yield() }
            #expect(await woke.values == [1, 2])
            clock.advance(by: .seconds(10))
            try await group.waitForAll()
        }
        #expect(await woke.values == [1, 2, 3])
        #expect(clock.now == Moment(sinceOrigin: .seconds(30)))
    }

    @Test func wallTimeMovesWithTheClock() {
        let clock = ManualClock(wall: Timestamp(seconds: 1_800_000_000))
        let flowdir = clock.flowdirClock
        clock.advance(by: .milliseconds(2500))
        #expect(flowdir.now() == Timestamp(seconds: 1_800_000_002.5))
        #expect(flowdir.instant == Moment(sinceOrigin: .milliseconds(2500)))
    }

    @Test func aCancelledSleeperThrowsCancellationError() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.flowdirClock.sleep(for: .seconds(60)) }
        try await clock.waitForSleepers(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
        // Cancelled before it sleeps: it throws at once, and never parks.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aDeadlineAlreadyPassedDoesNotPark() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: Moment(sinceOrigin: .seconds(5)))
        try await clock.flowdirClock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aBlockingSleeperParksItsThreadUntilMoved() async throws {
        let clock = ManualClock()
        let flowdir = clock.flowdirClock
        let thread = Task.detached {
            flowdir.pause(for: .seconds(3))
            return flowdir.instant
        }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(await thread.value == Moment(sinceOrigin: .seconds(3)))
    }

    @Test func waitingForSleepersThatNeverComeEndsWithStalled() async throws {
        let clock = ManualClock()
        await #expect(throws: ManualClock.Stalled.self) { try await clock.waitForSleepers(1, timeout: .milliseconds(50)) }
    }

    @Test func advancingUntilWhatNeverHappensEndsWithStalled() async throws {
        let clock = ManualClock()
        await #expect(throws: ManualClock.Stalled.self) { try await clock.advance(until: { false }, timeout: .milliseconds(50)) }
    }
}
