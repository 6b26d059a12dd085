import CLibGit2

/// Writes loose objects through a loose-object backend of its own rather
/// than `git_odb_write`: libgit2 first "freshens" an object, and for every
/// object that is new (most of them) that means re-listing `objects/pack/`
/// and looking for a multi-pack-index, ~40 syscalls an object. Objects
/// already known to be stored (written or seen by this process, e.g. the
/// empty blob, an unchanged `out/` tree) are not written again at all.
/// Objects that only live in a pack are written loose once more; git allows that.
final class ObjectWriter {
    private let backend: UnsafeMutablePointer<git_odb_backend>
    private var known: Set<ObjectID> = []

    init(objectsDirectory: String) throws(GitError) {
        _ = LibGit2.ready
        var b: UnsafeMutablePointer<git_odb_backend>?
        // -1: libgit2's default level for loose objects (Z_BEST_SPEED); no fsync, as configured.
        try git("git_odb_backend_loose(\(objectsDirectory))") { git_odb_backend_loose(&b, objectsDirectory, -1, 0, 0, 0) }
        backend = b!
    }

    deinit { backend.pointee.free(backend) }

    func write(_ bytes: [UInt8], type: git_object_t) throws(GitError) -> ObjectID {
        var oid = git_oid()
        let hashed = bytes.withUnsafeBytes { git_odb_hash(&oid, $0.baseAddress, $0.count, type) }
        try git("git_odb_hash") { hashed }
        let id = ObjectID(oid)
        if known.contains(id) { return id }
        if backend.pointee.exists(backend, &oid) == 0 {
            let code = bytes.withUnsafeBytes { backend.pointee.write(backend, &oid, $0.baseAddress, $0.count, type) }
            try git("loose write of \(id.short)") { code }
        }
        // A bound on memory for a long-lived watcher; forgetting only costs a stat.
        if known.count >= 100_000 { known.removeAll(keepingCapacity: true) }
        known.insert(id)
        return id
    }
}
