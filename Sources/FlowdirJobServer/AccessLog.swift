#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import Foundation

/// `DIR/access.log`: one line per request, `ISO-time epoch-seconds METHOD
/// PATH STATUS` (`reset` for a dropped connection), the time the request
/// came (a create held by `Prefer: wait` is answered much later), written
/// before the answer leaves, so a client that has its answer finds its line. Tests
/// read it (no status request while polling was paused). The token is
/// never in it: it travels in a header, and only paths are written.
///
/// Bounded: past `limit` bytes it becomes `access.log.1` (the one before
/// is dropped) and a new one is begun, so a flood of requests costs at
/// most twice the limit on disk.
final class AccessLog: Sendable {
    let path: String
    let limit: Int
    /// The open file and the bytes it holds.
    private let state: Locked<(fd: Int32, size: Int)>

    init(path: String, limit: Int = 16 << 20) throws(JobServerError) {
        self.path = path
        self.limit = max(4096, limit)
        let fd = Self.open(path)
        guard fd >= 0 else { throw .cannotStart("cannot open the access log \(path): \(Errno.current)") }
        var st = stat()
        let size = fstat(fd, &st) == 0 ? Int(st.st_size) : 0
        state = Locked((fd, size))
    }

    static func open(_ path: String) -> Int32 { Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) }

    func write(method: String, path: String, status: String, arrived: Timestamp = SystemClock().now()) {
        let now = arrived
        let line = Array("\(now.iso8601) \(String(format: "%.3f", now.seconds)) \(Self.clean(method)) \(Self.clean(path)) \(status)\n".utf8)
        state.locked { s in
            if s.size + line.count > limit {
                // Renamed while open: lines written meanwhile by no one (all writes hold the lock).
                if rename(self.path, self.path + ".1") == 0 || errno == ENOENT {
                    let fd = Self.open(self.path)
                    if fd >= 0 {
                        close(s.fd)
                        s = (fd, 0)
                    }
                }
            }
            // One write(2) with O_APPEND.
            let n = line.withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
            if n > 0 { s.size += n }
        }
    }

    /// Spaces and control characters would make a line that reads as two, or as other fields.
    static func clean(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value <= 0x20 || $0.value == 0x7F ? "_" : $0 }))
    }

    deinit { _ = state.locked { close($0.fd) } }
}
