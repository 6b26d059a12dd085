#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FoundationEssentials
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The routes of docs/serve.md. Each turns HTTP into a backend call and
/// its result or `UIError` back into HTTP; one failing call is one error
/// response, never the server's end.
struct UIRoutes: Sendable {
    let backend: any UIBackend
    let feed: ChangeFeed
    let thumbnails: ThumbnailCache
    let uploadLimit: Int
    let logger: Logger

    func add(to router: Router<UIContext>) {
        for (path, asset) in UIAssets.all {
            router.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache"],
                         body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
            }
        }
        router.get("/open") { request, _ in
            guard let text = request.uri.queryParameters.get("link") else { return Self.error(UIError(400, "give ?link=flowdir://…")) }
            switch AwaitLink.parse(text) {
            case .failure(let bad): return Self.error(UIError(400, bad.description))
            case .success(let link):
                return Response(status: .found, headers: [.location: "/#/w/" + UIServer.percentEncoded(link.instanceID) + "/" + UIServer.percentEncoded(link.node)])
            }
        }

        // Reading.
        router.get("/api/instances") { request, _ in
            let q = request.uri.queryParameters
            var query = UIListQuery()
            if let f = q.get("filter") {
                guard let filter = UIListQuery.Filter(rawValue: f) else { return Self.error(UIError(400, "filter '\(f)' is not all, active, done or failed")) }
                query.filter = filter
            }
            if let s = q.get("sort") {
                guard let sort = UIListQuery.Sort(rawValue: s) else { return Self.error(UIError(400, "sort '\(s)' is not recent or name")) }
                query.sort = sort
            }
            query.search = q.get("search").flatMap { $0.isEmpty ? nil : $0 }
            query.archived = q.get("archived") == "1" || q.get("archived") == "true"
            return await Self.json { () throws(UIError) in try await backend.list(query) }
        }
        router.get("/api/instances/:id") { _, context in
            await Self.json { () throws(UIError) in try await backend.detail(try Self.param(context, "id")) }
        }
        router.get("/api/inbox") { _, _ in await Self.json { () throws(UIError) in try await backend.inbox() } }
        router.get("/api/templates") { _, _ in await Self.json { () throws(UIError) in try await backend.templates() } }
        // HEAD too: the length and headers a GET would have, without the bytes.
        router.get("/api/instances/:id/files/**") { request, context in await instanceFile(request, context) }
        router.head("/api/instances/:id/files/**") { request, context in await instanceFile(request, context).createHeadResponse() }
        router.get("/api/instances/:id/thumbs/**") { request, context in await thumbnail(request, context) }
        router.head("/api/instances/:id/thumbs/**") { request, context in await thumbnail(request, context).createHeadResponse() }
        router.get("/api/instances/:id/nodes/:node/log") { request, context in
            do {
                let folder = try backend.folder(of: try Self.param(context, "id"))
                let node = try Self.param(context, "node")
                guard Self.isPlainName(node) else { throw UIError(400, "'\(node)' is not a node id") }
                let runs = folder + "/" + InstancePaths.node(node) + "/runs"
                let run = request.uri.queryParameters.get("run").flatMap { Int($0) }
                    ?? ((try? LocalFileSystem().listDirectory(runs)) ?? []).compactMap { Int($0) }.max()
                guard let run else { return Self.text("") }
                let bytes = LogLines.tail(inside: folder, InstancePaths.node(node) + "/runs/\(run)/log.txt", bytes: 64 << 10) ?? []
                return Self.text(String(decoding: bytes, as: UTF8.self))
            } catch let e as UIError {
                return Self.error(e)
            }
        }
        router.get("/api/instances/:id/nodes/:node/history") { _, context in
            await Self.json { () throws(UIError) in
                let node = try Self.param(context, "node")
                guard Self.isPlainName(node) else { throw UIError(400, "'\(node)' is not a node id") }
                return try await backend.history(try Self.param(context, "id"), node: node)
            }
        }
        router.get("/api/events") { _, _ in events() }

