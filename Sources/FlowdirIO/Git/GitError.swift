#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// A libgit2 call that failed: which call, libgit2's code and its message
/// (read on the failing thread, right after the call, as libgit2 requires).
public struct GitError: Error, Equatable, Sendable, CustomStringConvertible {
    public var call: String
    public var code: Int32
    public var message: String

    public init(call: String, code: Int32, message: String) {
        self.call = call
        self.code = code
        self.message = message
    }

    public var description: String { "\(call) failed: \(message)" }

    public var isNotFound: Bool { code == GIT_ENOTFOUND.rawValue }
    public var isLocked: Bool { code == GIT_ELOCKED.rawValue }
    /// A ref moved under us: someone else committed first.
    public var isModified: Bool { code == GIT_EMODIFIED.rawValue }
}

/// Runs a libgit2 call and throws `GitError` on a negative result.
@discardableResult
func git(_ call: String, _ body: () -> Int32) throws(GitError) -> Int32 {
    let code = body()
    guard code >= 0 else {
        let saved = errno
        var message = git_error_last().map { String(cString: $0.pointee.message) } ?? "error \(code)"
        // Some of libgit2's messages end where the cause should follow ("failed to lock file '…': ").
        while message.hasSuffix(" ") || message.hasSuffix(":") { message.removeLast() }
        if message.hasSuffix("'") || message.isEmpty {
            message += code == GIT_ELOCKED.rawValue
                ? ": the lock file exists (a git command is at work there, or one stopped without removing it)"
                : saved != 0 ? ": " + String(cString: strerror(saved)) : " (libgit2 error \(code))"
        }
        throw GitError(call: call, code: code, message: message)
    }
    return code
}

/// libgit2 is initialised once per process, with the options flowdir wants.
enum LibGit2 {
    /// libgit2's one-time set-up, done by whichever thread needs it first.
    static let ready: Void = {
        git_libgit2_init()
        // Trees are built from blobs written just before; checking each
        // referenced object exists on every tree write only costs time.
        _ = flowdir_git_set_strict_object_creation(0)
        // fsync guards against power loss, not kill -9; like git, off by default.
        _ = flowdir_git_set_fsync_gitdir(0)
        // Trees are cached only up to 4 KB by default; an instance's
        // `nodes/` tree of 1,000 nodes is ~45 KB, and was inflated and
        // parsed again on every path lookup.
        _ = flowdir_git_set_cache_object_limit(GIT_OBJECT_TREE, 8 << 20)
    }()
}
