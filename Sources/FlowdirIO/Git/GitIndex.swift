#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

extension GitRepository {
    /// Brings the index in step with a commit flowdir built from trees, for
    /// the paths it touched, using the files' real stat data so that `git
    /// status` sees them clean without rehashing. The rest of the index is
    /// left as it is.
    /// `stamps`: the stat of files as flowdir wrote them (see `FileStamp`);
    /// a path without one is looked up now.
    /// The caller holds `.git/index.lock` (flowdir's marked lock, see
    /// `IndexLock`), so libgit2 cannot take it to write the index in place:
    /// the new index is written beside it and renamed over it, as git does.
    public func updateIndex(_ changes: [TreeChange], stamps: [String: FileStamp] = [:]) throws(GitError) {
        guard !changes.isEmpty else { return }
        let file = gitDirectory + "/index"
        // A second name for the index as it is: libgit2 reads it from there
        // and writes the result there by rename, leaving `index` untouched.
        let staged = gitDirectory + "/index.flowdir"
        var index: OpaquePointer?
        // The index flowdir wrote last, still parsed, while the file is the
        // one it wrote (a writer that replaced it made a new inode): a 5,000
        // -file index is not parsed again for each commit of a run.
        if let own = ownIndex, FileStamp.of(file) == own.stamp {
            index = own.index
        } else {
            if let own = ownIndex { git_index_free(own.index) }
            ownIndex = nil
            unlink(staged)
            if link(file, staged) != 0, errno != ENOENT { throw ObjectFile.failure("index write", "link \(file) to \(staged)") }
            defer { unlink(staged) }
            try git("git_index_open(\(staged))") { git_index_open(&index, staged) }
        }
        // Kept only once written and in place: a failure part way leaves entries that are not on disk.
        ownIndex = nil
        var kept = false
        defer { if !kept { git_index_free(index) } }
        defer { unlink(staged) }
        try apply(changes, stamps: stamps, to: index)
        try git("git_index_write(\(staged))") { git_index_write(index) }
        guard rename(staged, file) == 0 else { throw ObjectFile.failure("index write", "rename \(staged) to \(file)") }
        if let stamp = FileStamp.of(file), let index {
            ownIndex = (index, stamp)
            kept = true
        }
    }

    private func apply(_ changes: [TreeChange], stamps: [String: FileStamp], to index: OpaquePointer?) throws(GitError) {
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
                var entry = git_index_entry()
                if let stamp = stamps[path] {
                    stamp.fill(&entry)
                } else {
                    var st = stat()
                    if fstatat(root >= 0 ? root : AT_FDCWD, root >= 0 ? path : workdir + "/" + path, &st, AT_SYMLINK_NOFOLLOW) == 0 {
                        FileStamp(st).fill(&entry)
                    }
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
    }
}

extension GitRepository {
    /// Seconds since someone else last wrote `.git/index` (a person's `git
    /// add`), from its change time; `nil` when it is the index flowdir
    /// itself wrote last in this process, the one it first saw (written
    /// before it opened the instance: by `flowdir new`, say), or none.
    public func secondsSinceOthersWroteIndex() -> Double? {
        var st = stat()
        guard lstat(gitDirectory + "/index", &st) == 0 else { return nil }
        let stamp = FileStamp(st)
        if let own = ownIndex, stamp == own.stamp { return nil }
        if ownIndex == nil, firstSeenIndex == nil || firstSeenIndex == stamp {
            firstSeenIndex = stamp
            return nil
        }
        return max(0, SystemClock().now().seconds - st.st_ctim.seconds)
    }
}

/// What git's index keeps of a file's stat, by which git knows the file
/// unchanged without reading it. Taken by flowdir as it writes a file (on
/// the open file, once renamed into place), not when the index is written
/// later: by then a person may have edited the file, and the index would
/// vouch for their bytes with the blob flowdir wrote.
public struct FileStamp: Sendable, Equatable, Codable {
    // Plain numbers, as the index holds them (git_index_time is not Equatable).
    var ctime: Int32, ctimeNanoseconds: UInt32
    var mtime: Int32, mtimeNanoseconds: UInt32
    var dev: UInt32, ino: UInt32, uid: UInt32, gid: UInt32, size: UInt32

    init(_ st: stat) {
        ctime = Int32(truncatingIfNeeded: st.st_ctim.tv_sec)
        ctimeNanoseconds = UInt32(st.st_ctim.tv_nsec)
        mtime = Int32(truncatingIfNeeded: st.st_mtim.tv_sec)
        mtimeNanoseconds = UInt32(st.st_mtim.tv_nsec)
        dev = UInt32(truncatingIfNeeded: st.st_dev)
        ino = UInt32(truncatingIfNeeded: st.st_ino)
        uid = st.st_uid
        gid = st.st_gid
        size = UInt32(truncatingIfNeeded: st.st_size)
    }

    /// The stat of `path` now (not following a symlink), if it has one.
    public static func of(_ path: String) -> FileStamp? {
        var st = stat()
        return lstat(path, &st) == 0 ? FileStamp(st) : nil
    }

    func fill(_ entry: inout git_index_entry) {
        entry.ctime = git_index_time(seconds: ctime, nanoseconds: ctimeNanoseconds)
        entry.mtime = git_index_time(seconds: mtime, nanoseconds: mtimeNanoseconds)
        entry.dev = dev
        entry.ino = ino
        entry.uid = uid
        entry.gid = gid
        entry.file_size = size
    }
}
