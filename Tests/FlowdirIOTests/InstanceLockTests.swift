#if canImport(Glibc)
import Glibc
#endif
import Foundation
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

@Suite(.tags(.medium)) struct InstanceLockTests {
    @Test func aBusyLockSaysWhoHoldsIt() throws {
        let dir = try TemporaryDirectory()
        let held = try InstanceLock(instance: dir.path, purpose: "a long job")
        #expect {
            _ = try InstanceLock(instance: dir.path, purpose: "an answer", timeout: 0)
        } throws: { error in
            (error as? InstanceLock.Busy)?.holder.contains("pid \(getpid()) on \(Host.name): a long job, since") == true
        }
        held.release()
        _ = try InstanceLock(instance: dir.path, purpose: "an answer", timeout: 0)
    }

    /// A lock that could not be taken closes its file once. Closed twice, the
    /// second close hit whatever another thread had opened under the same
    /// number in between (a served page's commit failed with "Bad file
    /// descriptor"). Another thread opens files while locks fail here and
    /// checks its file is still open before it closes it.
    @Test func aBusyLockClosesItsFileOnceAndNoOneElses() throws {
        let dir = try TemporaryDirectory()
        let held = try InstanceLock(instance: dir.path, purpose: "holding")
        let stop = Locked(false)
        let lost = Locked(0)
        let other = Thread {
            while !stop.locked({ $0 }) {
                let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { continue }
                for _ in 0..<50 where fcntl(fd, F_GETFD) < 0 { lost.locked { $0 += 1 }; break }
                if close(fd) != 0 { lost.locked { $0 += 1 } }
            }
        }
        other.start()
        let deadline = Date().addingTimeInterval(1)
        var tries = 0
        while Date() < deadline, lost.locked({ $0 }) == 0 {
            #expect(throws: InstanceLock.Busy.self) { _ = try InstanceLock(instance: dir.path, purpose: "a try", timeout: 0) }
            tries += 1
        }
        stop.locked { $0 = true }
        Eventually.blockingUntil(every: .milliseconds(1)) { other.isFinished }
        #expect(lost.locked { $0 } == 0, "another thread's file was closed under it (after \(tries) failed locks)")
        withExtendedLifetime(held) {}
    }
}
