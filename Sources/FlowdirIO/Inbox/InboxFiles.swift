#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// The files of an instance's `inbox/`, as `lstat` sees them (a symlink is
/// a symlink, never what it points to).
public enum InboxFiles {
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var facts: AnswerCheck.Facts
        /// Changes when the file does: inode, size and mtime.
        public var stamp: String
        /// Seconds since it last changed (wall clock): a file still being
        /// written in place is left until it has been quiet a moment.
        public var quietFor: Double
    }

    public static func scan(_ instance: String) -> [Entry] {
        let dir = Path.join(instance, InstancePaths.inbox)
        let listed = (try? LocalFileSystem().listDirectoryWithStatus(dir)) ?? []
        let wall = SystemClock().now().seconds
        return listed.map { name, st in
            let kind: AnswerCheck.Kind
            switch st.st_mode & S_IFMT {
            case S_IFREG: kind = .regular
            case S_IFDIR: kind = .directory
            case S_IFLNK: kind = .symlink
            case S_IFCHR, S_IFBLK: kind = .device
            default: kind = .other
            }
            let mtime = st.st_mtim.seconds, ctime = st.st_ctim.seconds
            return Entry(name: name, facts: .init(kind: kind, size: Int(st.st_size)),
                         stamp: "\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)",
                         // A time set ahead (copied from a machine whose clock is
                         // fast) would hold the answer back until then: only the
                         // inode's own change time counts for it.
                         quietFor: wall - (mtime > wall ? ctime : max(mtime, ctime)))
        }
    }

    /// The inbox folder's inode and change times: it changes when a name
    /// appears, goes or is renamed in it.
    public static func folderStamp(_ instance: String) -> String? {
        guard case .success(let st) = Syscall.fileStatus(Path.join(instance, InstancePaths.inbox)) else { return nil }
        return "\(st.st_ino):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec):\(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)"
    }

    /// Sets a refused file aside as `<name>.rejected` (or `<name>.2.rejected`…):
    /// nothing a person drops is ever deleted. Returns the new name.
    /// A name past what the file system allows is shortened (see `fitting`).
    @discardableResult
    public static func setAside(_ instance: String, _ name: String) throws(FileSystemError) -> String {
        let dir = Path.join(instance, InstancePaths.inbox)
        var target = fitting(name, suffix: ".rejected")
        var n = 2
        while Files.exists(Path.join(dir, target)) {
            target = fitting(name, suffix: ".\(n).rejected")
            n += 1
        }
        try Files.rename(Path.join(dir, name), Path.join(dir, target))
        return target
    }

    /// The longest name flowdir gives a file it writes itself: its temp
    /// file's name (see `Files.writeAtomically`) is longer by up to 30 bytes.
    public static let writtenNameLimit = 220

    /// `base + suffix`, with `base` cut (at a character, marked `~`) so
    /// that the name fits in the 255 bytes a Linux file system allows.
    public static func fitting(_ base: String, suffix: String, limit: Int = 255) -> String {
        guard base.utf8.count + suffix.utf8.count > limit else { return base + suffix }
        var cut = ""
        for c in base {
            if cut.utf8.count + c.utf8.count + 1 + suffix.utf8.count > limit { break }
            cut.append(c)
        }
        return cut + "~" + suffix
    }

    /// Copies a person's file into the inbox under `name`, atomically (a
    /// hidden temp file, then a rename), as `flowdir answer` does.
    public static func place(_ source: String, in instance: String, as name: String, limit: Int) throws(FileSystemError) {
        guard case .success(let st) = Syscall.fileStatus(source) else { throw LocalFileSystem.map(Errno.current, source) }
        guard st.st_mode & S_IFMT == S_IFREG else { throw .other(source, message: "not a regular file") }
        guard Int(st.st_size) <= limit else { throw .tooLarge(source, size: Int(st.st_size), limit: limit) }
        let bytes = try LocalFileSystem().readFile(source, limit: limit)
        try Files.writeAtomically(Path.join(Path.join(instance, InstancePaths.inbox), name), bytes)
    }
}
