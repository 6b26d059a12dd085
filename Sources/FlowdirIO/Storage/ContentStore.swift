#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// The content of large files, once per repository, in Git LFS's layout:
/// `.git/lfs/objects/<aa>/<bb>/<sha256>` (docs/storage.md). Every object
/// is written through a temp file in `.git/lfs/tmp/`, fsynced, renamed
/// into place and made read-only, so a kill -9 or a full disk leaves
/// either the whole object or none. Files are streamed in pieces, never
/// read whole into memory.
public struct ContentStore: Sendable {
    public let gitDirectory: String

    public init(gitDirectory: String) {
        self.gitDirectory = gitDirectory
    }

    public var objectsDirectory: String { gitDirectory + "/lfs/objects" }
    var temporaryDirectory: String { gitDirectory + "/lfs/tmp" }

    /// Bytes a copy moves at a time.
    static let chunk = 1 << 20

    /// What storing a file gave: its pointer, and the git blob id of its
    /// content (the asset id, as for a small file).
    public struct Stored: Sendable, Equatable {
        public var pointer: LFSPointer
        public var blob: ObjectID
    }

    public enum Failure: Error, CustomStringConvertible, Sendable {
        case io(String, Errno)
        /// The bytes are not what the pointer names (a store object changed
        /// by hand, a download cut short or tampered with).
        case mismatch(path: String, expected: LFSPointer, sha256: String, size: Int64)
        case notRegular(String)

        public var description: String {
            switch self {
            case .io(let path, let e): "\(path): \(e)"
            case .mismatch(let path, let p, let sha, let size):
                if size != p.size { "\(path) has \(size) bytes where its pointer says \(p.size) (oid \(p.oid.prefix(12))…)" }
                else { "\(path) is not the content its pointer names: sha256 \(sha.prefix(12))… where the pointer says \(p.oid.prefix(12))…" }
            case .notRegular(let path): "\(path) is not a plain file (a link, a folder or a device)"
            }
        }

        /// A full disk: the caller keeps what it had and tries again later.
        public var isNoSpace: Bool {
            if case .io(_, let e) = self { return e.code == ENOSPC || e.code == EDQUOT }
            return false
        }
    }

    public func path(of oid: String) -> String { gitDirectory + "/" + LFSPointer.objectPath(oid) }

    /// Whether the store holds the object, at the size its pointer names.
    /// (Its bytes are checked when they are used: `copy`, `verify`.)
    public func has(_ pointer: LFSPointer) -> Bool {
        var st = stat()
        return lstat(path(of: pointer.oid), &st) == 0 && st.st_mode & S_IFMT == S_IFREG && Int64(st.st_size) == pointer.size
    }

    // MARK: Storing

    /// Copies the file at `source` into the store while hashing it; the
    /// file stays where it is. Not through a symlink.
    public func store(file source: String) throws(Failure) -> Stored {
        let fd = try openRegular(source)
        defer { Syscall.close(fd.fd) }
        let receiver = try Receiver(store: self, size: fd.size, expected: nil)
        do throws(Failure) {
            try Self.pump(from: fd.fd, path: source) { bytes throws(Failure) in try receiver.write(bytes) }
            return try receiver.finish()
        } catch {
            receiver.abandon()
            throw error
        }
    }

    /// A new object arriving in pieces (a download), checked against the
    /// pointer it must match before it takes its place.
    public func receive(_ expected: LFSPointer) throws(Failure) -> Receiver {
        try Receiver(store: self, size: expected.size, expected: expected)
    }

    /// An object being written: to a temp file, hashed as it goes.
    public final class Receiver {
        let store: ContentStore
        let expected: LFSPointer?
        let temp: String
        let fd: Int32
        let expectedSize: Int64
        var digest: ContentDigest?
        var done = false

