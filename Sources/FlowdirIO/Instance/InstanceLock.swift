#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// One writer per instance: an exclusive `flock` on `.flowdir/lock`. The
/// kernel releases it when the holder exits, even by `kill -9`, so a crash
/// never leaves an instance locked.
public final class InstanceLock {
    public let path: String
    private var fd: Int32

    public struct Busy: Error, Sendable, CustomStringConvertible {
        public var instance: String
        public var holder: String
        public var description: String {
            "\(instance) is being changed by another flowdir (\(holder)); try again when it finishes"
        }
    }

    /// Waits up to `timeout` seconds for the lock, then says who holds it.
    public init(instance: String, purpose: String, timeout: Double = 2, clock: FlowdirClock = .system) throws {
        let dir = instance + "/" + InstancePaths.local
        try Files.makeDirectories(dir)
        path = dir + "/lock"
        switch Syscall.open(path, O_RDWR | O_CREAT, 0o644) {
        case .success(let f): fd = f
        case .failure(let e): throw LocalFileSystem.map(e, path)
        }
        // Waiting is measured on the monotonic clock: the wall may stand still (FLOWDIR_NOW).
        let deadline = clock.instant + .seconds(timeout)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, clock.instant < deadline else {
                let holder = (try? LocalFileSystem().readFile(path, limit: 4096)).map { String(decoding: $0, as: UTF8.self) }
                // Every property is set, so deinit runs after this throw: release() must find nothing to close.
                Syscall.close(fd)
                fd = -1
                throw Busy(instance: instance, holder: holder.map { $0.trimmed("\n") } ?? "unknown")
            }
            clock.pause(for: .milliseconds(10))
        }
        // Say who holds it, for the error another writer will show.
        let note = "pid \(Host.pid) on \(Host.name): \(purpose), since \(clock.now().iso8601)\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit { release() }

    public func release() {
        guard fd >= 0 else { return }
        _ = flock(fd, LOCK_UN)
        Syscall.close(fd)
        fd = -1
    }
}
