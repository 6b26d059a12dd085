#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys
import FlowdirCore

/// The real file system, for Core's `FileSystem` seam.
public struct LocalFileSystem: FileSystem {
    public init() {}

    public func readFile(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8] {
        try readFile(path, limit: limit, followingLinks: true)
    }

    /// - Parameter followingLinks: false: a link at `path` itself is refused
    ///   (`symbolicLink`), as `readFile(inside:)` refuses one, in one open.
    public func readFile(_ path: String, limit: Int, followingLinks: Bool) throws(FileSystemError) -> [UInt8] {
        // Opened non-blocking: a FIFO no one writes to (one left where a file
        // was named) must not hang the open; it reads as empty. Then reads
        // block again, so a pipe with a writer (`<(…)`) is read to its end.
        let fd: Int32, st: Glibc.stat
        do throws(FileSystemError) { (fd, st) = try open(path, O_RDONLY | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW)) } catch {
            var link = Glibc.stat()
            if !followingLinks, case .other = error, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK { throw .symbolicLink(path) }
            throw error
        }
        defer { Syscall.close(fd) }
        if st.st_mode & S_IFMT == S_IFDIR { throw .isDirectory(path) }
        if st.st_mode & S_IFMT != S_IFREG { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        return try read(fd, st, path, limit: limit)
    }

    /// One open and one fstat, where a stat first cost a third more: an
    /// instance's 2,000 state and params files are read this way.
    public func readFileIfRegular(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        let fd: Int32, st: Glibc.stat
        // Non-blocking: a FIFO in its place must not hang the open.
        do throws(FileSystemError) { (fd, st) = try open(path, O_RDONLY | O_NONBLOCK) } catch {
            if case .notFound = error { return nil }
            throw error
        }
        defer { Syscall.close(fd) }
        guard st.st_mode & S_IFMT == S_IFREG else { return nil }
        return try read(fd, st, path, limit: limit)
    }

    /// The file opened, with its status; the caller closes it.
    private func open(_ path: String, _ flags: Int32) throws(FileSystemError) -> (Int32, Glibc.stat) {
        let fd: Int32
        switch Syscall.open(path, flags) {
        case .success(let f): fd = f
        case .failure(let e): throw Self.map(e, path)
        }
        switch Syscall.fileStatus(fd) {
        case .success(let st): return (fd, st)
        case .failure(let e):
            Syscall.close(fd)
            throw Self.map(e, path)
        }
    }

    private func read(_ fd: Int32, _ st: Glibc.stat, _ path: String, limit: Int) throws(FileSystemError) -> [UInt8] {
        let size = Int(st.st_size)
        if size > limit { throw .tooLarge(path, size: size, limit: limit) }
        // A file that says it has bytes: read straight into the result, with
        // room for one more, so that a read giving exactly its size has met
        // the end (no second read to see 0). Anything else (it grew or shrank
        // meanwhile; a read stops at 2 GiB) is read on below.
        var bytes: [UInt8] = []
        if size > 0, st.st_mode & S_IFMT == S_IFREG {
            bytes = try [UInt8](unsafeUninitializedCapacity: size + 1) { buffer, count throws(FileSystemError) in
                switch Syscall.read(fd, into: UnsafeMutableRawBufferPointer(buffer)) {
                case .success(let n): count = n
                case .failure(let e): throw Self.map(e, path)
                }
            }
            if bytes.count == size { return bytes }
        }
        // Read to EOF rather than trusting st_size: /proc files and pipes report 0.
        bytes.reserveCapacity(size + 1)
        var chunk = [UInt8](repeating: 0, count: max(4096, min(size + 1, 1 << 20)))
        while true {
            let n: Int
            switch chunk.withUnsafeMutableBytes({ Syscall.read(fd, into: $0) }) {
            case .success(let k): n = k
            case .failure(let e): throw Self.map(e, path)
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw .tooLarge(path, size: bytes.count, limit: limit) }
        }
        return bytes
    }

