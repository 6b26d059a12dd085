import AsyncHTTPClient
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// `--faults`: each kind, seen by real HTTP clients (async-http-client,
/// and curl for the reset), then normal service again.
@Suite(.tags(.medium)) struct FaultsTests {
    static func server(_ yaml: String) async throws -> Harness {
        try await Harness { $0.faults = try Faults.load(Array(yaml.utf8), file: "faults.yaml") }
    }

    var created: (Harness) async throws -> Double? = { try await $0.request(.GET, "/v1/_stats").json["created"]?.number }

    @Test func statusesAreAnsweredInOrderThenServiceIsNormal() async throws {
        let h = try await Self.server("""
            faults:
              - route: POST /v1/models/*/predictions
                responses: [503, { status: 429, retryAfter: 45 }]
            """)
        let first = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": [:]])
        #expect(first.status == 503 && first.json["detail"]?.stringValue?.contains("injected") == true)
        let second = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": [:]])
        #expect(second.status == 429 && second.headers["Retry-After"].first == "45")
        #expect(try await created(h) == 0)  // answered instead of serving
        #expect(try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": [:]]).status == 201)
        #expect(try await created(h) == 1)
        #expect(h.accessLog.filter { $0.contains(" POST /v1/models/tools/Work/predictions ") }.map { String($0.split(separator: " ").last!) }
            == ["503", "429", "201"])
    }

    @Test func aDelayIsServedButAnsweredLateSoAClientTimesOut() async throws {
        let h = try await Self.server("""
            faults:
              - route: POST /v1/models/tools/Work/predictions
                responses: [{ delay: 1 }]
              - route: GET /v1/predictions
                responses: [{ delay: 0.4, status: 504 }]
            """)
        await #expect(throws: HTTPClientError.self) {
            _ = try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": ["text": "late"]], timeout: 0.3)
        }
        // The error is the proof: the answer, had it been waited for, was a 201 after 1 s.
        // It was made all the same: the answer was lost, not the request.
        #expect(try await created(h) == 1)
        let slow = Date()
        #expect(try await h.request(.GET, "/v1/predictions").status == 504)
        #expect(Date().timeIntervalSince(slow) >= 0.4)
        #expect(try await h.request(.GET, "/v1/predictions").json["results"]?.array.count == 1)
    }

    @Test func aResetDropsTheConnectionWithoutAnAnswer() async throws {
        let h = try await Self.server("""
            faults:
              - route: GET /v1/predictions/*
                responses: [{ reset: true }, { reset: true }]
            """)
        let p = try await h.create("tools/Work", ["text": "r"])
        let id = try #require(p["id"]?.stringValue)
        await #expect(throws: (any Error).self) { _ = try await h.request(.GET, "/v1/predictions/\(id)", againIfStale: false) }
        // curl says what the peer did: exit 56, "Connection reset by peer".
        let url = "\(h.base)/v1/predictions/\(id)"
        let curl = try await offPool {
            try CommandRunner.run("/usr/bin/curl", ["-sS", "-H", "Authorization: Bearer \(Harness.token)", url])
        }
        #expect(curl.status == 56 && curl.stderr.contains("reset"), "\(curl.status) \(curl.stderr)")
        #expect(try await h.get(id)["id"]?.stringValue == id)
        #expect(h.accessLog.filter { $0.hasSuffix(" reset") }.count == 2)
        // The list is not `GET /v1/predictions/*` (one or more parts after it).
        #expect(try await h.request(.GET, "/v1/predictions").status == 200)
    }

    @Test func aBodyThatIsNotJSON() async throws {
        let h = try await Self.server(#"{"faults": [{"route": "GET /v1/predictions", "responses": [{"status": 200, "body": "<html>gateway</html>"}]}]}"#)
        let a = try await h.request(.GET, "/v1/predictions")
        #expect(a.status == 200 && a.text == "<html>gateway</html>")
        #expect(a.headers["Content-Type"].first == "text/html")
        #expect(JSONValue.parse(a.body) == nil)
        #expect(try await h.request(.GET, "/v1/predictions").json["results"] != nil)
    }

    @Test func aFaultsFileWithMistakesIsRefusedSayingWhere() throws {
        let wrong: [(String, String)] = [
            ("faults: [{ route: GET /v1/x, responses: [{ statuss: 503 }] }]", "unknown key 'statuss'"),
            ("faults: [{ route: GET /v1/x, responses: [700] }]", "700 is not an HTTP status"),
            ("faults: [{ route: /v1/x, responses: [503] }]", "must be METHOD /path"),
            ("faults: [{ route: GET /v1/x, responses: [{ retryAfter: 5 }] }]", "go with a status"),
            ("nothing: here", "needs `faults:`"),
        ]
        for (text, message) in wrong {
            #expect {
                _ = try Faults.load(Array(text.utf8), file: "f.yaml")
            } throws: { error in
                "\(error)".contains(message) && "\(error)".contains("f.yaml")
            }
        }
    }

    @Test func pastTheRateLimitItAnswers429WithRetryAfterPerToken() async throws {
        // The minute's window is the test's clock's: it does not pass while a loaded machine is slow.
        let clock = ManualClock()
        let h = try await Harness(token: nil) { $0.rateLimit = 5; $0.clock = clock.flowdirClock }
        for _ in 0..<5 { #expect(try await h.request(.GET, "/v1/predictions", token: "a").status == 200) }
        let limited = try await h.request(.GET, "/v1/predictions", token: "a")
        #expect(limited.status == 429)
        let wait = try #require(limited.headers["Retry-After"].first.flatMap { Int($0) })
        #expect((1...12).contains(wait))
        #expect(limited.json["detail"]?.stringValue?.contains("throttled") == true)
        // Another token has its own budget.
        #expect(try await h.request(.GET, "/v1/predictions", token: "b").status == 200)
    }
}
