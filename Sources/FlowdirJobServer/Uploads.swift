import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import NIOCore

/// `POST /v1/files`: a multipart upload (the part `content`, as
/// Replicate's files API) or a raw body, written to disk as it arrives
/// (`FileStore.Incoming`), never held whole in memory, and at most
/// `--max-upload` bytes. A refused or broken upload leaves nothing behind.
enum Uploads {
    enum Failure: Error {
        case tooLarge(Int)
        case malformed(String)
        case disk(String)
    }

    static func receive(_ request: Request, core: JobServerCore) async throws -> Response {
        let limit = core.config.maxUpload
        // Multipart's own lines and a small `metadata` part come on top of the file.
        let slack = 1 << 20
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit + slack {
            return tooLarge(limit)
        }
        let type = request.headers[.contentType] ?? "application/octet-stream"
        let store = core.files
        let incoming: FileStore.Incoming
        do { incoming = try store.begin() } catch {
            return Routes.problem(507, "the job server cannot keep the file: \(error)")
        }
        var name = "upload"
        var partType = type
        do {
            var received = 0
            if type.lowercased().hasPrefix("multipart/form-data") {
                guard let boundary = Multipart.boundary(of: type) else { throw Failure.malformed("the Content-Type names no boundary") }
                var parser = Multipart.Parser(boundary: boundary, field: "content")
                for try await buffer in request.body {
                    received += buffer.readableBytes
                    guard received <= limit + slack else { throw Failure.tooLarge(limit) }
                    let events: [Multipart.Parser.Event]
                    do { events = try buffer.withUnsafeReadableBytes { try parser.feed($0) } } catch let m as Multipart.Malformed {
                        throw Failure.malformed(m.description)
                    }
                    for event in events {
                        switch event {
                        case .part(let filename, let t):
                            name = filename ?? "upload"
                            partType = t
                        case .bytes(let b):
                            guard incoming.size + b.count <= limit else { throw Failure.tooLarge(limit) }
                            do { try incoming.write(b) } catch { throw Failure.disk("\(error)") }
                        case .end: break
                        }
                    }
                    if parser.isDone { break }
                }
                do { try parser.finish() } catch { throw Failure.malformed(error.description) }
            } else {
                // A raw body: the file itself, named by Content-Disposition if given.
                name = Multipart.filename(request.headers[.contentDisposition] ?? "") ?? "upload"
                for try await buffer in request.body {
                    received += buffer.readableBytes
                    guard received <= limit else { throw Failure.tooLarge(limit) }
                    do { try buffer.withUnsafeReadableBytes { try incoming.write($0) } } catch { throw Failure.disk("\(error)") }
                }
            }
        } catch {
            store.discard(incoming)
            switch error {
            case Failure.tooLarge(let l): return tooLarge(l)
            case Failure.malformed(let why): return Routes.problem(422, "a multipart upload needs its file in the field `content`: \(why)")
            case Failure.disk(let why): return Routes.problem(507, "the job server cannot keep the file: \(why)")
            default: throw error  // the connection broke: no one to answer
            }
        }
        do {
            return Routes.ok(try await core.upload(incoming, name: name, type: partType), status: 201)
        } catch {
            return Routes.problem(507, "the job server cannot keep the file: \(error)")
        }
    }

    static func tooLarge(_ limit: Int) -> Response {
        Routes.problem(413, "the file is larger than the \(ByteCount(limit)) this job server takes (its --max-upload)")
    }
}
