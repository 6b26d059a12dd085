#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Uploads and outputs, served at `/v1/files/<id>/<name>` for a limited
/// time: `DIR/files/<id>/<name>` and `DIR/files/<id>/meta.json`. A file
/// comes in through `Incoming` (a temporary file under `DIR/files/.incoming`,
/// written as the bytes arrive), and is either committed whole or removed:
/// a refused or broken upload leaves nothing behind.
struct FileStore: Sendable {
    let dir: String
    let lifetime: Double

    struct Stored: Sendable {
        var id: String
        var name: String
        var contentType: String
        var size: Int
        var sha256: String
        var created: Double
        /// The type it is served as inline, its content having been
        /// checked to be that (`UploadedType`); nil: served as an attachment.
        var inline: String?
    }

    var incomingDir: String { dir + "/.incoming" }

    init(dir: String, lifetime: Double) throws {
        self.dir = dir
        self.lifetime = lifetime
        try Files.makeDirectories(dir)
        // What a stopped server was receiving will never be finished.
        try? Files.removeTree(dir + "/.incoming")
        try Files.makeDirectories(dir + "/.incoming")
    }

    /// A file being received.
    final class Incoming {
        let path: String
        private var fd: Int32
        private(set) var size = 0
        private var hasher = SHA256Hasher()

        init(path: String) throws(FileSystemError) {
            self.path = path
            fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .other(path, message: "cannot make it: \(Errno.current)") }
        }

