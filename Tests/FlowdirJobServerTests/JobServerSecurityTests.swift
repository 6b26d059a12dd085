#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// Who may not use the job server (docs/security.md): anyone without its
/// token, a web page in the person's browser, a token guesser; and how
/// what it stores is served back.
@Suite(.tags(.medium)) struct JobServerSecurityTests {
    /// A PNG of 1×1 pixel.
    static let png: [UInt8] = Array(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")!)
    static let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg" onload="fetch('/v1/files')"><image href="file:///etc/passwd"/></svg>"#.utf8)

    @Test func everyRouteNeedsTheTokenButTheHealthCheckAndCogsCallbacks() async throws {
        let h = try await Harness()
        let up = try await h.request(.POST, "/v1/files", body: Array("private words".utf8), contentType: "text/plain")
        let download = try #require(up.json["urls"]?["download"]?.stringValue)
        // The trailing slash once listed every upload and output without the token.
        for path in ["/v1/files/", "/v1/files", download, try #require(up.json["urls"]?["get"]?.stringValue),
                     "/v1/_stats", "/v1/nowhere", "/nowhere", "/v1/predictions/", "/v1//files"] {
            let a = try await h.request(.GET, path, token: nil)
            #expect(a.status == 401, "\(path): \(a.status) \(a.text)")
            #expect(!a.text.contains("private words"), "\(path)")
        }
        #expect(try await h.request(.DELETE, download, token: nil).status == 401)
        #expect(try await h.request(.GET, "/health-check", token: nil).json["status"] == "READY")
        // cog's callbacks: only with the key of this start (and a wrong one is a failed try).
        #expect(try await h.request(.POST, "/_cog/0123456789abcdef/x", json: ["status": "succeeded"], token: nil).status == 404)
        #expect(try await h.request(.GET, download).text == "private words")
    }

    @Test func requestsFromWebPagesAreRefusedAndJSONRoutesTakeOnlyJSON() async throws {
        let h = try await Harness()
        let create = "/v1/models/tools/Work/predictions"
        for header in [("Origin", "http://127.0.0.1:9999"), ("Origin", "null"), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Site", "same-site")] {
            let a = try await h.request(.POST, create, json: ["input": ["text": "web"]], headers: [header])
            #expect(a.status == 403, "\(header): \(a.text)")
            #expect(try await h.request(.GET, "/v1/predictions", headers: [header]).status == 403)
        }
        // What a form can send without asking (a "simple" request) is not taken.
        for type in ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"] {
            let a = try await h.request(.POST, create, body: Array(#"{"input": {"text": "form"}}"#.utf8), contentType: type)
            #expect(a.status == 415, "\(type): \(a.text)")
        }
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 0)
        // A browser's own navigation (Sec-Fetch-Site: none) and API clients are served.
        #expect(try await h.request(.GET, "/v1/predictions", headers: [("Sec-Fetch-Site", "none")]).status == 200)
        #expect(try await h.request(.POST, create, body: Array(#"{"input": {"text": "ok"}}"#.utf8), contentType: "application/json; charset=utf-8").status == 201)
    }

    @Test func failedTokensAreThrottledPerAddressWhateverTheTokenSent() async throws {
        // Ten a minute, by default.
        let h = try await Harness()
        for i in 0..<10 {
            #expect(try await h.request(.GET, "/v1/predictions", token: "guess-\(i)").status == 401)
        }
        let held = try await h.request(.GET, "/v1/predictions", token: "guess-10")
        #expect(held.status == 429, "\(held.text)")
        let wait = try #require(held.headers["Retry-After"].first.flatMap { Int($0) })
        #expect((1...60).contains(wait))
        // Even the right token, from that address, until the minute has passed.
        #expect(try await h.request(.GET, "/v1/predictions").status == 429)
    }

    /// A client that puts the token in the URL (on the public health check,
    /// or beside its header) does not get it written to the access log.
    @Test func theAccessLogNeverHoldsTheToken() async throws {
        let h = try await Harness()
        #expect(try await h.request(.GET, "/health-check?token=\(Harness.token)", token: nil).status == 200)
        #expect(try await h.request(.GET, "/v1/predictions?token=\(Harness.token)&x=1").status == 200)
        #expect(try await h.request(.GET, "/v1/predictions/\(Harness.token)").status == 404)
        let log = h.accessLog
        #expect(log.contains { $0.contains("/health-check?token=(token)") }, "\(log)")
        #expect(!log.contains { $0.contains(Harness.token) }, "\(log)")
    }

    @Test func storedFilesAreServedSoThatNoBrowserRunsThem() async throws {
        let h = try await Harness()
        func upload(_ bytes: [UInt8], _ type: String) async throws -> Harness.Answer {
            let up = try await h.request(.POST, "/v1/files", body: bytes, contentType: type)
            #expect(up.status == 201, "\(up.text)")
            return try await h.request(.GET, try #require(up.json["urls"]?["download"]?.stringValue))
        }
        let cases: [([UInt8], String, String?)] = [
            (Array("<html><script>alert(1)</script></html>".utf8), "text/html", nil),
            (Self.svg, "image/svg+xml", nil),
            (Self.svg, "image/png", nil),  // an SVG posing as a PNG
            (Array("<script>x</script>".utf8), "text/plain; charset=utf-16", "text/plain; charset=utf-8"),
            (Self.png, "image/png", "image/png"),
            (Self.png, "image/jpeg", nil),  // a PNG is not a JPEG
            (Array(#"{"a": 1}"#.utf8), "application/json", "application/json"),
            (Array("{not json".utf8), "application/json", nil),
            (Array("%PDF-1.4\n%%EOF\n".utf8), "application/pdf", "application/pdf"),
            (Array("MZ\u{90}".utf8), "application/x-msdownload", nil),
        ]
        for (bytes, declared, inline) in cases {
            let a = try await upload(bytes, declared)
            #expect(a.status == 200 && a.body == bytes)
            #expect(a.headers["X-Content-Type-Options"].first == "nosniff", "\(declared)")
            #expect(a.headers["Content-Security-Policy"].first == "sandbox; default-src 'none'", "\(declared)")
            if let inline {
                #expect(a.headers["Content-Type"].first == inline, "\(declared)")
                #expect(a.headers["Content-Disposition"].isEmpty, "\(declared)")
            } else {
                #expect(a.headers["Content-Type"].first == "application/octet-stream", "\(declared)")
                #expect(a.headers["Content-Disposition"].first?.hasPrefix("attachment") == true, "\(declared)")
            }
        }
    }

    @Test func urlsAreMadeWithTheServersAddressNeverTheRequestsHost() async throws {
        let h = try await Harness()
        let p = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": ["text": "x"]], headers: [("Host", "evil.example:80")])
        #expect(p.json["urls"]?["get"]?.stringValue?.hasPrefix(h.base + "/v1/predictions/") == true, "\(p.text)")
        let up = try await h.request(.POST, "/v1/files", body: Array("x".utf8), contentType: "text/plain", headers: [("Host", "evil.example")])
        #expect(up.json["urls"]?["download"]?.stringValue?.hasPrefix(h.base + "/v1/files/") == true, "\(up.text)")
    }

    @Test func aHeadTooLargeIsRefusedAndTheServerGoesOn() async throws {
        // 32 KB by default.
        let h = try await Harness()
        let big = String(repeating: "a", count: 48 << 10)
        let a = try? await h.request(.GET, "/v1/predictions", headers: [("X-Padding", big)])
        // Refused by the parser (400, or the connection closed), never served.
        #expect(a == nil || a?.status == 400, "\(a?.status ?? 0)")
        #expect(try await h.request(.GET, "/v1/predictions").status == 200)
    }
}
