#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
@testable import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// `Prefer: wait` on a create (Replicate's sync mode): the answer held
/// until the prediction ends or the wait passes, woken by the end itself;
/// the held creates bounded, and let go when their client leaves or the
/// server stops.
@Suite(.tags(.medium)) struct PreferWaitTests {
    /// Replicate's client stops reading N + 0.5 s after a `wait=N` create:
    /// a create is held a little less than N, so its answer is there before.
    @Test func aCreateIsHeldALittleLessThanItsWait() {
        #expect(Routes.held(1) <= 0.5)
        #expect(Routes.held(3) <= 1.5)
        #expect(Routes.held(60) <= 58 && Routes.held(60) >= 57)
    }

    func create(_ h: Harness, _ input: JSONValue, prefer: String?, model: String = "tools/Work", timeout: Double = 120) async throws -> Harness.Answer {
        try await h.request(.POST, "/v1/models/\(model)/predictions", json: ["input": input],
                            headers: prefer.map { [("Prefer", $0)] } ?? [], timeout: timeout)
    }

    /// Creates held now, as the job server counts them.
    func waiting(_ h: Harness) async throws -> Int {
        Int(try await h.request(.GET, "/v1/_stats").json["waiting"]?.number ?? -1)
    }

    /// Until `condition` holds; the bound only guards against a hang.
    func until(_ what: String, _ condition: () async throws -> Bool) async throws {
        if try await !Eventually.until(timeout: .seconds(30), every: .milliseconds(20), condition) {
            Issue.record("timed out waiting for \(what)")
        }
    }

    @Test func aHeldCreateIsAnsweredWithTheFinishedPrediction() async throws {
        let h = try await Harness()
        let a = try await create(h, ["text": "quick", "sleep": 0.3], prefer: "wait")
        #expect(a.status == 201, "\(a.text)")
        #expect(a.json["status"] == "succeeded", "\(a.text)")
        #expect(a.headers["Preference-Applied"].first == "wait=60")
        let url = try #require(a.json["output"]?.stringValue)
        #expect(try await h.request(.GET, url).text == "quick")
        #expect(a.json["logs"]?.stringValue?.contains("working on quick") == true)
        // By version too, with a wait of its own, as Replicate's Python client sends it.
        let v = try await h.request(.POST, "/v1/predictions", json: ["version": "tools/Work", "input": ["text": "v"]], headers: [("Prefer", "wait=30")])
        #expect(v.status == 201 && v.json["status"] == "succeeded", "\(v.text)")
        #expect(v.headers["Preference-Applied"].first == "wait=30")
        // Nothing asked after it: the answer was the end.
        let id = try #require(a.json["id"]?.stringValue)
        #expect(!h.accessLog.contains { $0.contains("GET /v1/predictions/\(id)") })
    }

    @Test func aJobLongerThanTheWaitIsAnsweredAsItIsAfterTheWait() async throws {
        // The hold is timed on a clock the test moves: the answer comes when it passes, not before.
        let clock = ManualClock()
        let h = try await Harness {
            $0.maxWait = 2
            $0.clock = clock.flowdirClock
        }
        // A bare `wait` is the server's longest, here 2 s; `wait=N` past it too.
        for prefer in ["wait", "respond-async, wait=600"] {
            let text = JSONValue.string("slow \(prefer)")
            let held = Task { try await create(h, ["text": text, "sleep": 60], prefer: prefer) }
            // Held (its timer parked beside the sweeper's) while the job runs.
            try await clock.waitForSleepers(2)
            try await until("the job to run") {
                (try await h.request(.GET, "/v1/predictions").json["results"]?.array ?? [])
                    .contains { $0["input"]?["text"] == text && $0["status"] == "processing" }
            }
            clock.advance(by: .milliseconds(500))
            #expect(try await waiting(h) == 1)
            clock.advance(by: .seconds(2))
            let a = try await held.value
            #expect(a.status == 201, "\(a.text)")
            #expect(a.headers["Preference-Applied"].first == "wait=2")
            // Not ended: `starting`, as Replicate answers then (its Python client takes
            // anything else for the end); it ran meanwhile, as GET says.
            #expect(a.json["status"] == "starting" && a.json["output"] == .null, "\(a.text)")
            let id = try #require(a.json["id"]?.stringValue)
            #expect(try await h.get(id)["status"] == "processing")
            #expect(a.json["started_at"] != .null, "held for the wait, it was answered after the job started: \(a.text)")
            _ = try await h.request(.POST, "/v1/predictions/\(id)/cancel")
        }
        // No Prefer, or a wait of 0 or not a number: answered at once, as made.
        for prefer in [nil, "wait=0", "wait=soon", "respond-async"] as [String?] {
            let a = try await create(h, ["text": "now", "sleep": 60], prefer: prefer)
            #expect(a.status == 201 && a.json["status"] == "starting" && a.json["started_at"] == .null, "\(prefer ?? "none"): \(a.text)")
            #expect(a.headers["Preference-Applied"].isEmpty)
            _ = try await h.request(.POST, "/v1/predictions/\(try #require(a.json["id"]?.stringValue))/cancel")
        }
    }

    /// A client cannot pin the server with held creates: past `maxWaiters`
    /// a create is answered at once (and says nothing was applied); a held
    /// one is let go the moment its prediction ends (here, is canceled).
    @Test func heldCreatesAreBoundedAndLetGoWhenTheirPredictionEnds() async throws {
        let h = try await Harness { $0.maxWaiters = 2 }
        let held = (0..<2).map { i in
            Task { try await create(h, ["text": .string("held \(i)"), "sleep": 60], prefer: "wait=60") }
        }
        try await until("two creates held") { try await waiting(h) == 2 }
        let third = try await create(h, ["text": "third", "sleep": 60], prefer: "wait=60")
        #expect(third.status == 201 && third.json["status"] == "starting", "\(third.text)")
        #expect(third.headers["Preference-Applied"].isEmpty)
        #expect(try await waiting(h) == 2)
        _ = try await h.request(.POST, "/v1/predictions/\(try #require(third.json["id"]?.stringValue))/cancel")
        for id in try await h.request(.GET, "/v1/predictions").json["results"]?.array.compactMap({ $0["id"]?.stringValue }) ?? [] {
            _ = try await h.request(.POST, "/v1/predictions/\(id)/cancel")
        }
        for t in held {
            let a = try await t.value
            #expect(a.json["status"] == "canceled", "\(a.text)")
            #expect(a.headers["Preference-Applied"].first == "wait=60")
        }
        #expect(try await waiting(h) == 0)
    }

    @Test func aHeldCreateIsLetGoWhenItsClientLeaves() async throws {
        let h = try await Harness()
        let port = h.port
        let body = #"{"input": {"text": "gone", "sleep": 60}}"#
        let request = "POST /v1/models/tools/Work/predictions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Harness.token)\r\n"
            + "Content-Type: application/json\r\nPrefer: wait=60\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        let fd = try await offPool { () -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            return fd
        }
        try await until("the create to be held") { try await waiting(h) == 1 }
        close(fd)
        try await until("the held create to be let go") { try await waiting(h) == 0 }
        #expect(try await waiting(h) == 0)
        // The prediction goes on: only the wait for it ended.
        let p = try #require(try await h.request(.GET, "/v1/predictions").json["results"]?.array.first)
        #expect(p["status"] == "processing" || p["status"] == "starting")
        _ = try await h.request(.POST, "/v1/predictions/\(try #require(p["id"]?.stringValue))/cancel")
    }

    /// Stopping answers what is held at once: a held create never keeps the server from stopping.
    @Test func stoppingTheServerAnswersHeldCreates() async throws {
        let h = try await Harness()
        // Its own deadline is shorter than the wait: only an answer on stopping comes in time.
        let held = Task { try await create(h, ["text": "stop", "sleep": 100], prefer: "wait=60", timeout: 45) }
        try await until("the create to be held") { try await waiting(h) == 1 }
        await h.stop()
        let a = try await held.value
        #expect(a.status == 201, "\(a.text)")
        #expect(a.headers["Preference-Applied"].first == "wait=60")
        #expect(a.json["status"] == "starting", "\(a.text)")
    }
}
