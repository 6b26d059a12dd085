#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

extension GitRepository {
    /// Brings the index in step with a commit flowdir built from trees, for
    /// the paths it touched, using the files' real stat data so that `git
    /// status` sees them clean without rehashing. The rest of the index is
    /// left as it is.
    public func updateIndex(_ changes: [TreeChange]) throws(GitError) {
        guard !changes.isEmpty else { return }
        var index: OpaquePointer?
        try git("git_repository_index") { git_repository_index(&index, pointer) }
        defer { git_index_free(index) }
        // Another writer (git itself, in a pull) may have rewritten it meanwhile.
        try git("git_index_read") { git_index_read(index, 0) }
        // Paths are looked up from the work tree's folder, not from /: a
        // few components each instead of the whole absolute path.
        let root = Glibc.open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if root >= 0 { Glibc.close(root) } }
        for change in changes {
            switch change {
            case .remove(let path):
                let code = git_index_remove(index, path, 0)
                if code != GIT_ENOTFOUND.rawValue { try git("git_index_remove(\(path))") { code } }
            case .blob(let path, let id, let executable):
                var st = stat()
                var entry = git_index_entry()
                if fstatat(root >= 0 ? root : AT_FDCWD, root >= 0 ? path : workdir + "/" + path, &st, AT_SYMLINK_NOFOLLOW) == 0 {
                    entry.ctime = git_index_time(seconds: Int32(truncatingIfNeeded: st.st_ctim.tv_sec), nanoseconds: UInt32(st.st_ctim.tv_nsec))
                    entry.mtime = git_index_time(seconds: Int32(truncatingIfNeeded: st.st_mtim.tv_sec), nanoseconds: UInt32(st.st_mtim.tv_nsec))
                    entry.dev = UInt32(truncatingIfNeeded: st.st_dev)
                    entry.ino = UInt32(truncatingIfNeeded: st.st_ino)
                    entry.uid = st.st_uid
                    entry.gid = st.st_gid
                    entry.file_size = UInt32(truncatingIfNeeded: st.st_size)
                }
                entry.mode = (executable ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB).rawValue
                entry.id = id.raw
                let code = path.withCString { cPath in
                    entry.path = cPath
                    return git_index_add(index, &entry)
                }
                try git("git_index_add(\(path))") { code }
            }
        }
        try git("git_index_write") { git_index_write(index) }
    }
}
