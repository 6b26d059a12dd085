#if canImport(Glibc)
import Glibc
#endif
import Dispatch
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

/// Work handed to an instance's commit thread runs one piece at a time,
/// in order, at normal priority.
@Suite(.tags(.medium)) struct BackgroundLaneTests {
    @Test func piecesRunInTheOrderHandedInAtNormalPriority() {
        let lane = BackgroundLane()
        let seen = Locked<[(Int, Int32)]>([])
        let overlap = Locked((now: 0, most: 0))
        for i in 0..<200 {
            lane.submit {
                overlap.locked { $0.now += 1; $0.most = max($0.most, $0.now) }
                if i % 17 == 0 { for _ in 0..<200 { sched_yield() } }  // a slow piece: the next ones queue behind it
                seen.locked { $0.append((i, sched_getscheduler(0))) }
                overlap.locked { $0.now -= 1 }
            }
        }
        lane.wait()
        let got = seen.locked { $0 }
        #expect(got.map(\.0) == Array(0..<200))
        #expect(overlap.locked { $0.most } == 1)
        // SCHED_OTHER (0), never SCHED_IDLE (5): any other load on the
        // machine would starve an idle thread, and the engine waiting for it.
        #expect(got.allSatisfy { $0.1 == 0 }, "\(Set(got.map(\.1)))")
        lane.close()
    }

    /// The last reference to the lane's owner (a store) may go inside a
    /// piece: its deinit closes the lane from the lane's own thread, which
    /// must not wait for itself.
    @Test func anOwnerLetGoInsideAPieceClosesItsLaneFromThere() {
        final class Owner {
            let lane = BackgroundLane()
            let gone: Locked<Bool>
            init(_ gone: Locked<Bool>) { self.gone = gone }
            deinit {
                lane.close()
                gone.locked { $0 = true }
            }
        }
        let gone = Locked(false)
        let go = DispatchSemaphore(value: 0)
        var owner: Owner? = Owner(gone)
        owner!.lane.submit { [owner] in
            go.wait()
            _ = owner
        }
        owner = nil  // the piece holds the last reference now
        go.signal()
        #expect(Eventually.blockingUntil(timeout: .seconds(10), every: .milliseconds(1)) { gone.locked { $0 } })
    }

    @Test func aClosedLaneStartsAgainWithTheNextPiece() {
        let lane = BackgroundLane()
        let count = Locked(0)
        lane.submit { count.locked { $0 += 1 } }
        lane.close()
        #expect(count.locked { $0 } == 1)
        lane.submit { count.locked { $0 += 1 } }
        lane.submit { count.locked { $0 += 1 } }
        lane.wait()
        #expect(count.locked { $0 } == 3)
        lane.close()
    }
}