        func write(_ bytes: UnsafeRawBufferPointer) throws(FileSystemError) {
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw .other(path, message: "cannot write it: \(Errno.current)")
                }
                done += n
            }
            hasher.update(bytes)
            size += bytes.count
        }

        func write(_ bytes: [UInt8]) throws(FileSystemError) {
            var failure: FileSystemError?
            bytes.withUnsafeBytes { b in
                do throws(FileSystemError) { try self.write(b) } catch { failure = error }
            }
            if let failure { throw failure }
        }

        /// Closed, with its digest in hex.
        func close() -> String {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            return Digest.hex(hasher.finalize())
        }

        deinit { if fd >= 0 { Glibc.close(fd) } }
    }

    func begin() throws -> Incoming {
        try Incoming(path: incomingDir + "/" + RandomID.uuid())
    }

    /// The received file as a served one; it is removed if that fails.
    func commit(_ incoming: Incoming, name: String, contentType: String, now: Double) throws -> Stored {
        let digest = incoming.close()
        do {
            let id = RandomID.uuid().replacingOccurrences(of: "-", with: "").lowercased()
            let safe = Self.safeName(name)
            try Files.makeDirectories(dir + "/" + id)
            guard rename(incoming.path, dir + "/\(id)/\(safe)") == 0 else {
                throw FileSystemError.other(incoming.path, message: "cannot move it into place: \(Errno.current)")
            }
            let declared = String(contentType.prefix(200))
            let stored = Stored(id: id, name: safe, contentType: declared, size: incoming.size, sha256: digest, created: now,
                                inline: UploadedType.inline(declared: declared, path: dir + "/\(id)/\(safe)"))
            var meta: [String: JSONValue] = ["name": .string(safe), "content_type": .string(declared), "size": .number(Double(incoming.size)),
                                             "sha256": .string(digest), "created": .number(now)]
            if let inline = stored.inline { meta["inline"] = .string(inline) }
            do { try Files.writeAtomically(dir + "/\(id)/meta.json", JSONValue.object(meta).bytes) } catch {
                remove(id)
                throw error
            }
            return stored
        } catch {
            unlink(incoming.path)
            throw error
        }
    }

    func discard(_ incoming: Incoming) {
        _ = incoming.close()
        unlink(incoming.path)
    }

    func add(_ bytes: [UInt8], name: String, contentType: String, now: Double) throws -> Stored {
        let incoming = try begin()
        do { try incoming.write(bytes) } catch {
            discard(incoming)
            throw error
        }
        return try commit(incoming, name: name, contentType: contentType, now: now)
    }

    /// A name safe as a path part and in a URL.
    static func safeName(_ name: String) -> String {
        var safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") ? $0 : "_" }.prefix(100))
        if safe.isEmpty || safe.hasPrefix(".") || safe == "meta.json" { safe = "file" + safe }
        return safe
    }

    /// A file that is still served; nil when unknown or expired.
    func find(_ id: String, now: Double) -> Stored? {
        guard Self.isID(id),
              let bytes = try? LocalFileSystem().readFile(dir + "/\(id)/meta.json", limit: 1 << 16), let m = JSONValue.parse(bytes),
              let name = m["name"]?.stringValue, let type = m["content_type"]?.stringValue,
              case .number(let size)? = m["size"], case .number(let created)? = m["created"] else { return nil }
        guard now - created <= lifetime else { return nil }
        return Stored(id: id, name: name, contentType: type, size: Int(size), sha256: m["sha256"]?.stringValue ?? "", created: created,
                      inline: m["inline"]?.stringValue)
    }

    static func isID(_ id: String) -> Bool { !id.isEmpty && id.count <= 64 && id.allSatisfy { $0.isHexDigit } }

    func path(of f: Stored) -> String { dir + "/\(f.id)/\(f.name)" }

    func bytes(_ f: Stored, limit: Int) -> [UInt8]? {
        try? LocalFileSystem().readFile(path(of: f), limit: limit)
    }

    func remove(_ id: String) {
        guard Self.isID(id) else { return }
        try? Files.removeTree(dir + "/" + id)
    }

    /// Every file still served, newest first.
    func all(now: Double) -> [Stored] {
        ((try? LocalFileSystem().listDirectory(dir)) ?? []).compactMap { find($0, now: now) }.sorted { $0.created > $1.created }
    }

    /// Removes the expired ones (and any without metadata: a crash
    /// mid-write), and uploads begun more than `lifetime` ago and never finished.
    func sweep(now: Double) {
        for id in (try? LocalFileSystem().listDirectory(dir)) ?? [] where id != ".incoming" && find(id, now: now) == nil {
            if Self.isID(id) { remove(id) } else { try? Files.removeTree(dir + "/" + id) }
        }
        for (name, st) in (try? LocalFileSystem().listDirectoryWithStatus(incomingDir)) ?? [] where now - Double(st.st_mtim.tv_sec) > max(lifetime, 3600) {
            unlink(incomingDir + "/" + name)
        }
    }
}

/// How a stored file is served (docs/security.md): inline only as the type
/// the client declared, when that is one of a few types that cannot run
/// script and the content was checked to be it; anything else (HTML, SVG,
/// bytes that are not what their type says) as an attachment of
/// `application/octet-stream`. (serve, which has no declared type, decides
/// by the bytes alone: FlowdirCore's `ServedType`.)
enum UploadedType {
    static func inline(declared: String, path: String) -> String? {
        let media = declared.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard let source = try? FileByteSource(path: path) else { return nil }
        func checked(_ type: PortType) -> ContentFormat? { try? ContentCheck.check(source, as: type) }
        switch media {
        case "image/png", "image/jpeg", "image/webp":
            return checked(.image).map(\.mediaType) == media ? media : nil
        case "application/json":
            return checked(.json) != nil ? "application/json" : nil
        case "text/plain":
            return checked(.text) != nil ? "text/plain; charset=utf-8" : nil
        case "application/pdf":
            return (try? source.bytes(at: 0, length: 5)) == Array("%PDF-".utf8) ? "application/pdf" : nil
        case _ where media.hasPrefix("audio/"):
            return checked(.audio).map(\.mediaType)
        case _ where media.hasPrefix("video/"):
            // A GIF passes as video; served as an image it is still not script.
            return checked(.video).map(\.mediaType)
        default:
            return nil
        }
    }
}
