@testable import FlowdirCommands
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir show`: a card per node says what its last run made, the end of
/// a failed job's log, and whether its params were edited since it ran
/// (docs/commands.md: "last result, log tail").
@Suite(.tags(.large), Tier.notQuick) struct ShowCommandTests {
    let env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": "", "TERM": "dumb"]

    /// `ok` writes its output; `bad` talks, reports progress, then fails.
    func makeInstance(_ dir: TemporaryDirectory) throws {
        try dir.write("wf/tools/Ok.yaml", """
            kind: Ok
            outputs: { out: TextRef }
            params: { steps: { type: number, default: 2, summary: true } }
            run:
              command: [sh, -c, "echo made it > \\"$0\\"", "{outputs.out}"]
            """)
        try dir.write("wf/tools/Bad.yaml", """
            kind: Bad
            outputs: { out: TextRef }
            run:
              command: [sh, -c, "for i in 1 2 3 4 5; do echo line $i; done; echo 'progress: 0.5'; printf 'in \\\\033[31mred\\\\033[0m\\\\r\\\\n' >&2; exit 3"]
            """)
        try dir.write("wf/two.yaml", """
            schema: app.workflow/v2
            name: Two
            nodes:
              - { id: ok, kind: Ok, params: { steps: 4 } }
              - { id: bad, kind: Bad }
            options: { errorPolicy: isolate-node }
            """)
        let r = try CommandRunner.flowdir(["new", "wf/two.yaml", "inst"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
    }

    func json(_ dir: TemporaryDirectory) throws -> [String: [String: Any]] {
        let r = try CommandRunner.flowdir(["show", "inst", "--json"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let nodes = try #require(report["nodes"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: nodes.map { ($0["id"] as! String, $0) })
    }

    @Test func eachCardSaysWhatItsLastRunMadeAndAFailedOneItsLogsEnd() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try self.makeInstance(dir)
            // Before any run: nothing to say.
            var nodes = try self.json(dir)
            #expect(nodes["ok"]?["lastRun"] == nil && nodes["ok"]?["logTail"] == nil)
            #expect(nodes["ok"]?["paramsEdited"] as? Bool == false)

            let run = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env)
            #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
            let show = try CommandRunner.flowdir(["show", "inst"], in: dir.path, environment: self.env)
            #expect(show.status == 0, "\(show.stderr)")
            #expect(show.stdout.contains("""
                ✓ ok   Ok   succeeded · run 1
                       steps=4
                       → out/out.txt 8 B
                ✗ bad  Bad  failed — exited with code 3: in red · run 1
                       │ line 4
                       │ line 5
                       │ in red

                """), "\(show.stdout)")
            #expect(!show.stdout.contains("progress:"))
            #expect(!show.stdout.utf8.contains(0x1B) && !show.stdout.utf8.contains(13), "a tool's escape sequences reach the terminal")
            // Nor state.yaml: its colours and its CRLF are not in the reason.
            #expect(try String(contentsOfFile: dir.path + "/inst/nodes/bad/state.yaml", encoding: .utf8)
                .contains("reason: \"exited with code 3: in red\"\n"))

            nodes = try self.json(dir)
            let ok = try #require(nodes["ok"]?["lastRun"] as? [String: Any])
            #expect(ok["run"] as? Int == 1 && ok["exitCode"] as? Int == 0 && ok["trigger"] as? String == "auto")
            let made = try #require(ok["outputs"] as? [[String: Any]])
            #expect(made.count == 1)
            #expect(made.first?["file"] as? String == "out/out.txt" && made.first?["size"] as? Int == 8)
            #expect(made.first?["type"] as? String == "TextRef")
            #expect(made.first?["blob"] as? String == (try GitCLI.run(["rev-parse", "HEAD:nodes/ok/out/out.txt"], in: dir.path + "/inst")
                .trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(nodes["ok"]?["logTail"] == nil, "only a failed, cancelled or running job's log is shown")
            let bad = try #require(nodes["bad"]?["lastRun"] as? [String: Any])
            #expect(bad["exitCode"] as? Int == 3)
            #expect((bad["error"] as? String)?.hasPrefix("exited with code 3") == true)
            #expect((bad["outputs"] as? [Any])?.isEmpty == true)
            #expect(nodes["bad"]?["logTail"] as? [String] == ["line 4", "line 5", "in red"])
        }
    }

    @Test func aCardSaysItsParamsWereEditedSinceItRanUntilTheEngineBlocksIt() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try self.makeInstance(dir)
            _ = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env)
            let params = dir.path + "/inst/nodes/ok/params.yaml"
            let original = try String(contentsOfFile: params, encoding: .utf8)
            #expect(original.contains("steps: 4\n"))

            // The same number written another way is no edit (as the engine sees it).
            try original.replacingOccurrences(of: "steps: 4\n", with: "steps: 4.0\n").write(toFile: params, atomically: true, encoding: .utf8)
            #expect(try self.json(dir)["ok"]?["paramsEdited"] as? Bool == false)

            try original.replacingOccurrences(of: "steps: 4\n", with: "steps: 7\n").write(toFile: params, atomically: true, encoding: .utf8)
            #expect(try self.json(dir)["ok"]?["paramsEdited"] as? Bool == true)
            var show = try CommandRunner.flowdir(["show", "inst"], in: dir.path, environment: self.env)
            #expect(show.stdout.contains("✓ ok   Ok   succeeded · run 1\n       steps=7 · params edited since run 1\n"), "\(show.stdout)")

            // Once the engine has seen it, the state says so: said once, not twice.
            _ = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env)
            show = try CommandRunner.flowdir(["show", "inst"], in: dir.path, environment: self.env)
            #expect(show.stdout.contains("· ok   Ok   blocked — Params changed · run 1\n       steps=7\n"), "\(show.stdout)")
            #expect(try self.json(dir)["ok"]?["paramsEdited"] as? Bool == false)
        }
    }

    @Test func sizesReadAsPeopleWriteThem() {
        #expect(ShowCommand.size(0) == "0 B")
        #expect(ShowCommand.size(1023) == "1023 B")
        #expect(ShowCommand.size(1024) == "1.0 KB")
        #expect(ShowCommand.size(41_062) == "40.1 KB")
        #expect(ShowCommand.size(3 << 20) == "3.0 MB")
        #expect(ShowCommand.size(1_048_535) == "1.0 MB")
        #expect(ShowCommand.size(5 << 40) == "5120.0 GB")
    }
}
