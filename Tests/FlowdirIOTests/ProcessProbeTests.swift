#if canImport(Glibc)
import Glibc
#endif
import FlowdirTestSupport
import Foundation
import Testing

/// The /proc readings tests of a child flowdir wait on (ProcessProbe).
@Suite(.tags(.medium)) struct ProcessProbeTests {
    @Test func aFlockIsSeenWhileHeldAndNotAfter() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/lock"
        let fd = open(path, O_RDWR | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(!ProcessProbe.flockHeld(on: path))
        #expect(flock(fd, LOCK_EX) == 0)
        #expect(ProcessProbe.flockHeld(on: path))
        #expect(!ProcessProbe.flockHeld(on: dir.path + "/other"), "another file's lock is not this one's")
        #expect(flock(fd, LOCK_UN) == 0)
        #expect(!ProcessProbe.flockHeld(on: path))
    }

    @Test func inotifyWatchesAreSeenOnceAdded() throws {
        let dir = try TemporaryDirectory()
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(inotify_add_watch(fd, dir.path, UInt32(IN_CREATE)) >= 0)
        #expect(ProcessProbe.hasInotifyWatches(getpid()))
        #expect(!ProcessProbe.hasInotifyWatches(999_999_999), "no such process")
    }
}
