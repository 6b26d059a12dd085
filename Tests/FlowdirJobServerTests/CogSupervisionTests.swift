#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// A prediction cog stops reporting on still ends, in bounded time, and
/// the model is usable again (docs/jobserver.md): with a real cog server
/// (PyPI cog + coglet 0.23.1, no Docker) running a predictor that ignores
/// cancels or hangs (`Python/stubborn-cog`), fronted by URL or started and
/// supervised by the job server (`cog:DIR`); and nothing it started left
/// behind, not even a zombie (PID 1 here does not reap).
// One cog server at a time: each takes seconds of both cores to start.
@Suite(.serialized, .tags(.medium, .cog), Component.cog.needed) struct CogSupervisionTests {
    static let stubborn = RepositoryPaths.root + "/Tests/FlowdirJobServerTests/Python/stubborn-cog"

    /// A process as /proc shows it now: its start time tells it from a later one with the same pid.
    struct Proc: Equatable, CustomStringConvertible {
        var pid: pid_t
        var started: String
        var description: String { "\(pid)" }

        static func of(_ pid: pid_t) -> Proc? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = text.lastIndex(of: ")") else { return nil }
            let fields = text[text.index(after: close)...].split(separator: " ")
            return fields.count > 19 ? Proc(pid: pid, started: String(fields[19])) : nil
        }

        /// Its children, and theirs.
        var descendants: [Proc] { ProcessProbe.descendants(of: pid).compactMap(Proc.of) }

        /// Not in /proc at all: neither running nor a zombie.
        var isGone: Bool { Proc.of(pid) != self }
    }

    func brief(_ p: JSONValue) -> String {
        "\(p["status"]?.stringValue ?? "?") error: \(p["error"]?.stringValue ?? "-") logs: \(p["logs"]?.stringValue?.suffix(400) ?? "")"
    }

    /// A job server supervising the stubborn predictor as `acme/stubborn`, once its cog server is ready.
    func supervised() async throws -> Harness {
        #expect(CogProcess.isInstalled, "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
        let h = try await Harness {
            $0.models["acme/stubborn"] = "cog:" + Self.stubborn
            $0.cogPython = CogProcess.venv
            $0.cogCancelTimeout = .seconds(3)
            $0.cogWatchInterval = .milliseconds(300)
        }
        _ = try await cogState(h, until: { $0["state"] == "ready" })
        return h
    }

    /// The supervised cog server's state in `/v1/_stats`, once `until` holds.
    func cogState(_ h: Harness, until: (JSONValue) -> Bool, timeout: Double = 120) async throws -> JSONValue {
        var s = JSONValue.null
        let reached = try await Eventually.until(timeout: .seconds(timeout), every: .milliseconds(100)) {
            s = try await h.request(.GET, "/v1/_stats").json["models"]?["acme/stubborn"] ?? .null
            return until(s)
        }
        if !reached { Issue.record("the cog server's state is still \(s)") }
        return s
    }

    func create(_ h: Harness, _ model: String, _ input: JSONValue) async throws -> String {
        try #require(try await h.create(model, input)["id"]?.stringValue)
    }

    /// A cancel cog never acts on (its predictor catches it) once left the
    /// prediction `processing` for good, and every later one `starting`
    /// behind it: a workflow hung in queuedRemote.
    @Test func aCancelAFrontedCogNeverHonoursStillEndsAndHoldsNothingUp() async throws {
        #expect(CogProcess.isInstalled, "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
        let log = FileManager.default.temporaryDirectory.path + "/cog-\(UUID().uuidString.prefix(8)).log"
        // Its start waits on curl: off the cooperative pool the server needs.
        let cog = try await offPool { CogSupervisionTests.Unchecked(value: try CogProcess(predictor: Self.stubborn, log: log)) }.value
        let url = cog.url
        let h = try await Harness {
            $0.models["acme/stubborn"] = url
            $0.cogCancelTimeout = .seconds(3)
            $0.cogWatchInterval = .milliseconds(300)
        }
        let stuck = try await create(h, "acme/stubborn", ["mode": "ignore-cancel"])
        try await h.wait(stuck, for: ["processing"], timeout: 60)
        let next = try await create(h, "acme/stubborn", ["mode": "ok", "text": "next"])
        #expect(try await h.get(next)["status"] == "starting")
        _ = try await h.request(.POST, "/v1/predictions/\(stuck)/cancel")
        let canceled = try await h.wait(stuck, timeout: 60)
        #expect(canceled["status"] == "canceled", "\(brief(canceled))")
        #expect(canceled["error"]?.stringValue?.contains("did not end this prediction within") == true, "\(brief(canceled))")
        #expect(canceled["logs"]?.stringValue?.contains("[flowdir jobserver]") == true, "\(brief(canceled))")
        // cog still runs it, and cannot be restarted from here: the next one says so instead of waiting for good.
        let failed = try await h.wait(next, timeout: 60)
        #expect(failed["status"] == "failed", "\(brief(failed))")
        #expect(failed["error"]?.stringValue?.contains("which it did not end after its cancel") == true, "\(brief(failed))")
        cog.stop()
    }

    struct Unchecked<T>: @unchecked Sendable { let value: T }

    @Test func aSupervisedCogIsRestartedWhenItDoesNotHonourACancelAndNothingOfItIsLeft() async throws {
        let h = try await supervised()
        let first = try await cogState(h, until: { _ in true })
        let pid = try #require(first["pid"]?.number)
        let server = try #require(Proc.of(pid_t(pid)))
        let stuck = try await create(h, "acme/stubborn", ["mode": "ignore-cancel"])
        try await h.wait(stuck, for: ["processing"], timeout: 60)
        // cog's worker, a child of its server.
        let group = [server] + server.descendants
        #expect(group.count >= 2, "\(group)")
        let next = try await create(h, "acme/stubborn", ["mode": "ok", "text": "after"])
        _ = try await h.request(.POST, "/v1/predictions/\(stuck)/cancel")
        let canceled = try await h.wait(stuck, timeout: 60)
        #expect(canceled["status"] == "canceled", "\(brief(canceled))")
        #expect(canceled["error"]?.stringValue?.contains("the model server restarted") == true, "\(brief(canceled))")
        // The one waiting behind it runs on the new cog server.
        let done = try await h.wait(next, timeout: 120)
        #expect(done["status"] == "succeeded" && done["output"] == "done after", "\(brief(done))")
        let second = try await cogState(h, until: { $0["state"] == "ready" })
        #expect(second["restarts"]?.number == 1 && second["pid"] != first["pid"], "\(second)")
        #expect(group.allSatisfy { $0.isGone }, "left: \(group.filter { !$0.isGone })")

        // Stopping the job server stops its cog server, all of it.
        // The cog server running now: under load, a health check answered
        // late may have had it restarted again since.
        let current = try await cogState(h, until: { $0["state"] == "ready" && ($0["pid"]?.number).flatMap { Proc.of(pid_t($0)) } != nil })
        let now = try #require((current["pid"]?.number).flatMap { Proc.of(pid_t($0)) })
        let running = [now] + now.descendants
        _ = try await create(h, "acme/stubborn", ["mode": "hang", "seconds": 60])
        await h.stop()
        #expect(running.allSatisfy { $0.isGone }, "left: \(running.filter { !$0.isGone })")
    }

    @Test func aSupervisedCogThatDiesIsRestartedAndWhatItRanFailsSayingWhy() async throws {
        let h = try await supervised()
        let first = try await cogState(h, until: { _ in true })
        let pid = try #require(first["pid"]?.number)
        let server = try #require(Proc.of(pid_t(pid)))
        let running = try await create(h, "acme/stubborn", ["mode": "hang", "seconds": 60])
        try await h.wait(running, for: ["processing"], timeout: 60)
        let group = [server] + server.descendants
        kill(server.pid, SIGKILL)
        let failed = try await h.wait(running, timeout: 60)
        #expect(failed["status"] == "failed", "\(brief(failed))")
        #expect(failed["error"]?.stringValue?.contains("died while it ran this prediction") == true, "\(brief(failed))")
        let again = try await h.wait(try await create(h, "acme/stubborn", ["mode": "ok", "text": "again"]), timeout: 120)
        #expect(again["status"] == "succeeded" && again["output"] == "done again", "\(brief(again))")
        #expect(group.allSatisfy { $0.isGone }, "left: \(group.filter { !$0.isGone })")
        await h.stop()
    }

    /// examples/stylize-cog, started by the job server itself.
    @Test func theStylizeExampleRunsOnACogServerTheJobServerStarts() async throws {
        #expect(CogProcess.isInstalled, "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
        let h = try await Harness {
            $0.models["flowdir/stylize"] = "cog:" + RepositoryPaths.root + "/examples/stylize-cog"
            $0.cogPython = CogProcess.venv
        }
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: RepositoryPaths.root + "/examples/photo.png")))
        let image = JSONValue.string(JobAPIClient.dataURI(photo, contentType: "image/png"))
        // Made at once, and waiting `starting` while the cog server starts.
        let id = try await create(h, "flowdir/stylize", ["image": image, "mask": image, "style": "posterize", "steps": 10])
        let done = try await h.wait(id, timeout: 180)
        #expect(done["status"] == "succeeded", "\(brief(done))")
        let png = try await h.request(.GET, try #require(done["output"]?.stringValue))
        #expect(png.headers["Content-Type"].first == "image/png" && png.body.prefix(4) == [0x89, 0x50, 0x4E, 0x47])
        await h.stop()
    }
}
