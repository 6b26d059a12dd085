#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// The real file system, for Core's `FileSystem` seam.
public struct LocalFileSystem: FileSystem {
    public init() {}

    public func readFile(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8] {
        let (fd, st) = try open(path, O_RDONLY)
        defer { Syscall.close(fd) }
        if st.st_mode & S_IFMT == S_IFDIR { throw .isDirectory(path) }
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
