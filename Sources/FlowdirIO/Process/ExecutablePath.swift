#if canImport(Glibc)
import Glibc
#endif

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
