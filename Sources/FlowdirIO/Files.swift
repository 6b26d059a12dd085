#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// File operations flowdir's writers need, each wrapped once.
public enum Files {
    /// Writes `bytes` to `path` atomically: a temp file in the same
    /// directory, then rename, so a reader never sees half a file. Returns
    /// the file's stat as written, for git's index (nil if it cannot be had).
    @discardableResult
    public static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws(FileSystemError) -> FileStamp? {
        let dir = Path.directory(of: path)
        // Nothing to write (a quiet job's log): truncating in place is as
        // atomic (no reader sees anything but the old file or an empty
        // one), and one rename fewer. Not through a symlink: that is
        // replaced, as below.
        if bytes.isEmpty {
            var made = Syscall.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
            if case .failure(let e) = made, e.code == ENOENT {
                try makeDirectories(dir)
                made = Syscall.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode)
            }
            if case .success(let fd) = made {
                defer { Syscall.close(fd) }
                return try? Syscall.fileStatus(fd).map(FileStamp.init).get()
            }
        }
        // `<dir>/.<name>.flowdir-<pid>-`, made in one buffer: the store's
        // thread writes a few files a step, each through here.
        var prefix = dir
        prefix.reserveCapacity(path.utf8.count + 48)
        prefix += "/"
        appendTemporaryPrefix(of: path, to: &prefix)
        prefix += processIDPart
        var temp = ""
        var fd: Int32 = -1
        // The folder is made only when the temp file cannot be: it usually exists.
        var madeFolder = false
        for _ in 0..<100 {
            temp = prefix + String(temporaryCounter.locked { $0 += 1; return $0 })
            switch Syscall.open(temp, O_WRONLY | O_CREAT | O_EXCL, mode) {
            case .success(let f): fd = f
            case .failure(let e) where e.code == ENOENT && !madeFolder:
                try makeDirectories(dir)
                madeFolder = true
                continue
            case .failure(let e) where e.code == EEXIST:
                continue  // left by a killed process that had this pid
            case .failure(let e):
                throw LocalFileSystem.map(e, temp)
            }
            break
        }
        guard fd >= 0 else { throw LocalFileSystem.map(Errno(EEXIST), temp) }
        // Open until renamed: the stat then is the one the file keeps (a
        // rename changes its ctime), read without a walk of the path.
        defer { Syscall.close(fd) }
        if case .failure(let e) = writeAll(fd, bytes) {
            unlink(temp)
            throw LocalFileSystem.map(e, path)
        }
        if Glibc.rename(temp, path) != 0 {
            let e = Errno.current
            unlink(temp)
            throw LocalFileSystem.map(e, path)
        }
        return try? Syscall.fileStatus(fd).map(FileStamp.init).get()
    }

    /// All of `bytes` to `fd`, EINTR and short writes retried.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                switch Syscall.retrying({ Glibc.write(fd, raw.baseAddress! + written, raw.count - written) }, failed: { $0 < 0 }) {
                case .success(0): return .failure(Errno(EIO))  // no progress: never loop on it
                case .success(let n): written += n
                case .failure(let e): return .failure(e)
                }
            }
            return .success(())
        }
    }

    /// getpid(2) is a system call each time; this process's pid does not change.
    static let processID = getpid()
    private static let processIDPart = "\(processID)-"
    static let temporaryCounter = Locked<UInt64>(UInt64(UInt32.random(in: 0...UInt32.max)))

    /// Temp files of `path` start with this (hidden, and named for it).
    static func temporaryPrefix(_ path: String) -> String {
        var prefix = ""
        appendTemporaryPrefix(of: path, to: &prefix)
        return prefix
    }

    static func appendTemporaryPrefix(of path: String, to out: inout String) {
        out += "."
        out += Path.basename(path)
        out += ".flowdir-"
    }

    /// Removes temp files a killed `writeAtomically` of `path` left behind.
    public static func removeTemporarySiblings(of path: String) {
        let dir = Path.directory(of: path), prefix = temporaryPrefix(path)
        for name in (try? LocalFileSystem().listDirectory(dir)) ?? [] where name.hasPrefix(prefix) {
            unlink(dir + "/" + name)
        }
    }

    @discardableResult
    public static func writeAtomically(_ path: String, _ text: String) throws(FileSystemError) -> FileStamp? {
        try writeAtomically(path, Array(text.utf8))
    }

    /// `mkdir -p`.
    public static func makeDirectories(_ path: String) throws(FileSystemError) {
        if path.isEmpty || path == "/" || path == "." { return }
        if mkdir(path, 0o755) == 0 { return }
        let e = Errno.current
        if e.code == EEXIST { return }
        if e.code == ENOENT {
            try makeDirectories(Path.directory(of: path))
            if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
            throw LocalFileSystem.map(Errno.current, path)
        }
        throw LocalFileSystem.map(e, path)
    }

    public static func isSymbolicLink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK
    }

    public static func remove(_ path: String) throws(FileSystemError) {
        if unlink(path) != 0, errno != ENOENT { throw LocalFileSystem.map(Errno.current, path) }
    }

    /// Removes the folders above `path` that are left empty, as git does,
    /// stopping at `root` or at the first folder with something in it.
    public static func removeEmptyParents(of path: String, upTo root: String) {
        var dir = Path.directory(of: path)
        while dir.count > root.count, dir.hasPrefix(root + "/"), rmdir(dir) == 0 {
            dir = Path.directory(of: dir)
        }
    }

    /// `rm -rf`, without following symlinks out of the tree.
    public static func removeTree(_ path: String) throws(FileSystemError) {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return }
            throw LocalFileSystem.map(Errno.current, path)
        }
        if st.st_mode & S_IFMT == S_IFDIR {
            for name in try LocalFileSystem().listDirectory(path) { try removeTree(path + "/" + name) }
            if rmdir(path) != 0 { throw LocalFileSystem.map(Errno.current, path) }
        } else {
            try remove(path)
        }
    }

    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    public static func rename(_ from: String, _ to: String) throws(FileSystemError) {
        if Glibc.rename(from, to) != 0 { throw LocalFileSystem.map(Errno.current, to) }
    }

    /// An absolute, `.`/`..`-free path for `path` (which must exist).
    public static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    public static var currentDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Facts about this machine and user, read once.
public enum Host {
    /// This machine as flowdir names it (run records, leases): `FLOWDIR_HOST`,
    /// else the host name (two clones on one machine, or containers with
    /// random host names, can be told apart this way).
    public static let name: String = {
        if let n = getenv("FLOWDIR_HOST").map({ String(cString: $0) }), !n.isEmpty { return n }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }()

    public static let user: String = {
        if let u = getenv("USER").map({ String(cString: $0) }), !u.isEmpty { return u }
        if let pw = getpwuid(getuid()), let n = pw.pointee.pw_name { return String(cString: n) }
        return "user"
    }()

    public static var pid: Int32 { getpid() }
}

/// The real wall clock (`FlowdirClock.system` pairs it with the monotonic one).
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(seconds: ts.seconds)
    }
}
