import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Two machines as two clones of one instance and a bare repository between
/// them, over a file URL and over ssh to a real sshd on loopback
/// (`scripts/sshd-local.sh`): `flowdir clone`, `flowdir sync`, and the
/// merge rules of docs/commands.md ("Sync between machines").
@Suite(.serialized, .tags(.large), Tier.notQuick) struct SyncTests {
    final class Machines: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        let url: String
        let ssh: SSHServer?
        /// Each machine's folder of instances (a watcher's root).
        var a: String { dir.path + "/laptop/a" }
        var b: String { dir.path + "/gpu-box/b" }

        static let make = """
            kind: Make
            inputs: { look: JSONRef, other: JSONRef }
            outputs: { out: TextRef }
            params: { text: { type: string, default: x } }
            run:
              command: [sh, -c, 'cat "$1" "$2" > "$0"; printf "%s" "$3" >> "$0"', "{outputs.out}", "{inputs.look}", "{inputs.other}", "{params.text}"]
            """

        init(overSSH: Bool) throws {
            dir = try TemporaryDirectory()
            try dir.write("wf/tools/Make.yaml", Self.make)
            try dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: Two machines
                nodes:
                  - { id: look, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [warm, cool], default: warm } }
                  - { id: other, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [one, two], default: one } }
                  - { id: make, kind: Make, params: { text: x } }
                edges: [look.choice -> make.look, other.choice -> make.other]
                """)
            ssh = overSSH ? try SSHServer(dir: dir.path + "/ssh") : nil
            env = ["XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state"].merging(ssh?.environment ?? [:]) { $1 }
            url = overSSH ? "flowdir-test:" + dir.path + "/hub.git" : "file://" + dir.path + "/hub.git"
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", dir.path + "/hub.git"])
            try FileManager.default.createDirectory(atPath: dir.path + "/gpu-box", withIntermediateDirectories: true)
            #expect(try flowdir(["new", "wf/t.yaml", "laptop/a"]).status == 0)
            #expect(try flowdir(["run", a]).status == 2)
            _ = try GitCLI.run(["remote", "add", "origin", url], in: a)
            let pushed = try flowdir(["sync", a])
            #expect(pushed.status == 0 && pushed.stdout.contains("out"), "\(pushed.stdout)\(pushed.stderr)")
            let cloned = try flowdir(["clone", url, "gpu-box/b"])
            #expect(cloned.status == 0, "\(cloned.stdout)\(cloned.stderr)")
        }

        /// As machine `host` (FLOWDIR_HOST): two clones on one box are two machines.
        @discardableResult
        func flowdir(_ args: [String], host: String? = nil, now: Timestamp? = nil) throws -> CommandResult {
            var e = env.merging(host.map { ["FLOWDIR_HOST": $0] } ?? [:]) { $1 }
            if let now { e["FLOWDIR_NOW"] = now.iso8601 }  // the wall standing at `now` (leases lapse on it)
            return try CommandRunner.flowdir(args, in: dir.path, environment: e)
        }

        func sync(_ inst: String) throws -> String {
            let r = try flowdir(["sync", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            return r.stdout
        }

        func state(_ inst: String, _ node: String) -> String {
            (try? String(contentsOfFile: inst + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
        }

        /// After final syncs, both clones and the hub: valid for git, clean, on the same commit.
        func expectHealthyAndTogether() throws {
            for inst in [a, b, a] { _ = try sync(inst) }
            for repo in [a, b, dir.path + "/hub.git"] {
                let fsck = try CommandRunner.run("/usr/bin/git", ["-C", repo, "fsck", "--strict"])
                #expect(fsck.status == 0, "\(repo): \(fsck.stderr)")
            }
            for inst in [a, b] {
                #expect(try GitCLI.run(["status", "--porcelain"], in: inst).isEmpty, "\(inst) not clean")
            }
            #expect(try GitCLI.run(["rev-parse", "HEAD"], in: a) == GitCLI.run(["rev-parse", "HEAD"], in: b))
        }
    }

    @Test(.tags(.sshd), Component.sshd.needed, arguments: [false, true])
    func anAnswerGivenOnBFinishesTheWorkflowRunByA(overSSH: Bool) async throws {
        try await offPool {
            let m = try Machines(overSSH: overSSH)
            #expect(try m.flowdir(["answer", m.b + "/look", "--choice", "cool"]).status == 0)
            // And one dropped into B's inbox as a person would: the choice written into the question.
            let question = m.b + "/inbox/other.await.yaml"
            try (String(contentsOfFile: question, encoding: .utf8) + "choice: two\n").write(toFile: question, atomically: true, encoding: .utf8)
            #expect(try m.flowdir(["answer", m.b + "/other", "--choice", "two"]).status == 0 || m.state(m.b, "other").contains("succeeded"))
            let out = try m.sync(m.b)
            #expect(out.contains("out"), "\(out)")
            let incoming = try m.sync(m.a)
            #expect(incoming.contains("in"), "\(incoming)")
            let run = try m.flowdir(["run", m.a])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let made = try String(contentsOfFile: m.a + "/nodes/make/out/out.txt", encoding: .utf8)
            #expect(made.contains("cool") && made.contains("two"), "\(made)")
            _ = try m.sync(m.a)
            _ = try m.sync(m.b)
            #expect(m.state(m.b, "make").contains("state: succeeded"))
            try m.expectHealthyAndTogether()
        }
    }

    @Test func paramsEditedOnBothSidesAreKeptAndTheNodeWaits() async throws {
        try await offPool {
            let m = try Machines(overSSH: false)
            try "text: from-a\n".write(toFile: m.a + "/nodes/make/params.yaml", atomically: true, encoding: .utf8)
            try "text: from-b\n".write(toFile: m.b + "/nodes/make/params.yaml", atomically: true, encoding: .utf8)
            _ = try m.sync(m.a)
            let merged = try m.sync(m.b)
            #expect(merged.contains("params edited on both machines"), "\(merged)")
            #expect(try String(contentsOfFile: m.b + "/nodes/make/params.yaml", encoding: .utf8).contains("from-b"))
            #expect(try String(contentsOfFile: m.b + "/nodes/make/params.conflict.yaml", encoding: .utf8).contains("from-a"))
            #expect(m.state(m.b, "make").contains("Params conflict"), "\(m.state(m.b, "make"))")
            let shown = try m.flowdir(["show", m.b]).stdout
            #expect(shown.contains("Params conflict"), "\(shown)")
            _ = try m.sync(m.a)
            #expect(m.state(m.a, "make").contains("Params conflict"))
            try m.expectHealthyAndTogether()
        }
    }

    @Test func aQuestionAnsweredOnBothKeepsThePushedAnswerAndTheOtherWithWhy() async throws {
        try await offPool {
            let m = try Machines(overSSH: false)
            #expect(try m.flowdir(["answer", m.a + "/look", "--choice", "warm"]).status == 0)
            #expect(try m.flowdir(["answer", m.b + "/look", "--choice", "cool"]).status == 0)
            _ = try m.sync(m.a)  // pushed first
            let merged = try m.sync(m.b)
            #expect(merged.contains("answered on both machines"), "\(merged)")
            let taken = try String(contentsOfFile: m.b + "/nodes/look/out/choice.json", encoding: .utf8)
            #expect(taken.contains("warm"), "\(taken)")
            let inbox = try FileManager.default.contentsOfDirectory(atPath: m.b + "/inbox")
            let kept = try #require(inbox.first { $0.hasSuffix(".conflict") }, "\(inbox)")
            #expect(try String(contentsOfFile: m.b + "/inbox/" + kept, encoding: .utf8).contains("cool"))
            #expect(try String(contentsOfFile: m.b + "/inbox/look.error.txt", encoding: .utf8).contains("answered on two machines"))
            _ = try m.sync(m.a)
            // Nothing refused it as an answer: it is kept, not set aside.
            #expect(try m.flowdir(["run", m.b]).status == 2)
            #expect(!(try FileManager.default.contentsOfDirectory(atPath: m.b + "/inbox")).contains { $0.hasSuffix(".rejected") })
            try m.expectHealthyAndTogether()
        }
    }

    /// `sync: { every: 1s }`: the watcher on the laptop syncs by itself; an
    /// answer given on the other machine and synced from there finishes its run.
    @Test func theWatcherSyncsOnItsTimerAndRunsWhatCameIn() async throws {
        try await offPool {
            let m = try Machines(overSSH: false)
            try m.dir.write("config/flowdir/config.yaml", "sync: { every: 1s }\n")
            let log = m.dir.path + "/watch.log"
            FileManager.default.createFile(atPath: log, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            watch.arguments = ["watch", m.dir.path + "/laptop"]
            watch.environment = ProcessInfo.processInfo.environment.merging(m.env) { $1 }
            watch.standardOutput = handle
            watch.standardError = handle
            try watch.run()
            defer { watch.terminate(); watch.waitUntilExit() }
            #expect(try m.flowdir(["answer", m.b + "/look", "--choice", "cool"]).status == 0)
            #expect(try m.flowdir(["answer", m.b + "/other", "--choice", "two"]).status == 0)
            _ = try m.sync(m.b)
            Eventually.blockingUntil(timeout: .seconds(30), every: .milliseconds(100)) { m.state(m.a, "make").contains("state: succeeded") }
            #expect(m.state(m.a, "make").contains("state: succeeded"), "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            // And what it made went back out: the other machine sees it after its own sync.
            try Eventually.blockingUntil(timeout: .seconds(30), every: .milliseconds(100)) {
                try GitCLI.run(["-C", m.dir.path + "/hub.git", "show", "main:nodes/make/state.yaml"], in: m.dir.path).contains("succeeded")
            }
            _ = try m.sync(m.b)
            #expect(m.state(m.b, "make").contains("state: succeeded"))
        }
    }

    /// git's own tools on instances as they are used across machines: packs
    /// fetched with deltas, `gc --aggressive --prune=now` between runs, a
    /// multi-pack index; flowdir goes on committing, git finds nothing wrong.
    @Test func gitsOwnToolsKeepWorkingOnSyncedInstances() async throws {
        try await offPool {
            let m = try Machines(overSSH: false)
            let hub = m.dir.path + "/hub.git"
            // Versions of a large text file that delta well, made on A, packed with deltas at the hub.
            var text = (0..<4000).map { "line \($0) of a long note that a person keeps beside the workflow" }.joined(separator: "\n")
            for round in 0..<4 {
                text += "\nround \(round)"
                try text.write(toFile: m.a + "/notes.md", atomically: true, encoding: .utf8)
                _ = try GitCLI.run(["add", "notes.md"], in: m.a)
                _ = try GitCLI.run(["-c", "user.name=P", "-c", "user.email=p@example.org", "commit", "-q", "-m", "notes \(round)"], in: m.a)
                _ = try m.sync(m.a)
            }
            _ = try CommandRunner.run("/usr/bin/git", ["-C", hub, "gc", "--aggressive", "--quiet"])
            let verify = try CommandRunner.run("/bin/sh", ["-c", "git -C \(hub) verify-pack -v \(hub)/objects/pack/*.idx"])
            #expect(verify.stdout.contains("chain length"), "the hub's pack has no deltas")
            _ = try m.sync(m.b)  // fetched: a pack with deltas
            #expect(try m.flowdir(["answer", m.b + "/look", "--choice", "cool"]).status == 0)
            // Between runs: git's most thorough clean-up, then a multi-pack index.
            _ = try GitCLI.run(["gc", "--aggressive", "--prune=now", "--quiet"], in: m.b)
            #expect(try m.flowdir(["answer", m.b + "/other", "--choice", "two"]).status == 0)
            _ = try GitCLI.run(["multi-pack-index", "write"], in: m.b)
            let run = try m.flowdir(["run", m.b])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let midx = try CommandRunner.run("/usr/bin/git", ["-C", m.b, "multi-pack-index", "verify"])
            #expect(midx.status == 0, "\(midx.stderr)")
            #expect(try String(contentsOfFile: m.b + "/notes.md", encoding: .utf8).hasSuffix("round 3"))
            try m.expectHealthyAndTogether()
        }
    }

    /// What the watcher commits goes out by itself once it has been quiet a
    /// few seconds, with no timer due.
    @Test func theWatcherPushesWhatItCommittedAfterAQuietPeriod() async throws {
        try await offPool {
            let m = try Machines(overSSH: false)
            try m.dir.write("config/flowdir/config.yaml", "sync: { every: 1h }\n")
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            watch.arguments = ["watch", m.dir.path + "/laptop"]
            watch.environment = ProcessInfo.processInfo.environment.merging(m.env) { $1 }
            watch.standardOutput = FileHandle.nullDevice
            watch.standardError = FileHandle.nullDevice
            try watch.run()
            defer { watch.terminate(); watch.waitUntilExit() }
            usleep(1_500_000)  // its first sync, on starting, is done
            #expect(try m.flowdir(["answer", m.a + "/look", "--choice", "warm"]).status == 0)
            var hub = ""
            Eventually.blockingUntil(timeout: .seconds(30), every: .milliseconds(200)) {
                hub = (try? GitCLI.run(["-C", m.dir.path + "/hub.git", "log", "--format=%s", "main"], in: m.dir.path)) ?? ""
                return hub.contains("Answer look")
            }
            #expect(hub.contains("Answer look"), "\(hub)")
        }
    }
}
