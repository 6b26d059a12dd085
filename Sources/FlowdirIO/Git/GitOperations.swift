#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// A person's git command in an instance, as seen from its files.
public enum GitOperations {
    /// The operation left half-way in the repository of the working tree
    /// at `path` (a conflicted merge, a rebase), waiting for a person to
    /// finish or abort it; `nil` if there is none.
    public static func stopped(inWorkTree path: String) -> String? {
        WatchRules.gitOperations.first { access(path + "/.git/" + $0.file, F_OK) == 0 }?.name
    }

    /// Seconds since git's porcelain last wrote one of its files in the
    /// repository of the working tree at `path` (0 while its index is being
    /// written); `nil` if it has not. The watcher's events say the same a
    /// little later; this sees a command that began an instant ago.
    public static func secondsSinceAtWork(inWorkTree path: String) -> Double? {
        let git = path + "/.git/"
        let wall = SystemClock().now().seconds
        var st = stat()
        func age(_ name: String) -> Double? {
            guard fstatat(AT_FDCWD, git + name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
            return max(0, wall - st.st_ctim.seconds)
        }
        // A lock left by a git that died is not git at work (git itself refuses to go on then).
        // flowdir's own hold on the index (see `IndexLock`) is not a person's git.
        if let lock = age("index.lock"), lock < staleLock, !IndexLock.isFlowdirs(git + "index.lock") { return 0 }
        return WatchRules.gitCommandStamps.compactMap(age).min()
    }

    static let staleLock = 10.0
}
