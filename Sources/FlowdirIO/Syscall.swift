#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An errno value with its text; syscalls below return `Result<_, Errno>`
/// and the callers that face users turn it into an error that says where.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: Int32
    public init(_ code: Int32) { self.code = code }
    public static var current: Errno { Errno(errno) }
    public var description: String { String(cString: strerror(code)) }
}

/// Each syscall wrapped once: EINTR retried, errno captured on the spot.
enum Syscall {
    static func retrying<T>(_ body: () -> T, failed: (T) -> Bool) -> Result<T, Errno> {
        while true {
            let value = body()
            if !failed(value) { return .success(value) }
            let e = errno
            if e == EINTR { continue }
            return .failure(Errno(e))
        }
    }

    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Result<Int32, Errno> {
        retrying({ Glibc.open(path, flags | O_CLOEXEC, mode) }, failed: { $0 < 0 })
    }

    /// Seconds on the monotonic clock: for timeouts and ages, never for dates.
    static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return t.seconds
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)  // never retried: on Linux the fd is gone either way
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retrying({ Glibc.read(fd, buffer.baseAddress, buffer.count) }, failed: { $0 < 0 })
    }

    static func fileStatus(_ fd: Int32) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        return retrying({ Glibc.fstat(fd, &st) }, failed: { $0 != 0 }).map { _ in st }
    }

    static func fileStatus(_ path: String) -> Result<Glibc.stat, Errno> {
        var st = Glibc.stat()
        // fstatat, because in Swift `stat` names the struct before the function.
        return retrying({ fstatat(AT_FDCWD, path, &st, 0) }, failed: { $0 != 0 }).map { _ in st }
    }
}

extension timespec {
    /// As seconds (a file's times, a clock's reading).
    var seconds: Double { Double(tv_sec) + Double(tv_nsec) / 1e9 }
}