    /// One openat2 with no link allowed on the way (one `open` of the
    /// folder first: the instance's own path may be reached through links,
    /// as the person named it). On a kernel without openat2, each folder
    /// on the way is opened in turn with O_NOFOLLOW.
    public func readFile(inside root: String, _ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        let full = Path.join(root, relative)
        guard !relative.isEmpty, !relative.hasPrefix("/"), !relative.split(separator: "/").contains("..") else { throw .outside(full) }
        let dir: Int32
        switch Syscall.open(root.isEmpty ? "." : root, O_RDONLY | O_DIRECTORY) {
        case .success(let fd): dir = fd
        case .failure(let e):
            if e.code == ENOENT || e.code == ENOTDIR { return nil }
            throw Self.map(e, root)
        }
        defer { Syscall.close(dir) }
        return try readFile(at: dir, root: root, relative, limit: limit)
    }

    /// `root`, opened once: its files read with one openat2 each, no open
    /// of the folder per file (what opening a 1,000-node instance would cost).
    public func folder(_ root: String) -> any FolderFiles { OpenFolder(root: root) }

    /// A file below the open folder `dir` (which is `root`), as `readFile(inside:)` reads it.
    func readFile(at dir: Int32, root: String, _ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard !relative.isEmpty, !relative.hasPrefix("/"), !Self.hasParentStep(relative) else { throw .outside(Path.join(root, relative)) }
        // Made only when a message needs it: this is the way of every node file.
        var full: String { Path.join(root, relative) }
        guard let fd = try Self.openBeneath(dir, root: root, relative) else { return nil }
        defer { Syscall.close(fd) }
        let st: Glibc.stat
        switch Syscall.fileStatus(fd) {
        case .success(let s): st = s
        case .failure(let e): throw Self.map(e, full)
        }
        guard st.st_mode & S_IFMT == S_IFREG else { return nil }
        return try read(fd, st, full, limit: limit)
    }

    /// `relative` below the open folder `dir` (which is `root`), opened
    /// read-only and non-blocking with no link on the way; nil when it is
    /// not there. The caller closes it.
    static func openBeneath(_ dir: Int32, root: String, _ relative: String) throws(FileSystemError) -> Int32? {
        var full: String { Path.join(root, relative) }
        let flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC
        var opened = Syscall.retrying({ flowdir_openat2(dir, relative, flags, flowdir_RESOLVE_NO_SYMLINKS | flowdir_RESOLVE_BENEATH) },
                                      failed: { $0 < 0 })
        if case .failure(let e) = opened, e.code == ENOSYS || e.code == EPERM {  // no openat2 (or a seccomp filter refusing it)
            opened = Self.openWalking(dir, relative, flags)
        }
        switch opened {
        case .success(let fd): return fd
        case .failure(let e):
            switch e.code {
            case ELOOP, EXDEV: throw .symbolicLink(LocalFileSystem().firstLink(inside: root, among: [relative]) ?? full)
            case ENOENT, ENOTDIR:
                // A link on the way would have been met first (ELOOP): none is.
                return nil
            default: throw Self.map(e, full)
            }
        }
    }

    /// Whether a `/`-separated path has a `..` part (by byte: no array of parts made).
    static func hasParentStep(_ path: String) -> Bool {
        var run = 0  // dots since the last slash, or -1 once anything else is seen
        for b in path.utf8 {
            if b == UInt8(ascii: "/") {
                if run == 2 { return true }
                run = 0
            } else if b == UInt8(ascii: "."), run >= 0 {
                run += 1
            } else {
                run = -1
            }
        }
        return run == 2
    }

