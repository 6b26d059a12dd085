#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// A file of an instance opened once to be served (docs/serve.md): what is
/// checked — a regular file, its size, its first bytes for its type — is
/// what is sent, read from disk a chunk at a time as the client takes it
/// (a 2 GB video is never in memory), the part `Range` asks for when it
/// asks for one (so a video seeks).
final class ServedFile: @unchecked Sendable {
    /// Read and sent this much at a time.
    static let chunk = 256 << 10
    let fd: Int32
    let size: Int64
    let name: String
    /// The first bytes (up to a pointer's largest size): the type is sniffed
    /// from them, and a pointer is known by them.
    let head: [UInt8]

    /// - Parameter name: the name its type is told by (a content store
    ///   object's own name has no extension); default: the file's.
    convenience init(_ path: String, name: String? = nil) throws(UIError) {
        // Non-blocking: a FIFO put in the file's place must not hang the open.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw UIError(404, "not a file") }
            throw UIError(404, "cannot read \(Path.basename(path))", hint: "check that the file is there and readable")
        }
        try self.init(descriptor: fd, name: name ?? Path.basename(path))
    }

    /// Bytes read from git, served as a file: written to an unnamed
    /// temporary file (gone when closed), so that `Range` works the same.
    convenience init(bytes: [UInt8], name: String) throws(UIError) {
        let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((folder + "/flowdir-served-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw UIError(500, "cannot make a temporary file in \(folder)", hint: "set TMPDIR to a folder flowdir can write") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        guard case .success = Files.writeAll(fd, bytes) else {
            close(fd)
            throw UIError(500, "cannot write a temporary file in \(folder)", hint: "check the space left there")
        }
        try self.init(descriptor: fd, name: name)
    }

    /// Takes `fd` over (closed when this is freed, or on a refusal).
    private init(descriptor fd: Int32, name: String) throws(UIError) {
        self.name = name
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw UIError(404, "not a file")
        }
        self.fd = fd
        size = Int64(st.st_size)
        var head = [UInt8](repeating: 0, count: Int(min(size, Int64(LFSPointer.maximumLength))))
        let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        self.head = n > 0 ? Array(head[..<n]) : []
    }

    deinit { close(fd) }

    /// The Git LFS pointer the file is, when it is one: its content is not
    /// on this machine (docs/storage.md).
    var pointer: LFSPointer? {
        guard size <= LFSPointer.maximumLength, Int64(head.count) == size, LFSPointer.looksLikePointer(head),
              case .success(let p) = LFSPointer.parse(head) else { return nil }
        return p
    }

    /// The response: the whole file (`200`) or the range asked for (`206`,
    /// `416` past the end), typed and fenced as docs/security.md says files
    /// from instances are served: its type by content (`ServedType`), shown
    /// in the page only when it cannot run script, else an attachment;
    /// never sniffed; in a sandbox of its own when opened on its own.
    func response(range header: String?, type: ServedType? = nil, cache: Bool = false) -> Response {
        let served = type ?? ServedType.of(head: Array(head.prefix(64)), fileName: name)
        var headers: HTTPFields = [.contentType: served.contentType]
        headers[.cacheControl] = cache ? "private, max-age=86400" : "no-cache"
        headers[.contentSecurityPolicy] = SecurityHeaders.filePolicy
        headers[.contentDisposition] = (served.inline ? "inline" : "attachment") + Self.dispositionName(name)
        headers[.acceptRanges] = "bytes"
        switch ByteRange.of(header, size: size) {
        case .unsatisfiable:
            let e = UIError(416, "the range asked for (\(header?.prefix(100) ?? "")) is not within \(name) (\(size) bytes)",
                            hint: "ask for bytes=0-\(max(0, size - 1)) or less")
            var fields: HTTPFields = [.contentType: "application/json", .contentRange: "bytes */\(size)", .acceptRanges: "bytes"]
            fields[.cacheControl] = "no-cache"
            return Response(status: .rangeNotSatisfiable, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: e.json.bytes)))
        case .whole:
            return Response(status: .ok, headers: headers, body: body(from: 0, count: size))
        case .part(let first, let last):
            headers[.contentRange] = "bytes \(first)-\(last)/\(size)"
            return Response(status: .partialContent, headers: headers, body: body(from: first, count: last - first + 1))
        }
    }

    /// `count` bytes from `offset`, read a chunk at a time off the event
    /// loop. A file cut short while it is sent ends the response early
    /// (the client sees fewer bytes than `Content-Length` said), never
    /// with other bytes; one that grows is sent as it was measured.
    func body(from offset: Int64, count: Int64) -> ResponseBody {
        if count == 0 { return ResponseBody() }
        return ResponseBody(contentLength: Int(count)) { writer in
            var at = offset, left = count
            while left > 0 {
                let want = Int(min(left, Int64(Self.chunk))), from = at
                let chunk = try await NIOThreadPool.singleton.runIfActive { () throws -> ByteBuffer in
                    var buffer = ByteBufferAllocator().buffer(capacity: want)
                    let n = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw -> Int in
                        var n: Int
                        repeat { n = pread(self.fd, raw.baseAddress, want, off_t(from)) } while n < 0 && errno == EINTR
                        guard n >= 0 else { throw ReadFailed(errno: errno) }
                        return n
                    }
                    guard n > 0 else { throw ReadFailed(errno: 0) }  // shorter than when it was measured
                    return buffer
                }
                at += Int64(chunk.readableBytes)
                left -= Int64(chunk.readableBytes)
                try await writer.write(chunk)
            }
            try await writer.finish(nil)
        }
    }

    struct ReadFailed: Error { var errno: Int32 }

    /// `; filename="…"; filename*=UTF-8''…`: plain ASCII for old clients, the name itself for the rest.
    static func dispositionName(_ name: String) -> String {
        let ascii = String(name.unicodeScalars.map { s -> Character in
            s.isASCII && s.value >= 0x20 && s.value != 0x7F && s != "\"" && s != "\\" ? Character(s) : "_"
        })
        return "; filename=\"\(ascii)\"; filename*=UTF-8''" + UIServer.percentEncoded(name)
    }
}
