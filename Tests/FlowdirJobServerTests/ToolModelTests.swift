#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// Tool files as models (`--tools DIR` → `tools/<Kind>`), run here.
@Suite(.tags(.small)) struct ToolModelTests {
    /// Writes its shell's pid where told, then sleeps as that process.
    static let sleepy = """
        kind: Sleepy
        outputs: { out: TextRef }
        params: { pidfile: { type: string, default: /dev/null }, sleep: { type: number, default: 60 } }
        run:
          command: [sh, -c, 'echo $$ > "$1"; exec sleep "$2"', "{outputs.out}", "{params.pidfile}", "{params.sleep}"]
        """

    static func alive(_ pidfile: String) -> Bool {
        guard let text = try? String(contentsOfFile: pidfile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return false
        }
        return kill(pid, 0) == 0
    }

    static func waitUntilGone(_ pidfile: String) async throws -> Bool {
        await Eventually.until(every: .milliseconds(30)) { !alive(pidfile) }
    }

    @Test func aFailingToolFailsThePredictionWithWhatItSaid() async throws {
        let h = try await Harness()
        let p = try await h.wait(try #require(try await h.create("tools/Fail", [:])["id"]?.stringValue))
        #expect(p["status"] == "failed")
        #expect(p["error"]?.stringValue == "exited with code 3: cannot do it: no GPU")
        #expect(p["logs"]?.stringValue?.contains("no GPU") == true)
        // A missing file input is refused before anything runs.
        let q = try await h.request(.POST, "/v1/models/tools/Pair/predictions", json: ["input": [:]])
        #expect(q.status == 422 && q.json["detail"]?.stringValue?.contains("input 'src' is missing") == true, "\(q.text)")
    }

    @Test func cancelStopsTheToolsProcessGroup() async throws {
        let h = try await Harness(tools: ["Sleepy": Self.sleepy])
        let pidfile = h.dir.path + "/sleepy.pid"
        let p = try await h.create("tools/Sleepy", ["pidfile": .string(pidfile)])
        let id = try #require(p["id"]?.stringValue)
        try await h.wait(id, for: ["processing"])
        await Eventually.until { Self.alive(pidfile) }
        #expect(Self.alive(pidfile))
        let c = try await h.request(.POST, "/v1/predictions/\(id)/cancel")
        #expect(c.status == 200 && c.json["id"]?.stringValue == id)
        let done = try await h.wait(id)
        #expect(done["status"] == "canceled")
        #expect(try await Self.waitUntilGone(pidfile))
        // Cancelling what has ended changes nothing.
        #expect(try await h.request(.POST, "/v1/predictions/\(id)/cancel").json["status"] == "canceled")
        #expect(try await h.request(.POST, "/v1/predictions/nope/cancel").status == 404)
    }

    @Test func aToolServesUnderAModelsNameToo() async throws {
        let h = try await Harness { $0.models["acme/work"] = "tools/Work" }
        let p = try await h.wait(try #require(try await h.create("acme/work", ["text": "aliased"])["id"]?.stringValue))
        #expect(p["status"] == "succeeded" && p["model"] == "acme/work")
        #expect(try await h.request(.GET, try #require(p["output"]?.stringValue)).text == "aliased")
        await #expect(throws: JobServerError.self) {
            _ = try await Harness { $0.models["acme/none"] = "tools/Nothing" }
        }
    }

    /// Many long predictions at once cost a process each and nothing more:
    /// they are all `processing` at once, and all end when cancelled.
    @Test func manyLongPredictionsRunAtOnce() async throws {
        let h = try await Harness(tools: ["Sleepy": Self.sleepy])
        let n = 200
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<n { group.addTask { try #require(try await h.create("tools/Sleepy", ["sleep": 90])["id"]?.stringValue) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // Bounds against a hang, not speed targets: the suite loads both cores as this runs.
        var stats = JSONValue.null
        try await Eventually.until(timeout: .seconds(90), every: .milliseconds(50)) {
            stats = try await h.request(.GET, "/v1/_stats").json
            return stats["active"]?.number == Double(n)
        }
        #expect(stats["created"]?.number == Double(n) && stats["active"]?.number == Double(n))
        let page = try await h.request(.GET, "/v1/predictions").json["results"]?.array ?? []
        #expect(page.count == 100 && page.allSatisfy { $0["status"] == "processing" })
        for id in ids { _ = try await h.request(.POST, "/v1/predictions/\(id)/cancel") }
        try await Eventually.until(timeout: .seconds(90), every: .milliseconds(50)) {
            try await h.request(.GET, "/v1/_stats").json["active"]?.number == 0
        }
        #expect(try await h.request(.GET, "/v1/_stats").json["active"]?.number == 0)
        #expect(try await h.get(ids[0])["status"] == "canceled")
    }
}
