import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
@testable import FlowdirPages
import FlowdirTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Testing

/// `flowdir serve`'s HTTP side on a fake backend: the token, the routes'
/// shapes and refusals, files kept inside the instance, and live events
/// from real inotify on a real folder.
@Suite(.tags(.medium)) struct UIServerTests {
    /// One instance folder `inst` (id `i1`) under a root; records what is asked of it.
    final class FakeBackend: UIBackend, @unchecked Sendable {
        let root: String
        let performed = Locked([(UIAction, String, String?)]())
        let created = Locked([String]())
        var folder: String { root + "/inst" }

        init(root: String) { self.root = root }

        func instanceFolders() -> [String] { Files.exists(folder) ? [folder] : [] }
        func roots() -> [String] { [root] }
        func folder(of id: String) throws(UIError) -> String {
            guard id == "i1" else { throw UIError(404, "no instance with id '\(id)'") }
            return folder
        }
        func id(ofFolder folder: String) -> String? { folder == self.folder ? "i1" : nil }
        func list(_ query: UIListQuery) async throws(UIError) -> [UInt8] {
            Array("{\"rows\":[],\"filter\":\"\(query.filter.rawValue)\",\"search\":\"\(query.search ?? "")\"}".utf8)
        }
        func detail(_ id: String) async throws(UIError) -> [UInt8] { _ = try folder(of: id); return Array("{\"id\":\"i1\"}".utf8) }
        func history(_ id: String, node: String) async throws(UIError) -> [UInt8] { Array("{\"runs\":[]}".utf8) }
        func runOutput(_ id: String, node: String, run: Int, port: String) async throws(UIError) -> RunOutputSource {
            _ = try folder(of: id)
            switch run {
            case 1: return .file(path: folder + "/nodes/\(node)/out/\(port).png", name: "\(port).png")
            case 2: return .bytes(Array("{\"a\": 1}".utf8), name: "\(port).json")
            default: throw UIError(404, "'\(node)' has no run \(run)")
            }
        }
        func inbox() async throws(UIError) -> [UInt8] { Array("{\"items\":[]}".utf8) }
        func templates() async throws(UIError) -> [UInt8] { Array("{\"templates\":[]}".utf8) }
        func perform(_ action: UIAction, instance id: String, node: String?) async throws(UIError) -> UIDone {
            _ = try folder(of: id)
            if node == "busy" { throw UIError(409, "'busy' is running", hint: "cancel it first") }
            performed.locked { $0.append((action, id, node)) }
            return UIDone("done: \(action)")
        }
        func create(template: String, name: String?) async throws(UIError) -> UIDone {
            created.locked { $0.append(template) }
            return UIDone("made", id: "i2")
        }
        let freed = Locked([Bool]())
        func settings() async throws(UIError) -> [UInt8] { Array("{\"configFile\":\"/c.yaml\"}".utf8) }
        func endpointChecks() async throws(UIError) -> [UInt8] { Array("{\"endpoints\":[{\"name\":\"gpu\",\"reachable\":false}]}".utf8) }
        func storage() async throws(UIError) -> [UInt8] { Array("{\"rows\":[],\"total\":0}".utf8) }
        func freeSpace(dryRun: Bool) async throws(UIError) -> [UInt8] {
            freed.locked { $0.append(dryRun) }
            return Array("{\"dryRun\":\(dryRun),\"dropped\":[]}".utf8)
        }
    }

    final class Running: @unchecked Sendable {
        let dir: TemporaryDirectory
        let backend: FakeBackend
        let server: UIServer
        let group: ServiceGroup
        let task: Task<Void, any Error>
        let base: String
        static let token = "t0ken-for-the-tests-0123456789"
        var port = 0

        init(thumbnailer: any Thumbnailer = CopyThumbnailer(), idleTimeout: Int = 60) async throws {
            dir = try TemporaryDirectory()
            backend = FakeBackend(root: dir.path)
            _ = try GitCLI.run(["init", "--quiet", backend.folder], in: dir.path)
            try FileManager.default.createDirectory(atPath: backend.folder + "/inbox", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: backend.folder + "/nodes/a/out", withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: backend.folder + "/nodes/a/out/image.png", contents: Data(UIServerTests.png))
            try dir.write("inst/.flowdir/secret", "no")
            try dir.write("outside.txt", "outside")
            symlink(dir.path + "/outside.txt", backend.folder + "/link.txt")
            let logger = Logger(label: "test.ui")
            server = try UIServer(config: .init(port: 0, token: Self.token, idleTimeout: idleTimeout), backend: backend,
                                  thumbnails: ThumbnailCache(maker: thumbnailer), logger: logger)
            let (ports, bound) = AsyncStream<Int>.makeStream()
            group = ServiceGroup(configuration: .init(services: [server.application(onStart: { bound.yield($0) }), server.feed],
                                                      gracefulShutdownSignals: [], logger: logger))
            let g = group
            task = Task { try await g.run() }
            var port = 0
            for await p in ports { port = p; break }
            self.port = port
            base = "http://127.0.0.1:\(port)"
        }

        func stop() async {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        }

        struct Answer {
            var status: Int
            var headers: HTTPHeaders
            var text: String
            var bytes: [UInt8]
        }

        func get(_ path: String, auth: [String: String]? = nil) async throws -> Answer {
            try await request(.GET, path, auth: auth)
        }

        /// A request as a script sends it: the Bearer token (unless `auth`
        /// says otherwise) and, for a change, `Content-Type: application/json`
        /// (unless `headers` gives one); `headers` are added as they are.
        func request(_ method: HTTPMethod, _ path: String, body: String? = nil, auth: [String: String]? = nil,
                     headers: [(String, String)] = []) async throws -> Answer {
            var r = HTTPClientRequest(url: base + path)
            r.method = method
            for (k, v) in auth ?? ["Authorization": "Bearer \(Self.token)"] { r.headers.add(name: k, value: v) }
            if method != .GET, method != .HEAD, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                r.headers.add(name: "Content-Type", value: "application/json")
            }
            for (k, v) in headers { r.headers.add(name: k, value: v) }
            if let body { r.body = .bytes(ByteBuffer(string: body)) }
            let response = try await HTTPClient.shared.execute(r, timeout: .seconds(10))
            let bytes = try await response.body.collect(upTo: 16 << 20)
            return Answer(status: Int(response.status.code), headers: response.headers, text: String(buffer: bytes),
                          bytes: Array(buffer: bytes))
        }
    }

    struct CopyThumbnailer: Thumbnailer {
        func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError) {
            do { try FileManager.default.copyItem(atPath: source, toPath: destination) } catch { throw UIError(500, "\(error)") }
        }
    }

    /// A 1×1 PNG, whole (IHDR with its CRC, IDAT, IEND).
    static let png: [UInt8] = Array(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!)

    @Test func nothingWithoutTheTokenAndTheFirstPageSetsACookie() async throws {
        let s = try await Running()
        for path in ["/", "/app.js", "/api/instances", "/api/events", "/api/instances/i1/files/nodes/a/out/image.png"] {
            #expect(try await s.get(path, auth: [:]).status == 401, "\(path)")
            #expect(try await s.get(path + (path.contains("?") ? "&" : "?") + "token=wrong", auth: [:]).status == 401)
        }
        let page = try await s.get("/?token=\(Running.token)", auth: [:])
        #expect(page.status == 200 && page.headers.first(name: "Content-Type") == "text/html; charset=utf-8")
        let cookie = try #require(page.headers.first(name: "Set-Cookie"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let withCookie = try await s.get("/api/instances", auth: ["Cookie": "other=1; " + cookie.split(separator: ";")[0]])
        #expect(withCookie.status == 200)
        #expect(try await s.get("/api/instances").status == 200)
        await s.stop()
    }

    @Test func thePagesFetchNothingFromOutside() {
        for (path, asset) in UIAssets.all {
            // SVG's namespace (in the icons' data: URLs) names, it fetches nothing.
            let text = String(decoding: asset.bytes, as: UTF8.self).replacingOccurrences(of: "xmlns='http://www.w3.org/2000/svg'", with: "")
            for outside in ["http://", "https://", "//cdn", "@import url("] {
                #expect(!text.contains(outside), "\(path) refers to \(outside)")
            }
        }
    }

    @Test func filesAreServedFromInsideTheInstanceOnly() async throws {
        let s = try await Running()
        let ok = try await s.get("/api/instances/i1/files/nodes/a/out/image.png")
        #expect(ok.status == 200 && ok.bytes == UIServerTests.png && ok.headers.first(name: "Content-Type") == "image/png")
        for bad in ["/api/instances/i1/files/../outside.txt", "/api/instances/i1/files/nodes/%2E%2E/%2E%2E/%2E%2E/outside.txt",
                    "/api/instances/i1/files/.git/config", "/api/instances/i1/files/.flowdir/secret", "/api/instances/i1/files/link.txt",
                    "/api/instances/i2/files/nodes/a/out/image.png", "/api/instances/i1/files/nodes"] {
            let r = try await s.get(bad)
            #expect(r.status == 404, "\(bad): \(r.status) \(r.text)")
            #expect(!r.text.contains("outside"))
        }
        // A thumbnail is made once per blob, in .flowdir/thumbs/.
        let thumb = try await s.get("/api/instances/i1/thumbs/nodes/a/out/image.png")
        #expect(thumb.status == 200 && thumb.headers.first(name: "Content-Type") == "image/png")
        let kept = try FileManager.default.contentsOfDirectory(atPath: s.backend.folder + "/.flowdir/thumbs")
        #expect(kept == [GitRepository.blobID(of: UIServerTests.png).hex + ".png"])
        await s.stop()
    }

    @Test func actionsReachTheBackendAsTheyWereAskedAndRefusalsKeepTheirWords() async throws {
        let s = try await Running()
        let png = Data([0x89, 0x50, 0x4E, 0x47]).base64EncodedString()
        let answered = try await s.request(.POST, "/api/instances/i1/nodes/mask1/answer",
                                           body: #"{"files":[{"port":"mask","name":"mask.png","base64":"\#(png)"}]}"#)
        #expect(answered.status == 200 && answered.text.contains("\"ok\":true"), "\(answered.text)")
        #expect(try await s.request(.POST, "/api/instances/i1/nodes/look/answer", body: #"{"choice":"cool"}"#).status == 200)
        #expect(try await s.request(.POST, "/api/instances/i1/nodes/look/snooze", body: #"{"seconds":60}"#).status == 200)
        #expect(try await s.request(.PUT, "/api/instances/i1/nodes/render/params", body: #"{"params":{"steps":20,"style":"ink"}}"#).status == 200)
        #expect(try await s.request(.POST, "/api/instances/i1/polling", body: #"{"paused":true}"#).status == 200)
        #expect(try await s.request(.POST, "/api/instances/i1/nodes/look/claim").status == 200)
        #expect(try await s.request(.DELETE, "/api/instances/i1/nodes/look/claim").status == 200)
        #expect(try await s.request(.DELETE, "/api/instances/i1").status == 200)
        let done = s.backend.performed.locked { $0.map(\.0) }
        #expect(done == [.answerFiles([UIUpload(port: "mask", name: "mask.png", bytes: [0x89, 0x50, 0x4E, 0x47])]), .answerChoice("cool"),
                         .snooze(seconds: 60), .setParams([ParamEntry(key: "steps", value: .int(20)), ParamEntry(key: "style", value: .string("ink"))]),
                         .polling(paused: true), .claim, .release, .delete])

        let refused = try await s.request(.POST, "/api/instances/i1/nodes/busy/skip")
        #expect(refused.status == 409 && refused.text.contains("'busy' is running") && refused.text.contains("cancel it first"))
        #expect(try await s.request(.POST, "/api/instances/i1/nodes/a/answer", body: "{not json").status == 400)
        #expect(try await s.request(.POST, "/api/instances/i1/nodes/a/explode").status == 404)
        #expect(try await s.request(.POST, "/api/instances/nope/nodes/a/skip").status == 404)
        #expect(try await s.get("/api/instances?filter=sideways").status == 400)
        #expect(try await s.get("/api/instances?filter=done&search=cat").text.contains("\"search\":\"cat\""))
        // Not followed: the redirect itself is what is checked.
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        var open = HTTPClientRequest(url: s.base + "/open?link=" + "flowdir://i1/node/mask1?await=x".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        open.headers.add(name: "Authorization", value: "Bearer \(Running.token)")
        let link = try await client.execute(open, timeout: .seconds(10))
        #expect(link.status.code == 302 && link.headers.first(name: "Location") == "/#/w/i1/mask1")
        try await client.shutdown()
        await s.stop()
    }

    /// A file dropped into inbox/ and a commit (by anyone: here git itself)
    /// reach an open event stream; so does a new folder under a root.
    @Test func changesReachAnOpenEventStreamWithinASecond() async throws {
        let s = try await Running()
        var r = HTTPClientRequest(url: s.base + "/api/events")
        r.headers.add(name: "Authorization", value: "Bearer \(Running.token)")
        let response = try await HTTPClient.shared.execute(r, timeout: .seconds(30))
        #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
        var body = response.body.makeAsyncIterator()
        // The stream is read until the event expected comes (others may come
        // first). A second is what a page sees (BrowserTests, Benchmarks/serve.py);
        // here, with the whole suite starting at once on two cores, 10 s.
        let events = Locked("")
        let reader = Task {
            while let chunk = try await body.next() { events.locked { $0 += String(buffer: chunk) } }
        }
        defer { reader.cancel() }
        func expect(_ data: String, within seconds: Double, _ what: String) async throws {
            let seen = await Eventually.until(timeout: .seconds(seconds), every: .milliseconds(10)) {
                events.locked { seen in
                    guard let r = seen.range(of: "event: changed\ndata: " + data) else { return false }
                    seen.removeSubrange(seen.startIndex..<r.upperBound)  // each event is taken once
                    return true
                }
            }
            if seen { return }
            Issue.record("no event \(data) within \(seconds)s for \(what): \(events.locked { $0 })")
        }
        // Subscribed once its first lines came (the feed subscribes before it answers).
        #expect(await Eventually.until(timeout: .seconds(30)) { events.locked { $0.contains(": connected") } }, "the stream never began")
        try s.dir.write("inst/inbox/pick.image.png", "photo")
        try await expect(#"{"instance":"i1"}"#, within: 10, "a dropped file")
        try s.dir.write("inst/x.txt", "x")
        _ = try GitCLI.run(["add", "x.txt"], in: s.backend.folder)
        _ = try GitCLI.run(["-c", "user.name=t", "-c", "user.email=t@x", "commit", "--quiet", "-m", "x"], in: s.backend.folder)
        try await expect(#"{"instance":"i1"}"#, within: 10, "a commit")
        try FileManager.default.createDirectory(atPath: s.dir.path + "/new-one", withIntermediateDirectories: true)
        try await expect(#"{"instance":null}"#, within: 10, "a new folder")
        await s.stop()
    }
}
