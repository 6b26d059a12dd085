#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirPages
import FlowdirTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Each controller of `flowdir serve`, in process (HummingbirdTesting's
/// router framework: the whole application, middleware and all, with no
/// socket), on the fake backend: every route's status, content type and
/// a fact of its body; the refusals of docs/security.md; errors answered
/// as JSON in one place.
@Suite(.tags(.medium)) struct RouteControllerTests {
    typealias FakeBackend = UIServerTests.FakeBackend
    static let token = "t0ken-for-the-tests-0123456789"
    static let read: HTTPFields = [.authorization: "Bearer \(token)"]
    static let change: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]

    /// The instance of `UIServerTests.Running`, behind serve's application.
    /// The router framework's requests are for `localhost` (port 80), so
    /// the server "listens" there unless `port` says otherwise.
    final class Routed: @unchecked Sendable {
        let dir: TemporaryDirectory
        let backend: FakeBackend
        let server: UIServer

        init(port: Int = 80, uploadLimit: Int = 256 << 20) throws {
            dir = try TemporaryDirectory()
            backend = FakeBackend(root: dir.path)
            _ = try GitCLI.run(["init", "--quiet", backend.folder], in: dir.path)
            try FileManager.default.createDirectory(atPath: backend.folder + "/inbox", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: backend.folder + "/nodes/a/out", withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: backend.folder + "/nodes/a/out/image.png", contents: Data(UIServerTests.png))
            try dir.write("inst/nodes/a/runs/2/log.txt", "first line\nlast line\n")
            try dir.write("inst/.flowdir/secret", "no")
            try dir.write("outside.txt", "outside")
            symlink(dir.path + "/outside.txt", backend.folder + "/link.txt")
            server = try UIServer(config: .init(port: port, token: RouteControllerTests.token, uploadLimit: uploadLimit), backend: backend,
                                  thumbnails: ThumbnailCache(maker: UIServerTests.CopyThumbnailer()), logger: Logger(label: "test.routes"))
        }

        func test<Value: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
            try await server.application().test(.router, body)
        }
    }

    /// A request and what its answer must be.
    struct Case: Sendable, CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var body: String? = nil
        var status: Int
        var type: String
        /// Text the body holds (empty: the body is empty).
        var holds: String

        var description: String { "\(method) \(path)" }
    }

    static func check(_ cases: [Case], on routed: Routed, sourceLocation: Testing.SourceLocation = #_sourceLocation) async throws {
        try await routed.test { client in
            for c in cases {
                let headers = c.method == .get || c.method == .head ? Self.read : Self.change
                let r = try await client.execute(uri: c.path, method: c.method, headers: headers, body: c.body.map { ByteBuffer(string: $0) })
                let text = String(buffer: r.body)
                #expect(Int(r.status.code) == c.status, "\(c): \(text)", sourceLocation: sourceLocation)
                #expect(r.headers[.contentType] == c.type, "\(c)", sourceLocation: sourceLocation)
                #expect(c.holds.isEmpty ? text.isEmpty : text.contains(c.holds), "\(c): \(text)", sourceLocation: sourceLocation)
                #expect(r.headers[.xContentTypeOptions] == "nosniff", "\(c)", sourceLocation: sourceLocation)
            }
        }
    }

    static let json = "application/json"

    @Test func pagesServeEachFileAndOpenGoesToTheCard() async throws {
        let routed = try Routed()
        try await routed.test { client in
            for (path, asset) in UIAssets.all {
                let r = try await client.execute(uri: path, method: .get, headers: Self.read)
                #expect(r.status == .ok && r.headers[.contentType] == asset.contentType && r.headers[.cacheControl] == "no-cache", "\(path)")
                #expect(Array(buffer: r.body) == asset.bytes, "\(path)")
                #expect(r.headers[.contentSecurityPolicy] == SecurityHeaders.pagesPolicy, "\(path)")
            }
            let open = try await client.execute(uri: "/open?link=flowdir%3A%2F%2Fi1%2Fnode%2Fmask1", method: .get, headers: Self.read)
            #expect(open.status == .found && open.headers[.location] == "/#/w/i1/mask1")
        }
        try await Self.check([
            Case(method: .get, path: "/open", status: 400, type: Self.json, holds: #"{"error":"give ?link=flowdir://…"}"#),
            Case(method: .get, path: "/open?link=https%3A%2F%2Fexample.com", status: 400, type: Self.json, holds: "does not start with flowdir://"),
        ], on: routed)
    }

    @Test func instancesListShowAndAreActedOn() async throws {
        let routed = try Routed()
        try await Self.check([
            Case(method: .get, path: "/api/instances?filter=done&search=cat", status: 200, type: Self.json, holds: #""filter":"done","search":"cat""#),
            Case(method: .get, path: "/api/instances?filter=sideways", status: 400, type: Self.json, holds: "filter 'sideways' is not all, active, done or failed"),
            Case(method: .get, path: "/api/instances?sort=size", status: 400, type: Self.json, holds: "sort 'size' is not recent or name"),
            Case(method: .get, path: "/api/instances/i1", status: 200, type: Self.json, holds: #"{"id":"i1"}"#),
            Case(method: .get, path: "/api/instances/nope", status: 404, type: Self.json, holds: "no instance with id 'nope'"),
            Case(method: .get, path: "/api/instances/%FF", status: 400, type: Self.json, holds: "not valid percent-encoded UTF-8"),
            Case(method: .get, path: "/api/inbox", status: 200, type: Self.json, holds: #"{"items":[]}"#),
            Case(method: .get, path: "/api/templates", status: 200, type: Self.json, holds: #"{"templates":[]}"#),
            Case(method: .post, path: "/api/instances/i1/polling", body: #"{"paused":true}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/polling", body: "{}", status: 400, type: Self.json, holds: "give {\\\"paused\\\": true|false}"),
            Case(method: .post, path: "/api/instances/i1/run", status: 200, type: Self.json, holds: "done: runReady"),
            Case(method: .post, path: "/api/instances/i1/duplicate", body: #"{"name":"copy"}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/archive", body: #"{"archived":false}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/explode", status: 404, type: Self.json, holds: #""hint":"polling, run, duplicate, archive or pin""#),
            Case(method: .delete, path: "/api/instances/i1", status: 200, type: Self.json, holds: "done: delete"),
            Case(method: .post, path: "/api/new", body: #"{"template":"seed","name":"n"}"#, status: 200, type: Self.json, holds: #""id":"i2""#),
            Case(method: .post, path: "/api/new", body: "{}", status: 400, type: Self.json, holds: #""hint":"GET /api/templates lists them""#),
            Case(method: .post, path: "/api/new", body: "[1]", status: 400, type: Self.json, holds: "the body is not a JSON object"),
        ], on: routed)
        #expect(routed.backend.performed.locked { $0.map(\.0) } == [.polling(paused: true), .runReady, .duplicate(name: "copy"), .archive(false), .delete])
        #expect(routed.backend.created.locked { $0 } == ["seed"])
    }

    @Test func nodesAnswerClaimAndShowTheirLogAndHistory() async throws {
        let routed = try Routed(uploadLimit: 1 << 10)
        let text = "text/plain; charset=utf-8"
        try await Self.check([
            Case(method: .get, path: "/api/instances/i1/nodes/a/log", status: 200, type: text, holds: "first line\nlast line\n"),
            Case(method: .get, path: "/api/instances/i1/nodes/b/log", status: 200, type: text, holds: ""),
            Case(method: .get, path: "/api/instances/i1/nodes/%2E%2E/log", status: 400, type: Self.json, holds: "'..' is not a node id"),
            Case(method: .get, path: "/api/instances/i1/nodes/a/history", status: 200, type: Self.json, holds: #"{"runs":[]}"#),
            Case(method: .get, path: "/api/instances/i1/nodes/a%2Fb/history", status: 400, type: Self.json, holds: "'a/b' is not a node id"),
            Case(method: .post, path: "/api/instances/i1/nodes/look/answer", body: #"{"choice":"cool"}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/nodes/pick/answer", body: #"{"files":[{"port":"image","base64":"iVBO"}]}"#,
                 status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/nodes/pick/answer", body: #"{"files":[{"port":"image"}]}"#,
                 status: 400, type: Self.json, holds: "each file needs `port` and `base64`"),
            Case(method: .post, path: "/api/instances/i1/nodes/ok/answer", body: #"{"approve":true,"params":{"steps":2}}"#,
                 status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/nodes/ok/answer", body: "{}", status: 400, type: Self.json,
                 holds: "give files, a choice, approve or decline"),
            Case(method: .post, path: "/api/instances/i1/nodes/ok/answer", body: #"{"choice":"\#(String(repeating: "x", count: 2 << 10))"}"#,
                 status: 413, type: Self.json, holds: #""hint":"answerSizeLimit in the config sets it""#),
            Case(method: .post, path: "/api/instances/i1/nodes/look/claim", status: 200, type: Self.json, holds: "done: claim"),
            Case(method: .delete, path: "/api/instances/i1/nodes/look/claim", status: 200, type: Self.json, holds: "done: release"),
            Case(method: .post, path: "/api/instances/i1/nodes/look/snooze", body: #"{"seconds":60}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .post, path: "/api/instances/i1/nodes/look/skip", status: 200, type: Self.json, holds: "done: skip"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/cancel", status: 200, type: Self.json, holds: "done: cancel"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/retry", status: 200, type: Self.json, holds: "done: retry(run: nil)"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/retry", body: #"{"run":1}"#, status: 200, type: Self.json,
                 holds: "done: retry(run: Optional(1))"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/retry", body: #"{"run":0}"#, status: 400, type: Self.json,
                 holds: "`run` is a run number, 1 or more"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/rerun", status: 200, type: Self.json, holds: "done: rerun"),
            Case(method: .post, path: "/api/instances/i1/nodes/r/run", status: 200, type: Self.json, holds: "done: runNode"),
            Case(method: .put, path: "/api/instances/i1/nodes/r/params", body: #"{"params":{"steps":1}}"#, status: 200, type: Self.json, holds: #""ok":true"#),
            Case(method: .put, path: "/api/instances/i1/nodes/r/params", body: #"{"steps":1}"#, status: 400, type: Self.json, holds: "give {\\\"params\\\": {…}}"),
            Case(method: .post, path: "/api/instances/i1/nodes/busy/skip", status: 409, type: Self.json,
                 holds: #"{"error":"'busy' is running","hint":"cancel it first"}"#),
            Case(method: .post, path: "/api/instances/i1/nodes/r/explode", status: 404, type: Self.json, holds: "no action 'explode' on a node"),
            Case(method: .post, path: "/api/instances/nope/nodes/r/skip", status: 404, type: Self.json, holds: "no instance with id 'nope'"),
        ], on: routed)
        let actions = routed.backend.performed.locked { $0.map(\.0) }
        #expect(actions.count == 13, "each allowed action reached the backend once: \(actions)")
        #expect(actions.contains(.retry(run: nil)) && actions.contains(.retry(run: 1)))
        #expect(actions.contains(.answerFiles([UIUpload(port: "image", name: "image", bytes: [0x89, 0x50, 0x4E])])))
        #expect(actions.contains(.approve(params: [ParamEntry(key: "steps", value: .int(2))])))
        #expect(actions.contains(.claim) && actions.contains(.release) && actions.contains(.snooze(seconds: 60)))
    }

    @Test func settingsShowTheConfigAndSpaceIsFreedOnlyWhenSaid() async throws {
        let routed = try Routed()
        try await Self.check([
            Case(method: .get, path: "/api/settings", status: 200, type: Self.json, holds: #""configFile":"#),
            Case(method: .get, path: "/api/settings/endpoints", status: 200, type: Self.json, holds: #""reachable":false"#),
            Case(method: .get, path: "/api/storage", status: 200, type: Self.json, holds: #""rows":[]"#),
            Case(method: .post, path: "/api/storage/free", body: #"{"dryRun":true}"#, status: 200, type: Self.json, holds: #""dryRun":true"#),
            Case(method: .post, path: "/api/storage/free", body: "{}", status: 400, type: Self.json, holds: "give {\\\"dryRun\\\": true}"),
            Case(method: .post, path: "/api/storage/free", body: #"{"dryRun":"no"}"#, status: 400, type: Self.json, holds: "or {\\\"dryRun\\\": false} to free it"),
            Case(method: .post, path: "/api/storage/free", body: #"{"dryRun":false}"#, status: 200, type: Self.json, holds: #""dryRun":false"#),
            Case(method: .post, path: "/api/instances/i1/pin", body: #"{"pinned":true}"#, status: 200, type: Self.json, holds: "done: pin(true)"),
            Case(method: .post, path: "/api/instances/i1/nodes/a/pin", body: #"{"pinned":false}"#, status: 200, type: Self.json, holds: "done: pin(false)"),
            Case(method: .post, path: "/api/instances/i1/pin", body: "{}", status: 400, type: Self.json, holds: "give {\\\"pinned\\\": true|false}"),
        ], on: routed)
        #expect(routed.backend.freed.locked { $0 } == [true, false], "a body without a boolean dryRun never reaches the backend")
        let pins = routed.backend.performed.locked { $0.map { "\($0.0) \($0.2 ?? "-")" } }
        #expect(pins == ["pin(true) -", "pin(false) a"])
    }

    @Test func filesAndThumbnailsAreServedFromInsideTheInstanceOnly() async throws {
        let routed = try Routed()
        try await Self.check([
            Case(method: .get, path: "/api/instances/i1/files/nodes/a/out/image.png", status: 200, type: "image/png", holds: "PNG"),
            Case(method: .get, path: "/api/instances/i1/thumbs/nodes/a/out/image.png", status: 200, type: "image/png", holds: "PNG"),
            Case(method: .get, path: "/api/instances/i1/files/.git/config", status: 404, type: Self.json, holds: "no such file in the instance"),
            Case(method: .get, path: "/api/instances/i1/files/.flowdir/secret", status: 404, type: Self.json, holds: "no such file in the instance"),
            Case(method: .get, path: "/api/instances/i1/files/nodes/%2E%2E/%2E%2E/outside.txt", status: 404, type: Self.json, holds: "no such file"),
            Case(method: .get, path: "/api/instances/i1/files/link.txt", status: 404, type: Self.json, holds: "no such file in the instance"),
            Case(method: .get, path: "/api/instances/nope/files/x", status: 404, type: Self.json, holds: "no instance with id 'nope'"),
            // Any run's output, by its record: a file (the current run's), or a blob from git.
            Case(method: .get, path: "/api/instances/i1/nodes/a/runs/1/outputs/image", status: 200, type: "image/png", holds: "PNG"),
            Case(method: .get, path: "/api/instances/i1/nodes/a/runs/2/outputs/image", status: 200, type: "application/json", holds: #"{"a": 1}"#),
            Case(method: .get, path: "/api/instances/i1/nodes/a/runs/9/outputs/image", status: 404, type: Self.json, holds: "'a' has no run 9"),
            Case(method: .get, path: "/api/instances/i1/nodes/a/runs/0/outputs/image", status: 404, type: Self.json, holds: "runs are numbered from 1"),
        ], on: routed)
        try await routed.test { client in
            // HEAD: a GET's status and headers, no bytes; an error's too.
            let head = try await client.execute(uri: "/api/instances/i1/files/nodes/a/out/image.png", method: .head, headers: Self.read)
            #expect(head.status == .ok && head.headers[.contentType] == "image/png" && head.body.readableBytes == 0)
            #expect(head.headers[.contentSecurityPolicy] == SecurityHeaders.filePolicy)
            let thumb = try await client.execute(uri: "/api/instances/i1/thumbs/nodes/a/out/image.png", method: .head, headers: Self.read)
            #expect(thumb.status == .ok && thumb.headers[.contentType] == "image/png" && thumb.body.readableBytes == 0)
            let missing = try await client.execute(uri: "/api/instances/i1/files/.git/config", method: .head, headers: Self.read)
            #expect(missing.status == .notFound && missing.headers[.contentType] == Self.json && missing.body.readableBytes == 0)
        }
    }

    @Test func theChangeFeedSendsEachChangeAsAnEvent() async throws {
        let routed = try Routed()
        let feed = routed.server.feed
        // The stream ends when the feed does: then the router framework has the whole answer.
        let ender = Task {
            await Eventually.until(timeout: .seconds(20), every: .milliseconds(10)) { feed.subscriberCount > 0 }
            feed.publish([UIChange(instance: "i1")])
            feed.finishSubscribers()
        }
        try await routed.test { client in
            let r = try await client.execute(uri: "/api/events", method: .get, headers: Self.read)
            #expect(r.status == .ok && r.headers[.contentType] == "text/event-stream" && r.headers[.cacheControl] == "no-cache")
            #expect(String(buffer: r.body) == "retry: 1000\n: connected\n\nevent: changed\ndata: {\"instance\":\"i1\"}\n\n")
        }
        await ender.value
    }

    /// docs/security.md's refusals, before any route.
    @Test func theGateRefusesWhatDocsSecurityRefuses() async throws {
        let routed = try Routed()
        let cookie = "flowdir_token=\(Self.token)"
        try await routed.test { client in
            func status(_ method: HTTPRequest.Method, _ path: String, _ headers: HTTPFields, body: String? = nil) async throws -> (Int, String?, String) {
                let r = try await client.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
                return (Int(r.status.code), r.headers[.contentType], String(buffer: r.body))
            }
            // No token, a wrong one: 401, in words.
            var (code, type, text) = try await status(.get, "/api/instances", [:])
            #expect(code == 401 && type == "text/plain; charset=utf-8" && text.contains("needs the token"))
            (code, _, text) = try await status(.get, "/app.js", [.authorization: "Bearer wrong"])
            #expect(code == 401 && text.contains("open the URL it printed"))
            // The token as ?token= on a GET, and the cookie it sets.
            let first = try await client.execute(uri: "/?token=\(Self.token)", method: .get, headers: [:])
            #expect(first.status == .ok && first.headers[.setCookie] == "\(cookie); Path=/; HttpOnly; SameSite=Strict")
            (code, _, _) = try await status(.get, "/api/inbox", [.cookie: cookie])
            #expect(code == 200)
            // Another site's page: its reads, its embeds; but a navigation to the pages is let through.
            (code, type, text) = try await status(.get, "/api/instances", Self.read + [Self.site: "cross-site"])
            #expect(code == 403 && type == Self.json && text.contains("answers only its own pages"))
            (code, _, _) = try await status(.get, "/app.js", Self.read + [Self.site: "same-site", Self.dest: "script", Self.mode: "no-cors"])
            #expect(code == 403)
            (code, _, _) = try await status(.get, "/", Self.read + [Self.site: "cross-site", Self.dest: "document", Self.mode: "navigate"])
            #expect(code == 200)
            // Changes: JSON only; from this origin only; without Origin, the Bearer token only.
            (code, type, text) = try await status(.post, "/api/instances/i1/run", Self.read + [.contentType: "text/plain"], body: "{}")
            #expect(code == 415 && type == Self.json && text.contains("must be sent as JSON"))
            (code, _, text) = try await status(.post, "/api/instances/i1/run", Self.change + [.origin: "http://evil.example"], body: "{}")
            #expect(code == 403 && text.contains("another origin"))
            (code, _, _) = try await status(.post, "/api/instances/i1/run", Self.change + [.origin: "http://localhost"], body: "{}")
            #expect(code == 200)
            (code, _, text) = try await status(.post, "/api/instances/i1/run", [.cookie: cookie, .contentType: Self.json], body: "{}")
            #expect(code == 401 && text.contains("Authorization: Bearer"))
            (code, _, _) = try await status(.post, "/api/instances/i1/run", [.cookie: cookie, .contentType: Self.json, Self.site: "same-origin"], body: "{}")
            #expect(code == 200)
            // No such route: 404, as JSON like every other refusal.
            (code, type, _) = try await status(.get, "/api/nothing-here", Self.read)
            #expect(code == 404 && type == Self.json)
        }
        #expect(routed.backend.performed.locked { $0.count } == 2, "only the two allowed changes reached the backend")
    }

    @Test func aHostThatIsNotThisServerGets421AndWrongTokensAreThrottled() async throws {
        // Listening on 8701: the router framework's `localhost` (port 80) is another server.
        try await Routed(port: 8701).test { client in
            let r = try await client.execute(uri: "/", method: .get, headers: Self.read)
            #expect(r.status.code == 421 && String(buffer: r.body).contains("this server is not localhost"))
        }
        try await Routed().test { client in
            for i in 0..<10 {
                let r = try await client.execute(uri: "/api/inbox", method: .get, headers: [.authorization: "Bearer wrong-\(i)"])
                #expect(r.status == .unauthorized)
            }
            let r = try await client.execute(uri: "/api/inbox", method: .get, headers: Self.read)
            #expect(r.status == .tooManyRequests && r.headers[.retryAfter] != nil && r.headers[.contentType] == Self.json)
        }
    }

    static let site = HTTPField.Name("Sec-Fetch-Site")!
    static let dest = HTTPField.Name("Sec-Fetch-Dest")!
    static let mode = HTTPField.Name("Sec-Fetch-Mode")!
}

private func + (a: HTTPFields, b: HTTPFields) -> HTTPFields {
    var out = a
    for f in b { out[f.name] = f.value }
    return out
}