        init(store: ContentStore, size: Int64, expected: LFSPointer?) throws(Failure) {
            self.store = store
            self.expected = expected
            digest = ContentDigest(size: size)
            expectedSize = size
            var made: (String, Int32)?
            var madeFolder = false
            for _ in 0..<100 {
                let name = store.temporaryDirectory + "/" + RandomID.token().prefix(16) + "-\(getpid())"
                switch Syscall.open(name, O_WRONLY | O_CREAT | O_EXCL, 0o600) {
                case .success(let fd): made = (name, fd)
                case .failure(let e) where e.code == ENOENT && !madeFolder:
                    do { try Files.makeDirectories(store.temporaryDirectory) } catch { throw .io(store.temporaryDirectory, Errno(EIO)) }
                    madeFolder = true
                    continue
                case .failure(let e) where e.code == EEXIST: continue
                case .failure(let e): throw .io(name, e)
                }
                break
            }
            guard let made else { throw .io(store.temporaryDirectory, Errno(EEXIST)) }
            (temp, fd) = made
        }

        deinit {
            if !done {
                Syscall.close(fd)
                unlink(temp)
            }
        }

        public func write(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
            digest?.update(bytes)
            if case .failure(let e) = ContentStore.writeAll(fd, bytes) { throw .io(temp, e) }
        }

        public func write(_ bytes: [UInt8]) throws(Failure) {
            var failure: Failure?
            bytes.withUnsafeBytes { b in
                do throws(Failure) { try write(b) } catch { failure = error }
            }
            if let failure { throw failure }
        }

        /// Checks what arrived, then makes it the store's object (durably).
        public func finish() throws(Failure) -> Stored {
            guard !done, let digest = digest.take() else { throw .io(temp, Errno(EBADF)) }
            done = true
            let count = digest.count
            let (sha, blob) = digest.finish()
            func fail(_ f: Failure) -> Failure {
                Syscall.close(fd)
                unlink(temp)
                return f
            }
            guard count == expectedSize, expected.map({ $0.oid == sha }) ?? true,
                  let pointer = LFSPointer(oid: sha, size: count) else {
                throw fail(.mismatch(path: "the content received", expected: expected ?? LFSPointer(oid: sha, size: expectedSize)!,
                                     sha256: sha, size: count))
            }
            if fsync(fd) != 0 { throw fail(.io(temp, .current)) }
            fchmod(fd, 0o444)
            Syscall.close(fd)
            let final = store.path(of: sha)
            if store.has(pointer) {
                unlink(temp)  // already here: the same bytes, by their hash
                return Stored(pointer: pointer, blob: blob)
            }
            let folder = Path.directory(of: final)
            do { try Files.makeDirectories(folder) } catch {
                unlink(temp)
                throw .io(folder, Errno(EIO))
            }
            if Glibc.rename(temp, final) != 0 {
                let e = Errno.current
                unlink(temp)
                throw .io(final, e)
            }
            ContentStore.syncFolder(folder)
            return Stored(pointer: pointer, blob: blob)
        }

        /// Gives up: the temp file goes, nothing else changed.
        public func abandon() {
            guard !done else { return }
            done = true
            Syscall.close(fd)
            unlink(temp)
        }
    }

    // MARK: Reading

    /// Copies an object to `destination` (temp file, rename), checking its
    /// bytes against the pointer on the way: a store object changed by
    /// hand is named, never copied out. Returns the new file's stat.
    @discardableResult
    public func copy(_ pointer: LFSPointer, to destination: String, mode: mode_t = 0o644) throws(Failure) -> FileStamp? {
        let source = path(of: pointer.oid)
        let src = try openRegular(source)
        defer { Syscall.close(src.fd) }
        let temp = Path.directory(of: destination) + "/." + Path.basename(destination) + ".flowdir-\(getpid())-" + RandomID.token().prefix(8)
        let dst: Int32
        switch Syscall.open(temp, O_WRONLY | O_CREAT | O_EXCL, mode) {
        case .success(let f): dst = f
        case .failure(let e): throw .io(temp, e)
        }
        var digest = ContentDigest(size: src.size)
        do throws(Failure) {
            try Self.pump(from: src.fd, path: source) { bytes throws(Failure) in
                digest.update(bytes)
                if case .failure(let e) = Self.writeAll(dst, bytes) { throw .io(destination, e) }
            }
        } catch {
            Syscall.close(dst)
            unlink(temp)
            throw error
        }
        let count = digest.count
        let (sha, _) = digest.finish()
        guard sha == pointer.oid, count == pointer.size else {
            Syscall.close(dst)
            unlink(temp)
            throw .mismatch(path: source, expected: pointer, sha256: sha, size: count)
        }
        defer { Syscall.close(dst) }
        if Glibc.rename(temp, destination) != 0 {
            let e = Errno.current
            unlink(temp)
            throw .io(destination, e)
        }
        return try? Syscall.fileStatus(dst).map(FileStamp.init).get()
    }

