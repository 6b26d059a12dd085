#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import Foundation

/// What another process is doing, read from /proc without touching it: the
/// events a test of a child `flowdir` waits on instead of sleeping.
public enum ProcessProbe {
    /// Whether any process holds a `flock` on `path` (`/proc/locks`, matched
    /// by device and inode; the lock is only looked at, never taken, so the
    /// holder is not slowed or refused).
    public static func flockHeld(on path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, let locks = read("/proc/locks") else { return false }
        // "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF": major and minor in hex, the inode in decimal.
        let dev = UInt64(st.st_dev)  // glibc's encoding of major and minor (gnu_dev_major, gnu_dev_minor)
        let major = UInt32(truncatingIfNeeded: ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff)))
        let minor = UInt32(truncatingIfNeeded: (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff)))
        let id = format2(major) + ":" + format2(minor) + ":" + String(st.st_ino)
        return locks.split(separator: "\n").contains { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            return f.count > 5 && f[1] == "FLOCK" && f[5] == id
        }
    }

    /// Whether process `pid` has inotify watches in place (an `inotify wd:`
    /// line in one of its descriptors' fdinfo): a watcher that is listening.
    public static func hasInotifyWatches(_ pid: Int32) -> Bool {
        guard let dir = opendir("/proc/\(pid)/fdinfo") else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            if read("/proc/\(pid)/fdinfo/\(name)")?.contains("inotify wd:") == true { return true }
        }
        return false
    }

    private static func format2(_ n: UInt32) -> String {
        let hex = String(n, radix: 16)
        return hex.count < 2 ? "0" + hex : hex
    }

    /// Every process below `root` now (its children, theirs, and so on),
    /// from each process's parent in /proc/PID/stat.
    public static func descendants(of root: Int32) -> [Int32] {
        var parents: [Int32: Int32] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(name), let fields = ProcessTable.statFields(of: pid) else { continue }
            if fields.count > 2, let parent = Int32(fields[1]) { parents[pid] = parent }
        }
        var found: [Int32] = [], frontier: Set<Int32> = [root]
        while !frontier.isEmpty {
            let next = parents.filter { frontier.contains($0.value) }.map(\.key)
            found += next
            frontier = Set(next)
        }
        return found
    }

    /// Waits until `pid` has really stopped (state T in /proc/PID/stat) or
    /// is gone: `kill(SIGSTOP)` returns before the signal is taken, and a
    /// process still running may fork once more (at most 5 s, then it goes on).
    public static func waitStopped(_ pid: Int32) {
        Eventually.blockingUntil(timeout: .seconds(5), every: .milliseconds(10)) {
            guard let state = ProcessTable.statFields(of: pid)?.first else { return true }
            return ["T", "t", "Z", "X"].contains(state)
        }
    }

    private static func read(_ path: String) -> String? {
        (try? LocalFileSystem().readFile(path, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) }
    }
}
