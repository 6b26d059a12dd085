#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// The seed's workflow with its stylize step on a real cog server (PyPI cog
/// and coglet 0.23.1, no Docker) that the built job server starts and
/// supervises (`--model flowdir/stylize=cog:examples/stylize-cog`).
@Suite(.serialized, .tags(.large, .cog), Component.cog.needed) struct CogEndToEndTests {
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let server: JobServerProcess
        let env: [String: String]

        /// - Parameter endpoint: more of the endpoint's settings (`, syncWait: 0s`).
        init(endpoint: String = "") throws {
            #expect(CogProcess.isInstalled, "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
            dir = try TemporaryDirectory()
            server = try JobServerProcess(dir: dir.path + "/jobserver", arguments: [
                "--model", "flowdir/stylize=cog:" + RepositoryPaths.root + "/examples/stylize-cog", "--cog-python", CogProcess.venv])
            // Input files above 1 KB go through the job server's files API (the photo does; the mask may not).
            try dir.write("config.yaml", "endpoints:\n  gpu: { url: \(server.url), pollInterval: 0.2s, inlineLimit: 1KB\(endpoint) }\n")
            // The job server's token (it keeps one in its folder), as a client takes it from the environment.
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state",
                   "FLOWDIR_TOKEN_GPU": server.token]
        }

        @discardableResult
        func flowdir(_ args: [String]) throws -> CommandResult { try CommandRunner.flowdir(args, in: dir.path, environment: env) }
    }

    @Test func theStylizeStepRunsOnCogThroughTheJobServer() async throws {
        try await offPool {
            let s = try Setup()
            #expect(try s.flowdir(["new", RepositoryPaths.workflows + "/stylize-with-mask.jsonc", "photo"]).status == 0)
            let inst = s.dir.path + "/photo"
            #expect(try s.flowdir(["answer", "photo/load1", RepositoryPaths.workflows + "/photo.png"]).status == 0)
            _ = try CommandRunner.run("/usr/bin/convert", ["-size", "64x48", "xc:black", "-fill", "white", "-draw", "circle 32,24 32,8", s.dir.path + "/mask.png"])
            #expect(try s.flowdir(["answer", "photo/mask1", s.dir.path + "/mask.png"]).status == 0)
            let r = try s.flowdir(["run", "photo"])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let history = try GitCLI.run(["log", "--reverse", "--format=%B"], in: inst)
            let seen = history.split(separator: "\n").filter { $0.hasPrefix("Flowdir-Transition: stylize1 ") }.map { String($0.split(separator: " ")[2]) }
            #expect(seen.suffix(4) == ["ready→queuedRemote", "queuedRemote→runningRemote", "runningRemote→downloading", "downloading→succeeded"], "\(seen)")
            // The output was type-checked as an image: a PNG, recorded as ImageRef with its blob.
            let png = try Data(contentsOf: URL(fileURLWithPath: inst + "/nodes/stylize1/out/image.png"))
            #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            let record = try String(contentsOfFile: inst + "/nodes/stylize1/runs/1/run.yaml", encoding: .utf8)
            #expect(record.contains("type: ImageRef") && record.contains("job: "), "\(record)")
            // cog's own logs, as its predictor printed them.
            let log = try String(contentsOfFile: inst + "/nodes/stylize1/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("stylize: ") && log.contains("style=sketch, steps=30") && log.contains("progress: 1.0"), "\(log)")
            #expect(InstanceProbe.state(inst, "compress1") == "succeeded")
            #expect(s.server.accessLog.contains { $0.contains(" POST /v1/files 201") }, "\(s.server.accessLog)")

            // Stopped as a person stops it (SIGTERM), it stops its cog server: no process of it is left, not even a zombie.
            let stats = try CommandRunner.run("/usr/bin/curl", ["-sS", "-H", "Authorization: Bearer \(s.server.token)", "\(s.server.url)/_stats"])
            let pid = try #require(JSONValue.parse(Array(stats.stdout.utf8))?["models"]?["flowdir/stylize"]?["pid"].flatMap { v -> Int32? in
                if case .number(let n) = v { return Int32(n) }
                return nil
            }, "\(stats.stdout)")
            let cog = [pid] + Self.descendants(of: pid)
            #expect(cog.count >= 2, "cog's server and its worker: \(cog)")
            s.server.terminate()
            #expect(cog.allSatisfy { !FileManager.default.fileExists(atPath: "/proc/\($0)") }, "left: \(cog)")
        }
    }

    /// Processes whose parent is `pid`, and theirs.
    static func descendants(of pid: Int32) -> [Int32] {
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }.filter { p in
            guard let text = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return false }
            let fields = text[text.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
        return children + children.flatMap { descendants(of: $0) }
    }

    @Test func cancelStopsThePredictionOnTheServerAndInCog() async throws {
        try await offPool {
            // Sent without waiting: it runs, its job known, when it is cancelled.
            let s = try Setup(endpoint: ", syncWait: 0s")
            // StylizeRemote with cog's `delay` input: a prediction that takes a while.
            try s.dir.write("wf/tools/Slow.yaml", """
                kind: Slow
                resources: remote
                inputs: { image: ImageRef, mask: ImageRef }
                outputs: { image: { type: ImageRef, ext: png } }
                run:
                  http:
                    endpoint: gpu
                    model: flowdir/stylize
                    input: { image: "{inputs.image}", mask: "{inputs.mask}", delay: 60 }   # the photo as its own mask
                    outputs: { image: output }
                """)
            try s.dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: Slow
                nodes:
                  - { id: load, kind: ImageLoader, params: { path: \(RepositoryPaths.workflows)/photo.png } }
                  - { id: slow, kind: Slow }
                edges: [load.image -> slow.image, load.image -> slow.mask]
                """)
            #expect(try s.flowdir(["new", "wf/t.yaml", "slow"]).status == 0)
            let inst = s.dir.path + "/slow"
            let run = Process()
            run.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            run.arguments = ["run", inst]
            run.environment = ProcessInfo.processInfo.environment.merging(s.env) { $1 }
            run.standardOutput = FileHandle.nullDevice
            try run.run()
            Eventually.blockingUntil(timeout: .seconds(30), every: .milliseconds(50)) { !(InstanceProbe.state(inst, "slow") != "runningRemote") }
            #expect(InstanceProbe.state(inst, "slow") == "runningRemote")
            let c = try s.flowdir(["cancel", "slow", "slow"])
            #expect(c.status == 0, "\(c.stderr)")
            run.waitUntilExit()
            #expect(InstanceProbe.state(inst, "slow") == "cancelled")
            // The job server says so because cog said so: its worker stopped the
            // prediction (left to run, it would have succeeded after its minute).
            let predictions = s.server.dir + "/predictions"
            let files = try FileManager.default.contentsOfDirectory(atPath: predictions)
            let text = try files.map { try String(contentsOfFile: predictions + "/" + $0, encoding: .utf8) }.joined()
            #expect(text.contains("\"status\":\"canceled\""), "\(text.prefix(600))")
        }
    }
}