    /// Re-hashes an object: true when its bytes are what its name says.
    public func verify(_ pointer: LFSPointer) throws(Failure) -> Bool {
        let d = try digest(ofFile: path(of: pointer.oid))
        return d.sha256 == pointer.oid && d.size == pointer.size
    }

    /// The SHA-256, blob id and size of any file (not through a symlink),
    /// read in pieces: whether a working file holds a pointer's content.
    public func digest(ofFile file: String) throws(Failure) -> (sha256: String, blob: ObjectID, size: Int64) {
        let fd = try openRegular(file)
        defer { Syscall.close(fd.fd) }
        var digest = ContentDigest(size: fd.size)
        try Self.pump(from: fd.fd, path: file) { bytes throws(Failure) in digest.update(bytes) }
        let count = digest.count
        let (sha, blob) = digest.finish()
        return (sha, blob, count)
    }

    /// Every object held, with the bytes it takes on disk.
    public func objects() -> [(oid: String, size: Int64, diskBytes: Int64)] {
        var out: [(String, Int64, Int64)] = []
        for a in Self.list(objectsDirectory) where a.utf8.count == 2 {
            for b in Self.list(objectsDirectory + "/" + a) where b.utf8.count == 2 {
                for oid in Self.list(objectsDirectory + "/" + a + "/" + b) where LFSPointer.isOID(oid) {
                    var st = stat()
                    guard lstat(objectsDirectory + "/" + a + "/" + b + "/" + oid, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
                    out.append((oid, Int64(st.st_size), Int64(st.st_blocks) * 512))
                }
            }
        }
        return out
    }

    /// Removes an object (the caller has checked it may). Returns the bytes
    /// it took on disk, or 0 if it was not here.
    @discardableResult
    public func drop(_ oid: String) throws(Failure) -> Int64 {
        let file = path(of: oid)
        var st = stat()
        guard lstat(file, &st) == 0 else { return 0 }
        if unlink(file) != 0 {
            let e = Errno.current
            if e.code == ENOENT { return 0 }
            throw .io(file, e)
        }
        return Int64(st.st_blocks) * 512
    }

    /// Temp files a killed flowdir (or git-lfs) left, older than `age` seconds.
    public func removeStaleTemporaries(olderThan age: Double = 3600, now: Double) {
        for name in Self.list(temporaryDirectory) {
            var st = stat()
            let file = temporaryDirectory + "/" + name
            guard lstat(file, &st) == 0, st.st_mode & S_IFMT == S_IFREG, now - st.st_mtim.seconds > age else { continue }
            unlink(file)
        }
    }

    // MARK: Plumbing

    private func openRegular(_ path: String) throws(Failure) -> (fd: Int32, size: Int64) {
        let fd: Int32
        switch Syscall.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) {
        case .success(let f): fd = f
        case .failure(let e) where e.code == ELOOP: throw .notRegular(path)
        case .failure(let e): throw .io(path, e)
        }
        guard case .success(let st) = Syscall.fileStatus(fd), st.st_mode & S_IFMT == S_IFREG else {
            Syscall.close(fd)
            throw .notRegular(path)
        }
        return (fd, Int64(st.st_size))
    }

    /// Reads `fd` to its end in pieces, handing each to `body`.
    static func pump(from fd: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Void) throws(Failure) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            switch Syscall.read(fd, into: buffer) {
            case .success(0): return
            case .success(let n): try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            case .failure(let e): throw .io(path, e)
            }
        }
    }

    static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        var written = 0
        while written < raw.count {
            switch Syscall.retrying({ Glibc.write(fd, raw.baseAddress! + written, raw.count - written) }, failed: { $0 < 0 }) {
            case .success(0): return .failure(Errno(EIO))
            case .success(let n): written += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(())
    }

    static func list(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: e.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func syncFolder(_ dir: String) {
        let fd = Glibc.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }
}
