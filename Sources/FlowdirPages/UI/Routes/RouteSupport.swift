import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// A refusal is answered as JSON, `{"error": …, "hint": …}`, with its
/// status (docs/serve.md). Routes throw it; `SecurityHeaders` turns every
/// error into its answer, here, in one place.
extension UIError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }
}

/// What the controllers share: reading a request (its `:name` segments,
/// its JSON body) and the shapes of a good answer. Each route turns HTTP
/// into a backend call; one failing call is one error answer, never the
/// server's end.
enum RouteSupport {
    /// A backend view, as it is (JSON).
    static func json(_ bytes: [UInt8]) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// An action done: `{"ok": true, "message": …, "id": …}`.
    static func done(_ d: UIDone) -> Response {
        var o: [String: JSONValue] = ["ok": .bool(true), "message": .string(d.message)]
        if let id = d.id { o["id"] = .string(id) }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(o).bytes)))
    }

    static func text(_ s: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-cache"],
                 body: .init(byteBuffer: ByteBuffer(string: s)))
    }

    /// Asks the backend to do something to an instance (or one of its
    /// nodes); a refusal is logged for whoever runs the server, and the
    /// page shows its words.
    static func act(_ backend: any UIBackend, _ logger: Logger, _ context: UIContext, node aboutNode: Bool,
                    _ make: () async throws(UIError) -> UIAction) async throws(UIError) -> Response {
        let raw = (context.parameters.get("id") ?? "", aboutNode ? context.parameters.get("node") ?? "" : "")
        do throws(UIError) {
            let id = try param(context, "id")
            let node = aboutNode ? try param(context, "node") : nil
            let action = try await make()
            return done(try await backend.perform(action, instance: id, node: node))
        } catch {
            logger.notice("refused", metadata: ["instance": "\(raw.0.prefix(200))", "node": "\(raw.1.prefix(200))",
                                                "status": "\(error.status.code)", "why": "\(error.message)"])
            throw error
        }
    }

    /// The JSON object a request sends (an empty body is an empty one);
    /// 413 past `limit`, 400 when it is not an object.
    static func body(_ request: Request, limit: Int) async throws(UIError) -> [ParamEntry] {
        let bytes: [UInt8]
        do {
            var buffer = try await request.body.collect(upTo: limit)
            bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch {
            throw UIError(413, "the request is larger than \(limit >> 20) MB", hint: "answerSizeLimit in the config sets it")
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        guard let value = try? JSONParser.parse(bytes, file: "request", allowComments: false).paramValue,
              case .object(let entries) = value else {
            throw UIError(400, "the body is not a JSON object")
        }
        return entries
    }

    /// `{"<name>": true|false}`, 400 otherwise.
    static func flag(_ body: [ParamEntry], _ name: String) throws(UIError) -> Bool {
        guard case .bool(let b)? = body[key: name]?.value else { throw UIError(400, "give {\"\(name)\": true|false}") }
        return b
    }

    static func isPlainName(_ s: String) -> Bool {
        !s.isEmpty && s != "." && s != ".." && !s.contains("/")
    }

    /// A node id from the URL: one plain name.
    static func nodeParam(_ context: UIContext) throws(UIError) -> String {
        let node = try param(context, "node")
        guard isPlainName(node) else { throw UIError(400, "'\(node)' is not a node id") }
        return node
    }

    /// A route's `:name` segment, percent-decoded (400 when it cannot be).
    static func param(_ context: UIContext, _ name: String) throws(UIError) -> String {
        guard let raw = context.parameters.get(name), let decoded = percentDecoded(raw), !decoded.contains("\0") else {
            throw UIError(400, "the URL's \(name) is not valid percent-encoded UTF-8")
        }
        return decoded
    }

    /// `%XX` sequences as the bytes they stand for; nil when one is cut
    /// short or the bytes are not UTF-8.
    static func percentDecoded(_ s: String) -> String? {
        guard s.contains("%") else { return s }
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            guard b == 0x25 else { out.append(b); continue }
            guard bytes.count >= 2, let hi = hex(bytes.popFirst()!), let lo = hex(bytes.popFirst()!) else { return nil }
            out.append(hi << 4 | lo)
        }
        guard UTF8Check.firstInvalid(in: out) == nil else { return nil }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }

    static func jsonEscape(_ s: String) -> String {
        let quoted = JSONValue.string(s).bytes
        return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
    }
}
