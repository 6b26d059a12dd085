import Dispatch
@testable import FlowdirIO
import Foundation
import FlowdirTestSupport
import Testing

@Suite(.tags(.medium)) struct BackgroundTests {
    /// The work runs on a thread of its own, while the caller goes on.
    @Test func workRunsOnItsOwnThreadAndIsWaitedFor() {
        let caller = pthread_self()
        let started = DispatchSemaphore(value: 0)
        let work = Background { () -> (pthread_t, Int) in
            started.signal()
            return (pthread_self(), (1...1000).reduce(0, +))
        }
        #expect(started.wait(timeout: .now() + 10) == .success)  // it started without value() being asked for
        let (thread, sum) = work.value()
        #expect(pthread_equal(thread, caller) == 0)
        #expect(sum == 500_500)
        #expect(work.value().1 == 500_500)  // asked again: the same, no second join
    }

    /// From every thread of Dispatch's pool at once, each waiting for its own
    /// background work: none waits for the pool to grow.
    @Test func waitingFromPoolThreadsNeedsNoPoolThread() {
        let n = ProcessInfo.processInfo.activeProcessorCount * 2
        let results = Locked([Int](repeating: 0, count: n))
        DispatchQueue.concurrentPerform(iterations: n) { i in
            let w = Background { i * i }
            results.locked { $0[i] = w.value() }
        }
        #expect(results.locked { $0 } == (0..<n).map { $0 * $0 })
    }

    /// Dropped without asking for the value (a caller that threw): the
    /// work still ends, on its own thread, and the caller does not wait.
    @Test func droppedWorkFinishesOnItsOwn() {
        let done = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        do {
            _ = Background { go.wait(); done.signal() }
        }
        go.signal()  // dropped before it could end
        #expect(done.wait(timeout: .now() + 10) == .success)
    }
}
