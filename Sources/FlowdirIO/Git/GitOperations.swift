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
        for (name, what) in WatchRules.gitOperations.sorted(by: { $0.key < $1.key })
        where access(path + "/.git/" + name, F_OK) == 0 {
            return what
        }
        return nil
    }
}
