#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// A file as a `ByteSource`, read with pread: content checks look at the
/// header and the end of a large file without reading all of it.
public final class FileByteSource: ByteSource {
    private let fd: Int32
    public let count: Int

    public convenience init(path: String) throws(FileSystemError) {
        // Non-blocking: a FIFO in its place must not hang the open (a read is a pread of a regular file).
        switch Syscall.open(path, O_RDONLY | O_NONBLOCK) {
        case .success(let f): try self.init(fd: f, path: path)
        case .failure(let e): throw LocalFileSystem.map(e, path)
        }
    }

    /// A file of an instance (`relative` below `root`), read as the
    /// instance's own files are: never through a symbolic link on the way
    /// (`.symbolicLink`; docs/security.md), so a log committed as a link to
    /// a secret is not shown. nil when it is not there.
    public convenience init?(inside root: String, _ relative: String) throws(FileSystemError) {
        let full = Path.join(root, relative)
        guard !relative.isEmpty, !relative.hasPrefix("/"), !LocalFileSystem.hasParentStep(relative) else { throw .outside(full) }
        let dir: Int32
        switch Syscall.open(root.isEmpty ? "." : root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
        case .success(let d): dir = d
        case .failure(let e): throw LocalFileSystem.map(e, root)
        }
        defer { Syscall.close(dir) }
        guard let f = try LocalFileSystem.openBeneath(dir, root: root, relative) else { return nil }
        try self.init(fd: f, path: full)
    }

    /// Takes `fd` (closed here when it is not a regular file).
    private init(fd: Int32, path: String) throws(FileSystemError) {
        self.fd = fd
        switch Syscall.fileStatus(fd) {
        case .success(let st):
            guard st.st_mode & S_IFMT == S_IFREG else {
                Syscall.close(fd)
                throw st.st_mode & S_IFMT == S_IFDIR ? .isDirectory(path) : .other(path, message: "not a regular file")
            }
            count = Int(st.st_size)
        case .failure(let e):
            Syscall.close(fd)
            throw LocalFileSystem.map(e, path)
        }
    }

    deinit { Syscall.close(fd) }

    public func bytes(at offset: Int, length: Int) throws -> [UInt8] {
        let n = max(0, min(length, count - offset))
        guard n > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: n)
        var done = 0
        while done < n {
            let r = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, n - done, off_t(offset + done)) }
            if r < 0 { if errno == EINTR { continue }; throw LocalFileSystem.map(Errno.current, "file") }
            if r == 0 { break }
            done += r
        }
        return Array(out.prefix(done))
    }
}