        // Acting.
        router.post("/api/instances/:id/nodes/:node/:verb") { request, context in
            await act(context, node: true) { () throws(UIError) in try await action(try Self.param(context, "verb"), request, context) }
        }
        router.put("/api/instances/:id/nodes/:node/params") { request, context in
            await act(context, node: true) { () throws(UIError) in
                let body = try await Self.body(request, limit: 1 << 20)
                guard case .object(let params)? = body[key: "params"]?.value else { throw UIError(400, "give {\"params\": {…}}") }
                return .setParams(params)
            }
        }
        router.post("/api/instances/:id/:verb") { request, context in
            await act(context, node: false) { () throws(UIError) in
                let verb = try Self.param(context, "verb")
                let body = try await Self.body(request, limit: 1 << 20)
                switch verb {
                case "polling":
                    guard case .bool(let paused)? = body[key: "paused"]?.value else { throw UIError(400, "give {\"paused\": true|false}") }
                    return .polling(paused: paused)
                case "run": return .runReady
                case "duplicate": return .duplicate(name: body[key: "name"]?.value.stringValue)
                case "archive":
                    if case .bool(let b)? = body[key: "archived"]?.value { return .archive(b) }
                    return .archive(true)
                default: throw UIError(404, "no action '\(verb)' on an instance", hint: "polling, run, duplicate or archive")
                }
            }
        }
        // Both spelled out: a literal `claim` in the route tree hides `:verb` beside it.
        router.post("/api/instances/:id/nodes/:node/claim") { _, context in
            await act(context, node: true) { () throws(UIError) in .claim }
        }
        router.delete("/api/instances/:id/nodes/:node/claim") { _, context in
            await act(context, node: true) { () throws(UIError) in .release }
        }
        router.delete("/api/instances/:id") { _, context in
            await act(context, node: false) { () throws(UIError) in .delete }
        }
        router.post("/api/new") { request, _ in
            do {
                let body = try await Self.body(request, limit: 1 << 20)
                guard let template = body[key: "template"]?.value.stringValue, !template.isEmpty else {
                    throw UIError(400, "give {\"template\": \"<id or name>\"}", hint: "GET /api/templates lists them")
                }
                return Self.done(try await backend.create(template: template, name: body[key: "name"]?.value.stringValue))
            } catch let e as UIError {
                return Self.error(e)
            }
        }
    }

    // MARK: Actions

    func action(_ verb: String, _ request: Request, _ context: UIContext) async throws(UIError) -> UIAction {
        switch verb {
        case "answer":
            let body = try await Self.body(request, limit: uploadLimit)
            if case .array(let files)? = body[key: "files"]?.value {
                var uploads: [UIUpload] = []
                for f in files {
                    guard case .object(let o) = f, let port = o[key: "port"]?.value.stringValue,
                          let data = o[key: "base64"]?.value.stringValue else {
                        throw UIError(400, "each file needs `port` and `base64`")
                    }
                    guard let bytes = Data(base64Encoded: data, options: .ignoreUnknownCharacters) else {
                        throw UIError(400, "the file for '\(port)' is not base64")
                    }
                    uploads.append(UIUpload(port: port, name: o[key: "name"]?.value.stringValue ?? port, bytes: Array(bytes)))
                }
                return .answerFiles(uploads)
            }
            if let choice = body[key: "choice"]?.value.stringValue { return .answerChoice(choice) }
            if case .bool(true)? = body[key: "approve"]?.value {
                if case .object(let params)? = body[key: "params"]?.value { return .approve(params: params) }
                return .approve(params: [])
            }
            if case .bool(true)? = body[key: "decline"]?.value { return .decline }
            throw UIError(400, "give files, a choice, approve or decline")
        case "claim": return .claim
        case "snooze":
            let body = try await Self.body(request, limit: 1 << 16)
            return .snooze(seconds: body[key: "seconds"]?.value.numberValue)
        case "skip": return .skip
        case "cancel": return .cancel
        case "retry": return .retry
        case "rerun": return .rerun
        default: throw UIError(404, "no action '\(verb)' on a node", hint: "answer, claim, snooze, skip, cancel, retry or rerun")
        }
    }

    func act(_ context: UIContext, node aboutNode: Bool, _ make: () async throws(UIError) -> UIAction) async -> Response {
        let raw = (context.parameters.get("id") ?? "", aboutNode ? context.parameters.get("node") ?? "" : "")
        do throws(UIError) {
            let id = try Self.param(context, "id")
            let node = aboutNode ? try Self.param(context, "node") : nil
            let action = try await make()
            return Self.done(try await backend.perform(action, instance: id, node: node))
        } catch {
            // The page shows the message; the log keeps it for whoever runs the server.
            logger.notice("refused", metadata: ["instance": "\(raw.0.prefix(200))", "node": "\(raw.1.prefix(200))",
                                                "status": "\(error.status)", "why": "\(error.message)"])
            return Self.error(error)
        }
    }

    // MARK: Live

    /// Server-sent events: a line per change; a comment every 15 s keeps
    /// proxies from closing the stream and finds pages that went.
    func events() -> Response {
        let changes = feed.subscribe()
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "retry: 1000\n: connected\n\n"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (beats, beat) = AsyncStream.makeStream(of: String.self)
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(15))
                        beat.yield(": alive\n\n")
                    }
                }
                group.addTask {
                    for await change in changes {
                        let data = change.instance.map { "{\"instance\":\"\(Self.jsonEscape($0))\"}" } ?? "{\"instance\":null}"
                        beat.yield("event: changed\ndata: \(data)\n\n")
                    }
                    beat.finish()
                }
                for await text in beats { try await writer.write(ByteBuffer(string: text)) }
                group.cancelAll()
            }
            try await writer.finish(nil)
        })
    }

    // MARK: Files

    /// An instance's file by its relative path: never `.git/`, `.flowdir/`,
    /// `..`, nor anything a link leads out of the folder to.
    func file(_ context: UIContext) throws(UIError) -> (folder: String, path: String) {
        let folder = try backend.folder(of: try Self.param(context, "id"))
        // As the pages spell them: each segment percent-encoded (spaces, Unicode).
        let parts = context.parameters.getCatchAll().map { Self.percentDecoded(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { throw UIError(404, "no such file in the instance") }
        let names = parts.compactMap { $0 }
        guard names.allSatisfy({ Self.isPlainName($0) && !$0.contains("\0") }),
              names[0] != ".git", names[0] != InstancePaths.local else {
            throw UIError(404, "no such file in the instance")
        }
        let path = folder + "/" + names.joined(separator: "/")
        // Where a link inside the instance leads counts too: not out of it, nor into .git/ or .flowdir/.
        guard let real = Files.realPath(path), let base = Files.realPath(folder), real.hasPrefix(base + "/"),
              !InstancePaths.isPrivate(String(real.dropFirst(base.count + 1))) else {
            throw UIError(404, "no such file in the instance")
        }
        return (folder, real)
    }

    func instanceFile(_ request: Request, _ context: UIContext) async -> Response {
        do throws(UIError) {
            let (folder, path) = try file(context)
            let served = try ServedFile(path)
            if let p = served.pointer { throw Self.absent(p, folder: folder, path: path) }
            return served.response(range: Self.range(request))
        } catch {
            return Self.error(error)
        }
    }

    func thumbnail(_ request: Request, _ context: UIContext) async -> Response {
        do throws(UIError) {
            let (folder, path) = try file(context)
            if let p = AbsentContent.pointer(atFile: path) { throw Self.absent(p, folder: folder, path: path) }
            let thumb = try ServedFile(try await thumbnails.thumbnail(instance: folder, path: path))
            return thumb.response(range: Self.range(request), type: ServedType(contentType: "image/png", inline: true), cache: true)
        } catch {
            return Self.error(error)
        }
    }

    /// The `Range` a request asks for, unless `If-Range` makes it
    /// conditional: files are sent with no validator for it to match, so
    /// such a request gets the whole file, as RFC 9110 says.
    static func range(_ request: Request) -> String? {
        request.headers[.ifRange] == nil ? request.headers[.range] : nil
    }

    /// A file whose content is not on this machine (its working file is the
    /// pointer): said so, with its size and how to get it, never served as
    /// the pointer's text (docs/storage.md).
    static func absent(_ p: LFSPointer, folder: String, path: String) -> UIError {
        let base = Files.realPath(folder) ?? folder
        let relative = path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : Path.basename(path)
        return UIError(404, "\(relative) is \(AbsentContent.words(size: p.size))",
                       hint: "get it with `\(AbsentContent.getCommand(instance: folder, relative: relative))`")
    }

    // MARK: Helpers

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

    static func json(_ make: () async throws(UIError) -> [UInt8]) async -> Response {
        do {
            let bytes = try await make()
            return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"],
                            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        } catch {
            return Self.error(error)
        }
    }

    static func done(_ d: UIDone) -> Response {
        var o: [String: JSONValue] = ["ok": .bool(true), "message": .string(d.message)]
        if let id = d.id { o["id"] = .string(id) }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(o).bytes)))
    }

    static func error(_ e: UIError) -> Response {
        Response(status: .init(code: e.status), headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: e.json.bytes)))
    }

    static func text(_ s: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-cache"],
                 body: .init(byteBuffer: ByteBuffer(string: s)))
    }

    static func isPlainName(_ s: String) -> Bool {
        !s.isEmpty && s != "." && s != ".." && !s.contains("/")
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
