#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// One inotify event: which watch, what happened, and the name in the folder.
public struct InotifyEvent: Sendable, Equatable {
    public var wd: Int32
    public var mask: UInt32
    public var cookie: UInt32
    public var name: String

    public var isOverflow: Bool { mask & UInt32(IN_Q_OVERFLOW) != 0 }
    public var isDirectory: Bool { mask & UInt32(IN_ISDIR) != 0 }
    /// The watched folder itself went away (deleted, or its file system unmounted).
    public var watchGone: Bool { mask & (UInt32(IN_IGNORED) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)) != 0 }
    /// The kernel dropped the watch (its folder is gone): forget the descriptor.
    public var watchDropped: Bool { mask & UInt32(IN_IGNORED) != 0 }
    /// A name appeared or was written and closed.
    public var arrived: Bool { mask & (UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE)) != 0 }
    /// A file is complete: closed after writing, or moved in.
    public var completed: Bool { mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)) != 0 }
    /// A name went away (deleted, or moved out).
    public var removed: Bool { mask & (UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)) != 0 }
}

public enum WatchError: Error, Sendable, CustomStringConvertible {
    case watchLimit(path: String)
    case cannotWatch(path: String, Errno)
    case cannotStart(Errno)

    public var description: String {
        switch self {
        case .watchLimit(let path):
            "cannot watch \(path): the inotify watch table is full (fs.inotify.max_user_watches); raise it with "
                + "`sudo sysctl fs.inotify.max_user_watches=524288` (and in /etc/sysctl.d/ to keep it)"
        case .cannotWatch(let path, let e): "cannot watch \(path): \(e)"
        case .cannotStart(let e): "cannot start inotify: \(e)"
        }
    }
}

/// inotify(7), wrapped once: EINTR retried, errors as values inside, and
/// events read on a thread of their own and handed out as an AsyncStream.
/// Only folders are watched (a watch on a file is lost when an editor
/// renames over it).
public final class Inotify: @unchecked Sendable {
    /// A file complete or gone (docs/commands.md, "The watcher"), plus new and
    /// vanished folders.
    public static let folderEvents = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM)
        | UInt32(IN_DELETE) | UInt32(IN_CREATE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_ONLYDIR)

    private let fd: Int32
    /// A pipe written to wake the reading thread when it should stop.
    private let wakeRead: Int32
    private let wake: Int32

    public init() throws(WatchError) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw .cannotStart(Errno.current) }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            Syscall.close(fd)
            throw .cannotStart(Errno.current)
        }
        for p in pipeFDs {
            _ = fcntl(p, F_SETFL, fcntl(p, F_GETFL) | O_NONBLOCK)
            _ = fcntl(p, F_SETFD, FD_CLOEXEC)
        }
        self.fd = fd
        self.wakeRead = pipeFDs[0]
        self.wake = pipeFDs[1]
    }

    deinit {
        Syscall.close(fd)
        Syscall.close(wakeRead)
        Syscall.close(wake)
    }

    /// Watches a folder; the same folder twice gives the same descriptor.
    public func watch(_ path: String, mask: UInt32 = Inotify.folderEvents) throws(WatchError) -> Int32 {
        switch Syscall.retrying({ inotify_add_watch(fd, path, mask) }, failed: { $0 < 0 }) {
        case .success(let wd): return wd
        case .failure(let e) where e.code == ENOSPC: throw .watchLimit(path: path)
        case .failure(let e): throw .cannotWatch(path: path, e)
        }
    }

    public func unwatch(_ wd: Int32) {
        _ = inotify_rm_watch(fd, wd)
    }

    /// Every event ready now, without waiting.
    public func readAvailable() -> [InotifyEvent] {
        var events: [InotifyEvent] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { Syscall.read(fd, into: $0) }
            guard case .success(let count) = n, count > 0 else { break }
            var offset = 0
            while offset + 16 <= count {
                let wd = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let cookie = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self) }
                let len = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                // The name is NUL-padded to `len` bytes, right after the 16-byte header.
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + len)].prefix { $0 != 0 }
                events.append(InotifyEvent(wd: wd, mask: mask, cookie: cookie, name: String(decoding: nameBytes, as: UTF8.self)))
                offset += 16 + len
            }
        }
        return events
    }

    /// Events as they come, in batches (everything ready at once is one
    /// batch: a burst of writes is seen together). Reading happens on a
    /// thread of its own, which sleeps in poll(2) until there is something.
    public func events() -> AsyncStream<[InotifyEvent]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [InotifyEvent].self)
        let fd = self.fd, wakeRead = self.wakeRead
        let thread = ReaderThread { [self] in
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            while true {
                let r = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, 2, -1) }
                if r < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if fds[1].revents != 0 { break }
                let batch = self.readAvailable()
                if !batch.isEmpty { continuation.yield(batch) }
            }
            continuation.finish()
        }
        continuation.onTermination = { [wake] _ in
            var one: UInt8 = 1
            _ = write(wake, &one, 1)
        }
        thread.start()
        return stream
    }

    /// Stops the reading thread (the stream finishes).
    public func stop() {
        var one: UInt8 = 1
        _ = write(wake, &one, 1)
    }
}

/// A plain pthread: the reader blocks in poll(2), which must not hold one
/// of the few threads of Swift's cooperative pool.
final class ReaderThread: ThreadBody, @unchecked Sendable {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }

    override func run() { body() }

    func start() {
        if let thread = startThread() { pthread_detach(thread) }
    }
}
