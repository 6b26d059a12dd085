#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
@testable import FlowdirPages
import FlowdirTestSupport
import Foundation
import NIOHTTP1
import Testing

/// `flowdir serve` against what a hostile page in the person's browser, or
/// someone on the LAN, sends (docs/security.md): the fake backend records
/// every action that reaches it, so "refused" means nothing was done.
@Suite(.tags(.medium)) struct UIServerSecurityTests {
    typealias Running = UIServerTests.Running

    /// Every route that changes something, with a body it takes.
    static let changes: [(HTTPMethod, String, String)] = [
        (.POST, "/api/instances/i1/nodes/look/answer", #"{"choice":"cool"}"#),
        (.POST, "/api/instances/i1/nodes/pick/answer", #"{"files":[{"port":"image","name":"x.png","base64":"iVBORw0K"}]}"#),
        (.POST, "/api/instances/i1/nodes/look/claim", "{}"),
        (.DELETE, "/api/instances/i1/nodes/look/claim", "{}"),
        (.POST, "/api/instances/i1/nodes/look/snooze", #"{"seconds":60}"#),
        (.POST, "/api/instances/i1/nodes/look/skip", "{}"),
        (.POST, "/api/instances/i1/nodes/look/cancel", "{}"),
        (.POST, "/api/instances/i1/nodes/look/retry", "{}"),
        (.POST, "/api/instances/i1/nodes/look/rerun", "{}"),
        (.PUT, "/api/instances/i1/nodes/render/params", #"{"params":{"steps":1}}"#),
        (.POST, "/api/instances/i1/polling", #"{"paused":true}"#),
        (.POST, "/api/instances/i1/run", "{}"),
        (.POST, "/api/instances/i1/duplicate", #"{"name":"x"}"#),
        (.POST, "/api/instances/i1/archive", #"{"archived":true}"#),
        (.DELETE, "/api/instances/i1", "{}"),
        (.POST, "/api/new", #"{"template":"/etc/passwd"}"#),
    ]

    @Test func everyChangeFromAnotherPageIsRefusedAndReachesNothing() async throws {
        let s = try await Running()
        let cookie = ("Cookie", "flowdir_token=\(Running.token)")
        let other = "http://127.0.0.1:\(s.port == 9 ? 10 : 9)"
        // What a page on another port (or site) can make the browser send, with the cookie it carries.
        let attacks: [(String, [(String, String)], Int)] = [
            ("fetch, JSON, from another port", [cookie, ("Content-Type", "application/json"), ("Origin", other), ("Sec-Fetch-Site", "same-site")], 403),
            ("fetch, text/plain (no preflight)", [cookie, ("Content-Type", "text/plain;charset=UTF-8"), ("Origin", other), ("Sec-Fetch-Site", "same-site")], 403),
            ("text/plain, no fetch metadata", [cookie, ("Content-Type", "text/plain;charset=UTF-8"), ("Origin", other)], 415),
            ("a form post", [cookie, ("Content-Type", "application/x-www-form-urlencoded"), ("Origin", other)], 415),
            ("multipart form post", [cookie, ("Content-Type", "multipart/form-data; boundary=x"), ("Origin", other)], 415),
            ("text/plain as if from the pages", [cookie, ("Content-Type", "text/plain"), ("Origin", s.base)], 415),
            ("JSON with a suffix type", [cookie, ("Content-Type", "application/json-patch+json"), ("Origin", s.base)], 415),
            ("a sandboxed frame (Origin: null)", [cookie, ("Content-Type", "application/json"), ("Origin", "null")], 403),
            ("another name of the same host", [cookie, ("Content-Type", "application/json"), ("Origin", "http://localhost:\(s.port)")], 403),
            ("https of the same host", [cookie, ("Content-Type", "application/json"), ("Origin", "https://127.0.0.1:\(s.port)")], 403),
            ("no Origin, cross-site", [cookie, ("Content-Type", "application/json"), ("Sec-Fetch-Site", "cross-site")], 403),
            ("no Origin nor Sec-Fetch-Site, the cookie only", [cookie, ("Content-Type", "application/json")], 401),
        ]
        for (method, path, body) in Self.changes {
            for (what, headers, status) in attacks {
                let r = try await s.request(method, path, body: body, auth: [:], headers: headers)
                #expect(r.status == status, "\(what): \(method) \(path) → \(r.status) \(r.text)")
            }
            // The token in the URL is for the first page load, not for a change.
            let query = try await s.request(method, path + "?token=\(Running.token)", body: body, auth: [:])
            #expect(query.status == 401, "?token= on \(method) \(path) → \(query.status)")
        }
        #expect(s.backend.performed.locked { $0.isEmpty }, "\(s.backend.performed.locked { $0.map(\.0) })")
        #expect(s.backend.created.locked { $0.isEmpty })

        // The pages themselves (their Origin, or same-origin without one), and a script with the Bearer token.
        let fromPage = try await s.request(.POST, "/api/instances/i1/nodes/look/skip", body: "{}", auth: [:],
                                           headers: [cookie, ("Origin", s.base), ("Sec-Fetch-Site", "same-origin")])
        #expect(fromPage.status == 200, "\(fromPage.text)")
        let noOrigin = try await s.request(.POST, "/api/instances/i1/nodes/look/snooze", body: "{}", auth: [:],
                                           headers: [cookie, ("Sec-Fetch-Site", "same-origin"), ("Content-Type", "application/json; charset=utf-8")])
        #expect(noOrigin.status == 200, "\(noOrigin.text)")
        #expect(try await s.request(.DELETE, "/api/instances/i1/nodes/look/claim").status == 200)
        #expect(s.backend.performed.locked { $0.map(\.0) } == [.skip, .snooze(seconds: nil), .release])
        await s.stop()
    }

    @Test func anotherPagesReadsAndEmbedsAreRefusedItsNavigationToThePagesIsNot() async throws {
        let s = try await Running()
        let cookie = ("Cookie", "flowdir_token=\(Running.token)")
        let embeds: [(String, [(String, String)])] = [
            ("/api/instances/i1/thumbs/nodes/a/out/image.png", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")]),
            ("/api/instances/i1/files/nodes/a/out/image.png", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")]),
            ("/api/instances", [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")]),
            ("/api/events", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")]),
            ("/app.js", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "script")]),
            ("/", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "iframe")]),
            ("/api/instances/i1", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]),
            ("/api/instances/i1/files/nodes/a/out/image.png", [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]),
        ]
        for (path, headers) in embeds {
            let r = try await s.request(.GET, path, auth: [:], headers: [cookie] + headers)
            #expect(r.status == 403, "\(path) \(headers) → \(r.status)")
        }
        #expect(!FileManager.default.fileExists(atPath: s.backend.folder + "/.flowdir/thumbs"), "a thumbnail was made for another page")
        // A link from elsewhere to the pages (a chat, a notification) opens them.
        let nav = [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]
        #expect(try await s.request(.GET, "/?token=\(Running.token)", auth: [:], headers: nav).status == 200)
        #expect(try await s.request(.GET, "/", auth: [:], headers: [cookie] + nav).status == 200)
        await s.stop()
    }

    @Test func aHostThatIsNotThisServerIsRefused() async throws {
        let s = try await Running()
        for host in ["evil.example:\(s.port)", "127.0.0.1.evil.example:\(s.port)", "127.0.0.1:\(s.port == 1 ? 2 : 1)", "localhost",
                     "[::2]:\(s.port)", "127.0.0.1:\(s.port)@evil"] {
            let r = try await s.request(.GET, "/api/instances", headers: [("Host", host)])
            #expect(r.status == 421, "Host: \(host) → \(r.status)")
        }
        for host in ["localhost:\(s.port)", "127.0.0.2:\(s.port)", "[::1]:\(s.port)"] {
            #expect(try await s.request(.GET, "/api/instances", headers: [("Host", host)]).status == 200, "Host: \(host)")
        }
        await s.stop()
    }

    @Test func onlyLoopbackAddressesCountAsLoopback() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "LOCALHOST"] { #expect(UIServer.isLoopback(host), "\(host)") }
        for host in ["127.evil.example", "127.0.0.1.nip.io", "0.0.0.0", "::", "192.168.1.2", "1270.0.0.1"] {
            #expect(!UIServer.isLoopback(host), "\(host)")
        }
    }

    @Test func differentWrongTokensAreThrottledPerAddress() async throws {
        let s = try await Running()
        for i in 0..<10 {
            let r = try await s.request(.GET, "/api/instances", auth: ["Authorization": "Bearer guess-\(i)"])
            #expect(r.status == 401, "guess \(i): \(r.status)")
        }
        // Locked: even the right token is not looked at until the first guess is a minute old.
        for auth in [["Authorization": "Bearer guess-10"], ["Authorization": "Bearer \(Running.token)"]] {
            let r = try await s.request(.GET, "/api/instances", auth: auth)
            #expect(r.status == 429, "\(r.status) \(r.text)")
            let wait = Int(r.headers.first(name: "Retry-After") ?? "") ?? 0
            #expect(wait >= 1 && wait <= 60, "Retry-After: \(wait)")
        }
        await s.stop()
    }

    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        let s = try await Running()
        let answers = [try await s.get("/"), try await s.get("/app.js"), try await s.get("/", auth: [:]),
                       try await s.get("/no/such/route"), try await s.get("/api/instances")]
        for r in answers {
            #expect(r.headers.first(name: "X-Frame-Options") == "DENY")
            #expect(r.headers.first(name: "Referrer-Policy") == "no-referrer")
            #expect(r.headers.first(name: "X-Content-Type-Options") == "nosniff")
            #expect(r.headers.first(name: "Content-Security-Policy") == SecurityHeaders.pagesPolicy, "\(r.status)")
        }
        #expect(SecurityHeaders.pagesPolicy.contains("script-src 'self';") && SecurityHeaders.pagesPolicy.contains("frame-ancestors 'none'")
                && !SecurityHeaders.pagesPolicy.contains("unsafe"))
        await s.stop()
    }

    /// What the policy's `script-src 'self'; style-src 'self'` needs of the pages.
    @Test func thePagesHaveNoInlineScriptStyleOrHandlers() throws {
        let inlineScript = try Regex(#"<script(?![^>]*\bsrc=)[^>]*>"#)
        let handler = try Regex(#"<[^>]*\son[a-z]+\s*="#)
        for (path, asset) in UIAssets.all {
            let text = String(decoding: asset.bytes, as: UTF8.self)
            #expect(text.firstMatch(of: inlineScript) == nil, "\(path) has an inline <script>")
            #expect(text.firstMatch(of: handler) == nil, "\(path) has an inline event handler")
            #expect(!text.contains("style=\"") && !text.contains("<style") && !text.contains("javascript:"), "\(path) has inline style or a javascript: URL")
            #expect(!text.contains("token=") && !text.contains("Bearer"), "\(path) handles the token itself")
        }
    }

    @Test func filesFromAnInstanceAreShownOnlyWhenTheyCannotRunScript() async throws {
        let s = try await Running()
        let svg = #"<svg xmlns="http://www.w3.org/2000/svg"><script>fetch('/api/instances/i1',{method:'DELETE'})</script></svg>"#
        try s.dir.write("inst/nodes/a/out/evil.svg", svg)
        try s.dir.write("inst/nodes/a/out/disguised.png", svg)
        try s.dir.write("inst/nodes/a/out/page.html", "<html><script>alert(document.cookie)</script></html>")
        try s.dir.write("inst/nodes/a/out/data.json", #"{"a": "<script>"}"#)
        try s.dir.write("inst/nodes/a/out/notes.txt", "<html><script>alert(1)</script>")
        let expected: [(String, String, Bool)] = [
            ("evil.svg", "application/octet-stream", false), ("disguised.png", "application/octet-stream", false),
            ("page.html", "application/octet-stream", false), ("data.json", "application/json", true),
            ("notes.txt", "text/plain; charset=utf-8", true), ("image.png", "image/png", true),
        ]
        for (name, type, inline) in expected {
            let r = try await s.get("/api/instances/i1/files/nodes/a/out/" + name)
            #expect(r.status == 200 && r.headers.first(name: "Content-Type") == type, "\(name): \(r.headers)")
            let disposition = r.headers.first(name: "Content-Disposition") ?? ""
            #expect(disposition.hasPrefix(inline ? "inline" : "attachment") && disposition.contains("filename=\"\(name)\""), "\(name): \(disposition)")
            #expect(r.headers.first(name: "X-Content-Type-Options") == "nosniff")
            let csp = r.headers.first(name: "Content-Security-Policy") ?? ""
            #expect(csp.hasPrefix("sandbox;") && csp.contains("default-src 'none'") && !csp.contains("script-src"), "\(name): \(csp)")
        }
        await s.stop()
    }

    @Test func percentEncodedFileNamesAreReachableAndNothingBeyond() async throws {
        let s = try await Running()
        try s.dir.write("inst/nodes/a/out/my photo ü.txt", "spaced")
        let ok = try await s.get("/api/instances/i1/files/nodes/a/out/my%20photo%20%C3%BC.txt")
        #expect(ok.status == 200 && ok.text == "spaced", "\(ok.status) \(ok.text)")
        #expect(ok.headers.first(name: "Content-Disposition")?.contains("filename*=UTF-8''my%20photo%20%C3%BC.txt") == true)
        // A link inside the instance into .git/ or .flowdir/ (a tool may make one) leads nowhere either.
        symlink(s.backend.folder + "/.git/config", s.backend.folder + "/nodes/a/out/config.txt")
        symlink("../../../.flowdir/secret", s.backend.folder + "/nodes/a/out/secret.txt")
        for bad in ["nodes/a/out/config.txt", "nodes/a/out/secret.txt", "nodes/a/out/my%20photo%20%C3.txt", "nodes%2Fa/out/image.png", "nodes/a/%2E%2E/%2E%2E/%2E%2E/outside.txt",
                    "nodes/a/out/%ZZ", "%2Egit/config", "nodes/a/out/image.png%00"] {
            // Sent as they are (an HTTP client's URL type would decode and re-encode them).
            let r = try await Self.exchange(port: s.port, Array(("GET /api/instances/i1/files/\(bad) HTTP/1.1\r\nHost: 127.0.0.1:\(s.port)\r\n"
                + "Authorization: Bearer \(Running.token)\r\nConnection: close\r\n\r\n").utf8))
            #expect(r.answer.hasPrefix("HTTP/1.1 404"), "\(bad) → \(r.answer.prefix(100))")
        }
        await s.stop()
    }

    /// Records what it was asked to make.
    final class RecordingThumbnailer: Thumbnailer, @unchecked Sendable {
        let asked = Locked([ContentFormat]())
        func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError) {
            asked.locked { $0.append(format) }
            try await UIServerTests.CopyThumbnailer().thumbnail(of: source, format: format, to: destination, side: side)
        }
    }

    @Test func thumbnailsAreMadeOnlyOfImagesAndVideosCheckedByTheirBytes() async throws {
        let maker = RecordingThumbnailer()
        let s = try await Running(thumbnailer: maker)
        try s.dir.write("inst/nodes/a/out/disguised.png", #"<svg xmlns="http://www.w3.org/2000/svg"><image href="file:///etc/hostname"/></svg>"#)
        try s.dir.write("inst/nodes/a/out/anim.gif", "GIF89a not really")
        FileManager.default.createFile(atPath: s.backend.folder + "/nodes/a/out/cut.png", contents: Data(UIServerTests.png.prefix(40)))
        for name in ["disguised.png", "anim.gif", "cut.png"] {
            let r = try await s.get("/api/instances/i1/thumbs/nodes/a/out/" + name)
            #expect(r.status == 415, "\(name): \(r.status) \(r.text)")
        }
        #expect(maker.asked.locked { $0 }.isEmpty)
        #expect(try await s.get("/api/instances/i1/thumbs/nodes/a/out/image.png").status == 200)
        #expect(maker.asked.locked { $0 } == [.png])
        // A video by its bytes (an MP4's `ftyp` box): its first frame is asked for.
        try s.dir.write("inst/nodes/a/out/clip.mp4", "\0\0\0\u{18}ftypisom\0\0\u{2}\0isomiso2")
        #expect(try await s.get("/api/instances/i1/thumbs/nodes/a/out/clip.mp4").status == 200)
        #expect(maker.asked.locked { $0 } == [.png, .mp4])
        await s.stop()
    }

    /// ImageMagick itself: told the decoder, it reads an SVG as nothing.
    @Test func imageMagickIsToldTheDecoderNeverLeftToGuess() async throws {
        let dir = try TemporaryDirectory()
        let svg = #"<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><image href="file:///etc/hostname" width="64" height="64"/><rect width="64" height="64" fill="red"/></svg>"#
        try dir.write("inst/disguised.png", svg)
        FileManager.default.createFile(atPath: dir.path + "/inst/real.png", contents: Data(UIServerTests.png))
        let cache = ThumbnailCache(maker: ImageMagickThumbnailer())
        await #expect(throws: UIError.self) { try await cache.thumbnail(instance: dir.path + "/inst", path: dir.path + "/inst/disguised.png") }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/inst/.flowdir/thumbs"))
        // Even handed the SVG directly as a PNG, the PNG decoder refuses it.
        await #expect(throws: UIError.self) {
            try await ImageMagickThumbnailer().thumbnail(of: dir.path + "/inst/disguised.png", format: .png, to: dir.path + "/out.png", side: 32)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out.png"))
        let made = try await cache.thumbnail(instance: dir.path + "/inst", path: dir.path + "/inst/real.png")
        let bytes = try LocalFileSystem().readFile(made, limit: 1 << 20)
        #expect(ContentCheck.sniff(Array(bytes.prefix(16))) == .png)
    }

    /// A raw connection to the server: `bytes` sent, then what comes back
    /// until the server closes it (or 60 s pass: a guard against a hang).
    /// Off the concurrency pool (its blocking reads would hold up the server's own tasks).
    static func exchange(port: Int, _ bytes: [UInt8]) async throws -> (answer: String, closed: Bool) {
        try await offPool { blockingExchange(port: port, bytes) }
    }

    static func blockingExchange(port: Int, _ bytes: [UInt8]) -> (answer: String, closed: Bool) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return ("connect failed", false) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { answer += buffer[..<n]; continue }
            // 0: closed by the server; ECONNRESET: closed with our bytes unread.
            return (String(decoding: answer, as: UTF8.self), n == 0 || errno == ECONNRESET)
        }
    }

    @Test func aConnectionThatSendsNothingIsClosed() async throws {
        let s = try await Running(idleTimeout: 1)
        // Half a request head, then silence: the server closes it.
        let r = try await Self.exchange(port: s.port, Array("GET /api/instances HTTP/1.1\r\nHost: 127".utf8))
        #expect(r.closed && r.answer.isEmpty, "\(r)")
        await s.stop()
    }

    @Test func oversizedHeadersAreRefused() async throws {
        let s = try await Running()
        let head = "POST /api/instances/i1/nodes/look/skip HTTP/1.1\r\nHost: 127.0.0.1:\(s.port)\r\nAuthorization: Bearer \(Running.token)\r\n"
            + "Content-Type: application/json\r\nX-Big: \(String(repeating: "a", count: 40 << 10))\r\nContent-Length: 2\r\n\r\n{}"
        let r = try await Self.exchange(port: s.port, Array(head.utf8))
        #expect(r.closed && !r.answer.hasPrefix("HTTP/1.1 200"), "\(r.answer.prefix(200))")
        var many = "GET /api/instances HTTP/1.1\r\nHost: 127.0.0.1:\(s.port)\r\nAuthorization: Bearer \(Running.token)\r\n"
        for i in 0..<200 { many += "X-\(i): 1\r\n" }
        let r2 = try await Self.exchange(port: s.port, Array((many + "Connection: close\r\n\r\n").utf8))
        #expect(r2.closed && !r2.answer.hasPrefix("HTTP/1.1 200"), "\(r2.answer.prefix(200))")
        #expect(s.backend.performed.locked { $0.isEmpty })
        // Within the limits, the same works.
        let fine = try await Self.exchange(port: s.port, Array(("GET /api/instances HTTP/1.1\r\nHost: 127.0.0.1:\(s.port)\r\n"
            + "Authorization: Bearer \(Running.token)\r\nX-Big: \(String(repeating: "a", count: 8 << 10))\r\nConnection: close\r\n\r\n").utf8))
        #expect(fine.answer.hasPrefix("HTTP/1.1 200"), "\(fine.answer.prefix(200))")
        await s.stop()
    }
}
