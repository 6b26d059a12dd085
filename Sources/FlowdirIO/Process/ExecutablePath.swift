#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Finds a program on PATH the way execvp(3) would, once, in this process.
/// swift-subprocess resolves a bare name by forking once per PATH entry
/// until exec succeeds (eight forks for `touch` on a usual PATH), which
/// made spawning a job three times dearer than it needs to be.
public enum ExecutablePath {
    /// The full path of `name`, or nil when no PATH entry holds an
    /// executable file of that name. Relative entries (and the empty one,
    /// meaning ".") are taken from `directory`, where the child will run.
    public static func find(_ name: String, path: String? = nil, from directory: String) -> String? {
        let search = path ?? getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for entry in search.split(separator: ":", omittingEmptySubsequences: false) {
            let dir = entry.isEmpty ? directory : entry.hasPrefix("/") ? String(entry) : "\(directory)/\(entry)"
            let candidate = "\(dir)/\(name)"
            var st = stat()
            guard stat(candidate, &st) == 0, st.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 else { continue }
            return candidate
        }
        return nil
    }
}

/// `ExecutablePath.find` remembered for a second, as a shell's `hash`
/// table but short-lived: a run of many short jobs looks up the same
/// program a thousand times (five stats each on a usual PATH), while a
/// program installed or removed meanwhile is seen within the second.
/// Only PATHs of absolute entries are remembered: a relative one depends
/// on the job's folder.
final class ProgramCache: Sendable {
    static let shared = ProgramCache()
    /// Programs found along `search`, by name: the cache holds one search
    /// path (jobs share the PATH), so a look-up hashes a name, not the
    /// name and the whole PATH, as every job's start did.
    private let cache = Mutex<(search: String, found: [String: (path: String, at: Double)])>(("", [:]))
    private let lifetime: Double

    init(lifetime: Double = 1) { self.lifetime = lifetime }

    func find(_ name: String, path: String?, from directory: String, now: Double = Syscall.monotonicSeconds()) -> String? {
        let search = path ?? getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        if let hit = cache.withLock({ search == $0.search ? $0.found[name] : nil }), now - hit.at < lifetime { return hit.path }
        let cacheable = search.split(separator: ":", omittingEmptySubsequences: false).allSatisfy { $0.hasPrefix("/") }
        guard cacheable else { return ExecutablePath.find(name, path: search, from: directory) }
        let resolved = ExecutablePath.find(name, path: search, from: directory)
        cache.withLock {
            if search != $0.search || $0.found.count > 256 {
                $0.search = search
                $0.found.removeAll()
            }
            $0.found[name] = resolved.map { ($0, now) }
        }
        return resolved
    }
}
