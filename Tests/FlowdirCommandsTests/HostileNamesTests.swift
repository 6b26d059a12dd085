import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Names and arguments from outside, end to end (issue #41, lows): a line
/// break in a dropped file's name never reaches a commit subject or
/// error.txt raw; an answer named with one is refused; what reaches git
/// cannot be an option; `check` prints 20,000 diagnostics.
@Suite(.tags(.large), Tier.notQuick) struct HostileNamesTests {
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        var inst: String { dir.path + "/inst" }

        init() throws {
            dir = try TemporaryDirectory()
            try dir.write("config.yaml", "notifications: false\n")
            try dir.write("t.yaml", """
                schema: app.workflow/v2
                name: Ask
                nodes:
                  - { id: pick, kind: UserAssetPicker, outputs: { image: ImageRef } }
                """)
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state"]
        }

        func flowdir(_ args: [String]) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env)
        }
    }

    @Test func aLineBreakInADroppedNameIsEscapedWhereItIsWritten() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let name = "pick.image\nFlowdir-Transition: pick awaitingUser→succeeded run=9.png"
        try Data(SampleFiles.png(width: 2, height: 2)).write(to: URL(fileURLWithPath: s.inst + "/inbox/" + name))
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let subjects = try GitCLI.run(["log", "--format=%s%n--", "-3"], in: s.inst)
        #expect(subjects.contains("pick.image^JFlowdir-Transition"), "\(subjects)")
        let messages = try GitCLI.run(["log", "--format=%B"], in: s.inst)
        #expect(!messages.contains("run=9\n") && !messages.split(separator: "\n").contains { $0.hasPrefix("Flowdir-Transition: pick awaitingUser→succeeded run=9") })
        let error = try String(contentsOfFile: s.inst + "/inbox/pick.error.txt", encoding: .utf8)
        #expect(error.hasPrefix("flowdir could not take inbox/pick.image^JFlowdir-Transition"), "\(error)")
        #expect(InstanceProbe.state(s.inst, "pick") == "awaitingUser")
    }

    @Test func anAnswerNamedWithALineBreakIsRefused() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let file = s.dir.path + "/photo.png\nFlowdir-Event: x"
        try Data(SampleFiles.png(width: 2, height: 2)).write(to: URL(fileURLWithPath: file))
        let r = try s.flowdir(["answer", "inst/pick", file])
        #expect(r.status == 1)
        #expect(r.stderr.contains("control character"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.inst + "/inbox") == ["pick.await.yaml"])
    }

    /// `--upload-pack=<command>` where a remote or an address goes runs the command, in git.
    @Test func nothingThatReachesGitIsAnOption() throws {
        let s = try Setup()
        let marker = s.dir.path + "/ran"
        let r = try s.flowdir(["clone", "--", "--upload-pack=touch \(marker)", "x"])
        #expect(r.status == 1 && r.stderr.contains("starts with '-'"), "\(r.stderr)")
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        let sync = try s.flowdir(["sync", "inst", "--remote=--upload-pack=touch \(marker)"])
        #expect(sync.status != 0 && sync.stderr.contains("starts with '-'"), "\(sync.stderr)")
        try s.dir.write("config.yaml", "notifications: false\nsync: { remote: \"--upload-pack=touch \(marker)\" }\n")
        #expect(try s.flowdir(["sync", "inst"]).status != 0)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    /// Seconds on the linear renderer; the quadratic one took ten minutes
    /// on a loaded machine. The limit only guards against that, not a speed.
    @Test(.timeLimit(.minutes(3))) func checkPrintsTwentyThousandDiagnostics() throws {
        let s = try Setup()
        let n = 20_000
        try s.dir.write("many.yaml", "schema: app.workflow/v2\nname: Many\nnodes:\n  - { id: b, kind: Choice, outputs: { x: JSONRef } }\nedges:\n"
                        + (1...n).map { "  - missing\($0).out -> b.in\n" }.joined())
        let r = try s.flowdir(["check", "many.yaml"])
        #expect(r.status == 1)
        #expect(r.stdout.components(separatedBy: "error[unknownNode]").count - 1 >= n, "\(r.stdout.suffix(300))")
        #expect(r.stdout.contains("missing\(n).out"))
    }
}
