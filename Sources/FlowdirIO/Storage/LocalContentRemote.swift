#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Foundation

/// A remote repository on this machine (a path or a `file://` URL): its
/// content in its own `lfs/objects/` (a bare repository's, or `.git/lfs/`
/// of one with a work tree), where git-lfs's own file transfer looks.
public struct LocalContentRemote: ContentRemote {
    public let name: String
    /// The remote repository's git directory.
    public let gitDirectory: String

    public init(name: String, repository: String) {
        self.name = name
        var isDirectory = stat()
        // A repository with a work tree keeps its git directory in `.git`.
        gitDirectory = lstat(repository + "/.git", &isDirectory) == 0 && isDirectory.st_mode & S_IFMT == S_IFDIR
            ? repository + "/.git" : repository
    }

    var store: ContentStore { ContentStore(gitDirectory: gitDirectory) }

    public func holding(_ pointers: [LFSPointer]) async throws(ContentRemoteError) -> Set<String> {
        try reachable()
        return Set(pointers.filter(store.has).map(\.oid))
    }

    /// Hashed where it lies: nothing to copy.
    public func holdingVerified(_ pointers: [LFSPointer], scratch: String) async throws(ContentRemoteError) -> Set<String> {
        try reachable()
        let remote = store
        return Set(pointers.filter { remote.has($0) && (try? remote.verify($0)) == true }.map(\.oid))
    }

    @discardableResult
    public func upload(_ pointers: [LFSPointer], from local: ContentStore) async throws(ContentRemoteError) -> Set<String> {
        try reachable()
        let remote = store
        var sent = Set<String>()
        for p in pointers where !remote.has(p) {
            try await Self.offThread { () throws(ContentRemoteError) in try Self.transfer(p, from: local, to: remote, sending: true) }
            sent.insert(p.oid)
        }
        return sent
    }

    public func download(_ pointers: [LFSPointer], into local: ContentStore) async throws(ContentRemoteError) {
        try reachable()
        let remote = store
        for p in pointers where !local.has(p) {
            guard remote.has(p) else { throw .missing(remote: name, oid: p.oid) }
            try await Self.offThread { () throws(ContentRemoteError) in try Self.transfer(p, from: remote, to: local, sending: false) }
        }
    }

    /// The repository must be there: a removed or unmounted disk is unreachable, not empty.
    func reachable() throws(ContentRemoteError) {
        var st = stat()
        guard stat(gitDirectory, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw .unreachable(remote: name, why: "\(gitDirectory) is not there")
        }
    }

    /// One object from one store into the other, streamed and checked
    /// against its oid as it is read.
    static func transfer(_ p: LFSPointer, from: ContentStore, to: ContentStore, sending: Bool) throws(ContentRemoteError) {
        let source = from.path(of: p.oid)
        let fd = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = Errno.current
            if e.code == ENOENT { throw sending ? .corrupt(.io(source, e)) : .missing(remote: source, oid: p.oid) }
            throw sending ? .corrupt(.io(source, e)) : .refused(remote: source, why: "\(e)")
        }
        defer { close(fd) }
        let receiver: ContentStore.Receiver
        do { receiver = try to.receive(p) } catch {
            throw sending ? .refused(remote: to.gitDirectory, why: "\(error)") : .local(error)
        }
        do throws(ContentStore.Failure) {
            try ContentStore.pump(from: fd, path: source) { bytes throws(ContentStore.Failure) in try receiver.write(bytes) }
            _ = try receiver.finish()
        } catch {
            receiver.abandon()
            if case .mismatch = error { throw sending ? .corrupt(error) : .refused(remote: source, why: "\(error)") }
            throw sending ? .refused(remote: to.gitDirectory, why: "\(error)") : .local(error)
        }
    }

    /// Blocking file work off the caller's thread (a large copy must not hold an actor).
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws(ContentRemoteError) -> T) async throws(ContentRemoteError) -> T {
        let result: Result<T, ContentRemoteError> = await withCheckedContinuation { done in
            Thread.detachNewThread {
                do throws(ContentRemoteError) { done.resume(returning: .success(try work())) } catch { done.resume(returning: .failure(error)) }
            }
        }
        return try result.get()
    }
}