    /// openat2's RESOLVE_NO_SYMLINKS by hand: each folder opened below the
    /// last with O_NOFOLLOW (ELOOP at a link), then the file.
    static func openWalking(_ dir: Int32, _ relative: String, _ flags: Int32) -> Result<Int32, Errno> {
        let parts = relative.split(separator: "/").filter { $0 != "." }.map(String.init)
        guard let last = parts.last else { return .failure(Errno(ENOENT)) }
        var at = dir
        var owned: Int32 = -1
        defer { if owned >= 0 { Syscall.close(owned) } }
        for part in parts.dropLast() {
            switch Syscall.retrying({ openat(at, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }, failed: { $0 < 0 }) {
            case .success(let next):
                if owned >= 0 { Syscall.close(owned) }
                owned = next
                at = next
            case .failure(let e):
                // A link to a folder is refused as O_NOFOLLOW refuses a link to a file.
                if e.code == ENOTDIR, isLink(at, part) { return .failure(Errno(ELOOP)) }
                return .failure(e)
            }
        }
        return Syscall.retrying({ openat(at, last, flags) }, failed: { $0 < 0 })
    }

    static func isLink(_ dir: Int32, _ name: String) -> Bool {
        var st = Glibc.stat()
        return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mode & S_IFMT == S_IFLNK
    }

    /// lstat of each part of each path in turn, from `root` down.
    public func firstLink(inside root: String, among relatives: [String]) -> String? {
        for relative in relatives {
            var path = root
            for part in relative.split(separator: "/") where part != "." {
                path = Path.join(path, String(part))
                var st = Glibc.stat()
                guard lstat(path, &st) == 0 else { break }
                if st.st_mode & S_IFMT == S_IFLNK { return path }
            }
        }
        return nil
    }

    public func isRegularFile(_ path: String) -> Bool {
        if case .success(let st) = Syscall.fileStatus(path) { return st.st_mode & S_IFMT == S_IFREG }
        return false
    }

    public func isDirectory(_ path: String) -> Bool {
        if case .success(let st) = Syscall.fileStatus(path) { return st.st_mode & S_IFMT == S_IFDIR }
        return false
    }

    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        guard let dir = opendir(path) else { throw Self.map(Errno.current, path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Each name in a folder (sorted) with its own status, not its target's:
    /// statted relative to the open folder, so the kernel does not walk the
    /// whole path again for every name. A name gone meanwhile is left out.
    public func listDirectoryWithStatus(_ path: String) throws(FileSystemError) -> [(name: String, status: Glibc.stat)] {
        guard let dir = opendir(path) else { throw Self.map(Errno.current, path) }
        defer { closedir(dir) }
        let fd = dirfd(dir)
        var result: [(name: String, status: Glibc.stat)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            var st = Glibc.stat()
            if case .success = Syscall.retrying({ fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) }, failed: { $0 != 0 }) {
                result.append((name, st))
            }
        }
        return result.sorted { $0.name < $1.name }
    }

    static func map(_ e: Errno, _ path: String) -> FileSystemError {
        switch e.code {
        case ENOENT, ENOTDIR: .notFound(path)
        case EACCES, EPERM: .permissionDenied(path)
        case EISDIR: .isDirectory(path)
        default: .other(path, message: e.description)
        }
    }
}

/// A folder held open for reads below it (see `LocalFileSystem.folder`).
final class OpenFolder: FolderFiles, @unchecked Sendable {
    let root: String
    /// -1 when the folder could not be opened: every read is then done the long way (and says why).
    private let fd: Int32

    init(root: String) {
        self.root = root
        if case .success(let fd) = Syscall.open(root.isEmpty ? "." : root, O_RDONLY | O_DIRECTORY) { self.fd = fd } else { fd = -1 }
    }

    deinit { if fd >= 0 { Syscall.close(fd) } }

    func read(_ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard fd >= 0 else { return try LocalFileSystem().readFile(inside: root, relative, limit: limit) }
        return try LocalFileSystem().readFile(at: fd, root: root, relative, limit: limit)
    }

    func isLink(_ relative: String) -> Bool {
        guard fd >= 0 else { return Files.isSymbolicLink(Path.join(root, relative)) }
        return LocalFileSystem.isLink(fd, relative)
    }
}
