#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import Foundation

/// `DIR/access.log`: one line per request, `ISO-time epoch-seconds METHOD
/// PATH STATUS` (`reset` for a dropped connection), written before the
/// answer leaves, so a client that has its answer finds its line. Tests
/// read it (no status request while polling was paused). The token is
/// never in it: it travels in a header, and only paths are written.
final class AccessLog: Sendable {
    private let fd: Int32

    init(path: String) throws(JobServerError) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cannotStart("cannot open the access log \(path): \(Errno.current)") }
    }

    func write(method: String, path: String, status: String) {
        let now = SystemClock().now()
        let line = Array("\(now.iso8601) \(String(format: "%.3f", now.seconds)) \(method) \(path) \(status)\n".utf8)
        // One write(2) with O_APPEND: lines from concurrent requests never interleave.
        _ = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    deinit { close(fd) }
}
