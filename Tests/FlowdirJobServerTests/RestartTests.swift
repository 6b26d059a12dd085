#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// Predictions are files under `--dir`: a server started again on the
/// same folder answers for all of them.
@Suite(.tags(.large), Tier.notQuick) struct RestartTests {
    @Test func predictionsSurviveAStopAndWhatRanIsFailedSayingWhy() async throws {
        let h = try await Harness(tools: ["Work": Harness.work, "Sleepy": ToolModelTests.sleepy])
        let done = try await h.wait(try #require(try await h.create("tools/Work", ["text": "kept"])["id"]?.stringValue))
        #expect(done["status"] == "succeeded")
        let pidfile = h.dir.path + "/sleepy.pid"
        let running = try #require(try await h.create("tools/Sleepy", ["pidfile": .string(pidfile), "sleep": 3600])["id"]?.stringValue)
        try await h.wait(running, for: ["processing"])
        await Eventually.until { ToolModelTests.alive(pidfile) }

        let stopping = Date()
        await h.stop()
        // Not held up by the running prediction (it sleeps an hour): the
        // bound only tells a wait for it from a loaded machine's slowness.
        #expect(Date().timeIntervalSince(stopping) < 600)
        // What it ran is stopped with it.
        #expect(try await ToolModelTests.waitUntilGone(pidfile))

        try await h.restart()
        let again = try await h.get(try #require(done["id"]?.stringValue))
        #expect(again == done)
        #expect(try await h.request(.GET, try #require(again["output"]?.stringValue)).text == "kept")
        let stopped = try await h.get(running)
        #expect(stopped["status"] == "failed")
        #expect(stopped["error"]?.stringValue?.contains("the job server stopped while this prediction ran") == true)
        // New ones are listed before the old ones.
        let third = try #require(try await h.create("tools/Work", ["text": "new"])["id"]?.stringValue)
        let ids = try await h.request(.GET, "/v1/predictions").json["results"]?.array.compactMap { $0["id"]?.stringValue }
        #expect(ids == [third, running, try #require(done["id"]?.stringValue)])
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == 3)
    }

    /// The built `flowdir jobserver`, killed with SIGKILL mid-prediction.
    @Test func afterACrashTheRestartedServerSaysWhatWasLost() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try dir.write("tools/Work.yaml", Harness.work)
            let args = ["--tools", dir.path + "/tools"]
            let first = try JobServerProcess(dir: dir.path + "/data", arguments: args)
            let create = try CommandRunner.run("/usr/bin/curl", ["-sS", "-X", "POST", "-H", "Authorization: Bearer \(first.token)",
                                                                "-H", "Content-Type: application/json", "-d", #"{"input": {"text": "x", "sleep": 60}}"#,
                                                                "\(first.url)/models/tools/Work/predictions"])
            let id = try #require(JSONValue.parse(Array(create.stdout.utf8))?["id"]?.stringValue, "\(create.stdout)\(create.stderr)")
            first.stop()
            let second = try JobServerProcess(dir: dir.path + "/data", arguments: args)
            // The token it made in its folder the first time is the one it keeps.
            #expect(second.token == first.token && second.token.count >= 16)
            let got = try CommandRunner.run("/usr/bin/curl", ["-sS", "-H", "Authorization: Bearer \(second.token)", "\(second.url)/predictions/\(id)"])
            let p = try #require(JSONValue.parse(Array(got.stdout.utf8)))
            #expect(p["status"] == "failed")
            #expect(p["error"]?.stringValue?.contains("restarted while this prediction ran") == true)
            second.stop()
        }
    }
}
