import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// A real cog server (PyPI cog + coglet 0.23.1, no Docker) running
/// `examples/stylize-cog`, fronted by the job server.
// One cog server at a time: each takes seconds of both cores to start.
@Suite(.serialized, .tags(.medium, .cog), Component.cog.needed) struct CogTests {
    /// A prediction without its inputs (whole images).
    func brief(_ p: JSONValue) -> String {
        "\(p["status"]?.stringValue ?? "?") error: \(p["error"]?.stringValue ?? "-") logs: \(p["logs"]?.stringValue?.suffix(400) ?? "")"
    }

    struct Unchecked<T>: @unchecked Sendable { let value: T }

    final class Setup: @unchecked Sendable {
        let cog: CogProcess
        let h: Harness
        let photo: [UInt8]
        let log: String
        var cogLog: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        init() async throws {
            #expect(CogProcess.isInstalled, "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
            let log = FileManager.default.temporaryDirectory.path + "/cog-\(UUID().uuidString.prefix(8)).log"
            self.log = log
            // Its start waits on curl: off the cooperative pool the server needs.
            cog = try await offPool { Unchecked(value: try CogProcess(predictor: RepositoryPaths.root + "/examples/stylize-cog", log: log)) }.value
            let url = cog.url
            h = try await Harness {
                $0.models["flowdir/stylize"] = url
                $0.cogWatchInterval = .milliseconds(500)
            }
            photo = Array(try Data(contentsOf: URL(fileURLWithPath: RepositoryPaths.root + "/examples/photo.png")))
        }

        /// The photo uploaded through the files API, and as its own mask inline.
        func input(_ extra: [String: JSONValue] = [:]) async throws -> JSONValue {
            let up = try await h.request(.POST, "/v1/files", body: photo, contentType: "image/png")
            var input: [String: JSONValue] = ["image": try #require(up.json["urls"]?["get"]), "mask": .string(JobAPIClient.dataURI(photo, contentType: "image/png")),
                                              "style": "posterize", "steps": 20]
            for (k, v) in extra { input[k] = v }
            return .object(input)
        }
    }

    @Test func aPredictionRunsOnCogAndItsPNGIsServed() async throws {
        let s = try await Setup()
        // Long enough that a look while it runs sees it processing, even on a
        // loaded machine (4 s was missed once, with three test runs at once).
        let p = try await s.h.create("flowdir/stylize", try await s.input(["delay": 12]))
        let id = try #require(p["id"]?.stringValue)
        #expect(p["status"] == "starting")
        let running = try await s.h.wait(id, for: ["processing", "succeeded", "failed"])
        #expect(running["status"] == "processing", "\(brief(running))")
        let done = try await s.h.wait(id)
        #expect(done["status"] == "succeeded", "\(brief(done))")
        let logs = done["logs"]?.stringValue ?? ""
        #expect(logs.contains("stylize: 240x180, style=posterize, steps=20") && logs.contains("progress: 1.0"), "\(logs)")
        // cog's own timing comes through.
        #expect((done["metrics"]?["predict_time"]?.number ?? 0) > 0)
        // cog's data: URI output, served here as a file.
        let url = try #require(done["output"]?.stringValue)
        #expect(url.hasPrefix(s.h.base + "/v1/files/") && url.hasSuffix(".png"))
        let png = try await s.h.request(.GET, url)
        #expect(png.status == 200 && png.headers["Content-Type"].first == "image/png")
        #expect(png.body.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(png.body != s.photo)
        // cog's own refusal (an input it does not take) fails the prediction with its words.
        let bad = try await s.h.wait(try #require(try await s.h.create("flowdir/stylize", try await s.input(["style": "cubist"]))["id"]?.stringValue))
        #expect(bad["status"] == "failed")
        #expect(bad["error"]?.stringValue?.contains("style 'cubist' is not one of") == true, "\(brief(bad))")
        s.cog.stop()
    }

    /// cog runs one at a time: the next waits `starting`; a cancel reaches
    /// cog (its worker stops the running one) or, for a queued one, never
    /// needs to.
    @Test func predictionsQueueAndCancelReachesCog() async throws {
        let s = try await Setup()
        let long = try #require(try await s.h.create("flowdir/stylize", try await s.input(["delay": 60]))["id"]?.stringValue)
        try await s.h.wait(long, for: ["processing"])
        let next = try #require(try await s.h.create("flowdir/stylize", try await s.input())["id"]?.stringValue)
        let queued = try #require(try await s.h.create("flowdir/stylize", try await s.input())["id"]?.stringValue)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await s.h.get(next)["status"] == "starting")

        let c = try await s.h.request(.POST, "/v1/predictions/\(queued)/cancel")
        #expect(c.json["status"] == "canceled")  // at once: it was only queued here
        _ = try await s.h.request(.POST, "/v1/predictions/\(long)/cancel")
        // `canceled` only once cog said so (its worker stopped it); left to
        // run, it would have `succeeded` after its minute.
        let canceled = try await s.h.wait(long, timeout: 50)
        #expect(canceled["status"] == "canceled")
        // Then cog is free for the next.
        #expect(try await s.h.wait(next)["status"] == "succeeded")
        // The queued one never reached cog, then or after.
        #expect(s.cogLog.contains(long) && !s.cogLog.contains(queued), "\(s.cogLog.suffix(2000))")
        s.cog.stop()
    }

    /// A cog server that dies mid-prediction never says so: the job server
    /// notices, fails the prediction, and goes on.
    @Test func aCogServerThatDiesFailsItsPrediction() async throws {
        let s = try await Setup()
        let id = try #require(try await s.h.create("flowdir/stylize", try await s.input(["delay": 60]))["id"]?.stringValue)
        try await s.h.wait(id, for: ["processing"])
        s.cog.stop()
        let p = try await s.h.wait(id, timeout: 10)
        #expect(p["status"] == "failed")
        #expect(p["error"]?.stringValue?.contains("stopped answering") == true, "\(brief(p))")
        // The server goes on taking predictions (they fail once its PUT times out).
        #expect(try await s.h.request(.POST, "/v1/models/flowdir/stylize/predictions", json: ["input": try await s.input()]).status == 201)
    }
}
