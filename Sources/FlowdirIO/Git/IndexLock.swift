#if canImport(Glibc)
import Glibc
#endif
import CLibGit2
import FlowdirCore

/// git's own lock on its index, `.git/index.lock`, held by flowdir from
/// the moment it starts a commit until HEAD has moved to it, and whenever
/// else it writes the index (a flush, recovery). The index is
/// written first (see `InstanceStore.stageIndex`): `git commit` reads HEAD,
/// then the index without this lock, and takes it only to write, so a
/// person's commit that read either in that moment is refused, as git
/// refuses beside any other git command at work ("Unable to create
/// '…/index.lock': File exists"), and never builds on a new HEAD from an
/// index behind it. A person's `git add` or `git commit` at any other
/// moment goes through, and flowdir's next commit builds on theirs.
///
/// The file says it is flowdir's, so that flowdir (and the watcher's check
/// for a person's git at work) can tell it from git's own; a holder that
/// died leaves it, and the next flowdir to open the instance removes it.
final class IndexLock {
    let path: String
    private(set) var isHeld = false
    let clock: FlowdirClock

    init(gitDirectory: String, clock: FlowdirClock = .system) {
        path = gitDirectory + "/index.lock"
        self.clock = clock
    }

    static let marker = "flowdir "

    /// Takes the lock, waiting up to `timeout` seconds for a git command
    /// that holds it; then throws, naming the file.
    func take(timeout: Double) throws(GitError) {
        guard !isHeld else { return }
        var waited = 0.0
        var pause = 0.002
        // Made whole beside it, then linked into place: link(2) fails if the
        // lock exists, and a flowdir killed in between never leaves an empty
        // lock that no one could tell from git's.
        let staged = path + ".flowdir-\(Files.processID)"
        unlink(staged)
        let text = Self.marker + "\(Files.processID): flowdir is committing; the index is written next\n"
        let fd = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ObjectFile.failure("index lock", "create \(staged)") }
        let written = Files.writeAll(fd, Array(text.utf8))
        close(fd)
        defer { unlink(staged) }
        if case .failure(let e) = written { throw GitError(call: "index lock", code: -1, message: "write \(staged): \(e)") }
        while true {
            if link(staged, path) == 0 {
                isHeld = true
                return
            }
            guard errno == EEXIST else { throw ObjectFile.failure("index lock", "create \(path)") }
            guard waited < timeout else {
                throw GitError(call: "index lock", code: GIT_ELOCKED.rawValue,
                               message: "\(path) exists: a git command is at work in this instance, or one stopped without removing it. "
                                   + "flowdir commits once it is gone; if no git command is running there, remove that file")
            }
            clock.pause(for: .seconds(pause))
            waited += pause
            pause = min(pause * 2, 0.1)
        }
    }

    /// Lets go of the lock (after the index was renamed into place, or with nothing to write).
    func release() {
        guard isHeld else { return }
        unlink(path)
        isHeld = false
    }

    /// Whether the lock file at `path` is one flowdir made.
    static func isFlowdirs(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: marker.utf8.count)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n == bytes.count && bytes == Array(marker.utf8)
    }

    /// Removes a lock an earlier flowdir left (it died holding it); git's own is left alone.
    static func removeStale(gitDirectory: String) {
        let path = gitDirectory + "/index.lock"
        if isFlowdirs(path) { unlink(path) }
    }

    /// The files a flowdir killed while it made a lock left (see `take`).
    static func removeStrays(gitDirectory: String) {
        for name in (try? LocalFileSystem().listDirectory(gitDirectory)) ?? [] where name.hasPrefix("index.lock.flowdir-") {
            unlink(gitDirectory + "/" + name)
        }
    }
}
